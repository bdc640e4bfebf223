/*
 * static.c - emb-encode with a static embedding model (static.h): the
 * driver's prepare reads a record's text (or input_ids), run tokenizes
 * and averages a batch of records on the thread pool (one record a
 * task: its encoding in the thread's buffers, its vector in its own)
 * and renders the record's output line there too (input_ids and the
 * embedding or token_embeddings, --fields/--drop applied); emit, on the
 * main thread, only appends the ready line, in input order.
 */
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "tool/encode.h"
#include "tool/static.h"

/* one record */
typedef struct srec {
	const char *text;       /* borrowed from the record; NULL: ids given */
	size_t len;
	int32_t *ids;           /* the record's ids (tokenized or given) */
	size_t n, ids_cap;
	size_t truncated, prompt_length;
	float *v;               /* embedding (vn) or rows (n, dim) */
	size_t vcap;
	int vn;
	emb_buf line;           /* the output line, rendered by one() */
	int line_bad;           /* rendering failed: why in line_err */
	emb_err line_err;
} srec;

typedef struct sctx {
	emb_cli *cli;
	const emb_static_run *o;
	emb_text_tok tt;
	emb_static *sm;         /* borrowed from tt */
	emb_pool_spec spec;
	emb_threads *tp;
	emb_encoding *enc;      /* one per thread */
	int dim, threads;
	/* the batch being run */
	emb_cli_rec **rs;
} sctx;

static int grow_ids(srec *o, size_t n, emb_err *err)
{
	int32_t *p;

	if (o->ids && n <= o->ids_cap)
		return 0;
	if (!(p = realloc(o->ids, (n + 16) * sizeof(*p))))
		return emb_err_set(err, "out of memory");
	o->ids = p;
	o->ids_cap = n + 16;
	return 0;
}

static int grow_v(srec *o, size_t n, emb_err *err)
{
	float *p;

	if (n <= o->vcap)
		return 0;
	if (!(p = realloc(o->v, n * sizeof(*p))))
		return emb_err_set(err, "out of memory");
	o->v = p;
	o->vcap = n;
	return 0;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	sctx *c = vc;
	srec *o = r->user;
	int32_t *ids;
	size_t n;

	if (!o) {
		if (!(o = r->user = calloc(1, sizeof(*o))))
			return emb_err_set(err, "out of memory");
		emb_buf_init(&o->line);
	}
	o->text = NULL;
	o->n = o->truncated = o->prompt_length = 0;
	if (r->win) {           /* --chunk: the window's tokens */
		n = r->win->enc.len;
		if (emb_static_check_ids(c->sm, r->win->enc.ids, n, err) < 0 ||
		    grow_ids(o, n, err) < 0)
			return -1;
		memcpy(o->ids, r->win->enc.ids, n * sizeof(*o->ids));
		o->n = n;
		r->cost = n + 1;
		return 0;
	}
	if (emb_record_check_input(r->rec, 1, err) < 0)
		return -1;
	if (emb_record_has(r->rec, "input_ids")) {
		if (emb_record_get_int32s(r->rec, "input_ids", &ids, &n, err) < 0)
			return -1;
		if (emb_static_check_ids(c->sm, ids, n, err) < 0 ||
		    grow_ids(o, n, err) < 0) {
			free(ids);
			return -1;
		}
		memcpy(o->ids, ids, n * sizeof(*ids));
		free(ids);
		o->n = n;
		r->cost = n + 1;
		return 0;
	}
	if (emb_record_has(r->rec, "text_pair"))
		return emb_err_set(err, "a static embedding model embeds single texts: field 'text_pair' is not supported");
	if (emb_record_get_string(r->rec, "text", &o->text, &o->len, err) < 0)
		return -1;
	r->cost = o->len / 4 + 1;       /* about a token per 4 bytes */
	return 0;
}

