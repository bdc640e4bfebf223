/*
 * vdiag.c - emb-validate's messages: lines after the caller's prefix,
 * the per-record messages of each field and of the records (each kind
 * limited to max_diag), and the labels they name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

const char *const vd_side_name[2] = { "golden", "input" };

void vd_set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? emb_xstrndup(s, strlen(s)) : NULL;
}

void vd_out(const emb_validate *v, FILE *fp, const char *fmt, ...)
{
	va_list ap;

	if (!fp)
		return;
	if (v->o.prefix)
		fputs(v->o.prefix, fp);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fputc('\n', fp);
}

/* a message, the COUNTth of its kind (limited to max_diag) */
static void vdiag(const emb_validate *v, size_t *count, const char *fmt,
                  va_list ap)
{
	if ((*count)++ >= v->o.max_diag || !v->o.diag)
		return;
	if (v->o.prefix)
		fputs(v->o.prefix, v->o.diag);
	vfprintf(v->o.diag, fmt, ap);
	fputc('\n', v->o.diag);
}

/* a per-record message about field FS */
void vd_fdiag(struct fstat *fs, const emb_validate *v, const char *fmt,
              ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(v, &fs->ndiag, fmt, ap);
	va_end(ap);
}

/* a message about a record */
void vd_rdiag(emb_validate *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdiag(v, &v->nrdiag, fmt, ap);
	va_end(ap);
}
