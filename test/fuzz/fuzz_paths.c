/*
 * fuzz_paths.c - the path and option checks of the trust boundary
 * (emb(7) SECURITY), against independent restatements of their rules.
 * Byte 0 picks the check, the rest is its input:
 *
 *   0  NAME: emb_manifest_name_ok (a synth: checkpoint name): when it
 *      says yes, RUN/models/NAME, normalized lexically, stays below
 *      RUN/models/, and no component is empty, "." or "..";
 *   1  PROG \n WORD...: emb_manifest_argv_check, the allow-list: PROG
 *      is one of the six programs a manifest may run (never emb-validate
 *      or emb-fetch), and no word that emb's own option parser (exact
 *      long names, -XVALUE short options) would read as an option that
 *      writes files (-o, --output, --save-ranges, --force, --build) is
 *      let through in an option's place;
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
	static const char *const lng[] = { "output", "save-ranges", "force",
	                                   "build" };

	if (w[0] == '-' && w[1] == 'o')
		return 1;
	if (w[0] != '-' || w[1] != '-')
		return 0;
	for (size_t i = 0; i < 4; i++) {
		size_t n = strlen(lng[i]);
		if (!strncmp(w + 2, lng[i], n) && (!w[2 + n] || w[2 + n] == '='))
			return 1;
	}
	return 0;
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
		const char *argv[64];
		size_t n = 0, bad;
		char why[512];
		int r;
		if (!b)
			break;
		argv[n++] = a;
		for (char *w = b; w && n < 63; ) {
			char *nl = strchr(w, '\n');
			if (nl)
				*nl++ = 0;
			argv[n++] = w;
			w = nl;
		}
		argv[n] = NULL;
		r = emb_manifest_argv_check(&bad, why, sizeof(why), argv);
		if (r == 0) {
			FUZZ_CHECK(!strncmp(a, "emb-", 4));
			FUZZ_CHECK(strcmp(a, "emb-validate") && strcmp(a, "emb-fetch"));
			/* the first word is always read as an option */
			FUZZ_CHECK(!writes_cli(argv[1]));
		} else {
			FUZZ_CHECK(bad < n);
		}
		fuzz_note("paths", r ? why : "words ok");
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
