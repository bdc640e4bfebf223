/*
 * mpolicy.c - the command policy of the manifest runner (emb(7)
 * SECURITY): the programs a manifest may run, and the options it may
 * give each of them without --trusted.
 */
#include <stdio.h>
#include <string.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

int mf_bad_word_char(int ch)
{
	return strchr("'\"`$;&<>\\(){}*?~#", ch) != NULL;
}

int emb_manifest_name_ok(const char *name)
{
	const char *p = name;

	if (!name || !*name || *name == '/' || strlen(name) > 200)
		return 0;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return 0;
		p += n;
		if (*p)
			p++;
	}
	return 1;
}

/*
 * The allow-list (emb(7) SECURITY): the programs a manifest may run and,
 * for each, the options it may give them without --trusted.  Everything
 * else is refused at load: an option that writes a file (-o, --output,
 * --save-ranges, --force, emb-search --build), emb-validate itself
 * (--keep, --manifest), emb-fetch (the network, $HF_TOKEN), any other
 * emb-* program, and any option a program's own parser would not read
 * the way this one does.  The words are read as emb_cli_parse reads
 * them: exact long names, --NAME=VALUE, -XVALUE, a required value in the
 * next word, operands (files read) anywhere, "--" ending the options.
 */
struct mopt {
	const char *name;
	char shrt;              /* short letter, or 0 */
	char arg;               /* 0: none, 'r': required, 'o': optional (=) */
};

#define G_BASE 1u
#define G_RAW 2u
#define G_B64 4u
#define G_MODEL 8u
#define G_TEXT 16u
#define G_CHUNK 32u
#define G_LATE 64u
#define G_COMPUTE 128u

/* lib/tool/cli.c's common options, by the group that enables them */
static const struct { struct mopt o; unsigned group; } common_ok[] = {
	{ { "help", 'h', 0 }, G_BASE }, { { "version", 0, 0 }, G_BASE },
	{ { "errors", 0, 'r' }, G_BASE }, { { "strict", 0, 0 }, G_BASE },
	{ { "max-line", 0, 'r' }, G_BASE }, { { "progress", 0, 'o' }, G_BASE },
	{ { "no-progress", 0, 0 }, G_BASE }, { { "fields", 0, 'r' }, G_BASE },
	{ { "drop", 0, 'r' }, G_BASE }, { { "raw", 0, 0 }, G_RAW },
	{ { "b64", 0, 0 }, G_B64 }, { { "model", 'm', 'r' }, G_MODEL },
	{ { "max-length", 0, 'r' }, G_TEXT }, { { "no-truncate", 0, 0 }, G_TEXT },
	{ { "prompt", 0, 'r' }, G_TEXT }, { { "prompt-name", 0, 'r' }, G_TEXT },
	{ { "no-prompt", 0, 0 }, G_TEXT }, { { "tokens", 0, 0 }, G_TEXT },
	{ { "chunk", 0, 'r' }, G_CHUNK }, { { "overlap", 0, 'r' }, G_CHUNK },
	{ { "late", 0, 0 }, G_LATE }, { { "compute", 0, 'r' }, G_COMPUTE },
};

static const struct mopt tokenize_ok[] = { { "offsets", 0, 0 }, { 0 } };
static const struct mopt encode_ok[] = {
	{ "pool", 0, 'o' }, { "normalize", 0, 0 }, { "no-normalize", 0, 0 },
	{ "dim", 0, 'r' }, { "threads", 'j', 'r' }, { "batch-tokens", 0, 'r' },
	{ "top-k", 0, 'r' }, { "terms", 0, 0 }, { "weights", 0, 'r' },
	{ "act", 0, 'r' }, { 0 } };
static const struct mopt pool_ok[] = {
	{ "mode", 0, 'r' }, { "normalize", 0, 0 }, { "no-normalize", 0, 0 },
	{ "dim", 0, 'r' }, { "layer-norm", 0, 0 }, { "group-by", 0, 'r' },
	{ 0 } };
static const struct mopt rerank_ok[] = {
	{ "activation", 0, 'r' }, { "top-k", 0, 'r' },
	{ "return-documents", 0, 0 }, { "label", 0, 'r' }, { "logits", 0, 0 },
	{ "threads", 'j', 'r' }, { "batch-tokens", 0, 'r' }, { "maxsim", 0, 0 },
	{ "query", 0, 'r' }, { "skip-special", 0, 0 }, { "skip-prefix", 0, 'o' },
	{ 0 } };
/* not -o/--output, --save-ranges, --force, --weights (checkpoint writing) */
static const struct mopt quantize_ok[] = {
	{ "vectors", 0, 'r' }, { "ranges", 0, 'r' }, { "keep", 0, 0 },
	{ "unpack", 0, 'r' }, { 0 } };
