/*
 * precision.c - the precision mode (nn/nn.h emb_prec): the one place
 * that parses it (command-line options and emb.h's enum), names it and
 * checks its exclusions.  What a mode means for each linear layer is
 * decided in weights.c (emb_model_linear_cat: which packed form a layer
 * gets) and read back by layers.c through emb_linear_is_i8.
 */
#include <string.h>
#include "nn/nn.h"

static const struct {
	const char *name;
	emb_prec p;
} modes[] = {   /* in the order of emb.h's enum emb_precision */
	{ "fp32", { 0, 0, 0 } },
	{ "bf16", { 0, 0, 1 } },
	{ "w8", { 1, 0, 0 } },
	{ "w8a8", { 1, 1, 0 } },
	{ "w8a8-smooth", { 1, 2, 0 } },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

int emb_prec_parse(emb_prec *p, const char *opt, const char *arg,
                   emb_err *err)
{
	if (!strcmp(opt, "weights")) {
		if (strcmp(arg, "int8"))
			return emb_err_set(err, "--weights: '%s' is not int8", arg);
		p->w8 = 1;
		return 0;
	}
	if (!strcmp(opt, "act")) {
		if (strcmp(arg, "int8") && strcmp(arg, "int8-smooth"))
			return emb_err_set(err, "--act: '%s' is not int8 or int8-smooth",
			                   arg);
		p->a8 = strcmp(arg, "int8") ? 2 : 1;
		return 0;
	}
	for (size_t i = 0; i < NMODES; i++)
		if (!strcmp(arg, modes[i].name)) {
			*p = modes[i].p;
			return 0;
		}
	return emb_err_set(err, "--%s: '%s' is not fp32, bf16, w8, w8a8 or "
	                   "w8a8-smooth", opt, arg);
}

int emb_prec_from_enum(emb_prec *p, int v, emb_err *err)
{
	if (v >= 0 && (size_t)v < NMODES) {
		*p = modes[v].p;
		return 0;
	}
	return emb_err_set(err, "precision %d is not an enum emb_precision", v);
}

int emb_prec_check(const emb_prec *p, emb_err *err)
{
	if (p->bf16 && p->a8)
		return emb_err_set(err, "bf16 compute and int8 activations "
		                   "exclude each other");
	return 0;
}

const char *emb_prec_name(const emb_prec *p)
{
	for (size_t i = 0; i < NMODES; i++)
		if (!memcmp(&modes[i].p, p, sizeof(*p)))
			return modes[i].name;
	if (p->bf16 && !p->a8)
		return "bf16+w8";
	return p->a8 == 2 ? "a8-smooth" : "a8";
}
