/*
 * quantvec->c - emb-quantize's vector program: each record's embedding
 * quantized to int8, uint8, binary or ubinary as sentence-transformers'
 * quantize_embeddings does (--vectors), or a quantized field back to an
 * embedding (--unpack); the int8/uint8 ranges from --ranges (a JSON
 * object or embedding records) or from the whole input, read twice
 * (stdin spooled to TMPDIR), and --save-ranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "tool/quantize.h"

typedef struct item {
	int32_t *q[4];          /* per kind */
	float *v;               /* --unpack */
	int dim;
} item;

static void set_dim(emb_quant_cmd *c, int dim)
{
	c->dim = dim;
	if (!(c->mins = malloc((size_t)dim * sizeof(float))) ||
	    !(c->maxs = malloc((size_t)dim * sizeof(float))))
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
	emb_vq_ranges_init(c->mins, c->maxs, dim);
}

/* calibrate on the embedding records of PATH (NULL/"-": stdin); -1: an
 * operand that cannot be read (said here, exit 5 at the end) */
static int ranges_from_records(emb_quant_cmd *c, const char *path)
{
	emb_reader *rd;
	emb_record *rec = emb_record_new();
	emb_err err = { "" };
	const char *line;
	size_t len, n = 0;
	int rc;

	if (!rec)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
	if (emb_reader_open(&rd, path, c->cli.max_line, &err) < 0) {
		emb_record_free(rec);
		if (c->ranges_file)
			emb_cli_die(&c->cli, EMB_EXIT_INPUT, "%s", err.msg);
		fprintf(stderr, "%s: error: %s\n", c->cli.prog, err.msg);
		return -1;
	}
	while ((rc = emb_reader_next(rd, &line, &len, &err)) != 0) {
		float *v = NULL;
		size_t rows, cols;
		if (rc < 0 || emb_record_parse(rec, line, len, &err) < 0 ||
		    emb_record_get_floats(rec, "embedding", &v, &rows, &cols,
		                          &err) < 0) {
			/* bad records are reported by the main pass */
			if (c->ranges_file)
				emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s:%zu: %s",
				            emb_reader_name(rd), emb_reader_lineno(rd),
				            err.msg);
			continue;
		}
		if (!c->dim && rows == 1 && cols > 0)
			set_dim(c, (int)cols);
		if (rows == 1 && cols == (size_t)c->dim) {
			emb_vq_ranges_add(c->mins, c->maxs, v, c->dim);
			n++;
		} else if (c->ranges_file) {
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s:%zu: embedding has "
			            "%zu values, the first record %d",
			            emb_reader_name(rd), emb_reader_lineno(rd),
			            rows * cols, c->dim);
		}
		free(v);
	}
	if (n == 0 && c->ranges_file)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: no embedding records to "
		            "take ranges from", emb_reader_name(rd));
	emb_reader_free(rd);
	emb_record_free(rec);
	return 0;
}

/* --ranges FILE: {"ranges": [[min...], [max...]]} or JSONL records */
static void load_ranges(emb_quant_cmd *c)
{
	json_error_t je;
	emb_err err = { "" };
	json_t *root, *r, *a, *b;
	int fd;

	/* a regular file (it is read twice), opened without waiting */
	if ((fd = emb_file_open(NULL, c->ranges_file, NULL, &err)) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_INPUT, "%s", err.msg);
	root = json_loadfd(fd, 0, &je);
	close(fd);

	if (!root || !json_is_object(root) ||
	    !(r = json_object_get(root, "ranges"))) {
		json_decref(root);
		(void)ranges_from_records(c, c->ranges_file);
		return;
	}
	a = json_array_get(r, 0);
	b = json_array_get(r, 1);
	if (!json_is_array(r) || json_array_size(r) != 2 || !json_is_array(a) ||
	    !json_is_array(b) || json_array_size(a) == 0 ||
	    json_array_size(a) != json_array_size(b) ||
	    json_array_size(a) > 1 << 24)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: field 'ranges' must be "
		            "two arrays of numbers of the same length",
		            c->ranges_file);
	set_dim(c, (int)json_array_size(a));
	for (int i = 0; i < c->dim; i++) {
		json_t *x = json_array_get(a, (size_t)i), *y = json_array_get(b, (size_t)i);
		if (!json_is_number(x) || !json_is_number(y))
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: field 'ranges': "
			            "value %d is not a number", c->ranges_file, i);
		c->mins[i] = (float)json_number_value(x);
		c->maxs[i] = (float)json_number_value(y);
	}
	json_decref(root);
}

