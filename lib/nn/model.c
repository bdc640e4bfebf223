/*
 * model.c - the model object: config.json -> family (the registry;
 * each family names its architectures and model types), load and
 * free, and the batch entry that checks sequences and hands them to
 * the one layer driver (driver.c).  The families (config readers,
 * tensor names, heads) live in arch_*.c; the pieces the driver is
 * built from in weights.c, layers.c, attention.c; the heads in heads.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"
/* the families in the order they are tried and listed (NN_FAMILIES in
 * the Makefile); each names its architectures and model types */
#define EMB_FAMILY(name) extern const emb_family emb_family_##name;
#include "nn/families.h"
#undef EMB_FAMILY
#define EMB_FAMILY(name) &emb_family_##name,
static const emb_family *const registry[] = {
#include "nn/families.h"
};
#undef EMB_FAMILY
#define NFAMILIES (sizeof(registry) / sizeof(registry[0]))

/* ------------------------------------------------------------------ */
/* load / free                                                         */

/* config.json "architectures" entry -> family */
static const emb_family *find_family(const char *arch)
{
	for (size_t f = 0; f < NFAMILIES; f++)
		for (size_t i = 0; registry[f]->archs[i]; i++)
			if (!strcmp(arch, registry[f]->archs[i]))
				return registry[f];
	return NULL;
}

static int pick_family(emb_model *m, const json_t *cfg, emb_err *err)
{
	const json_t *archs = json_object_get(cfg, "architectures");
	const char *first = NULL;
	char list[1024];
	size_t off = 0;

	if (archs && !json_is_null(archs)) {
		size_t i;
		const json_t *v;
		if (!json_is_array(archs) || json_array_size(archs) == 0)
			return emb_err_set(err, "config.json: field 'architectures' "
			                   "must be a non-empty array of strings");
		json_array_foreach(archs, i, v) {
			if (!json_is_string(v))
				return emb_err_set(err, "config.json: field "
				                   "'architectures' must be a non-empty "
				                   "array of strings");
			if (!first)
				first = json_string_value(v);
			if ((m->fam = find_family(json_string_value(v)))) {
				m->arch = strdup(json_string_value(v));
				break;
			}
		}
	} else {
		const json_t *mt = json_object_get(cfg, "model_type");
		if (!json_is_string(mt))
			return emb_err_set(err, "config.json: missing field "
			                   "'architectures'");
		first = json_string_value(mt);
		for (size_t f = 0; f < NFAMILIES; f++)
			for (size_t i = 0; registry[f]->types &&
			                   registry[f]->types[i].type; i++)
				if (!strcmp(first, registry[f]->types[i].type)) {
					m->fam = registry[f];
					m->arch = strdup(registry[f]->types[i].arch);
				}
	}
	if (m->fam)
		return m->arch ? 0 : emb_err_set(err, "out of memory");
	list[0] = 0;
	for (size_t f = 0; f < NFAMILIES; f++)
		for (size_t i = 0; registry[f]->archs[i] && off < sizeof(list); i++)
			off += snprintf(list + off, sizeof(list) - off, "%s%s",
			                off ? ", " : "", registry[f]->archs[i]);
	if (archs && !json_is_null(archs))
		return emb_err_set(err, "config.json: architecture '%s' is not "
		                   "supported (supported: %s)", first, list);
	return emb_err_set(err, "config.json: model_type '%s' is not supported "
	                   "(supported architectures: %s)", first, list);
}

/* the head the architecture names, and its labels (id2label) */
static int head_config(emb_model *m, const json_t *cfg, emb_err *err)
{
	static const emb_named heads[] = {
		{ "ForSequenceClassification", EMB_HEAD_CLASSIFIER },
		{ "ForMaskedLM", EMB_HEAD_MLM },
	};
	const json_t *id2label = json_object_get(cfg, "id2label");
	const json_t *nl = json_object_get(cfg, "num_labels");
	size_t alen = strlen(m->arch);
	int n = 2;

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		size_t sl = strlen(heads[i].name);     /* architecture suffix */
		if (alen > sl && !strcmp(m->arch + alen - sl, heads[i].name))
			m->head = heads[i].value;
	}
	if (m->head != EMB_HEAD_CLASSIFIER)
		return 0;
	if (id2label && !json_is_null(id2label)) {
		if (!json_is_object(id2label) || json_object_size(id2label) == 0 ||
		    json_object_size(id2label) > 1 << 20)
			return emb_err_set(err, "config.json: field 'id2label' must be "
			                   "a non-empty object");
		n = (int)json_object_size(id2label);
	} else if (nl && !json_is_null(nl)) {
		if (emb_cfg_int(&n, cfg, "num_labels", -1, 1, err))
			return -1;
	}
	if (!(m->labels = calloc((size_t)n, sizeof(char *))))
		return emb_err_set(err, "out of memory");
	m->num_labels = n;
	for (int i = 0; i < n; i++) {
		char key[24], def[32];
		const json_t *v;
		snprintf(key, sizeof(key), "%d", i);
		v = id2label ? json_object_get(id2label, key) : NULL;
		if (id2label && !json_is_null(id2label) && !v)
			return emb_err_set(err, "config.json: field 'id2label' has no "
			                   "key '%d' (keys must be 0..%d)", i, n - 1);
		if (v && !json_is_string(v))
			return emb_err_set(err, "config.json: field 'id2label' value "
			                   "of '%d' must be a string", i);
		snprintf(def, sizeof(def), "LABEL_%d", i);
		if (!(m->labels[i] = strdup(v ? json_string_value(v) : def)))
			return emb_err_set(err, "out of memory");
	}
	return 0;
}

