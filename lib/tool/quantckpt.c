/*
 * quantckpt.c - emb-quantize's checkpoint program: a model's weights
 * written as int8 (W8), f16 or bf16 into a new checkpoint directory
 * (st/ckpt.c: emb_quantize_model).
 */
#include <stdlib.h>
#include "tool/quantize.h"

int emb_quant_checkpoint(emb_quant_cmd *c)
{
	emb_err err = { "" };
	char *dir;

	if (!c->cli.model || !c->output || !c->weights)
		emb_cli_usage_error(&c->cli, "a model needs -m MODEL, -o OUTDIR "
		                    "and --weights");
	if (c->nkinds || c->unpack || c->cli.nfiles)
		emb_cli_usage_error(&c->cli, "-m takes no --vectors, --unpack "
		                    "or input files");
	dir = emb_cli_model_dir(&c->cli, 1);
	/* a signal: the temporary directory beside OUT goes */
	emb_cli_catch_signals();
	if (emb_quantize_model(dir, c->output, c->weights, c->force, &err) < 0)
		emb_cli_die(&c->cli, EMB_EXIT_MODEL, "%s", err.msg);
	free(dir);
	return 0;
}
