/*
 * hub.c - resolve -m MODEL: a directory, or ORG/NAME[@REVISION] in the
 * local Hugging Face cache (the layout huggingface_hub and
 * emb-fetch, scripts/fetch-model in the source tree, write):
 *
 *   CACHE/models--ORG--NAME/refs/REV          commit hash
 *   CACHE/models--ORG--NAME/snapshots/COMMIT/ the files
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io.h"

static int is_dir(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* one path component of a hub id or revision: [A-Za-z0-9._-]+, not . or .. */
static int good_component(const char *s, size_t n)
{
	if (n == 0 || n > 96 || (n == 1 && s[0] == '.') ||
	    (n == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* components separated by '/', at most MAX of them */
static int good_path(const char *s, size_t n, int max)
{
	size_t i = 0;
	int k = 0;

	while (i <= n) {
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		if (!good_component(s + i, j - i) || ++k > max)
			return 0;
		i = j + 1;
	}
	return 1;
}

/* the hub cache directory, as huggingface_hub chooses it (new) */
static char *cache_dir(void)
{
	const char *e;

	if ((e = getenv("HF_HUB_CACHE")) && *e)
		return strdup(e);
	if ((e = getenv("HUGGINGFACE_HUB_CACHE")) && *e)
		return strdup(e);
	if ((e = getenv("HF_HOME")) && *e)
		return emb_str_cat3(e, "/hub", "");
	if ((e = getenv("XDG_CACHE_HOME")) && *e)
		return emb_str_cat3(e, "/huggingface/hub", "");
	if ((e = getenv("HOME")) && *e)
		return emb_str_cat3(e, "/.cache/huggingface/hub", "");
	return NULL;
}

/* first line of a refs/ file: a commit hash (new), NULL if unreadable */
static char *read_ref(const char *path)
{
	char buf[256], *text;
	size_t n;

	/* a regular file, opened without waiting (never a FIFO) */
	if (!(text = emb_file_read(NULL, path, sizeof(buf) - 1, &n, NULL)))
		return NULL;
	memcpy(buf, text, n + 1);
	free(text);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
	             buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = 0;
	if (!good_component(buf, n))
		return NULL;
	return strdup(buf);
}

/* the one snapshot when there is exactly one (new), else NULL */
static char *only_snapshot(const char *snaps)
{
	DIR *d = opendir(snaps);
	struct dirent *e;
	char *found = NULL;
	int count = 0;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char *p;
		if (e->d_name[0] == '.')
			continue;
		if (!(p = emb_str_cat3(snaps, "/", e->d_name)))
			break;
		if (is_dir(p) && ++count == 1)
			found = p;
		else
			free(p);
	}
	closedir(d);
	if (count != 1) {
		free(found);
		return NULL;
	}
	return found;
}

int emb_model_resolve(char **out, const char *arg, emb_err *err)
{
	struct stat sb;
	const char *at;
	char id[256], rev[256], *cache = NULL, *repo = NULL, *snaps = NULL;
	char *refp = NULL, *hash = NULL, *snap = NULL;
	size_t idlen;
	int explicit_rev;

	*out = NULL;
	if (!arg || !*arg)
		return emb_err_set(err, "model: empty name");
	if (stat(arg, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return emb_err_set(err, "%s: not a directory", arg);
		if (!(*out = strdup(arg)))
			return emb_err_set(err, "%s: out of memory", arg);
		return 0;
	}
	if (arg[0] == '/' || arg[0] == '.' || arg[0] == '~')
		return emb_err_set(err, "%s: no such model directory", arg);
	at = strchr(arg, '@');
	idlen = at ? (size_t)(at - arg) : strlen(arg);
	explicit_rev = at != NULL;
	if (idlen >= sizeof(id) || !good_path(arg, idlen, 2))
		return emb_err_set(err, "%s: no such model directory, and not a Hub "
		                   "model id ORG/NAME[@REVISION]", arg);
	memcpy(id, arg, idlen);
	id[idlen] = 0;
	snprintf(rev, sizeof(rev), "%s", at ? at + 1 : "main");
	if (strlen(at ? at + 1 : "main") >= sizeof(rev) ||
	    !good_path(rev, strlen(rev), 8))
		return emb_err_set(err, "%s: bad revision '%s'", arg, at ? at + 1 : "");
	if (!(cache = cache_dir()))
		return emb_err_set(err, "%s: no such model directory, and no Hugging "
		                   "Face cache (HF_HUB_CACHE, HF_HOME and HOME unset)", arg);
	{
		char flat[300];
		size_t j = 0;
		for (size_t i = 0; id[i]; i++) {
			if (id[i] == '/') {
				flat[j++] = '-';
				flat[j++] = '-';
			} else {
				flat[j++] = id[i];
			}
		}
		flat[j] = 0;
		repo = emb_str_cat3(cache, "/models--", flat);
	}
	if (!repo || !(snaps = emb_str_cat3(repo, "/snapshots", "")) ||
	    !(refp = emb_str_cat3(repo, "/refs/", rev)))
		goto oom;
	if ((hash = read_ref(refp))) {
		if (!(snap = emb_str_cat3(snaps, "/", hash)))
			goto oom;
		if (!is_dir(snap)) {
			emb_err_set(err, "%s: %s names commit %s, but %s is missing "
			            "(incomplete download?)", arg, refp, hash, snap);
			goto fail;
		}
	} else {
		if (!(snap = emb_str_cat3(snaps, "/", rev)))
			goto oom;
		if (!is_dir(snap)) {
			free(snap);
			snap = explicit_rev ? NULL : only_snapshot(snaps);
		}
	}
	if (!snap) {
		if (!is_dir(repo))
			emb_err_set(err, "%s: no such model directory, and not in the "
			            "Hugging Face cache (no %s; fetch it with "
			            "emb-fetch %s)", arg, repo, id);
		else
			emb_err_set(err, "%s: revision '%s' not in the Hugging Face cache "
			            "(looked for %s and %s/%s)", arg, rev, refp, snaps, rev);
		goto fail;
	}
	free(cache);
	free(repo);
	free(snaps);
	free(refp);
	free(hash);
	*out = snap;
	return 0;
oom:
	emb_err_set(err, "%s: out of memory", arg);
fail:
	free(cache);
	free(repo);
	free(snaps);
	free(refp);
	free(hash);
	free(snap);
	return -1;
}
