/*
 * static/static-internal.h - the static model's insides, shared by
 * load.c and embed.c only.
 */
#ifndef EMB_STATIC_INTERNAL_H
#define EMB_STATIC_INTERNAL_H

#include "kern/kernels.h"
#include "static/static.h"

struct emb_static {
	int format;             /* enum emb_static_format */
	emb_tokenizer *tok;
	emb_safetensors *st;
	/* table (rows, dim), mmapped */
	const void *table;
	emb_dtype tdt;          /* F32, F16, F64, I8 */
	size_t rows;
	int dim;
	/* per-token weights (by token id), NULL: none */
	const void *w;
	emb_dtype wdt;          /* F64, F32, F16 */
	/* token id -> table row, NULL: the id itself */
	const void *map;
	emb_dtype mdt;          /* I32, I64 */
	size_t ids;             /* ids covered: [0, ids) */
	size_t max_length;      /* 0: none */
	int trunc_left;         /* tokenizer.json truncation direction Left */
	size_t median;          /* Model2Vec: median token length (code
	                           points) */
	int32_t unk;            /* Model2Vec: dropped after tokenizing; -1 */
	int normalize;          /* Model2Vec config.json normalize */
	float *h2f;             /* F16 table: every half as a float (65536) */
	const emb_kernels *k;   /* the F16 rows widened and summed */
	const char *tname;      /* the table's tensor name (borrowed from st) */
	char *tfile;            /* its file, relative to the model folder */
};

/* IEEE half <-> float; x rounded to half, to nearest even, from a double
 * (one rounding, as numpy casts) */
float emb_static_h2f(uint16_t h);
uint16_t emb_static_d2h(double x);

#endif /* EMB_STATIC_INTERNAL_H */