static void save_ranges(emb_quant_cmd *c)
{
	FILE *f = fopen(c->save_file, "w");
	char num[32];

	/* exit 3 (as for --ranges), not 4: 4 means stdout failed */
	if (!f)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: %s", c->save_file,
		            strerror(errno));
	fputs("{\"ranges\": [[", f);
	for (int pass = 0; pass < 2; pass++) {
		const float *v = pass ? c->maxs : c->mins;
		for (int i = 0; i < c->dim; i++) {
			emb_fmt_f32(num, v[i]);
			fprintf(f, "%s%s", i ? ", " : "", num);
		}
		fputs(pass ? "]]}\n" : "], [", f);
	}
	if (ferror(f) | (fclose(f) != 0))
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: write error: %s",
		            c->save_file, strerror(errno));
}

static void item_clear(item *it)
{
	for (int k = 0; k < 4; k++) {
		free(it->q[k]);
		it->q[k] = NULL;
	}
	free(it->v);
	it->v = NULL;
}

static int prepare(void *vc, emb_cli_rec *r, emb_err *err)
{
	emb_quant_cmd *c = vc;
	item *it = r->user;
	float *v = NULL;
	size_t rows, cols;
	int rc = -1;

	if (!it && !(it = r->user = calloc(1, sizeof(*it))))
		return emb_err_set(err, "out of memory");
	item_clear(it);
	if (c->unpack) {
		const char *name = emb_vq_name(c->unpack);
		int32_t *q;
		size_t n;
		if (emb_record_get_int32s(r->rec, name, &q, &n, err) < 0)
			return -1;
		it->dim = c->unpack == EMB_VQ_BINARY || c->unpack == EMB_VQ_UBINARY ?
		          (int)(n * 8) : (int)n;
		if (c->mins && it->dim != c->dim) {
			free(q);
			return emb_err_set(err, "field '%s' has %zu values, the ranges "
			                   "%d", name, n, c->dim);
		}
		for (size_t i = 0; i < n; i++) {
			int lo = c->unpack == EMB_VQ_UINT8 || c->unpack == EMB_VQ_UBINARY ?
			         0 : -128;
			if (q[i] < lo || q[i] > lo + 255) {
				emb_err_set(err, "field '%s': value %d at position %zu is "
				            "out of range", name, (int)q[i], i);
				free(q);
				return -1;
			}
		}
		if (!(it->v = malloc(((size_t)it->dim + 1) * sizeof(float)))) {
			free(q);
			return emb_err_set(err, "out of memory");
		}
		emb_vq_dequantize(it->v, c->unpack, q, it->dim, c->mins, c->maxs);
		free(q);
		return 0;
	}
	if (emb_record_get_floats(r->rec, "embedding", &v, &rows, &cols, err) < 0)
		return -1;
	if (rows != 1 || cols == 0) {
		emb_err_set(err, "field 'embedding' must be a non-empty vector");
		goto out;
	}
	if (c->need_ranges && cols != (size_t)c->dim) {
		emb_err_set(err, "field 'embedding' has %zu values, the ranges %d",
		            cols, c->dim);
		goto out;
	}
	it->dim = (int)cols;
	for (int k = 0; k < c->nkinds; k++) {
		size_t w = emb_vq_width(c->kinds[k], it->dim);
		if (!(it->q[k] = malloc(w * sizeof(int32_t)))) {
			emb_err_set(err, "out of memory");
			goto out;
		}
		c->saturated += emb_vq_quantize(it->q[k], c->kinds[k], v, it->dim,
		                                c->mins, c->maxs);
	}
	rc = 0;
out:
	free(v);
	return rc;
}

static int emit(void *vc, emb_cli_rec *r, emb_buf *b, emb_err *err)
{
	static const char *const drop[] = { "embedding", "embedding_b64", NULL };
	emb_quant_cmd *c = vc;
	item *it = r->user;

	(void)err;
	if (c->unpack) {
		emb_out_begin(b, r->rec, NULL);
		emb_out_floats(b, "embedding", it->v, (size_t)it->dim, c->cli.b64);
		emb_out_end(b);
		return 0;
	}
	emb_out_begin(b, r->rec, c->keep ? NULL : drop);
	for (int k = 0; k < c->nkinds; k++)
		emb_out_int32s(b, emb_vq_name(c->kinds[k]), it->q[k],
		               emb_vq_width(c->kinds[k], it->dim));
	emb_out_end(b);
	return 0;
}

