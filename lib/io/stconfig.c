/*
 * stconfig.c - sentence-transformers module configuration
 *
 * modules.json lists the modules (Transformer, Pooling, Normalize...);
 * the Pooling module's folder holds config.json in either the old form
 * (pooling_mode_*_tokens booleans) or the new one ("pooling_mode": "cls");
 * sentence_bert_config.json has max_seq_length and do_lower_case;
 * config_sentence_transformers.json the prompts.  Missing files mean
 * defaults; malformed ones are errors naming the file and field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "io/io.h"

#define CONFIG_MAX (16 << 20)

/*
 * Load DIR/NAME as JSON into *out (new); *out = NULL and 0 when the file
 * does not exist.  *path: new, the file's path for messages.
 */
static int load_json(json_t **out, char **path, const char *dir,
                     const char *name, emb_err *err)
{
	*out = NULL;
	if (!(*path = emb_path_join(dir, name)))
		return emb_err_set(err, "%s: out of memory", name);
	if (!(*out = emb_json_file_load(dir, *path, CONFIG_MAX,
	                                JSON_REJECT_DUPLICATES, err))) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return -1;
	}
	return 0;
}

/* load_json, then: a present file must hold a JSON object */
static int load_object(json_t **out, char **path, const char *dir,
                       const char *name, emb_err *err)
{
	if (load_json(out, path, dir, name, err))
		return -1;
	if (*out && !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return emb_err_set(err, "%s: not a JSON object", *path);
	}
	return 0;
}

/* "sentence_transformers.models.Pooling" -> "Pooling" */
static const char *last_part(const char *s)
{
	const char *p = strrchr(s, '.');

	return p ? p + 1 : s;
}

unsigned emb_pool_mode_parse(const char *s)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{"cls", EMB_POOL_CLS}, {"cls_token", EMB_POOL_CLS},
		{"max", EMB_POOL_MAX}, {"max_tokens", EMB_POOL_MAX},
		{"mean", EMB_POOL_MEAN}, {"mean_tokens", EMB_POOL_MEAN},
		{"mean_sqrt_len", EMB_POOL_MEAN_SQRT_LEN},
		{"mean_sqrt_len_tokens", EMB_POOL_MEAN_SQRT_LEN},
		{"weightedmean", EMB_POOL_WEIGHTED_MEAN},
		{"weightedmean_tokens", EMB_POOL_WEIGHTED_MEAN},
		{"weighted_mean", EMB_POOL_WEIGHTED_MEAN},
		{"lasttoken", EMB_POOL_LAST}, {"last_token", EMB_POOL_LAST},
		{"last", EMB_POOL_LAST},
	};
	unsigned modes = 0;

	if (!s || !*s)
		return 0;
	/* several modes: "cls,mean" or "cls+mean" */
	while (*s) {
		size_t n = strcspn(s, ",+"), i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && !strncmp(s, names[i].name, n))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return 0;
		modes |= names[i].bit;
		s += n;
		if (*s) {
			s++;
			if (!*s)
				return 0;
		}
	}
	return modes;
}

unsigned emb_pool_modes_parse(const char *s)
{
	unsigned m = 0, x;
	char part[64];

	while (*s) {
		size_t n = strcspn(s, ",+");
		if (n == 0 || n >= sizeof(part))
			return 0;
		memcpy(part, s, n);
		part[n] = 0;
		if (!(x = emb_pool_mode_parse(part)))
			return 0;
		m |= x;
		s += n;
		if (*s)
			s++;
	}
	return m;
}

static int get_bool(int *out, json_t *o, const char *key, const char *path,
                    emb_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return emb_err_set(err, "%s: field '%s' must be true or false", path, key);
	*out = json_is_true(v);
	return 0;
}

static int get_dim(int *out, json_t *o, const char *key, const char *path,
                   emb_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	    json_integer_value(v) > (1 << 30))
		return emb_err_set(err, "%s: field '%s' must be a positive integer",
		                   path, key);
	*out = (int)json_integer_value(v);
	return 0;
}

