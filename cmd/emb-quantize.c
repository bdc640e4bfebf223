/* emb-quantize - quantized embedding vectors and quantized checkpoints:
 * the options; the two programs are lib/tool/quantvec.c and quantckpt.c */
#include <string.h>

#include "tool/quantize.h"

static const char usage[] =
"usage: emb-quantize --vectors KIND[,KIND...] [--ranges FILE] [options] [FILE...]\n"
"       emb-quantize --unpack KIND [--ranges FILE] [FILE...]\n"
"       emb-quantize -m MODEL -o OUTDIR --weights int8|f16|bf16 [--force]\n"
"Vectors: reads embedding (or embedding_b64) from each JSON line and adds\n"
"one field per KIND (int8, uint8, binary, ubinary) as sentence-transformers'\n"
"quantize_embeddings computes it; embedding is dropped unless --keep.\n"
"  --vectors KINDS      int8, uint8: (x - min) / ((max - min) / 255)\n"
"                       (- 128 for int8), truncated; binary, ubinary:\n"
"                       packbits(x > 0) (- 128 for binary)\n"
"  --ranges FILE        int8/uint8 ranges: {\"ranges\": [[min...], [max...]]}\n"
"                       or JSONL embedding records to calibrate on\n"
"                       (default: the whole input, read twice)\n"
"  --save-ranges FILE   write the ranges used as {\"ranges\": ...}\n"
"  --keep               keep the embedding field\n"
"  --unpack KIND        the reverse for scoring: KIND field -> embedding\n"
"                       (binary: +1/-1 per bit; int8/uint8: bucket centers,\n"
"                       needs --ranges)\n"
"Values outside the ranges saturate (to 0/255 or -128/127) and are counted\n"
"in a warning on stderr.\n"
"Models:\n"
"  -m, --model MODEL    model directory or ORG/NAME[@REV]\n"
"  -o, --output OUTDIR  new checkpoint directory (the config, tokenizer\n"
"                       and module files emb reads are copied); written\n"
"                       beside it and renamed into place\n"
"  --force              replace an existing non-empty OUTDIR\n"
"  --weights TYPE       int8: linear weights as I8 with F32 per-row scales\n"
"                       (W8); f16, bf16: every float tensor converted\n"
"                       A Model2Vec folder: its table as float16 or int8,\n"
"                       as model2vec's quantization writes it (f16, int8)\n"
"Common: --errors=skip|emit, --strict, --max-line BYTES, --fields LIST,\n"
"  --drop LIST, --progress, --no-progress, --b64 (with --unpack), -h/--help,\n"
"  --version\n"
"Exit: 0 ok, 1 some record failed, 2 usage, 3 model, checkpoint or ranges\n"
"(no ranges in --ranges; --save-ranges, the stdin spool in TMPDIR), 4 stdout\n"
"write error, 5 an input file (or --ranges) could not be read.\n";

enum { O_VECTORS = 1, O_RANGES, O_SAVE, O_KEEP, O_UNPACK, O_OUTPUT,
       O_WEIGHTS, O_FORCE };

static const emb_cli_opt opts[] = {
	{ "vectors", 0, EMB_ARG_REQUIRED, O_VECTORS },
	{ "ranges", 0, EMB_ARG_REQUIRED, O_RANGES },
	{ "save-ranges", 0, EMB_ARG_REQUIRED, O_SAVE },
	{ "keep", 0, EMB_ARG_NONE, O_KEEP },
	{ "unpack", 0, EMB_ARG_REQUIRED, O_UNPACK },
	{ "output", 'o', EMB_ARG_REQUIRED, O_OUTPUT },
	{ "weights", 0, EMB_ARG_REQUIRED, O_WEIGHTS },
	{ "force", 0, EMB_ARG_NONE, O_FORCE },
	{ NULL, 0, 0, 0 },
};

static int option(void *vc, int key, const char *arg, emb_err *err)
{
	emb_quant_cmd *c = vc;

	switch (key) {
	case O_VECTORS: {
		const char *s = arg;
		c->nkinds = 0;
		while (*s) {
			char part[16];
			size_t n = strcspn(s, ",");
			int k;
			if (n == 0 || n >= sizeof(part))
				goto bad;
			memcpy(part, s, n);
			part[n] = 0;
			if (!(k = emb_vq_parse(part)) || c->nkinds == 4)
				goto bad;
			for (int i = 0; i < c->nkinds; i++)
				if (c->kinds[i] == k)
					goto bad;
			c->kinds[c->nkinds++] = k;
			s += n + (s[n] == ',');
		}
		if (c->nkinds)
			return 0;
bad:
		return emb_err_set(err, "--vectors: '%s' is not a list of int8, "
		                   "uint8, binary, ubinary", arg);
	}
	case O_RANGES: c->ranges_file = arg; return 0;
	case O_SAVE: c->save_file = arg; return 0;
	case O_KEEP: c->keep = 1; return 0;
	case O_UNPACK:
		if (!(c->unpack = emb_vq_parse(arg)))
			return emb_err_set(err, "--unpack: '%s' is not int8, uint8, "
			                   "binary or ubinary", arg);
		return 0;
	case O_OUTPUT: c->output = arg; return 0;
	case O_FORCE: c->force = 1; return 0;
	case O_WEIGHTS:
		if (strcmp(arg, "int8") && strcmp(arg, "f16") && strcmp(arg, "bf16"))
			return emb_err_set(err, "--weights: '%s' is not int8, f16 or "
			                   "bf16", arg);
		c->weights = arg;
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static emb_quant_cmd c;

	c.cli.prog = "emb-quantize";
	c.cli.usage = usage;
	c.cli.common = EMB_CLI_MODEL | EMB_CLI_B64;
	emb_cli_parse(&c.cli, argc, argv, opts, option, &c);
	if (c.cli.model || c.output || c.weights)
		return emb_quant_checkpoint(&c);
	return emb_quant_vectors(&c);
}
