/*
 * mparse.c - a manifest read and checked into cases, all of it before
 * anything runs: a malformed one is exit 3 with FILE:LINE and the key.
 * Its size, nesting and number of cases are capped first, so that no
 * manifest costs more than linear time.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

static char *resolve(const char *dir, const char *p)
{
	if (p[0] == '/' || !strcmp(dir, "."))
		return emb_xstrdup(p);
	return emb_xasprintf("%s/%s", dir, p);
}

static void case_release(struct mcase *c)
{
	free(c->name);
	free(c->model);
	free(c->model_name);
	free(c->synth);
	free(c->synth_root);
	free(c->input);
	free(c->golden);
	for (int i = 0; i < c->nstages; i++)
		mf_free_strv(c->stages[i]);
	mf_free_strv(c->args);
	mf_free_strv(c->input_fields);
	mf_free_strv(c->fields);
	for (size_t i = 0; i < c->ntols; i++)
		free((char *)c->tols[i].field);
	free(c->tols);
	free(c->out);
	free(c->errf);
}

void mf_release(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		case_release(&m->c[i]);
	free(m->c);
	free(m->dir);
}

/* "emb-a x | emb-b" -> stages */
static int get_command(struct yctx *y, struct mcase *c, const yaml_node_t *n)
{
	const char *s = mf_scalar(n);
	const char *p;

	if (!s || !*s)
		return mf_yerr(y, n, "command", "expected a string");
	for (p = s; *p; p++)
		if (mf_bad_word_char((unsigned char)*p))
			return mf_yerr(y, n, "command", "'%c' is not allowed: the "
			               "command is not run by a shell (put option "
			               "values with blanks in 'args')", *p);
	for (int i = 0; i < c->nstages; i++)
		mf_free_strv(c->stages[i]);
	c->nstages = 0;
	p = s;
	for (;;) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p), nw = 0;
		char *seg = emb_xcalloc(len + 1, 1), *save = NULL, *w;
		char **words = emb_xcalloc(len / 2 + 2, sizeof(*words));

		memcpy(seg, p, len);
		for (w = strtok_r(seg, " \t\r\n", &save); w;
		     w = strtok_r(NULL, " \t\r\n", &save))
			words[nw++] = emb_xstrdup(w);
		free(seg);
		if (!nw) {
			free(words);
			return mf_yerr(y, n, "command", "empty pipeline stage");
		}
		if (c->nstages == MAX_STAGES) {
			mf_free_strv(words);
			return mf_yerr(y, n, "command", "more than %d stages",
			               MAX_STAGES);
		}
		c->stages[c->nstages++] = words;
		if (strncmp(words[0], "emb-", 4) || strchr(words[0], '/') ||
		    !words[0][4])
			return mf_yerr(y, n, "command", "'%.60s' is not an emb-* "
			               "command", words[0]);
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

static const char *case_keys[] = {
	"name", "model", "synth", "synth_root", "input", "input_fields",
	"golden", "golden_case", "command", "args", "tolerance", "atol",
	"min_cos", "fields", "expect_exit", "timeout", "limit",
	"description", "input_only", NULL
};

static int check_file(struct yctx *y, const yaml_node_t *n, const char *key,
                      const char *path, int want_dir)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return mf_yerr(y, n, key, "%.200s: %s", path, strerror(errno));
	if (want_dir ? !S_ISDIR(sb.st_mode) : S_ISDIR(sb.st_mode))
		return mf_yerr(y, n, key, "%.200s: %s", path, want_dir ?
		               "not a directory" : "is a directory");
	/* a FIFO or device would make the run wait in open() */
	if (!want_dir && !S_ISREG(sb.st_mode))
		return mf_yerr(y, n, key, "%.200s: not a regular file", path);
	return 0;
}

