/*
 * io/file.h - opening the files a model directory (or a manifest) names,
 * without leaving that directory and without blocking.
 * Layer io: includes base only.
 *
 * The rule (emb(7) SECURITY): a file a model names is read only when,
 * after resolving every symbolic link, it lies inside the model
 * directory, or, for a Hugging Face cache snapshot (CACHE/models--X/
 * snapshots/REV), in that repository's blobs/ folder (the links
 * huggingface_hub and scripts/fetch-model write); and only when it is a
 * regular file (a FIFO, device, socket or directory is refused before it
 * is opened, and the open itself does not wait).
 */
#ifndef EMB_IO_FILE_H
#define EMB_IO_FILE_H

#include <stddef.h>

#include "base/base.h"

/*
 * Open PATH read-only (O_CLOEXEC, blocking mode) and return its
 * descriptor (new: close()); -1 with err set on failure, and then errno
 * is ENOENT when PATH does not exist (callers for whom a missing file
 * means defaults test that).  ROOT: the model directory PATH must stay
 * inside (the rule above), or NULL when the user named PATH directly
 * (then only "a regular file" is checked).  *size (may be NULL): the
 * file's size.
 */
int emb_file_open(const char *root, const char *path, size_t *size,
                  emb_err *err);

/*
 * Open PATH that a tool reads as a stream (its input records): a regular
 * file by emb_file_open's rules (ROOT NULL), or a FIFO, opened in
 * blocking mode since a pipe's writer may come later.  A directory,
 * device or socket is refused before it is opened, with emb_file_open's
 * message ("not a regular file (a character device)").  The descriptor
 * (new: close()), or -1 with err set.
 */
int emb_file_open_stream(const char *path, emb_err *err);

/*
 * Read PATH whole (emb_file_open's rules; at most MAX bytes, else an
 * error naming the limit) into a new NUL-terminated buffer (free());
 * *len its length.  NULL with err set on failure (errno ENOENT as above).
 */
char *emb_file_read(const char *root, const char *path, size_t max,
                    size_t *len, emb_err *err);

/*
 * 1 when the real path REAL lies inside the real directory REALROOT, or
 * in the blobs/ folder of the Hugging Face cache repository whose
 * snapshot REALROOT is; 0 otherwise.  Both must be absolute and free of
 * links (realpath()).  Exposed for the tests.
 */
int emb_path_within(const char *real, const char *realroot);

/*
 * Check the files emb reads by their names from the model directory DIR
 * (config.json, tokenizer.json, vocab.txt, tokenizer_config.json,
 * special_tokens_map.json, modules.json, sentence_bert_config.json,
 * config_sentence_transformers.json, model.safetensors and its index)
 * against the rule, before any loader opens them: -1 with err naming the
 * first that breaks it.  Absent files are no error.
 */
/*
 * A whole file for reading only, without copying it where the system
 * allows: PATH (emb_file_open's rules, at most MAX bytes as
 * emb_file_read) mapped read-only, or, for a small file or where mapping
 * fails, read into memory.  OUT->text (LEN bytes, not NUL-terminated)
 * stays valid until emb_filebuf_release.  A mapped file that another
 * process shortens meanwhile ends the process with SIGBUS, as the
 * mapped weights would.  0, or -1 with err set as emb_file_read.
 */
typedef struct emb_filebuf {
	const char *text;
	size_t len;
	int mapped;
} emb_filebuf;
int emb_file_map(emb_filebuf *out, const char *root, const char *path,
                 size_t max, emb_err *err);
void emb_filebuf_release(emb_filebuf *b);

int emb_model_dir_check(const char *dir, emb_err *err);

/* the names above, NULL-terminated (borrowed, static) */
extern const char *const emb_model_file_names[];

/*
 * 1 when S is a relative path that stays below the folder it is taken
 * in: not absolute, no ".." component; and, by FLAGS, no "." component
 * (EMB_RELPATH_NO_DOT); "" and empty components ("a//b") allowed only
 * with EMB_RELPATH_EMPTY_OK.  0 otherwise.
 */
enum { EMB_RELPATH_EMPTY_OK = 1, EMB_RELPATH_NO_DOT = 2 };
int emb_relpath_ok(const char *s, unsigned flags);

/* "A/B", new (free()); NULL when out of memory */
char *emb_path_join(const char *a, const char *b);
/* "ABC", new (free()); NULL when out of memory */
char *emb_str_cat3(const char *a, const char *b, const char *c);

/* Remove the tree PATH, which this program made: depth first, 16
 * levels at most, links removed and not followed, not crossing into
 * other file systems.  0, or -1 with errno set.  On Linux it makes only
 * async-signal-safe calls (no malloc, no opendir), so that a signal
 * handler may call it: the one tree remover of emb. */
int emb_rm_tree(const char *path);

/*
 * A JSON parser's error text without the input it quotes: jansson's
 * "'[' or '{' expected near 'root'" becomes "'[' or '{' expected",
 * "invalid Unicode escape '\\u12'" "invalid Unicode escape", "unable
 * to decode byte 0x..." "invalid UTF-8", so that a message never shows
 * the bytes of a file.  Writes into BUF
 * (N bytes) and returns it.
 */
const char *emb_json_error_text(char *buf, size_t n, const char *text);

/*
 * emb_file_read (ROOT, PATH, MAX as there), then parse it as JSON with
 * jansson's decoding FLAGS: a new json_t (json_decref), or NULL with err
 * set ("PATH: invalid JSON at line L column C: WHAT", without the bytes;
 * "starts with a UTF-8 byte order mark" for a BOM); errno ENOENT when
 * PATH does not exist.
 */
struct json_t;
struct json_t *emb_json_file_load(const char *root, const char *path,
                                  size_t max, size_t flags, emb_err *err);

/* the same, but the value of the top-level member SKIP is 0 in the tree
 * (emb_jscan_zero_member: no tree is built of it), for a big member the
 * caller never reads; errors as emb_json_file_load */
struct json_t *emb_json_file_load_skip(const char *root, const char *path,
                                       size_t max, size_t flags,
                                       const char *skip, emb_err *err);

/* the same for TEXT (LEN bytes, borrowed) already read from PATH */
struct json_t *emb_json_text_load(const char *text, size_t len,
                                  const char *path, size_t flags,
                                  emb_err *err);

#endif /* EMB_IO_FILE_H */
