/*
 * validate.c - compare a record stream with a golden one (emb-validate)
 *
 * Records of the two sides are joined on the raw JSON text of "id" (or
 * on their ordinal in line order when the first record of either side
 * has no id); a window of a long document (--chunk) on "id" and
 * "chunk".  Both streams are consumed incrementally: a record waits in
 * a per-side table until its partner arrives, so streams in the same
 * order need almost no memory, and any order works.  Only the fields
 * that are compared are kept (extracted into struct vval), never the
 * JSON.
 *
 * This file takes the records of both sides in and joins them, and
 * holds the lifecycle; vstate.h names the others.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool/vstate.h"
#include "tool/xalloc.h"

void emb_validate_opts_init(emb_validate_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->atol = 1e-5;
	o->min_cos = NAN;
	o->max_diag = 5;
}

/* ------------------------------------------------------------------ */
/* items and the per-side tables                                       */

static void item_free(emb_validate *v, struct item *it)
{
	if (!it)
		return;
	if (it->vals)
		for (size_t f = 0; f < v->nf; f++)
			vd_vval_release(&it->vals[f]);
	free(it->vals);
	free(it->key);
	free(it->label);
	free(it->where);
	free(it);
}

static void list_append(struct side *s, struct item *it)
{
	it->next = NULL;
	it->prev = s->tail;
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
}

static void list_unlink(struct side *s, struct item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		s->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		s->tail = it->prev;
	it->prev = it->next = NULL;
}

static void tab_insert(struct side *s, struct item *it)
{
	emb_xok(emb_strmap_put(&s->pending, it->key, it));
}

/* remove and return the pending item with KEY, or NULL */
static struct item *tab_take(struct side *s, const char *key)
{
	struct item *it = emb_strmap_take(&s->pending, key);

	if (it)
		list_unlink(s, it);
	return it;
}

/* 1 when KEY was already seen on this side (else remember it) */
static int seen_before(struct side *s, const char *key)
{
	if (emb_strmap_has(&s->seen, key))
		return 1;
	emb_xok(emb_strmap_put(&s->seen, key, s));
	return 0;
}

/* join IT (of SIDE) now that the mode is known */
static void place(emb_validate *v, int side, struct item *it)
{
	struct side *s = &v->s[side], *o = &v->s[!side];
	struct item *p;

	if (v->mode == 1) {
		if (!it->has_id) {
			v->rec.no_id++;
			vd_rdiag(v, "%s: error (at %s): record has no id (joining by "
			         "id)", vd_side_name[side], it->where ? it->where : "?");
			item_free(v, it);
			return;
		}
		if (seen_before(s, it->key)) {
			v->rec.duplicates++;
			vd_rdiag(v, "%s: duplicate %s", vd_side_name[side], it->label);
			item_free(v, it);
			return;
		}
	} else {
		free(it->key);
		it->key = emb_xasprintf("%zu", it->ord);
		free(it->label);
		it->label = emb_xasprintf("record %zu", it->ord);
	}
	p = tab_take(o, it->key);
	if (!p) {
		list_append(s, it);
		tab_insert(s, it);
		return;
	}
	v->rec.joined++;
	if (it->skip || p->skip)
		v->pairs_skipped++;
	else if (side == EMB_SIDE_GOLDEN)
		vd_compare(v, it, p);
	else
		vd_compare(v, p, it);
	item_free(v, it);
	item_free(v, p);
}

static void decide_mode(emb_validate *v)
{
	struct item *it, *next;

	v->mode = v->s[0].first_has_id == 1 && v->s[1].first_has_id == 1;
	v->rec.by_id = v->mode;
	for (int sd = 0; sd < 2; sd++) {
		it = v->s[sd].head;
		v->s[sd].head = v->s[sd].tail = NULL;
		for (; it; it = next) {
			next = it->next;
			it->prev = it->next = NULL;
			place(v, sd, it);
		}
	}
}

static void take_item(emb_validate *v, int side, struct item *it)
{
	struct side *s = &v->s[side];

	if (s->first_has_id < 0)
		s->first_has_id = it->has_id;
	if (v->mode < 0) {
		if (v->s[!side].first_has_id < 0) {
			list_append(s, it);
			return;
		}
		list_append(s, it);
		decide_mode(v);
		return;
	}
	place(v, side, it);
}

void emb_validate_add(emb_validate *v, int side, const emb_record *rec,
                      const char *where)
{
	struct side *s;
	struct item *it;
	const char *raw;
	size_t len = 0;

	if (!v || (side != 0 && side != 1) || v->finished)
		return;
	s = &v->s[side];
	s->n++;
	if (side == EMB_SIDE_GOLDEN)
		v->rec.golden++;
	else
		v->rec.input++;
	it = emb_xcalloc(1, sizeof(*it));
	it->ord = s->n;
	raw = emb_record_raw(rec, "id", &len);
	if (raw && emb_record_raw(rec, "chunk", NULL)) {
		/* windows share their document's id */
		size_t clen = 0;
		const char *ch = emb_record_raw(rec, "chunk", &clen);
		it->has_id = 1;
		it->key = emb_xasprintf("%.*s#%.*s", (int)len, raw, (int)clen, ch);
		it->label = emb_xasprintf("id %.*s chunk %.*s", (int)len, raw,
		                      (int)clen, ch);
	} else if (raw) {
		it->has_id = 1;
		it->key = emb_xstrndup(raw, len);
		it->label = emb_xasprintf("id %s", it->key);
	} else {
		it->key = emb_xasprintf("%zu", it->ord);
		it->label = emb_xasprintf("record %zu", it->ord);
		it->where = where ? emb_xstrndup(where, strlen(where))
		                  : emb_xasprintf("record %zu", it->ord);
	}
	if (emb_record_has(rec, "error")) {
		const char *msg = NULL;
		size_t mlen = 0;

		/* an --errors=emit record stands for a failed one (unless
		 * the caller skips those) */
		if (emb_record_get_string(rec, "error", &msg, &mlen, NULL) < 0)
			msg = "?", mlen = 1;
		if (v->o.skip_errors && side == EMB_SIDE_INPUT) {
			it->skip = 1;
			v->skipped++;
		} else {
			v->rec.errors++;
			vd_rdiag(v, "%s: %s: error record: %.*s", vd_side_name[side],
			         it->label, (int)(mlen > 300 ? 300 : mlen), msg);
		}
	}
	it->vals = emb_xcalloc(v->nf, sizeof(*it->vals));
	for (size_t f = 0; f < v->nf; f++) {
		vd_extract(&it->vals[f], rec, v->f[f].def, side);
		if (it->vals[f].state != VS_ABSENT)
			s->any[v->f[f].di] = 1;
	}
	take_item(v, side, it);
}