int emb_model_config_positions(const struct json_t *cfg)
{
	emb_model m;
	emb_err err;
	int n = -1;

	memset(&m, 0, sizeof(m));
	if (json_is_object(cfg) && !pick_family(&m, cfg, &err) &&
	    !m.fam->config(&m, (json_t *)cfg, &err))
		n = m.usable_pos;
	emb_net_release(&m);
	free(m.arch);
	return n;
}

typedef struct finite_job {
	const emb_model *m;
	unsigned char *bad;     /* (tensors) 1: holds a NaN or an infinity */
} finite_job;

/* tensors [begin, end) of the model's file, but the embedding table */
static void finite_task(void *ctx, size_t begin, size_t end, int tid)
{
	const finite_job *j = ctx;

	(void)tid;
	for (size_t i = begin; i < end; i++) {
		const emb_tensor *t = emb_safetensors_at(j->m->st, i);
		j->bad[i] = t != j->m->word_t &&
		            emb_tensor_check_finite(t, NULL) < 0;
	}
}

/*
 * Every weight finite but the embedding table's rows, as
 * emb_safetensors_check_finite, the tensors shared out over the
 * threads; the error names the first bad tensor in the file's order,
 * as the one-thread check does.
 */
static int check_finite(const emb_model *m, emb_err *err)
{
	size_t n = emb_safetensors_count(m->st);
	finite_job j = { m, calloc(n ? n : 1, 1) };
	int rc = 0;

	if (!j.bad)
		return emb_err_set(err, "out of memory");
	emb_threads_for(m->tp, n, 1, finite_task, &j);
	for (size_t i = 0; i < n && !rc; i++)
		if (j.bad[i])
			rc = emb_tensor_check_finite(emb_safetensors_at(m->st, i),
			                             err);
	free(j.bad);
	return rc ? -1 : 0;
}