/* the record's output line into o->line; what emit once wrote into the
 * output itself.  Runs on the worker threads: emb_out_* write only into
 * o->line and read the record, the --fields/--drop selection and the
 * tokenizer, none of which changes while a batch runs */
static void render(sctx *c, emb_cli_rec *r)
{
	static const char *const drop_tok[] = {
		"input_ids", "token_type_ids", "tokens", "truncated",
		"prompt_length", NULL };
	srec *o = r->user;
	emb_buf *b = &o->line;

	o->line_bad = 0;
	b->len = 0;
	emb_buf_select(b, c->cli->fields);
	o->line_err.msg[0] = 0;
	if (!r->win) {
		emb_out_begin(b, r->rec, o->text ? drop_tok : NULL);
	} else if (emb_window_begin(b, r->win, 1, &o->line_err) < 0) {
		o->line_bad = 1;
		return;
	}
	if (o->text) {
		emb_out_int32s(b, "input_ids", o->ids, o->n);
		if (emb_out_tok_fields(b, c->cli->tokens ? c->tt.tok : NULL, o->ids,
		                       o->n, o->truncated, o->prompt_length,
		                       &o->line_err) < 0) {
			o->line_bad = 1;
			return;
		}
	}
	if (c->o->pool)
		emb_out_floats(b, "embedding", o->v, (size_t)o->vn, c->cli->b64);
	else
		emb_out_matrix(b, "token_embeddings", o->v, o->n, (size_t)c->dim,
		               c->cli->b64);
	emb_out_end(b);
}

/* record i of the batch: tokenize, average (thread tid's buffers), render */
static void one(sctx *c, emb_cli_rec *r, int tid)
{
	srec *o = r->user;
	emb_encoding *enc = &c->enc[tid];
	size_t d = (size_t)c->dim;
	float *v;
	int vn;

	if (o->text) {
		if (emb_text_tok_text(enc, &o->prompt_length, &c->tt, o->text,
		                      o->len, NULL, 0, &r->err) < 0 ||
		    grow_ids(o, enc->len, &r->err) < 0)
			goto bad;
		memcpy(o->ids, enc->ids, enc->len * sizeof(*o->ids));
		o->n = enc->len;
		o->truncated = enc->truncated;
	}
	if (!c->o->pool) {
		// ids (n) -> rows (n, dim)
		if (grow_v(o, o->n * d + 1, &r->err) < 0)
			goto bad;
		emb_static_rows(o->v, c->sm, o->ids, o->n);
		render(c, r);
		return;
	}
	if (!(v = malloc(d * sizeof(float)))) {
		emb_err_set(&r->err, "out of memory");
		goto bad;
	}
	// ids (n) -> v (dim): the mean, then Dense, Normalize, --dim
	emb_static_mean(v, c->sm, o->ids, o->n);
	if (emb_pool_finish(&v, &vn, &c->spec, v, c->dim, &r->err) < 0)
		goto bad;
	free(o->v);
	o->v = v;
	o->vcap = (size_t)vn;
	o->vn = vn;
	render(c, r);
	return;
bad:
	r->bad = 1;
}

static void task(void *vc, size_t begin, size_t end, int tid)
{
	sctx *c = vc;

	for (size_t i = begin; i < end; i++)
		one(c, c->rs[i], tid);
}

static int run(void *vc, emb_cli_rec **rs, int n, emb_err *err)
{
	sctx *c = vc;

	(void)err;
	c->rs = rs;
	emb_threads_for(c->tp, (size_t)n, 16, task, c);
	return 0;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	srec *o = r->user;

	(void)vc;
	if (o->line_bad) {
		*err = o->line_err;
		return -1;
	}
	emb_buf_append(b, &o->line);
	/* a long record's line is not kept for the records after it */
	if (o->line.cap > ((size_t)1 << 20))
		emb_buf_release(&o->line);
	return 0;
}

