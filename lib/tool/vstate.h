/*
 * vstate.h - the state of an emb_validate (emb-tool.h): its fields,
 * pending records, sides and statistics, and the functions its files
 * call across; private to them (private to lib/tool/).  Bottom up:
 *
 *   vdiag.c     the messages and the labels they name
 *   vfield.c    the field table, and one field extracted from a record
 *   vcompare.c  a joined pair's fields compared
 *   validate.c  the records of both sides taken in and joined, the
 *               lifecycle
 *   vsummary.c  the summary lines and the verdict
 *   vfiles.c    two files compared (emb_validate_files)
 */
#ifndef EMB_VSTATE_H
#define EMB_VSTATE_H

#include <stdarg.h>
#include <stdio.h>

#include "base/strmap.h"
#include "tool/emb-tool.h"

enum vkind {
	VK_INTS,        /* int arrays, exact (input_ids) */
	VK_STRS,        /* string arrays, exact (tokens) */
	VK_FLOATS,      /* float vector or matrix, atol + cosine */
	VK_SPARSE,      /* {"idx": w} or {"indices":[],"values":[]} */
	VK_QUANT,       /* int arrays with an integer tolerance */
};

struct vdef {
	const char *name;
	enum vkind kind;
	const char *gkeys[3];   /* golden keys, first present wins */
	const char *ikeys[3];   /* input keys */
	const char *alias;      /* another accepted name, or NULL */
	double atol;            /* default; < 0: opts.atol */
	int lenient;            /* 1: compared only where both records have
	                           it (else a record of an input that has the
	                           field elsewhere must have it too) */
};

/* the fields (vfield.c): adding one is a line in vd_defs[] and one more
 * here */
#define NDEFS 13
extern const struct vdef vd_defs[];     /* NDEFS of them */

enum { VS_ABSENT, VS_OK, VS_BAD };

struct vstr {
	char *p;
	size_t n;
};

/* one field of one record */
struct vval {
	int state;
	char *msg;              /* VS_BAD: why */
	size_t rows, cols;      /* ints/strs/sparse: rows 1, cols n */
	int32_t *iv;
	float *fv;
	struct vstr *sv;
	int64_t *idx;           /* sparse: sorted indices, fv the weights */
};

struct item {
	char *key;              /* join key */
	char *label;            /* "id 17" or "record 3" */
	char *where;            /* "file:line" of a record without id */
	int has_id;
	int skip;               /* an error record under skip_errors */
	size_t ord;
	struct vval *vals;      /* one per active field */
	struct item *prev, *next;       /* pending list, arrival order */
};

struct side {
	struct item *head, *tail;
	emb_strmap pending;     /* key -> pending item (empty until
	                           joining) */
	emb_strmap seen;        /* ids seen (duplicates) */
	size_t n;               /* records so far (ordinal) */
	int first_has_id;       /* -1 unknown */
	int any[NDEFS];         /* the field occurs on this side */
};

struct fstat {
	const struct vdef *def;
	int di;                 /* index in defs */
	emb_vstat st;
	char *max_abs_id, *min_cos_id;
	char *first_bad_id;     /* first mismatch/shape/bad/golden_only */
	char *first_shape_id, *first_gonly_id;
	size_t ndiag;
	int requested;
};

struct emb_validate {
	emb_validate_opts o;
	struct fstat *f;
	size_t nf;
	struct side s[2];
	int mode;               /* -1 undecided, 0 line order, 1 by id */
	emb_vrecords rec;
	size_t nrdiag;          /* record-level messages printed */
	int finished;
	int stopped;            /* o.strict: reading stopped at a failure */
	size_t skipped;         /* error records left out (skip_errors) */
	size_t pairs_skipped;   /* joins with a skipped error record */
};

/* vdiag.c: the sides' names; *DST = a copy of S (NULL: none), the old
 * one freed; a line on FP (NULL: none) after the prefix; a per-record
 * message about field FS, and one about a record (each kind limited to
 * max_diag) */
extern const char *const vd_side_name[2];       /* "golden", "input" */
void vd_set_str(char **dst, const char *s);
void vd_out(const emb_validate *v, FILE *fp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void vd_fdiag(struct fstat *fs, const emb_validate *v, const char *fmt,
              ...) __attribute__((format(printf, 3, 4)));
void vd_rdiag(emb_validate *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* vfield.c: the index in vd_defs of the field NAME (or its alias), -1;
 * field D of REC (of SIDE) into X; X released */
int vd_def_index(const char *name);
void vd_extract(struct vval *x, const emb_record *rec, const struct vdef *d,
                int side);
void vd_vval_release(struct vval *x);

/* vcompare.c: the fields of the golden record G and the input record X */
void vd_compare(emb_validate *v, const struct item *g, const struct item *x);

#endif /* EMB_VSTATE_H */
