/*
 * ckpt.c - a new checkpoint directory, written beside its final place and
 * renamed into it (see st/ckpt.h).  Only the files emb reads are copied,
 * each through emb_file_open (inside the model directory, regular files,
 * no waiting): never a directory copy, never a link followed out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "io/io.h"
#include "st/ckpt.h"

/* emb_ckpt_pending: the path, and whether it is set (written last when
 * set, first when cleared, so that a handler never reads half a path) */
static char pending[PATH_MAX];
static volatile sig_atomic_t have_pending;

static void pending_set(const char *p)
{
	have_pending = 0;
	if (p && strlen(p) < sizeof(pending)) {
		memcpy(pending, p, strlen(p) + 1);
		have_pending = 1;
	}
}

const char *emb_ckpt_pending(void)
{
	return have_pending ? pending : NULL;
}

/* SIGINT, SIGTERM and SIGHUP held back in this thread (*old: the mask
 * to restore) while the output directory changes hands */
static void hold_signals(sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &s, old);
}

/* 1 when A is B or lies below it (both real paths) */
static int below(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (!strcmp(a, b))
		return 1;
	if (n == 1 && b[0] == '/')
		return 1;
	return !strncmp(a, b, n) && a[n] == '/';
}

static int is_empty_dir(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *e;
	int empty = 1;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

/* OUT split into its parent directory (new) and last name (new) */
static int split(char **parent, char **base, const char *out, emb_err *err)
{
	char *p = strdup(out), *s;
	size_t n;

	*parent = *base = NULL;
	if (!p)
		return emb_err_set(err, "out of memory");
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
	s = strrchr(p, '/');
	*base = strdup(s ? s + 1 : p);
	if (!s)
		*parent = strdup(".");
	else if (s == p)
		*parent = strdup("/");
	else {
		*s = 0;
		*parent = strdup(p);
	}
	free(p);
	if (!*parent || !*base) {
		free(*parent);
		free(*base);
		return emb_err_set(err, "out of memory");
	}
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, "..")) {
		free(*parent);
		free(*base);
		return emb_err_set(err, "%s: name the new checkpoint directory "
		                   "itself", out);
	}
	return 0;
}

