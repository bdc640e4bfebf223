/*
 * mproject.c - a case's input (or golden) cut to its first records and
 * to the members the case names (input_fields, limit).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool/mcase.h"
#include "tool/xalloc.h"

/* copy the first LIMIT (0: all) non-blank lines of IN to OUT, keeping
 * only the members KEEP (NULL: the line as it is) */
int mf_project(const char *in, const char *out, char **keep,
               size_t limit, emb_err *err)
{
	emb_reader *r = NULL;
	emb_record *rec = NULL;
	emb_buf b;
	FILE *fp;
	const char *line;
	size_t len;
	int k, rc = -1;
	size_t nrec = 0;

	emb_buf_init(&b);
	if (emb_reader_open(&r, in, (size_t)64 << 20, err) < 0)
		return -1;
	k = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	         0644);
	fp = k < 0 ? NULL : fdopen(k, "wb");
	if (!fp) {
		if (k >= 0)
			close(k);
		emb_reader_free(r);
		return emb_err_set(err, "%s: %s", out, strerror(errno));
	}
	rec = emb_record_new();
	while ((k = emb_reader_next(r, &line, &len, err)) != 0) {
		size_t i;

		if (k < 0)
			continue;
		for (i = 0; i < len && line[i] && strchr(" \t\r", line[i]); i++)
			;
		if (i == len)
			continue;
		if (limit && nrec++ == limit)
			break;
		if (!keep || emb_record_parse(rec, line, len, err) < 0) {
			/* pass a bad line on as it is: the command sees it */
			fwrite(line, 1, len, fp);
			fputc('\n', fp);
			continue;
		}
		b.len = 0;
		emb_out_begin(&b, NULL, NULL);
		for (size_t i = 0; keep[i]; i++) {
			size_t rl = 0;
			const char *raw = emb_record_raw(rec, keep[i], &rl);

			if (raw)
				emb_out_json(&b, keep[i], raw, rl);
		}
		emb_out_end(&b);
		fwrite(b.p, 1, b.len, fp);
	}
	if (fclose(fp) != 0)
		emb_err_set(err, "%s: %s", out, strerror(errno));
	else
		rc = 0;
	emb_record_free(rec);
	emb_reader_free(r);
	emb_buf_release(&b);
	return rc;
}