static void free_user(void *vc, void *u)
{
	srec *o = u;

	(void)vc;
	if (!o)
		return;
	free(o->ids);
	free(o->v);
	emb_buf_release(&o->line);
	free(o);
}

int emb_static_encode(emb_cli *cli, const char *dir, const emb_static_run *o)
{
	emb_cli_ops ops = { prepare, run, emit, free_user, 1 << 16, 8192 };
	sctx c;
	emb_err err;
	int status, pd;

	memset(&c, 0, sizeof(c));
	err.msg[0] = 0;
	c.cli = cli;
	c.o = o;
	if (o->modes && o->modes != EMB_POOL_MEAN)
		emb_cli_usage_error(cli, "a static embedding model averages its tokens: --pool takes no other mode than mean");
	emb_text_tok_setup(&c.tt, cli, dir, 0);
	c.sm = c.tt.sm;
	if (!c.sm)
		emb_cli_die(cli, EMB_EXIT_MODEL, "%s: not a static embedding model", dir);
	c.dim = emb_static_dim(c.sm);
	emb_pool_spec_static(&c.spec, c.sm, &c.tt.st, o->normalize, o->dim);
	pd = emb_pool_spec_dim(&c.spec, c.dim);
	if (o->pool && c.spec.n_dense && c.spec.dense[0].in != c.dim)
		emb_cli_die(cli, EMB_EXIT_MODEL, "%s: the Dense module takes %d values, the static embedding has %d",
		            dir, c.spec.dense[0].in, c.dim);
	if (o->pool && o->dim > pd)
		emb_cli_usage_error(cli, "--dim %d is larger than the embedding dimension %d",
		                    o->dim, pd);
	c.threads = o->threads > 0 ? o->threads : emb_online_cpus();
	if (emb_threads_new(&c.tp, c.threads, &err) < 0)
		emb_cli_die(cli, EMB_EXIT_MODEL, "%s", err.msg);
	c.threads = emb_threads_count(c.tp);
	if (!(c.enc = calloc((size_t)c.threads, sizeof(*c.enc))))
		emb_cli_die(cli, EMB_EXIT_MODEL, "out of memory");
	for (int i = 0; i < c.threads; i++)
		emb_encoding_init(&c.enc[i]);
	status = emb_cli_run(cli, &ops, &c);
	for (int i = 0; i < c.threads; i++)
		emb_encoding_release(&c.enc[i]);
	free(c.enc);
	emb_threads_free(c.tp);
	emb_text_tok_release(&c.tt);
	return status;
}

int emb_static_pool_record(float **v, int *vn, const emb_pool_spec *p,
                           const emb_record *rec, const float *tok,
                           size_t rows, size_t cols, emb_err *err)
{
	int d = emb_static_dim(p->sm), same = 0;
	int32_t *ids = NULL;
	float *mine = NULL, *m;
	size_t n;
	emb_err ign;

	if (rows == 0)
		return emb_pool_apply(v, vn, p, NULL, 0, d, 0, err);
	if ((size_t)d == cols && emb_record_has(rec, "input_ids") &&
	    emb_record_get_int32s(rec, "input_ids", &ids, &n, &ign) == 0 &&
	    n == rows && emb_static_check_ids(p->sm, ids, n, &ign) == 0 &&
	    (mine = malloc(rows * cols * sizeof(float)))) {
		// ids (n) -> mine (n, d): equal to tok bit for bit?
		emb_static_rows(mine, p->sm, ids, n);
		same = !memcmp(mine, tok, rows * cols * sizeof(float));
	}
	free(mine);
	if (!same) {
		free(ids);
		return emb_pool_apply(v, vn, p, tok, (int)rows, (int)cols, 0, err);
	}
	if (!(m = malloc((size_t)d * sizeof(float)))) {
		free(ids);
		return emb_err_set(err, "out of memory");
	}
	emb_static_mean(m, p->sm, ids, n);
	free(ids);
	return emb_pool_finish(v, vn, p, m, d, err);
}