static void free_user(void *vc, void *u)
{
	(void)vc;
	item_clear(u);
	free(u);
}

/* copy stdin to a temporary file (the input is read twice) */
static char *spool_stdin(emb_quant_cmd *c)
{
	const char *tmp = getenv("TMPDIR");
	char *path, buf[65536];
	int fd;
	ssize_t n;

	/* a spool that cannot be made is exit 3 (nothing could be read),
	 * not 1 (some records bad) */
	if (asprintf(&path, "%s/emb-quantize.XXXXXX", tmp && *tmp ? tmp :
	             "/tmp") < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "out of memory");
	emb_cli_catch_signals();        /* a signal: the spool goes too */
	if ((fd = mkstemp(path)) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "cannot spool stdin to take "
		            "the ranges from (TMPDIR): %s: %s", path,
		            strerror(errno));
	emb_cli_remove_on_signal(path);
	while ((n = read(0, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(fd, buf, (size_t)n) != n) {
			unlink(path);
			emb_cli_die(&c->cli, EMB_EXIT_MODEL, "spooling stdin to %s: "
			            "%s", path, strerror(errno));
		}
	}
	close(fd);
	return path;
}

int emb_quant_vectors(emb_quant_cmd *c)
{
	emb_cli_ops ops = { prepare, NULL, emit, free_user, 0, 1 };
	char *spool = NULL, *stdin_arg[] = { "-" };
	int status, kept = 0;

	if (c->force)
		emb_cli_usage_error(&c->cli, "--force goes with -m and -o");
	if (!c->nkinds == !c->unpack)
		emb_cli_usage_error(&c->cli, "give one of --vectors, --unpack or -m");
	for (int k = 0; k < c->nkinds; k++)
		if (c->kinds[k] == EMB_VQ_INT8 || c->kinds[k] == EMB_VQ_UINT8)
			c->need_ranges = 1;
	if (c->unpack == EMB_VQ_INT8 || c->unpack == EMB_VQ_UINT8) {
		if (!c->ranges_file)
			emb_cli_usage_error(&c->cli, "--unpack %s needs --ranges",
			                    emb_vq_name(c->unpack));
		c->need_ranges = 1;
	}
	if (c->need_ranges) {
		if (c->ranges_file) {
			load_ranges(c);
		} else {
			/* ranges of the whole input: read it once more */
			if (c->cli.nfiles == 0) {
				spool = spool_stdin(c);
				stdin_arg[0] = spool;
			}
			/* an operand that cannot be read is said once, here,
			 * and left out of the main pass: exit 5 */
			for (int i = 0, n = c->cli.nfiles; i < (n ? n : 1); i++) {
				if (ranges_from_records(c, n ? c->cli.files[i] :
				                        stdin_arg[0]) < 0) {
					if (c->cli.strict)
						exit(EMB_EXIT_INPUT);
					c->cli.input_failed = 1;
					continue;
				}
				if (n)
					c->cli.files[kept++] = c->cli.files[i];
			}
			if (c->cli.nfiles)
				c->cli.nfiles = kept;
			if (!c->dim) {
				if (spool)
					unlink(spool);
				if (c->cli.input_failed)
					exit(EMB_EXIT_INPUT);
				emb_cli_die(&c->cli, EMB_EXIT_RECORD, "no embedding records "
				            "to take ranges from");
			}
			if (spool) {
				/* read the spooled copy as stdin */
				if (!freopen(spool, "r", stdin)) {
					unlink(spool);
					emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s: %s", spool,
					            strerror(errno));
				}
				unlink(spool);
				emb_cli_remove_on_signal(NULL);
			}
		}
		if (c->save_file)
			save_ranges(c);
	} else if (c->save_file) {
		emb_cli_usage_error(&c->cli, "--save-ranges needs int8 or uint8");
	}
	status = emb_cli_run(&c->cli, &ops, c);
	if (c->saturated)
		fprintf(stderr, "emb-quantize: warning: %zu value%s outside the "
		        "ranges saturated\n", c->saturated,
		        c->saturated == 1 ? "" : "s");
	free(spool);
	free(c->mins);
	free(c->maxs);
	return status;
}
