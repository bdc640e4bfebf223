/*
 * quantize.h - emb-quantize's two programs: quantized embedding vectors
 * (quantvec.c: --vectors, --unpack, the ranges) and quantized
 * checkpoints (quantckpt.c: -m, -o, --weights), each run on the options
 * the command parsed.
 */
#ifndef EMB_QUANTIZE_H
#define EMB_QUANTIZE_H

#include <stddef.h>
#include "tool/emb-tool.h"

/* emb-quantize's options, and the vector program's ranges */
typedef struct emb_quant_cmd {
	emb_cli cli;
	int kinds[4], nkinds, need_ranges, keep, unpack, force;
	const char *ranges_file, *save_file, *output, *weights;
	float *mins, *maxs;
	int dim;                /* 0: not known yet */
	size_t saturated;
} emb_quant_cmd;

/* --vectors or --unpack over the records of the input: the exit status
 * (exits on a usage error, or when the ranges cannot be had) */
int emb_quant_vectors(emb_quant_cmd *c);
/* -m MODEL -o OUTDIR --weights TYPE: 0, or exits */
int emb_quant_checkpoint(emb_quant_cmd *c);

#endif /* EMB_QUANTIZE_H */