int emb_model_load(emb_model **out, const char *dir,
                   const emb_model_opts *opts, emb_err *err)
{
	emb_model *m;
	json_t *cfg = NULL;
	emb_err pe;
	char path[4200];
	int threads = opts ? opts->threads : 0;
	int rc = -1;

	*out = NULL;
	if (!(m = calloc(1, sizeof(*m))) || !(m->dir = strdup(dir))) {
		free(m);
		return emb_err_set(err, "out of memory");
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (!(cfg = emb_json_file_load(dir, path, (size_t)16 << 20,
	                               JSON_REJECT_DUPLICATES, err)))
		goto out;
	if (!json_is_object(cfg)) {
		emb_err_set(err, "%s: not a JSON object", path);
		goto out;
	}
	m->no_fuse = getenv("EMB_NO_FUSE") && *getenv("EMB_NO_FUSE");
	if (opts)
		m->prec = opts->prec;
	if (emb_prec_check(&m->prec, &pe)) {
		emb_err_set(err, "%s: %s", dir, pe.msg);
		goto out;
	}
	if (pick_family(m, cfg, err) || m->fam->config(m, cfg, err) ||
	    head_config(m, cfg, err)) {
		/* the family readers say "config.json: ..."; name the file */
		if (!strncmp(err->msg, "config.json: ", 13)) {
			char msg[EMB_ERR_MAX];
			snprintf(msg, sizeof(msg), "%s", err->msg + 13);
			emb_err_set(err, "%s: %s", path, msg);
		}
		goto out;
	}
	if (emb_kernels_select(&m->k, err))
		goto out;
	m->gemm_i8 = m->k->gemm_i8;
	if (m->prec.a8)
		m->i8_kernel = m->k->i8_name;
	if (emb_safetensors_open(&m->st, dir, err))
		goto out;
	m->prefix = m->fam->prefixes[0];
	for (int i = 0; m->fam->prefixes[i]; i++) {
		snprintf(path, sizeof(path), "%s%s", m->fam->prefixes[i],
		         m->fam->probe);
		if (emb_safetensors_find(m->st, path)) {
			m->prefix = m->fam->prefixes[i];
			break;
		}
	}
	/* the threads first: the check and the packing below use them */
	if (threads <= 0)
		threads = emb_online_cpus();
	if (emb_threads_new(&m->tp, threads, err))
		goto out;
	if (getenv("EMB_PROFILE") && *getenv("EMB_PROFILE") &&
	    !(m->prof = emb_prof_new(emb_threads_count(m->tp)))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	/* every weight finite, but the embedding table's rows: those at
	 * first use (emb_model_check) */
	snprintf(path, sizeof(path), "%s%s", m->prefix, m->fam->names->word);
	m->word_t = emb_safetensors_find(m->st, path);
	if (check_finite(m, err))
		goto out;
	if (emb_net_load(m, err))
		goto out;
	if (m->prec.a8 && m->n_a8 == 0) {
		emb_err_set(err, "%s: int8 activations need int8 weights (a "
		            "checkpoint from emb-quantize --weights int8, or "
		            "--weights int8)", dir);
		goto out;
	}
	rc = 0;
out:
	json_decref(cfg);
	if (rc)
		emb_model_free(m);
	else
		*out = m;
	return rc;
}

void emb_model_free(emb_model *m)
{
	if (!m)
		return;
	emb_net_release(m);
	emb_threads_free(m->tp);
	emb_prof_free(m->prof);
	for (int i = 0; m->labels && i < m->num_labels; i++)
		free(m->labels[i]);
	free(m->labels);
	emb_model_memory_release(m);
	emb_safetensors_free(m->st);
	free(m->arch);
	free(m->dir);
	free(m);
}

int emb_model_hidden_size(const emb_model *m) { return m->hidden; }
int emb_model_max_positions(const emb_model *m) { return m->usable_pos; }
int emb_model_vocab_size(const emb_model *m) { return m->vocab; }
int emb_model_type_vocab_size(const emb_model *m) { return m->type_vocab; }
const char *emb_model_arch(const emb_model *m) { return m->arch; }

void emb_model_quant_stats(const emb_model *m, int *linear, int *w8,
                           int *a8, const char **kernel)
{
	if (linear)
		*linear = m->n_linear;
	if (w8)
		*w8 = m->n_w8;
	if (a8)
		*a8 = m->n_a8;
	if (kernel)
		*kernel = m->n_a8 ? m->i8_kernel : NULL;
}

/* ------------------------------------------------------------------ */
/* forward driver                                                      */

int emb_model_check(const emb_model *m, const emb_seq *q, emb_err *err)
{
	if (q->len < 0)
		return emb_err_set(err, "negative sequence length %d", q->len);
	if (q->len > m->usable_pos)
		return emb_err_set(err, "%d tokens are more than the model's maximum "
		                   "of %d (max_position_embeddings)", q->len,
		                   m->usable_pos);
	if (q->len > 0 && !q->ids)
		return emb_err_set(err, "no input_ids");
	for (int i = 0; i < q->len; i++) {
		if (q->ids[i] < 0 || q->ids[i] >= m->vocab)
			return emb_err_set(err, "input_ids[%d] = %ld is out of range "
			                   "(vocab_size %d)", i, (long)q->ids[i], m->vocab);
		if (q->type_ids && (q->type_ids[i] < 0 ||
		                    q->type_ids[i] >= m->type_vocab))
			return emb_err_set(err, "token_type_ids[%d] = %ld is out of range "
			                   "(type_vocab_size %d)", i, (long)q->type_ids[i],
			                   m->type_vocab);
		if (emb_model_word_row(m, q->ids[i], err) < 0)
			return -1;
	}
	return 0;
}

int emb_model_forward(emb_model *m, float *out, const emb_seq *seqs,
                      int nseq, emb_err *err)
{
	emb_batch b;
	int *start;
	long long total = 0;
	int maxlen = 0, rc;

	if (nseq < 0)
		return emb_err_set(err, "negative sequence count %d", nseq);
	if (nseq == 0)
		return 0;
	for (int s = 0; s < nseq; s++) {
		if (emb_model_check(m, &seqs[s], err)) {
			if (nseq > 1 && err) {   /* prefix "sequence N: " */
				char pre[32];
				size_t pl = (size_t)snprintf(pre, sizeof(pre),
				                             "sequence %d: ", s);
				size_t ml = strlen(err->msg);
				if (pl + ml >= sizeof(err->msg))
					ml = sizeof(err->msg) - 1 - pl;
				memmove(err->msg + pl, err->msg, ml);
				memcpy(err->msg, pre, pl);
				err->msg[pl + ml] = 0;
			}
			return -1;
		}
		total += seqs[s].len;
		if (seqs[s].len > maxlen)
			maxlen = seqs[s].len;
	}
	if (total > INT32_MAX / 4)
		return emb_err_set(err, "batch of %lld tokens is too large", total);
	if (total == 0)
		return 0;
	if (emb_attention_reserve(m, maxlen, err))
		return -1;
	if (!(start = malloc(((size_t)nseq + 1) * sizeof(int))))
		return emb_err_set(err, "out of memory");
	start[0] = 0;
	for (int s = 0; s < nseq; s++)
		start[s + 1] = start[s] + seqs[s].len;
	b = (emb_batch){ seqs, nseq, start, (int)total, maxlen };
	rc = emb_net_forward(m, out, &b, err);
	free(start);
	return rc;
}
