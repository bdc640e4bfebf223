/*
 * fuzz_paths.c - the path and option checks of the trust boundary
 * (emb(7) SECURITY), against independent restatements of their rules.
 * Byte 0 picks the check, the rest is its input:
 *
 *   0  NAME: emb_manifest_name_ok (a synth: checkpoint name): when it
 *      says yes, RUN/models/NAME, normalized lexically, stays below
 *      RUN/models/, and no component is empty, "." or "..";
 *   1  PROG \n WORD: emb_manifest_word_refused: every word that emb's own
 *      option parser (exact long names, -XVALUE short options), or
 *      getopt_long's unique prefixes for emb-validate, would read as an
 *      option that writes files (-o, --output, --save-ranges, --force;
 *      emb-validate's --keep, --manifest, --trusted) is refused;
 *   2  REAL \n ROOT: emb_path_within: yes only for REAL strictly below
 *      ROOT, or REAL = P/blobs/NAME when ROOT = P/snapshots/REV.
 */
#include "fuzz.h"

/* RUN/models/NAME normalized: 1 when it stays below RUN/models */
static int stays_below(const char *name)
{
	int depth = 0;
	const char *p = name;

	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			depth--;
		else if (n && !(n == 1 && p[0] == '.'))
			depth++;
		if (depth < 0)
			return 0;
		p += n;
		if (*p)
			p++;
	}
	return depth > 0;
}

static int writes_cli(const char *w)
{
	static const char *const lng[] = { "output", "save-ranges", "force" };

	if (w[0] == '-' && w[1] == 'o')
		return 1;
	if (w[0] != '-' || w[1] != '-')
		return 0;
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(lng[i]);
		if (!strncmp(w + 2, lng[i], n) && (!w[2 + n] || w[2 + n] == '='))
			return 1;
	}
	return 0;
}

/* emb-validate's long options as getopt_long resolves W: 1 when W names
 * --keep, --manifest or --trusted (exactly or by a unique prefix) */
static int writes_validate(const char *w)
{
	static const char *const opts[] = {
		"atol", "min-cos", "tol", "field", "quiet", "max-line",
		"manifest", "case", "keep", "trusted", "help", "version"
	};
	size_t n, hits = 0, hit = 0;

	if (w[0] != '-' || w[1] != '-' || !w[2])
		return 0;
	n = strcspn(w + 2, "=");
	for (size_t i = 0; i < 12; i++) {
		if (strlen(opts[i]) == n && !strncmp(w + 2, opts[i], n)) {
			hits = 1;
			hit = i;
			break;
		}
		if (!strncmp(w + 2, opts[i], n)) {
			hits++;
			hit = i;
		}
	}
	return hits == 1 && (hit == 6 || hit == 8 || hit == 9);
}

static int within_ref(const char *real, const char *root)
{
	size_t n = strlen(root);
	const char *r, *s;

	if (!strcmp(root, "/"))
		return real[0] == '/' && real[1];
	if (!strncmp(real, root, n) && real[n] == '/' && real[n + 1])
		return 1;
	r = strrchr(root, '/');
	if (!r || r == root)
		return 0;
	/* root = P/snapshots/REV: s..r is "snapshots" after a '/' */
	s = r - 9;
	if (s <= root || strncmp(s, "snapshots", 9) || s[-1] != '/')
		return 0;
	n = (size_t)(s - 1 - root);
	if (n == 0 || strncmp(real, root, n) || strncmp(real + n, "/blobs/", 7))
		return 0;
	s = real + n + 7;
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int FUZZ_ENTRY(paths)(const uint8_t *data, size_t size)
{
	char *buf, *a, *b;

	if (size < 1 || size > 4096)
		return 0;
	buf = malloc(size);
	if (!buf)
		abort();
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = 0;
	a = buf;
	b = strchr(buf, '\n');
	if (b)
		*b++ = 0;
	switch (data[0] % 3) {
	case 0:
		if (b)
			b[-1] = '\n';   /* a newline is part of the name */
		if (emb_manifest_name_ok(a)) {
			FUZZ_CHECK(a[0] != '/');
			FUZZ_CHECK(stays_below(a));
			FUZZ_CHECK(!strstr(a, "//") && !strstr(a, "/../") &&
			           !strstr(a, "/./"));
			FUZZ_CHECK(!strchr(a, '\n'));
			fuzz_note("paths", "name ok");
		}
		break;
	case 1: {
		const char *why;
		if (!b)
			break;
		why = emb_manifest_word_refused(a, b);
		if (strncmp(a, "emb-", 4) || !a[4] || strchr(a, '/')) {
			FUZZ_CHECK(why != NULL);
			break;
		}
		if (!strcmp(a, "emb-validate"))
			FUZZ_CHECK(!writes_validate(b) || why);
		else
			FUZZ_CHECK(!writes_cli(b) || why);
		fuzz_note("paths", why ? why : "word ok");
		break;
	}
	case 2:
		if (!b || a[0] != '/' || b[0] != '/')
			break;
		FUZZ_CHECK(emb_path_within(a, b) == within_ref(a, b));
		break;
	}
	free(buf);
	return 0;
}
