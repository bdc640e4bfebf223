/*
 * qstatic.c - emb-quantize -m on a static embedding model (st.h:
 * emb_quantize_model): the folder written again with its table at
 * float16 or int8, as model2vec's own quantization saves it
 * (StaticModel.from_pretrained(dir, quantize_to=TYPE).save_pretrained):
 * the table converted (static/quantize.c), the per-token weights and
 * the token mapping as they are, config.json's "embedding_dtype" (and
 * "vocabulary_quantization") rewritten; the tokenizer and the other
 * module files copied.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "st/st.h"
#include "st/ckpt.h"
#include "static/static.h"

/* DIR/FILE as a new safetensors file: every tensor of T.st, the table
 * replaced by TAB (of type DT) */
static int write_weights(const char *path, const emb_static_table *t,
                         const void *tab, emb_dtype dt, emb_err *err)
{
	size_t n = emb_safetensors_count(t->st), off = 0, bytes;
	json_t *hdr = json_object(), *meta = json_object();
	char *text = NULL;
	FILE *f = NULL;
	int rc = -1;

	if (!hdr || !meta)
		goto oom;
	json_object_set_new(meta, "format", json_string("np"));
	json_object_set_new(meta, "emb.quantization", json_string(
		dt == EMB_DT_I8 ? "int8: model2vec quantize_embeddings "
		"(table / (max|table| / 127), rounded, clipped to +-127)" :
		"float16"));
	for (size_t i = 0; i < n; i++) {
		const emb_tensor *x = emb_safetensors_at(t->st, i);
		int tab_i = !strcmp(x->name, t->name);
		emb_dtype d = tab_i ? dt : x->dtype;
		json_t *o = json_object(), *shape = json_array();

		if (!o || !shape) {
			json_decref(o);
			json_decref(shape);
			goto oom;
		}
		bytes = (size_t)x->numel * emb_dtype_size(d);
		for (int k = 0; k < x->ndim; k++)
			json_array_append_new(shape, json_integer(x->shape[k]));
		json_object_set_new(o, "dtype", json_string(emb_dtype_name(d)));
		json_object_set_new(o, "shape", shape);
		json_object_set_new(o, "data_offsets", json_pack("[II]",
			(json_int_t)off, (json_int_t)(off + bytes)));
		json_object_set_new(hdr, x->name, o);
		off += bytes;
	}
	json_object_set_new(hdr, "__metadata__", meta);
	meta = NULL;
	if (!(text = json_dumps(hdr, JSON_COMPACT)))
		goto oom;
	unlink(path);           /* a copy made by emb_ckpt_copy_files */
	if (!(f = fopen(path, "wb"))) {
		emb_err_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	emb_safetensors_write_header(f, text);
	for (size_t i = 0; i < n; i++) {
		const emb_tensor *x = emb_safetensors_at(t->st, i);
		if (!strcmp(x->name, t->name))
			fwrite(tab, emb_dtype_size(dt), (size_t)x->numel, f);
		else
			fwrite(x->data, 1, x->nbytes, f);
	}
	rc = 0;
	if (ferror(f) | (fclose(f) != 0))
		rc = emb_err_set(err, "%s: write error: %s", path, strerror(errno));
	goto out;
oom:
	emb_err_set(err, "out of memory");
out:
	json_decref(meta);
	json_decref(hdr);
	free(text);
	return rc;
}

/* Model2Vec's config.json with the new "embedding_dtype", and
 * "vocabulary_quantization" (the clusters) only for a mapped table, as
 * model2vec's save_pretrained writes them */
static int write_config(const char *dir, const char *tmp,
                        const emb_static_table *t, emb_dtype dt, emb_err *err)
{
	char src[PATH_MAX], dst[PATH_MAX];
	json_t *c;
	int rc, e;

	snprintf(src, sizeof(src), "%s/config.json", dir);
	snprintf(dst, sizeof(dst), "%s/config.json", tmp);
	if (!(c = emb_json_file_load(dir, src, (size_t)16 << 20,
	                             JSON_REJECT_DUPLICATES, err)))
		return -1;
	json_object_set_new(c, "embedding_dtype",
	                    json_string(dt == EMB_DT_I8 ? "int8" : "float16"));
	if (t->mapped)
		json_object_set_new(c, "vocabulary_quantization",
		                    json_integer((json_int_t)t->rows));
	else
		json_object_del(c, "vocabulary_quantization");
	unlink(dst);            /* the copy emb_ckpt_copy_files made */
	rc = json_dump_file(c, dst, JSON_INDENT(4) | JSON_ENSURE_ASCII);
	e = errno;
	json_decref(c);
	return rc < 0 ? emb_err_set(err, "%s: write error: %s", dst, strerror(e))
	              : 0;
}

int emb_quantize_static(const char *dir, const char *out, const char *type,
                        int force, emb_err *err)
{
	emb_static *m = NULL;
	emb_static_table t;
	emb_dtype dt = !strcmp(type, "int8") ? EMB_DT_I8 :
	               !strcmp(type, "f16") ? EMB_DT_F16 : EMB_DT_F32;
	char *tmp = NULL, *path = NULL, *tokrel = NULL;
	void *tab = NULL;
	int rc = -1;

	if (dt == EMB_DT_F32)
		return emb_err_set(err, "%s: a static model's table is stored as "
		                   "float16 or int8 (--weights f16 or int8), not %s",
		                   dir, type);
	if (emb_static_load(&m, dir, err) < 0)
		return -1;
	emb_static_table_info(&t, m);
	/* torch runs a float16 StaticEmbedding in its own float16
	 * arithmetic (1e-3 from numpy's), and has no int8 EmbeddingBag */
	if (emb_static_format(m) == EMB_STATIC_ST) {
		emb_err_set(err, "%s: a sentence-transformers StaticEmbedding "
		            "folder is not quantized (torch averages float16 rows "
		            "in its own arithmetic and int8 ones not at all); "
		            "a Model2Vec folder is", dir);
		goto out;
	}
	if (!(tab = malloc(t.rows * (size_t)t.dim * emb_dtype_size(dt) + 1))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	if (emb_static_table_convert(tab, dt, m, err) < 0 ||
	    emb_ckpt_begin(&tmp, dir, out, force, err) < 0)
		goto out;
	if (!(path = emb_path_join(tmp, t.file)) ||
	    !(tokrel = strdup(t.file))) {
		emb_err_set(err, "out of memory");
		goto fail;
	}
	/* a module folder holds the table and its tokenizer.json (copied
	 * first: it makes the folder); the top level's are copied with the
	 * rest */
	strcpy(tokrel + strlen(tokrel) - strlen("model.safetensors"),
	       "tokenizer.json");
	if (emb_ckpt_copy_files(dir, tmp, err) < 0 ||
	    (strchr(t.file, '/') &&
	     emb_ckpt_copy_file(dir, tmp, tokrel, err) < 0) ||
	    write_weights(path, &t, tab, dt, err) < 0 ||
	    (emb_static_format(m) == EMB_STATIC_M2V &&
	     write_config(dir, tmp, &t, dt, err) < 0))
		goto fail;
	rc = emb_ckpt_commit(tmp, out, err);    /* removes tmp on failure */
	goto out;
fail:
	emb_ckpt_abort(tmp);
out:
	free(tmp);
	free(path);
	free(tokrel);
	free(tab);
	emb_static_free(m);
	return rc;
}
