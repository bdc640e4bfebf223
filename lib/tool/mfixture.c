/*
 * mfixture.c - the synthetic models of a manifest's cases, made from
 * their recipes (emb_synth_materialize) inside the run directory, and
 * made again only when the recipe changed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

/* a whole file the run made or a recipe (regular, at most 256 MiB), or
 * NULL */
char *mf_slurp(const char *path, size_t *len, emb_err *err)
{
	return emb_file_read(NULL, path, (size_t)256 << 20, len, err);
}

int mf_mkdir_p(const char *dir)
{
	char *p = emb_xstrdup(dir);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || !*s) {
			char c = *s;

			*s = 0;
			if (mkdir(p, 0777) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return rc;
}

/* the directory holding the recipe's "base": walk up from the recipe */
static char *find_root(const char *recipe, const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, 0, NULL);
	const char *base = j ? json_string_value(json_object_get(j, "base"))
	                     : NULL;
	char *dir = emb_xstrdup(recipe), *s;
	struct stat sb;

	s = strrchr(dir, '/');
	if (s)
		*s = 0;
	else
		strcpy(dir, ".");
	if (base && base[0] != '/') {
		char *d = emb_xstrdup(dir);

		for (;;) {
			char *cand = emb_xasprintf("%s/%s", d, base);
			int ok = stat(cand, &sb) == 0 && S_ISDIR(sb.st_mode);

			free(cand);
			if (ok) {
				free(dir);
				json_decref(j);
				return d;
			}
			s = strrchr(d, '/');
			if (!s || s == d)
				break;
			*s = 0;
		}
		free(d);
	}
	json_decref(j);
	return dir;
}

int mf_ensure_synth(const struct mcase *c, emb_err *err)
{
	size_t rlen = 0, dlen = 0;
	char *recipe = mf_slurp(c->synth, &rlen, err), *done = NULL, *donepath;
	char *tmp;
	char *root = NULL;
	struct stat sb;
	FILE *fp;
	int rc = -1;

	if (!recipe)
		return -1;
	donepath = emb_xasprintf("%s/.done", c->model);
	tmp = emb_xasprintf("%s/.done.tmp", c->model);
	done = mf_slurp(donepath, &dlen, NULL);
	if (done && dlen == rlen && !memcmp(done, recipe, rlen)) {
		rc = 0;
		goto out;
	}
	if (stat(c->model, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			emb_err_set(err, "%s: not a directory", c->model);
			goto out;
		}
		if (done) {
			/* ours, from an older recipe: start afresh */
			if (emb_rm_tree(c->model)) {
				emb_err_set(err, "%s: cannot remove: %s",
				            c->model, strerror(errno));
				goto out;
			}
		} else if (rmdir(c->model) < 0 && errno != ENOENT) {
			emb_err_set(err, "%s: exists and was not made by a "
			            "synth recipe; refusing to write into it",
			            c->model);
			goto out;
		}
	}
	if (mf_mkdir_p(c->model) < 0) {
		emb_err_set(err, "%s: %s", c->model, strerror(errno));
		goto out;
	}
	root = c->synth_root ? emb_xstrdup(c->synth_root)
	                     : find_root(c->synth, recipe, rlen);
	if (emb_synth_materialize(c->synth, root, c->model, err) < 0)
		goto out;
	fp = fopen(tmp, "wb");
	if (!fp || fwrite(recipe, 1, rlen, fp) != rlen || fclose(fp) != 0 ||
	    rename(tmp, donepath) < 0) {
		emb_err_set(err, "%s: %s", donepath, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(root);
	free(recipe);
	free(done);
	free(donepath);
	free(tmp);
	return rc;
}