static int load_pooling(emb_st_config *c, const char *dir, const char *mpath,
                        emb_err *err)
{
	static const struct {
		const char *key;
		unsigned bit;
	} flags[] = {
		{"pooling_mode_cls_token", EMB_POOL_CLS},
		{"pooling_mode_max_tokens", EMB_POOL_MAX},
		{"pooling_mode_mean_tokens", EMB_POOL_MEAN},
		{"pooling_mode_mean_sqrt_len_tokens", EMB_POOL_MEAN_SQRT_LEN},
		{"pooling_mode_weightedmean_tokens", EMB_POOL_WEIGHTED_MEAN},
		{"pooling_mode_lasttoken", EMB_POOL_LAST},
	};
	char *sub = NULL, *path = NULL;
	json_t *o = NULL, *pm;
	unsigned modes = 0;
	int rc = -1;

	if (!(sub = *mpath ? emb_path_join(mpath, "config.json") : strdup("config.json")))
		return emb_err_set(err, "%s: out of memory", dir);
	if (load_object(&o, &path, dir, sub, err))
		goto out;
	if (!o) {
		emb_err_set(err, "%s: missing (modules.json lists a Pooling module "
		            "in '%s')", path, mpath);
		goto out;
	}
	pm = json_object_get(o, "pooling_mode");
	if (pm && !json_is_null(pm)) {
		/* new form: "pooling_mode": "cls" (or a list of modes) */
		size_t n = json_is_array(pm) ? json_array_size(pm) : 1;
		for (size_t i = 0; i < n; i++) {
			json_t *m = json_is_array(pm) ? json_array_get(pm, i) : pm;
			unsigned b = json_is_string(m) ? emb_pool_mode_parse(json_string_value(m)) : 0;
			if (!b) {
				if (json_is_string(m))
					emb_err_set(err, "%s: field 'pooling_mode': unknown pooling "
					            "mode '%.60s'", path, json_string_value(m));
				else
					emb_err_set(err, "%s: field 'pooling_mode' must be a string",
					            path);
				goto out;
			}
			modes |= b;
		}
	} else {
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
			int on = 0;
			if (get_bool(&on, o, flags[i].key, path, err))
				goto out;
			if (on)
				modes |= flags[i].bit;
		}
	}
	if (!modes) {
		emb_err_set(err, "%s: no pooling mode is set (field 'pooling_mode' or "
		            "'pooling_mode_*_tokens')", path);
		goto out;
	}
	if (get_dim(&c->pool_dim, o, "word_embedding_dimension", path, err) ||
	    get_dim(&c->pool_dim, o, "embedding_dimension", path, err) ||
	    get_bool(&c->include_prompt, o, "include_prompt", path, err))
		goto out;
	c->pool_modes = modes;
	rc = 0;
out:
	json_decref(o);
	free(path);
	free(sub);
	return rc;
}

/*
 * A Dense module in MPATH: config.json (in_features, out_features, bias,
 * activation_function Identity or Tanh) and model.safetensors holding
 * linear.weight (out, in) and, with bias, linear.bias (out)
 */
static int load_dense(emb_st_config *c, const char *dir, const char *mpath,
                      emb_err *err)
{
	char *sub = NULL, *path = NULL, *stpath = NULL;
	json_t *o = NULL, *v;
	emb_safetensors *st = NULL;
	emb_dense d = { 0 }, *nd;
	int bias = 1, rc = -1;
	const char *act = NULL;

	if (!(sub = *mpath ? emb_path_join(mpath, "config.json") : strdup("config.json")))
		return emb_err_set(err, "%s: out of memory", dir);
	if (load_object(&o, &path, dir, sub, err))
		goto out;
	if (!o) {
		emb_err_set(err, "%s: missing (modules.json lists a Dense module "
		            "there)", path);
		goto out;
	}
	if (get_dim(&d.in, o, "in_features", path, err) ||
	    get_dim(&d.out, o, "out_features", path, err) ||
	    get_bool(&bias, o, "bias", path, err))
		goto out;
	if (!d.in || !d.out) {
		emb_err_set(err, "%s: missing field '%s'", path,
		            d.in ? "out_features" : "in_features");
		goto out;
	}
	v = json_object_get(o, "activation_function");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			emb_err_set(err, "%s: field 'activation_function' must be a "
			            "string", path);
			goto out;
		}
		act = last_part(json_string_value(v));
	}
	if (act && !strcmp(act, "Tanh")) {
		d.tanh = 1;
	} else if (act && strcmp(act, "Identity")) {
		emb_err_set(err, "%s: field 'activation_function' value '%.80s' is "
		            "not supported (supported: torch.nn.modules.linear."
		            "Identity, torch.nn.modules.activation.Tanh)", path,
		            json_string_value(v));
		goto out;
	}
	if ((size_t)d.in * (size_t)d.out > ((size_t)1 << 31)) {
		emb_err_set(err, "%s: Dense layer too large", path);
		goto out;
	}
	if (!(stpath = *mpath ? emb_path_join(dir, mpath) : strdup(dir))) {
		emb_err_set(err, "%s: out of memory", dir);
		goto out;
	}
	if (emb_safetensors_open_in(&st, dir, stpath, err) ||
	    emb_safetensors_check_finite(st, NULL, err))
		goto out;
	for (int i = 0; i < 1 + bias; i++) {
		const emb_tensor *t = emb_safetensors_find(st, i ? "linear.bias" :
		                                           "linear.weight");
		int64_t n0 = d.out, n1 = i ? 0 : d.in;
		float **dst = i ? &d.b : &d.w;
		if (!t) {
			emb_err_set(err, "%s/model.safetensors: missing tensor '%s'",
			            stpath, i ? "linear.bias" : "linear.weight");
			goto out;
		}
		if (t->ndim != 2 - i || t->shape[0] != n0 || (!i && t->shape[1] != n1)) {
			emb_err_set(err, "%s: tensor '%s' does not have shape [%lld%s%.0lld] "
			            "(in_features %d, out_features %d)", t->file, t->name,
			            (long long)n0, i ? "" : ",", (long long)n1, d.in, d.out);
			goto out;
		}
		if (!(*dst = malloc((size_t)t->numel * sizeof(float)))) {
			emb_err_set(err, "out of memory");
			goto out;
		}
		if (emb_tensor_to_f32(*dst, t, err))
			goto out;
	}
	if (c->n_dense && c->dense[c->n_dense - 1].out != d.in) {
		emb_err_set(err, "%s: in_features %d does not match the previous "
		            "Dense module's out_features %d", path, d.in,
		            c->dense[c->n_dense - 1].out);
		goto out;
	}
	if (!(nd = realloc(c->dense, (c->n_dense + 1) * sizeof(*nd)))) {
		emb_err_set(err, "out of memory");
		goto out;
	}
	c->dense = nd;
	c->dense[c->n_dense++] = d;
	d.w = d.b = NULL;
	rc = 0;