int emb_ckpt_begin(char **tmp, const char *model, const char *out,
                   int force, emb_err *err)
{
	char rmodel[PATH_MAX], rparent[PATH_MAX], *parent, *base, *rout, *t;
	struct stat sb;
	sigset_t mask;
	int rc = -1;

	*tmp = NULL;
	if (split(&parent, &base, out, err) < 0)
		return -1;
	if (!realpath(model, rmodel)) {
		emb_err_set(err, "%s: %s", model, strerror(errno));
		goto out;
	}
	if (!realpath(parent, rparent)) {
		emb_err_set(err, "%s: %s", parent, strerror(errno));
		goto out;
	}
	if (!(rout = emb_str_cat3(rparent, strcmp(rparent, "/") ? "/" : "", base))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	if (below(rout, rmodel) || below(rmodel, rout)) {
		emb_err_set(err, "%s: the output directory %s the model directory "
		            "%s", out, !strcmp(rout, rmodel) ? "is" :
		            below(rmodel, rout) ? "holds" : "is inside", model);
		free(rout);
		goto out;
	}
	free(rout);
	if (lstat(out, &sb) == 0) {
		if (S_ISLNK(sb.st_mode)) {
			emb_err_set(err, "%s: is a symbolic link (name a directory)",
			            out);
			goto out;
		}
		if (!S_ISDIR(sb.st_mode)) {
			emb_err_set(err, "%s: exists and is not a directory", out);
			goto out;
		}
		if (!force && !is_empty_dir(out)) {
			emb_err_set(err, "%s: exists and is not empty (--force "
			            "replaces it)", out);
			goto out;
		}
	} else if (errno != ENOENT) {
		emb_err_set(err, "%s: %s", out, strerror(errno));
		goto out;
	}
	if (!(t = malloc(strlen(parent) + strlen(base) + 16))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	sprintf(t, "%s/.%s.tmp-XXXXXX", parent, base);
	/* a signal between mkdtemp and pending_set would leave the new
	 * directory behind: hold it until the handler knows the name */
	hold_signals(&mask);
	if (!mkdtemp(t)) {
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		emb_err_set(err, "%s: %s", t, strerror(errno));
		free(t);
		goto out;
	}
	pending_set(t);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	{       /* mkdtemp made it 0700: the mode a mkdir would give */
		mode_t um = umask(022);
		umask(um);
		chmod(t, 0777 & ~um);
	}
	*tmp = t;
	rc = 0;
out:
	free(parent);
	free(base);
	return rc;
}

/* copy MODEL/REL to TMP/REL (parents made); absent: 0 */
static int copy_one(const char *model, const char *tmp, const char *rel,
                    emb_err *err)
{
	char *src = emb_str_cat3(model, "/", rel), *dst = emb_str_cat3(tmp, "/", rel), *s;
	char buf[65536];
	struct stat sb;
	int in = -1, out = -1, rc = -1;
	ssize_t n;

	if (!src || !dst) {
		emb_err_set(err, "out of memory");
		goto done;
	}
	if (lstat(src, &sb) < 0) {
		rc = 0;
		goto done;
	}
	if ((in = emb_file_open(model, src, NULL, err)) < 0)
		goto done;
	for (s = dst + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		if (mkdir(dst, 0777) < 0 && errno != EEXIST) {
			emb_err_set(err, "%s: %s", dst, strerror(errno));
			goto done;
		}
		*s = '/';
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	           0666);
	if (out < 0) {
		emb_err_set(err, "%s: %s", dst, strerror(errno));
		goto done;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			emb_err_set(err, "%s: %s", src, strerror(errno));
			goto done;
		}
		for (ssize_t w = 0, k; w < n; w += k)
			if ((k = write(out, buf + w, (size_t)(n - w))) < 0) {
				if (errno == EINTR) {
					k = 0;
					continue;
				}
				emb_err_set(err, "%s: write error: %s", dst,
				            strerror(errno));
				goto done;
			}
	}
	rc = 0;
done:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = emb_err_set(err, "%s: write error: %s", dst, strerror(errno));
	free(src);
	free(dst);
	return rc;
}

int emb_ckpt_copy_file(const char *model, const char *tmp, const char *rel,
                       emb_err *err)
{
	return copy_one(model, tmp, rel, err);
}

int emb_ckpt_copy_files(const char *model, const char *tmp, emb_err *err)
{
	char *mpath;
	json_t *mods;
	size_t i;

	for (i = 0; emb_model_file_names[i]; i++) {
		const char *f = emb_model_file_names[i];
		if (!strcmp(f, "model.safetensors") ||
		    !strcmp(f, "model.safetensors.index.json"))
			continue;
		if (copy_one(model, tmp, f, err) < 0)
			return -1;
	}
	/* the module folders (Pooling's config, Dense's config and weights) */
	if (!(mpath = emb_str_cat3(model, "/", "modules.json")))
		return emb_err_set(err, "out of memory");
	mods = emb_json_file_load(model, mpath, (size_t)16 << 20, 0, err);
	free(mpath);
	if (!mods)
		return errno == ENOENT ? 0 : -1;
	for (i = 0; json_is_array(mods) && i < json_array_size(mods); i++) {
		const char *p = json_string_value(json_object_get(
			json_array_get(mods, i), "path"));
		char *c, *w;
		int rc;

		if (!p || !*p || !emb_relpath_ok(p, EMB_RELPATH_NO_DOT))
			continue;       /* the loaders say what is wrong with it */
		c = emb_str_cat3(p, "/", "config.json");
		w = emb_str_cat3(p, "/", "model.safetensors");
		rc = !c || !w ? emb_err_set(err, "out of memory") :
		     copy_one(model, tmp, c, err) < 0 ? -1 :
		     copy_one(model, tmp, w, err);
		free(c);
		free(w);
		if (rc < 0) {
			json_decref(mods);
			return -1;
		}
	}
	json_decref(mods);
	return 0;
}

int emb_ckpt_commit(const char *tmp, const char *out, emb_err *err)
{
	struct stat sb;
	sigset_t mask;
	char *old;
	size_t n;

	if (lstat(out, &sb) < 0 || (S_ISDIR(sb.st_mode) && is_empty_dir(out))) {
		hold_signals(&mask);
		if (rename(tmp, out) == 0) {
			pending_set(NULL);
			pthread_sigmask(SIG_SETMASK, &mask, NULL);
			return 0;
		}
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		emb_err_set(err, "%s: %s", out, strerror(errno));
		emb_ckpt_abort(tmp);
		return -1;
	}
	/* replace OUT (--force): move it aside, move TMP in, remove it */
	n = strlen(tmp);
	if (!(old = strdup(tmp)) || n < 10) {
		free(old);
		emb_ckpt_abort(tmp);
		return emb_err_set(err, "out of memory");
	}
	memcpy(old + n - 10, "old", 3);    /* .NAME.old-XXXXXX */
	/* no signal between the two renames: OUT is never missing */
	hold_signals(&mask);
	if (rename(out, old) < 0) {
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		emb_err_set(err, "%s: %s", out, strerror(errno));
		free(old);
		emb_ckpt_abort(tmp);
		return -1;
	}
	if (rename(tmp, out) < 0) {
		emb_err_set(err, "%s: %s", out, strerror(errno));
		if (rename(old, out) < 0)
			emb_err_set(err, "%s: %s (the old directory is %s)", out,
			            strerror(errno), old);
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		free(old);
		emb_ckpt_abort(tmp);
		return -1;
	}
	pending_set(old);       /* a signal now: the old tree goes */
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	emb_rm_tree(old);
	pending_set(NULL);
	free(old);
	return 0;
}

void emb_ckpt_abort(const char *tmp)
{
	if (tmp)
		emb_rm_tree(tmp);
	pending_set(NULL);
}
