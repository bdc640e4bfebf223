/*
 * fuzz_tokenizer_fast.c - the streaming JSON scanner (io/jscan.h) and
 * the fast reading of a BPE tokenizer.json's vocab and merges
 * (tok/fastjson.c), each against jansson.  The input is the file.
 *
 *  1. The scanner is as strict as jansson: what it accepts whole
 *     (emb_jscan_skip + finish) jansson accepts, unless jansson refuses a
 *     number too big for it; what jansson accepts the scanner accepts
 *     (but past 2000 levels of nesting, where the two count alike only
 *     roughly, and a NUL byte after a number, which jansson skips); an
 *     error names a line and column inside the text.
 *  2. When tk_fast_read takes the file, the model it gives (vocab ids
 *     both ways, merge ranks and results) is the model jansson's tree
 *     gives, and an error is the same error.
 */
#include "fuzz.h"
#include "io/jscan.h"
#include "tok/tok-internal.h"

static void scanner(const uint8_t *data, size_t size)
{
	emb_jscan s;
	json_error_t je;
	json_t *j;
	emb_err err;
	int ours, deep = 0;

	emb_jscan_init(&s, (const char *)data, size);
	ours = emb_jscan_skip(&s) == 0 && emb_jscan_finish(&s) == 0;
	if (!ours) {
		FUZZ_CHECK(s.what && s.at >= s.text && s.at <= s.end);
		emb_jscan_error(&s, "f", &err);
		FUZZ_CHECK(!strncmp(err.msg, "f: invalid JSON at line ", 24));
		deep = !strcmp(s.what, "maximum parsing depth reached");
	}
	emb_jscan_release(&s);
	j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
	if (ours && !j)
		FUZZ_CHECK(strstr(je.text, "too big") ||
		           strstr(je.text, "overflow") ||
		           strstr(je.text, "depth"));
	/* jansson drops a NUL byte just after a number ("[1\0]" loads: its
	 * unget of the NUL empties its one-character buffer) */
	if (!ours && j)
		FUZZ_CHECK(deep || memchr(data, 0, size));
	json_decref(j);
}

/* the two models agree */
static void same_model(const tk_bpe *a, const tk_bpe *b)
{
	const tk_vocab *va = &a->vocab, *vb = &b->vocab;

	FUZZ_CHECK(va->n == vb->n && va->n_ids == vb->n_ids);
	for (size_t e = 0; e < va->n; e++) {
		const char *s = va->arena + va->ent[e].off;
		size_t n = va->ent[e].len;
		FUZZ_CHECK(tk_vocab_get(va, s, n) == tk_vocab_get(vb, s, n));
	}
	for (size_t i = 0; i < va->n_ids; i++) {
		const char *x = tk_vocab_str(va, (int32_t)i);
		const char *y = tk_vocab_str(vb, (int32_t)i);
		FUZZ_CHECK(!x == !y && (!x || !strcmp(x, y)));
	}
	FUZZ_CHECK(a->n_merges == b->n_merges && a->mask == b->mask);
	for (size_t i = 0; i <= a->mask; i++)
		FUZZ_CHECK(a->merges[i].key == b->merges[i].key &&
		           a->merges[i].rank == b->merges[i].rank &&
		           a->merges[i].id == b->merges[i].id);
	FUZZ_CHECK(a->unk_id == b->unk_id);
	FUZZ_CHECK(!memcmp(a->byte_id, b->byte_id, sizeof(a->byte_id)));
}

int FUZZ_ENTRY(tokenizer_fast)(const uint8_t *data, size_t size)
{
	tk_fast f;
	char *res;
	size_t rlen;
	json_t *tree, *full;
	tk_model ma, mb;
	emb_err ea, eb;
	int ra, rb;

	scanner(data, size);
	if (tk_fast_read(&f, (const char *)data, size, &res, &rlen) != 1) {
		fuzz_note("fast", "declined");
		return 0;
	}
	full = json_loadb((const char *)data, size, 0, NULL);
	tree = json_loadb(res, rlen, 0, NULL);
	free(res);
	/* the residue parses exactly when the whole does */
	FUZZ_CHECK(!tree == !full);
	if (!tree) {
		fuzz_note("fast", "jansson refused");
		tk_fast_release(&f);
		return 0;
	}
	ra = tk_model_parse(&ma, json_object_get(tree, "model"), "f", &f, &ea);
	rb = tk_model_parse(&mb, json_object_get(full, "model"), "f", NULL,
	                    &eb);
	fuzz_note("fast", ra == 0 ? "ok" : ea.msg);
	FUZZ_CHECK(ra == rb);
	if (ra < 0)
		FUZZ_CHECK(!strcmp(ea.msg, eb.msg));
	else
		same_model(&ma.u.bpe, &mb.u.bpe);
	/* a failed parse leaves what it read, released alike */
	tk_model_release(&ma);
	tk_model_release(&mb);
	tk_fast_release(&f);
	json_decref(tree);
	json_decref(full);
	return 0;
}