out:
	free(d.w);
	free(d.b);
	emb_safetensors_free(st);
	json_decref(o);
	free(stpath);
	free(path);
	free(sub);
	return rc;
}

static int load_modules(emb_st_config *c, const char *dir, emb_err *err)
{
	json_t *a = NULL;
	char *path = NULL;
	int rc = -1, have_pool = 0;

	if (load_json(&a, &path, dir, "modules.json", err))
		goto out;
	if (!a) {
		rc = 0;
		goto out;
	}
	if (!json_is_array(a)) {
		emb_err_set(err, "%s: not a JSON array", path);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *m = json_array_get(a, i), *t, *p;
		const char *type, *mp;
		if (!json_is_object(m)) {
			emb_err_set(err, "%s: entry %zu is not an object", path, i);
			goto out;
		}
		t = json_object_get(m, "type");
		p = json_object_get(m, "path");
		if (!json_is_string(t)) {
			emb_err_set(err, "%s: entry %zu: field 'type' must be a string",
			            path, i);
			goto out;
		}
		if (p && !json_is_null(p) && !json_is_string(p)) {
			emb_err_set(err, "%s: entry %zu: field 'path' must be a string",
			            path, i);
			goto out;
		}
		type = last_part(json_string_value(t));
		mp = json_is_string(p) ? json_string_value(p) : "";
		if (!emb_relpath_ok(mp, EMB_RELPATH_EMPTY_OK)) {
			emb_err_set(err, "%s: entry %zu: field 'path' must be a relative "
			            "path inside the model", path, i);
			goto out;
		}
		if (!strcmp(type, "Transformer")) {
			if (*mp) {
				emb_err_set(err, "%s: entry %zu: a Transformer module in a "
				            "subfolder ('%.60s') is not supported", path, i, mp);
				goto out;
			}
		} else if (!strcmp(type, "Pooling")) {
			if (have_pool++) {
				emb_err_set(err, "%s: entry %zu: more than one Pooling module",
				            path, i);
				goto out;
			}
			if (load_pooling(c, dir, mp, err))
				goto out;
		} else if (!strcmp(type, "StaticEmbedding")) {
			/* a static model's input module (lib/static/): its
			 * output is the pooled vector */
			if (i != 0) {
				emb_err_set(err, "%s: entry %zu: a StaticEmbedding module is supported only first",
				            path, i);
				goto out;
			}
			have_pool = 1;
		} else if (!strcmp(type, "Normalize")) {
			c->normalize = 1;
		} else if (!strcmp(type, "Dense")) {
			if (!have_pool || c->normalize) {
				emb_err_set(err, "%s: entry %zu: a Dense module is supported "
				            "only between Pooling (or StaticEmbedding) and "
				            "Normalize", path, i);
				goto out;
			}
			if (load_dense(c, dir, mp, err))
				goto out;
		} else {
			emb_err_set(err, "%s: module '%.100s' (entry %zu) is not supported",
			            path, json_string_value(t), i);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(a);
	free(path);
	return rc;
}

static int load_sbert(emb_st_config *c, const char *dir, emb_err *err)
{
	json_t *o = NULL;
	char *path = NULL;
	int rc = -1;

	if (load_object(&o, &path, dir, "sentence_bert_config.json", err))
		goto out;
	if (!o) {
		rc = 0;
		goto out;
	}
	if (get_dim(&c->max_seq_length, o, "max_seq_length", path, err))
		goto out;
	if (get_bool(&c->do_lower_case, o, "do_lower_case", path, err))
		goto out;
	rc = 0;
out:
	json_decref(o);
	free(path);
	return rc;
}

static int load_prompts(emb_st_config *c, const char *dir, emb_err *err)
{
	json_t *o = NULL, *pr, *dn, *v;
	char *path = NULL;
	const char *key;
	int rc = -1;

	if (load_object(&o, &path, dir, "config_sentence_transformers.json", err))
		goto out;
	if (!o) {
		rc = 0;
		goto out;
	}
	pr = json_object_get(o, "prompts");
	if (pr && !json_is_null(pr)) {
		if (!json_is_object(pr)) {
			emb_err_set(err, "%s: field 'prompts' must be an object of strings",
			            path);
			goto out;
		}
		c->prompts = calloc(json_object_size(pr) + 1, sizeof(*c->prompts));
		if (!c->prompts)
			goto oom;
		json_object_foreach(pr, key, v) {
			emb_prompt *p = &c->prompts[c->n_prompts];
			if (!json_is_string(v)) {
				emb_err_set(err, "%s: field 'prompts.%.60s' must be a string",
				            path, key);
				goto out;
			}
			p->name = strdup(key);
			p->text = strdup(json_string_value(v));
			c->n_prompts++;
			if (!p->name || !p->text)
				goto oom;
		}
	}
	dn = json_object_get(o, "default_prompt_name");
	if (dn && !json_is_null(dn)) {
		if (!json_is_string(dn)) {
			emb_err_set(err, "%s: field 'default_prompt_name' must be a string "
			            "or null", path);
			goto out;
		}
		if (!emb_st_config_prompt(c, json_string_value(dn))) {
			emb_err_set(err, "%s: field 'default_prompt_name': '%.60s' is not "
			            "in 'prompts'", path, json_string_value(dn));
			goto out;
		}
		if (!(c->default_prompt_name = strdup(json_string_value(dn))))
			goto oom;
	}
	rc = 0;
	goto out;
oom:
	emb_err_set(err, "%s: out of memory", path);
out:
	json_decref(o);
	free(path);
	return rc;
}

int emb_st_config_load(emb_st_config *out, const char *dir, emb_err *err)
{
	memset(out, 0, sizeof(*out));
	out->include_prompt = 1;
	if (load_modules(out, dir, err) || load_sbert(out, dir, err) ||
	    load_prompts(out, dir, err)) {
		emb_st_config_release(out);
		return -1;
	}
	return 0;
}

int emb_st_config_load_text(emb_st_config *out, const char *dir,
                            emb_err *err)
{
	memset(out, 0, sizeof(*out));
	out->include_prompt = 1;
	if (load_sbert(out, dir, err) || load_prompts(out, dir, err)) {
		emb_st_config_release(out);
		return -1;
	}
	return 0;
}

void emb_st_config_release(emb_st_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_prompts; i++) {
		free(c->prompts[i].name);
		free(c->prompts[i].text);
	}
	free(c->prompts);
	free(c->default_prompt_name);
	for (size_t i = 0; i < c->n_dense; i++) {
		free(c->dense[i].w);
		free(c->dense[i].b);
		free(c->dense[i].wp);
	}
	free(c->dense);
	memset(c, 0, sizeof(*c));
	c->include_prompt = 1;
}

const char *emb_st_config_prompt(const emb_st_config *c, const char *name)
{
	if (!c || !name)
		return NULL;
	for (size_t i = 0; i < c->n_prompts; i++)
		if (!strcmp(c->prompts[i].name, name))
			return c->prompts[i].text;
	return NULL;
}

int emb_st_config_hidden(int *out, const char *dir, emb_err *err)
{
	/* the names the families use: BERT & co, DistilBERT, nomic, T5-ish */
	static const char *const keys[] = { "hidden_size", "dim", "n_embd",
	                                    "d_model" };
	json_t *o = NULL;
	char *path = NULL;
	int rc = 0;

	*out = 0;
	if (load_json(&o, &path, dir, "config.json", err)) {
		rc = -1;
	} else if (o && json_is_object(o)) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			json_t *v = json_object_get(o, keys[i]);
			if (json_is_integer(v) && json_integer_value(v) > 0 &&
			    json_integer_value(v) <= (1 << 30)) {
				*out = (int)json_integer_value(v);
				break;
			}
		}
	}
	json_decref(o);
	free(path);
	return rc;
}
