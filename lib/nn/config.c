/*
 * config.c - typed reads of config.json fields, with the file and key
 * named in every message.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nn/nn-internal.h"
/* ------------------------------------------------------------------ */
/* config.json fields                                                  */

int emb_cfg_int(int *out, const json_t *cfg, const char *key, int def,
                int min, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	const int max = 1 << 24;

	if (!v || json_is_null(v)) {
		if (def < 0)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return emb_err_set(err, "config.json: field '%s' must be an "
		                   "integer from %d to %d", key, min, max);
	*out = (int)json_integer_value(v);
	return 0;
}

int emb_cfg_float(float *out, const json_t *cfg, const char *key,
                  double def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		*out = (float)def;
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return emb_err_set(err, "config.json: field '%s' must be a number",
		                   key);
	*out = (float)json_number_value(v);
	return 0;
}

int emb_cfg_str(const char **out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v)) {
		if (!def)
			return emb_err_set(err, "config.json: missing field '%s'", key);
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return emb_err_set(err, "config.json: field '%s' must be a string",
		                   key);
	*out = json_string_value(v);
	return 0;
}

int emb_cfg_act(int *out, const json_t *cfg, const char *key,
                const char *def, emb_err *err)
{
	static const struct {
		const char *name;
		int act;
	} acts[] = {
		{ "gelu", EMB_ACT_GELU },
		{ "gelu_new", EMB_ACT_GELU_TANH },
		{ "gelu_pytorch_tanh", EMB_ACT_GELU_TANH },
		{ "relu", EMB_ACT_RELU },
		{ "silu", EMB_ACT_SILU },
		{ "swish", EMB_ACT_SILU },
		{ "tanh", EMB_ACT_TANH },
	};
	const char *s;

	if (emb_cfg_str(&s, cfg, key, def, err))
		return -1;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (!strcmp(s, acts[i].name)) {
			*out = acts[i].act;
			return 0;
		}
	return emb_err_set(err, "config.json: field '%s' value '%s' is not "
	                   "supported (supported: gelu, gelu_new, "
	                   "gelu_pytorch_tanh, relu, silu, tanh)", key, s);
}

int emb_cfg_bool(int *out, const json_t *cfg, const char *key, int def,
                 emb_err *err)
{
	const json_t *v = json_object_get(cfg, key);

	*out = def;
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return emb_err_set(err, "config.json: field '%s' must be true "
			                   "or false", key);
		*out = json_is_true(v);
	}
	return 0;
}
