/*
 * wordpiece.c - the WordPiece model, as Hugging Face tokenizers' models::wordpiece: greedy longest
 * match first from the start of each word, continuing pieces looked up
 * with continuing_subword_prefix, a word longer than
 * max_input_chars_per_word or with no full segmentation becomes unk.
 * Each piece is found in one pass over at most the longest vocabulary
 * entry's bytes: a word costs O(length x longest entry), whatever
 * max_input_chars_per_word says.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tok/tok-internal.h"



/* ------------------------------------------------------------------ */
/* WordPiece                                                           */

static int wp_init(tk_wordpiece *wp, const char *unk, const char *prefix,
                   size_t max_chars)
{
	wp->unk = strdup(unk);
	wp->prefix = strdup(prefix);
	if (!wp->unk || !wp->prefix)
		return -1;
	wp->prefix_len = strlen(prefix);
	wp->max_chars = max_chars;
	wp->unk_id = -1;
	return 0;
}

int tk_wordpiece_tokenize(const tk_wordpiece *wp, tk_toks *out, const tk_str *s,
                       tk_span sp, tk_model_work *w, emb_err *err)
{
	size_t n = sp.b - sp.a, k, start, end, first = out->n;
	int32_t os = s->o[2 * sp.a], oe = s->o[2 * (sp.b - 1) + 1];

	if (!n)
		return 0;
	if (n > wp->max_chars)
		goto unk;
	if (n + 1 > w->cap) {
		size_t cap = n + 64;
		char *u8 = realloc(w->u8, 4 * cap);
		size_t *pos;
		if (!u8)
			return emb_err_set(err, "out of memory");
		w->u8 = u8;
		pos = realloc(w->pos, (cap + 1) * sizeof(*pos));
		if (!pos)
			return emb_err_set(err, "out of memory");
		w->pos = pos;
		w->cap = cap;
	}
	w->pos[0] = 0;
	for (k = 0; k < n; k++)
		w->pos[k + 1] = w->pos[k] +
		                emb_utf8_put(w->u8 + w->pos[k], s->c[sp.a + k]);
	/* greedy longest match first, as HF: the longest piece at START in
	 * one forward pass (tk_vocab_longest), so a word costs its length
	 * times the longest vocabulary entry, not its length cubed */
	for (start = 0; start < n; start = end) {
		size_t j = 0;
		int32_t id = tk_vocab_longest(&wp->vocab,
		                              start ? wp->prefix : "",
		                              start ? wp->prefix_len : 0,
		                              w->u8, w->pos[start],
		                              w->pos + start + 1, n - start, &j);
		end = start + 1 + j;
		if (id < 0) {
			out->n = first;
			goto unk;
		}
		if (tk_toks_push(out, id, s->o[2 * (sp.a + start)],
		                 s->o[2 * (sp.a + end - 1) + 1]) < 0)
			return emb_err_set(err, "out of memory");
	}
	return 0;
unk:
	if (wp->unk_id < 0)
		return emb_err_set(err, "unk token '%s' is not in the "
		                   "vocabulary", wp->unk);
	if (tk_toks_push(out, wp->unk_id, os, oe) < 0)
		return emb_err_set(err, "out of memory");
	return 0;
}

int tk_wordpiece_parse(tk_wordpiece *wp, const json_t *j, const char *file,
                    emb_err *err)
{
	json_t *vocab = json_object_get(j, "vocab");
	json_t *unk = json_object_get(j, "unk_token");
	json_t *pre = json_object_get(j, "continuing_subword_prefix");
	json_t *mx = json_object_get(j, "max_input_chars_per_word");
	size_t max_chars = 100;

	if (!vocab)
		return emb_err_set(err, "%s: missing field 'model.vocab'", file);
	if (!json_is_object(vocab))
		return emb_err_set(err, "%s: field 'model.vocab' must be an "
		                   "object of token ids", file);
	if (unk && !json_is_null(unk) && !json_is_string(unk))
		return emb_err_set(err, "%s: field 'model.unk_token' must be a "
		                   "string", file);
	if (pre && !json_is_null(pre) && !json_is_string(pre))
		return emb_err_set(err, "%s: field "
		                   "'model.continuing_subword_prefix' must be a "
		                   "string", file);
	if (mx && !json_is_null(mx)) {
		if (!json_is_integer(mx) || json_integer_value(mx) < 0)
			return emb_err_set(err, "%s: field "
			                   "'model.max_input_chars_per_word' must "
			                   "be a non-negative integer", file);
		max_chars = (size_t)json_integer_value(mx);
	}
	if (wp_init(wp, json_is_string(unk) ? json_string_value(unk) : "[UNK]",
	            json_is_string(pre) ? json_string_value(pre) : "##",
	            max_chars) < 0)
		return emb_err_set(err, "out of memory");
	if (tk_vocab_from_json(&wp->vocab, vocab, file, err) < 0)
		return -1;
	wp->unk_id = tk_vocab_get(&wp->vocab, wp->unk, strlen(wp->unk));
	return 0;
}

int tk_wordpiece_from_vocab_txt(tk_model *out, const char *path,
                                const char *unk, emb_err *err)
{
	int fd = emb_file_open(NULL, path, NULL, err);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int32_t id = 0;
	tk_wordpiece *wp = &out->u.wp;

	memset(out, 0, sizeof(*out));
	out->type = TK_MODEL_WORDPIECE;
	if (fd < 0)
		return -1;
	if (!f) {
		close(fd);
		return emb_err_set(err, "%s: %s", path, strerror(errno));
	}
	if (wp_init(wp, unk, "##", 100) < 0) {
		fclose(f);
		return emb_err_set(err, "out of memory");
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (memchr(line, 0, (size_t)n)) {
			free(line);
			fclose(f);
			return emb_err_set(err, "%s: line %d holds a NUL byte",
			                   path, id + 1);
		}
		if (tk_vocab_add(&wp->vocab, line, (size_t)n, id) < 0) {
			free(line);
			fclose(f);
			return emb_err_set(err, "%s: too many tokens or out of "
			                   "memory", path);
		}
		id++;
	}
	free(line);
	if (ferror(f)) {
		fclose(f);
		return emb_err_set(err, "%s: read error", path);
	}
	fclose(f);
	if (!id)
		return emb_err_set(err, "%s: the vocabulary is empty", path);
	if (tk_vocab_build(&wp->vocab) < 0)
		return emb_err_set(err, "out of memory");
	wp->unk_id = tk_vocab_get(&wp->vocab, wp->unk, strlen(wp->unk));
	return 0;
}