/* not --build, --precision (index writing) */
static const struct mopt search_ok[] = {
	{ "index", 0, 'r' }, { "top-k", 'k', 'r' }, { "score", 0, 'r' },
	{ "threshold", 0, 'r' }, { "search", 0, 'r' }, { "rescore", 0, 'r' },
	{ "rescore-with", 0, 'r' }, { "keep", 0, 0 }, { "threads", 'j', 'r' },
	{ "best-per", 0, 'r' }, { 0 } };

static const struct mprog {
	const char *name;
	unsigned groups;
	const struct mopt *opts;
} manifest_progs[] = {
	{ "emb-tokenize", G_BASE | G_RAW | G_MODEL | G_TEXT | G_CHUNK,
	  tokenize_ok },
	{ "emb-encode", G_BASE | G_RAW | G_B64 | G_MODEL | G_TEXT | G_CHUNK |
	  G_LATE | G_COMPUTE, encode_ok },
	{ "emb-pool", G_BASE | G_B64 | G_MODEL | G_CHUNK | G_LATE, pool_ok },
	{ "emb-rerank", G_BASE | G_MODEL | G_TEXT | G_COMPUTE, rerank_ok },
	{ "emb-quantize", G_BASE | G_MODEL | G_B64, quantize_ok },
	{ "emb-search", G_BASE, search_ok },
};

/* the option of P named N (long, length len) or short letter SH */
static const struct mopt *allowed_opt(const struct mprog *p, const char *n,
                                      size_t len, char sh)
{
	for (size_t i = 0; i < sizeof(common_ok) / sizeof(common_ok[0]); i++) {
		const struct mopt *o = &common_ok[i].o;
		if (!(p->groups & common_ok[i].group))
			continue;
		if (n ? strlen(o->name) == len && !memcmp(o->name, n, len) :
		        o->shrt && o->shrt == sh)
			return o;
	}
	for (const struct mopt *o = p->opts; o->name; o++)
		if (n ? strlen(o->name) == len && !memcmp(o->name, n, len) :
		        o->shrt && o->shrt == sh)
			return o;
	return NULL;
}

/* why an option a program does have is still refused */
static const char *writer_why(const char *w)
{
	static const char *const wl[] = { "output", "save-ranges", "force",
		"build", "keep", "manifest", "trusted", "weights", "precision" };
	size_t n;

	if (w[0] == '-' && w[1] == 'o')
		return "writes files";
	if (w[0] != '-' || w[1] != '-')
		return NULL;
	n = strcspn(w + 2, "=");
	for (size_t i = 0; i < sizeof(wl) / sizeof(wl[0]); i++)
		if (strlen(wl[i]) == n && !strncmp(w + 2, wl[i], n))
			return "writes files";
	return NULL;
}

int emb_manifest_argv_check(size_t *bad, char *why, size_t whylen,
                            const char *const *argv)
{
	const struct mprog *p = NULL;
	const char *prog = argv[0];
	int dashdash = 0;

	*bad = 0;
	for (size_t i = 0; i < sizeof(manifest_progs) / sizeof(manifest_progs[0]);
	     i++)
		if (!strcmp(prog, manifest_progs[i].name))
			p = &manifest_progs[i];
	if (!p) {
		snprintf(why, whylen, "is not a program a manifest may run "
		         "(emb-tokenize, emb-encode, emb-pool, emb-rerank, "
		         "emb-quantize, emb-search; %s): refused unless "
		         "emb-validate --trusted",
		         !strcmp(prog, "emb-fetch") ? "emb-fetch goes to the "
		         "network" : !strcmp(prog, "emb-validate") ? "emb-validate "
		         "writes files and runs commands" : "emb(7) SECURITY");
		return -1;
	}
	for (size_t i = 1; argv[i]; i++) {
		const char *w = argv[i], *eq = NULL;
		const struct mopt *o;

		if (dashdash || w[0] != '-' || !w[1])
			continue;       /* an operand: a file it reads */
		if (!strcmp(w, "--")) {
			dashdash = 1;
			continue;
		}
		if (w[1] == '-') {
			eq = strchr(w + 2, '=');
			o = allowed_opt(p, w + 2, eq ? (size_t)(eq - w - 2) :
			                strlen(w + 2), 0);
		} else {
			o = allowed_opt(p, NULL, 0, w[1]);
			if (o && o->arg)
				eq = w[2] ? w + 2 : NULL;
			else if (o && w[2])
				o = NULL;       /* -xy: not read as two options */
		}
		if (!o || (eq && !o->arg)) {
			const char *ww = writer_why(w);
			*bad = i;
			snprintf(why, whylen, "%s: refused unless emb-validate "
			         "--trusted (a manifest gives %s only the options "
			         "emb(7) SECURITY lists)", ww ? ww : "is not an "
			         "option a manifest may give", prog);
			return -1;
		}
		if (o->arg == 'r' && !eq) {
			if (!argv[i + 1]) {
				*bad = i;
				snprintf(why, whylen, "needs a value");
				return -1;
			}
			i++;    /* its value */
		}
	}
	return 0;
}