void emb_validate_bad(emb_validate *v, int side, const char *where,
                      const char *msg)
{
	if (!v || (side != 0 && side != 1) || v->finished)
		return;
	v->s[side].n++;
	if (side == EMB_SIDE_GOLDEN)
		v->rec.golden++;
	else
		v->rec.input++;
	v->rec.bad++;
	vd_rdiag(v, "%s: error (at %s): %s", vd_side_name[side],
	         where ? where : "?", msg ? msg : "unreadable record");
}

/* ------------------------------------------------------------------ */
/* lifecycle and summary                                               */

int emb_validate_new(emb_validate **out, const emb_validate_opts *o,
                     emb_err *err)
{
	emb_validate *v;
	emb_validate_opts def;
	int want[NDEFS] = { 0 };

	*out = NULL;
	if (!o) {
		emb_validate_opts_init(&def);
		o = &def;
	}
	if (!(o->atol >= 0))
		return emb_err_set(err, "atol must be a number >= 0");
	if (o->fields) {
		for (size_t i = 0; o->fields[i]; i++) {
			int d = vd_def_index(o->fields[i]);

			if (d < 0)
				return emb_err_set(err, "unknown field '%s' "
				                   "(known: %s)", o->fields[i],
				                   emb_validate_field_list());
			want[d] = 1;
		}
	}
	for (size_t i = 0; i < o->n_tols; i++) {
		if (!o->tols[i].field || vd_def_index(o->tols[i].field) < 0)
			return emb_err_set(err, "unknown field '%s' (known: %s)",
			                   o->tols[i].field ? o->tols[i].field : "",
			                   emb_validate_field_list());
		if (isnan(o->tols[i].atol) || isinf(o->tols[i].atol))
			return emb_err_set(err, "field '%s': atol must be a "
			                   "finite number", o->tols[i].field);
	}
	v = emb_xcalloc(1, sizeof(*v));
	v->o = *o;
	v->mode = -1;
	v->s[0].first_has_id = v->s[1].first_has_id = -1;
	v->f = emb_xcalloc(NDEFS, sizeof(*v->f));
	for (size_t d = 0; d < NDEFS; d++) {
		struct fstat *fs;

		if (o->fields && !want[d])
			continue;
		fs = &v->f[v->nf++];
		fs->def = &vd_defs[d];
		fs->di = (int)d;
		fs->requested = o->fields != NULL;
		fs->st.field = vd_defs[d].name;
		fs->st.exact = vd_defs[d].kind == VK_INTS ||
		               vd_defs[d].kind == VK_STRS;
		fs->st.atol = vd_defs[d].atol >= 0 ? vd_defs[d].atol : o->atol;
		fs->st.min_cos_req = vd_defs[d].kind == VK_FLOATS ||
		                     vd_defs[d].kind == VK_SPARSE ? o->min_cos : NAN;
		fs->st.min_cos = 1;
		for (size_t i = 0; i < o->n_tols; i++) {
			if (vd_def_index(o->tols[i].field) != (int)d)
				continue;
			if (o->tols[i].atol >= 0)
				fs->st.atol = o->tols[i].atol;
			if (!isnan(o->tols[i].min_cos))
				fs->st.min_cos_req = o->tols[i].min_cos;
		}
	}
	*out = v;
	return 0;
}

void emb_validate_free(emb_validate *v)
{
	if (!v)
		return;
	for (int sd = 0; sd < 2; sd++) {
		struct side *s = &v->s[sd];
		struct item *it, *next;

		for (it = s->head; it; it = next) {
			next = it->next;
			item_free(v, it);
		}
		emb_strmap_release(&s->pending);
		emb_strmap_release(&s->seen);
	}
	for (size_t f = 0; f < v->nf; f++) {
		free(v->f[f].max_abs_id);
		free(v->f[f].min_cos_id);
		free(v->f[f].first_bad_id);
		free(v->f[f].first_shape_id);
		free(v->f[f].first_gonly_id);
	}
	free(v->f);
	free(v);
}

static struct fstat *find_fstat(const emb_validate *v, const char *field)
{
	int d = field ? vd_def_index(field) : -1;

	for (size_t f = 0; d >= 0 && f < v->nf; f++)
		if (v->f[f].di == d)
			return &v->f[f];
	return NULL;
}

int emb_validate_stat(const emb_validate *v, const char *field,
                      emb_vstat *out)
{
	struct fstat *fs = v ? find_fstat(v, field) : NULL;

	if (!fs)
		return -1;
	*out = fs->st;
	out->max_abs_id = fs->max_abs_id;
	out->min_cos_id = fs->min_cos_id;
	return 0;
}

void emb_validate_records(const emb_validate *v, emb_vrecords *out)
{
	*out = v->rec;
}