static int parse_case(struct yctx *y, struct mcase *c, const yaml_node_t *n)
{
	const yaml_node_t *kn[32] = { 0 }; /* value node per case_keys[] */
	const yaml_node_t *keyn[32] = { 0 };
	char *tmp = NULL;

	c->golden_case = -1;
	c->atol = NAN;
	c->min_cos = NAN;
	c->timeout = 600;
	c->line = mf_line_of(n);
	if (!n || n->type != YAML_MAPPING_NODE)
		return mf_yerr(y, n, NULL, "each case must be a mapping");
	/* the name first, for the messages */
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		const char *ks = mf_scalar(yaml_document_get_node(y->doc, p->key));
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);

		if (ks && !strcmp(ks, "name") && !c->name && mf_scalar(v) &&
		    *mf_scalar(v)) {
			c->name = emb_xstrdup(mf_scalar(v));
			y->cname = c->name;
		}
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		const char *ks = mf_scalar(k);
		int i;

		for (i = 0; ks && case_keys[i]; i++)
			if (!strcmp(case_keys[i], ks))
				break;
		if (!ks || !case_keys[i])
			return mf_yerr(y, k, ks, "unknown key");
		if (kn[i])
			return mf_yerr(y, k, ks, "given twice");
		kn[i] = yaml_document_get_node(y->doc, p->value);
		keyn[i] = k;
	}
	if (!kn[0])
		return mf_yerr(y, n, "name", "missing (every case needs a name)");
	if (mf_get_str(y, kn[0], "name", &c->name) < 0)
		return -1;
	y->cname = c->name;
	if (c->name[0] == '.' ||
	    strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                    "0123456789._+-") != strlen(c->name))
		return mf_yerr(y, kn[0], "name", "use only letters, digits and "
		               "'._+-' (not first '.')");
	for (size_t i = 0; i < y->m->n && &y->m->c[i] != c; i++)
		if (!strcmp(y->m->c[i].name, c->name))
			return mf_yerr(y, kn[0], "name", "duplicate case name (also "
			               "on line %d)", y->m->c[i].line);
	for (int i = 1; case_keys[i]; i++) {
		const char *key = case_keys[i];
		const yaml_node_t *v = kn[i];
		int r = 0;

		if (!v)
			continue;
		if (!strcmp(key, "model") || !strcmp(key, "synth") ||
		    !strcmp(key, "synth_root") || !strcmp(key, "input") ||
		    !strcmp(key, "golden")) {
			char **dst = !strcmp(key, "model") ? &c->model :
			             !strcmp(key, "synth") ? &c->synth :
			             !strcmp(key, "synth_root") ? &c->synth_root :
			             !strcmp(key, "input") ? &c->input : &c->golden;

			r = mf_get_str(y, v, key, &tmp);
			if (!r) {
				*dst = resolve(y->m->dir, tmp);
				if (dst == &c->model) {
					free(c->model_name);
					c->model_name = emb_xstrdup(tmp);
					c->model_line = mf_line_of(v);
				}
				free(tmp);
				tmp = NULL;
			}
		} else if (!strcmp(key, "golden_case")) {
			const char *s = mf_scalar(v);
			size_t j;

			for (j = 0; s && j < y->m->n && &y->m->c[j] != c; j++)
				if (!strcmp(y->m->c[j].name, s))
					break;
			if (!s || j >= y->m->n || &y->m->c[j] == c)
				return mf_yerr(y, v, key, "'%.60s' is not the name "
				               "of an earlier case", s ? s : "?");
			c->golden_case = (int)j;
		} else if (!strcmp(key, "command")) {
			r = get_command(y, c, v);
		} else if (!strcmp(key, "args") && mf_scalar(v)) {
			/* "args: -j 2": split on blanks */
			r = mf_get_list_words(y, v, key, &c->args);
		} else if (!strcmp(key, "args")) {
			r = mf_get_list(y, v, key, 0, &c->args);
		} else if (!strcmp(key, "input_fields")) {
			r = mf_get_list(y, v, key, 1, &c->input_fields);
		} else if (!strcmp(key, "fields")) {
			r = mf_get_list(y, v, key, 1, &c->fields);
			for (size_t j = 0; !r && c->fields[j]; j++)
				if (!emb_validate_field_name(c->fields[j]))
					return mf_yerr(y, v, key, "unknown field "
					               "'%.60s' (known: %s)",
					               c->fields[j],
					               emb_validate_field_list());
		} else if (!strcmp(key, "tolerance")) {
			r = mf_get_tols(y, c, v, key, 0);
		} else if (!strcmp(key, "min_cos")) {
			r = mf_get_tols(y, c, v, key, 1);
		} else if (!strcmp(key, "atol")) {
			r = mf_get_num(y, v, key, &c->atol);
		} else if (!strcmp(key, "expect_exit")) {
			r = mf_get_int(y, v, key, &c->expect_exit);
		} else if (!strcmp(key, "timeout")) {
			r = mf_get_num(y, v, key, &c->timeout);
		} else if (!strcmp(key, "limit")) {
			r = mf_get_count(y, v, key, &c->limit);
		} else if (!strcmp(key, "input_only")) {
			r = mf_get_flag(y, v, key, &c->input_only);
		}
		if (r < 0)
			return -1;
	}
	if (!c->input)
		return mf_yerr(y, n, "input", "missing");
	if (!c->nstages)
		return mf_yerr(y, n, "command", "missing");
	if (!c->golden == (c->golden_case < 0))
		return mf_yerr(y, n, "golden", "exactly one of 'golden' and "
		               "'golden_case' is needed");
	if (c->synth && !c->model)
		return mf_yerr(y, kn[2], "synth", "needs 'model' (the name of the "
		               "checkpoint to build)");
	if (c->synth && !emb_manifest_name_ok(c->model_name))
		return mf_yerr(y, kn[1], "model", "with 'synth', the name of the "
		               "checkpoint built inside the run directory: a relative "
		               "path without '.' or '..' components, not '%.60s'",
		               c->model_name);
	for (int s = 0; s < c->nstages && !y->m->trusted; s++) {
		/* each stage's words, then the args it is given too */
		size_t nw = mf_strv_len(c->stages[s]), na = mf_strv_len(c->args), bad;
		const char **argv = emb_xcalloc(nw + na + 1, sizeof(*argv));
		char why[EMB_ERR_MAX];
		int r;

		for (size_t i = 0; i < nw; i++)
			argv[i] = c->stages[s][i];
		for (size_t i = 0; i < na; i++)
			argv[nw + i] = c->args[i];
		r = emb_manifest_argv_check(&bad, why, sizeof(why), argv);
		free(argv);
		if (r < 0 && bad >= nw)
			return mf_yerr(y, kn[9], "args", "'%.60s' (given to %s) %s",
			               c->args[bad - nw], c->stages[s][0], why);
		if (r < 0 && bad)
			return mf_yerr(y, kn[8], "command", "'%s': '%.60s' %s",
			               c->stages[s][0], c->stages[s][bad], why);
		if (r < 0)
			return mf_yerr(y, kn[8], "command", "'%.60s' %s",
			               c->stages[s][0], why);
	}
	if (c->synth_root && !c->synth)
		return mf_yerr(y, kn[3], "synth_root", "only makes sense with "
		               "'synth'");
	if (check_file(y, kn[4], "input", c->input, 0) < 0)
		return -1;
	if (c->golden && check_file(y, kn[6], "golden", c->golden, 0) < 0)
		return -1;
	if (c->synth && check_file(y, kn[2], "synth", c->synth, 0) < 0)
		return -1;
	if (c->synth_root &&
	    check_file(y, kn[3], "synth_root", c->synth_root, 1) < 0)
		return -1;
	if (c->model && !c->synth &&
	    check_file(y, kn[1], "model", c->model, 1) < 0)
		return -1;
	(void)keyn;
	y->cname = NULL;
	return 0;
}

static void yaml_error(emb_err *err, const char *path,
                       const yaml_parser_t *p)
{
	emb_err_set(err, "%s:%zu: invalid YAML: %s%s%s", path,
	            (size_t)p->problem_mark.line + 1,
	            p->problem ? p->problem : "parse error",
	            p->context ? " " : "", p->context ? p->context : "");
}

/*
 * One pass over the events of TEXT before the loader builds anything:
 * nesting deeper than MANIFEST_DEPTH and aliases are refused as soon as
 * the parser meets them.  (libyaml's scanner keeps one entry per open
 * flow level and visits them all for each token: deep nesting alone
 * would make the load slower than quadratic.)
 */
static int yaml_prescan(const char *path, const char *text, size_t len,
                        emb_err *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, rc = 1;

	if (!yaml_parser_initialize(&p))
		return emb_err_set(err, "%s: cannot initialize the YAML parser",
		                   path);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (rc > 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			yaml_error(err, path, &p);
			rc = -1;
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > MANIFEST_DEPTH)
				rc = emb_err_set(err, "%s:%zu: nested deeper than %d "
				                 "levels (a manifest needs 4)", path,
				                 (size_t)ev.start_mark.line + 1,
				                 MANIFEST_DEPTH);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_ALIAS_EVENT:
			rc = emb_err_set(err, "%s:%zu: an alias (*name): anchors and "
			                 "aliases are not allowed in a manifest", path,
			                 (size_t)ev.start_mark.line + 1);
			break;
		case YAML_STREAM_END_EVENT:
			rc = 0;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

int mf_parse(struct manifest *m, const char *path, int trusted,
             emb_err *err)
{
	char *text;
	size_t len;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *cases = NULL;
	struct yctx y = { m, &doc, err, NULL };
	char *slash;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	m->path = path;
	m->trusted = trusted;
	m->dir = emb_xstrdup(path);
	slash = strrchr(m->dir, '/');
	if (!slash)
		strcpy(m->dir, ".");
	else if (slash == m->dir)
		slash[1] = 0;
	else
		*slash = 0;
	if (!(text = emb_file_read(NULL, path, MANIFEST_MAX, &len, err)))
		return -1;
	if (yaml_prescan(path, text, len, err) < 0) {
		free(text);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		free(text);
		return emb_err_set(err, "%s: cannot initialize the YAML parser",
		                   path);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_error(err, path, &parser);
		yaml_parser_delete(&parser);
		free(text);
		return -1;
	}
	yaml_parser_delete(&parser);
	free(text);
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		mf_yerr(&y, NULL, NULL, "empty manifest (expected 'cases:')");
		goto done;
	}
	if (root->type != YAML_MAPPING_NODE) {
		mf_yerr(&y, root, NULL, "expected a mapping with 'cases'");
		goto done;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		const char *ks = mf_scalar(k);

		if (ks && !strcmp(ks, "cases") && !cases) {
			cases = yaml_document_get_node(&doc, p->value);
			continue;
		}
		mf_yerr(&y, k, ks, ks && !strcmp(ks, "cases") ? "given twice" :
		        "unknown key (expected 'cases')");
		goto done;
	}
	if (!cases) {
		mf_yerr(&y, root, "cases", "missing");
		goto done;
	}
	if (cases->type != YAML_SEQUENCE_NODE ||
	    cases->data.sequence.items.top == cases->data.sequence.items.start) {
		mf_yerr(&y, cases, "cases", "expected a non-empty list of cases");
		goto done;
	}
	if (cases->data.sequence.items.top - cases->data.sequence.items.start >
	    MANIFEST_CASES) {
		mf_yerr(&y, cases, "cases", "more than %d cases", MANIFEST_CASES);
		goto done;
	}
	m->c = emb_xcalloc((size_t)(cases->data.sequence.items.top -
	                        cases->data.sequence.items.start),
	               sizeof(*m->c));
	for (yaml_node_item_t *i = cases->data.sequence.items.start;
	     i < cases->data.sequence.items.top; i++) {
		struct mcase *c = &m->c[m->n++];

		if (parse_case(&y, c, yaml_document_get_node(&doc, *i)) < 0)
			goto done;
	}
	rc = 0;
done:
	yaml_document_delete(&doc);
	return rc;
}

