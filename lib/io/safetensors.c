/*
 * safetensors.c - read-only, mmapped safetensors files (single or sharded)
 *
 * Layout: u64 little-endian header length N, N bytes of JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
 *  "__metadata__": {"k": "v"}}, then the data section; offsets are
 * relative to the data section.  Every field is checked against the file
 * size before anything points into the map.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/half.h"
#include "io/io.h"

#define HEADER_MAX ((uint64_t)100 << 20)   /* 100 MiB of JSON is plenty */
#define INDEX_MAX ((size_t)100 << 20)

struct byname {
	const char *name;
	size_t idx;
};

typedef struct shard {
	char *path;             /* new */
	unsigned char *map;     /* mmap of the whole file */
	size_t size;
} shard;

struct emb_safetensors {
	shard *shards;
	size_t nshards;
	emb_tensor *t;          /* file order: shard, then data offset */
	size_t n;
	struct byname *byname;  /* n entries sorted by name */
	char **meta;            /* key, value, key, value... (new) */
	size_t nmeta;
	json_t *metaseen;       /* the keys of meta: a hash set (new) */
	const char *root;       /* borrowed, during open: the model directory
	                           its files must stay inside, or NULL */
};

static const char *const dtype_names[EMB_DT_COUNT] = {
	[EMB_DT_F32] = "F32", [EMB_DT_F16] = "F16", [EMB_DT_BF16] = "BF16",
	[EMB_DT_F64] = "F64", [EMB_DT_I8] = "I8", [EMB_DT_U8] = "U8",
	[EMB_DT_I16] = "I16", [EMB_DT_I32] = "I32", [EMB_DT_I64] = "I64",
	[EMB_DT_BOOL] = "BOOL",
};
static const size_t dtype_sizes[EMB_DT_COUNT] = {
	[EMB_DT_F32] = 4, [EMB_DT_F16] = 2, [EMB_DT_BF16] = 2,
	[EMB_DT_F64] = 8, [EMB_DT_I8] = 1, [EMB_DT_U8] = 1,
	[EMB_DT_I16] = 2, [EMB_DT_I32] = 4, [EMB_DT_I64] = 8,
	[EMB_DT_BOOL] = 1,
};

const char *emb_dtype_name(emb_dtype dt)
{
	if ((int)dt < 0 || dt >= EMB_DT_COUNT)
		return NULL;
	return dtype_names[dt];
}

size_t emb_dtype_size(emb_dtype dt)
{
	if ((int)dt < 0 || dt >= EMB_DT_COUNT)
		return 0;
	return dtype_sizes[dt];
}

static int dtype_parse(emb_dtype *out, const char *s)
{
	for (int i = 0; i < EMB_DT_COUNT; i++)
		if (!strcmp(s, dtype_names[i])) {
			*out = (emb_dtype)i;
			return 0;
		}
	return -1;
}

/* a name fit for a one-line message: control bytes become '?', long
 * names are cut (buf must hold 132 bytes) */
static const char *shown(char *buf, const char *s)
{
	size_t i, n = 0;

	for (i = 0; s[i] && n < 120; i++)
		buf[n++] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	if (s[i]) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = 0;
	return buf;
}

static char *path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (a && dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

typedef struct range {
	uint64_t b, e;
	size_t idx;
} range;

static int range_cmp(const void *x, const void *y)
{
	const range *a = x, *b = y;

	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	if (a->e != b->e)
		return a->e < b->e ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int get_u64(uint64_t *out, json_t *v)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int add_meta(emb_safetensors *st, const char *k, const char *v)
{
	char **m;

	/* a hash set, not a scan: a header may hold 100k keys */
	if (!st->metaseen && !(st->metaseen = json_object()))
		return -1;
	if (json_object_get(st->metaseen, k))
		return 0;       /* first shard wins */
	if (json_object_set_new(st->metaseen, k, json_true()))
		return -1;
	m = realloc(st->meta, (st->nmeta + 1) * 2 * sizeof(*m));
	if (!m)
		return -1;
	st->meta = m;
	m[2 * st->nmeta] = strdup(k);
	m[2 * st->nmeta + 1] = strdup(v);
	st->nmeta++;
	if (!m[2 * st->nmeta - 2] || !m[2 * st->nmeta - 1])
		return -1;
	return 0;
}

static int map_file(const emb_safetensors *st, shard *sh, emb_err *err)
{
	struct stat sb;
	int fd = emb_file_open(st->root, sh->path, NULL, err);

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0) {
		emb_err_set(err, "%s: %s", sh->path, strerror(errno));
		close(fd);
		return -1;
	}
	if (sb.st_size < 8) {
		close(fd);
		return emb_err_set(err, "%s: file is truncated (%lld bytes, "
		                   "shorter than the 8-byte header length)",
		                   sh->path, (long long)sb.st_size);
	}
	if ((unsigned long long)sb.st_size > SIZE_MAX) {
		close(fd);
		return emb_err_set(err, "%s: file is too large to map", sh->path);
	}
	sh->size = (size_t)sb.st_size;
	sh->map = mmap(NULL, sh->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (sh->map == MAP_FAILED) {
		sh->map = NULL;
		return emb_err_set(err, "%s: mmap: %s", sh->path, strerror(errno));
	}
	return 0;
}

/* parse one tensor entry into t (name set by caller); b/e: its offsets */
static int parse_entry(emb_tensor *t, uint64_t *b, uint64_t *e,
                       json_t *v, const char *path, const char *name,
                       emb_err *err)
{
	char nb[132];
	json_t *dt = json_object_get(v, "dtype");
	json_t *sh = json_object_get(v, "shape");
	json_t *off = json_object_get(v, "data_offsets");
	uint64_t numel = 1, sz;
	size_t i;

	if (!json_is_object(v))
		return emb_err_set(err, "%s: tensor '%s': entry is not a JSON object",
		                   path, shown(nb, name));
	if (!json_is_string(dt))
		return emb_err_set(err, "%s: tensor '%s': field 'dtype' must be a string",
		                   path, shown(nb, name));
	if (dtype_parse(&t->dtype, json_string_value(dt))) {
		char db[132];
		return emb_err_set(err, "%s: tensor '%s': unknown dtype '%s'",
		                   path, shown(nb, name), shown(db, json_string_value(dt)));
	}
	if (!json_is_array(sh))
		return emb_err_set(err, "%s: tensor '%s': field 'shape' must be an array "
		                   "of non-negative integers", path, shown(nb, name));
	if (json_array_size(sh) > EMB_MAX_DIMS)
		return emb_err_set(err, "%s: tensor '%s': shape has %zu dimensions "
		                   "(at most %d supported)", path, shown(nb, name),
		                   json_array_size(sh), EMB_MAX_DIMS);
	t->ndim = (int)json_array_size(sh);
	for (i = 0; i < json_array_size(sh); i++) {
		uint64_t d;
		if (get_u64(&d, json_array_get(sh, i)))
			return emb_err_set(err, "%s: tensor '%s': field 'shape' must be an "
			                   "array of non-negative integers", path, shown(nb, name));
		t->shape[i] = (int64_t)d;
	}
	for (i = 0; i < (size_t)t->ndim; i++) {
		uint64_t d = (uint64_t)t->shape[i];
		if (d && numel > (uint64_t)INT64_MAX / d)
			return emb_err_set(err, "%s: tensor '%s': shape product overflows",
			                   path, shown(nb, name));
		numel *= d;
	}
	sz = dtype_sizes[t->dtype];
	if (numel > SIZE_MAX / sz || numel > UINT64_MAX / sz)
		return emb_err_set(err, "%s: tensor '%s': shape product overflows",
		                   path, shown(nb, name));
	t->numel = (int64_t)numel;
	t->nbytes = (size_t)(numel * sz);
	if (!json_is_array(off) || json_array_size(off) != 2 ||
	    get_u64(b, json_array_get(off, 0)) || get_u64(e, json_array_get(off, 1)))
		return emb_err_set(err, "%s: tensor '%s': field 'data_offsets' must be "
		                   "[begin, end] (non-negative integers)", path, shown(nb, name));
	if (*e < *b)
		return emb_err_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] end "
		                   "before begin", path, shown(nb, name),
		                   (unsigned long long)*b, (unsigned long long)*e);
	return 0;
}

/* map SH and append its tensors (file order) to st */
static int parse_shard(emb_safetensors *st, shard *sh, emb_err *err)
{
	char nb[132], nb2[132];
	uint64_t hlen, dsize, maxend = 0;
	json_t *root, *v;
	json_error_t jerr;
	const char *key;
	const unsigned char *p;
	range *rg = NULL;
	size_t first = st->n, cnt = 0, i;
	emb_tensor *nt;
	int contiguous = 1, inrange = 1;

	if (map_file(st, sh, err))
		return -1;
	p = sh->map;
	if (!memcmp(p, "PK\x03\x04", 4))  /* torch.save's format, renamed */
		return emb_err_set(err, "%s: not a safetensors file (a zip archive: "
		                   "a PyTorch checkpoint?)", sh->path);
	hlen = 0;
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)p[i] << (8 * i);
	if (hlen > HEADER_MAX)
		return emb_err_set(err, "%s: not a safetensors file (its header "
		                   "length field is larger than 100 MiB)", sh->path);
	if (hlen > sh->size - 8)
		return emb_err_set(err, "%s: file is truncated or not a safetensors "
		                   "file (its header length field exceeds the "
		                   "file's %zu bytes)", sh->path, sh->size);
	if (hlen < 2 || p[8] != '{')
		return emb_err_set(err, "%s: header is not a JSON object", sh->path);
	dsize = sh->size - 8 - hlen;
	root = json_loadb((const char *)p + 8, (size_t)hlen,
	                  JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		char tb[132];
		return emb_err_set(err, "%s: header is not valid JSON (column %d: %s)",
		                   sh->path, jerr.column,
		                   emb_json_error_text(tb, sizeof(tb), jerr.text));
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return emb_err_set(err, "%s: header is not a JSON object", sh->path);
	}
	cnt = json_object_size(root);
	if (cnt > (SIZE_MAX / sizeof(emb_tensor)) - st->n - 1)
		goto oom;
	nt = realloc(st->t, (st->n + cnt + 1) * sizeof(*nt));
	if (!nt)
		goto oom;
	st->t = nt;
	rg = calloc(cnt + 1, sizeof(*rg));
	if (!rg)
		goto oom;
	cnt = 0;
	json_object_foreach(root, key, v) {
		emb_tensor *t;
		if (!strcmp(key, "__metadata__")) {
			const char *mk;
			json_t *mv;
			if (!json_is_object(v))
				goto badmeta;
			json_object_foreach(v, mk, mv) {
				if (!json_is_string(mv))
					goto badmeta;
				if (add_meta(st, mk, json_string_value(mv)))
					goto oom;
			}
			continue;
		}
		t = &st->t[st->n];
		memset(t, 0, sizeof(*t));
		if (parse_entry(t, &rg[cnt].b, &rg[cnt].e, v, sh->path, key, err))
			goto fail;
		if (!(t->name = strdup(key)))
			goto oom;
		t->file = sh->path;
		rg[cnt].idx = st->n;
		st->n++;
		cnt++;
	}
	qsort(rg, cnt, sizeof(*rg), range_cmp);
	/* a header that tiles [0, maxend) exactly, sizes right, but runs past
	 * the end of the file: the file was cut short */
	for (i = 0; i < cnt; i++) {
		emb_tensor *t = &st->t[rg[i].idx];
		if (rg[i].b != maxend || rg[i].e - rg[i].b != t->nbytes)
			contiguous = 0;
		if (rg[i].e > maxend)
			maxend = rg[i].e;
		if (rg[i].e > dsize)
			inrange = 0;
	}
	if (cnt && contiguous && !inrange) {
		emb_err_set(err, "%s: file is truncated (header says %llu bytes, "
		            "file has %zu)", sh->path,
		            (unsigned long long)(8 + hlen + maxend), sh->size);
		goto fail;
	}
	for (i = 0; i < cnt; i++) {
		emb_tensor *t = &st->t[rg[i].idx];
		if (rg[i].e > dsize) {
			emb_err_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] outside "
			            "the data section (%llu bytes)", sh->path,
			            shown(nb, t->name), (unsigned long long)rg[i].b,
			            (unsigned long long)rg[i].e, (unsigned long long)dsize);
			goto fail;
		}
		if (rg[i].e - rg[i].b != t->nbytes) {
			char sb[160];
			size_t n = 0;
			for (int d = 0; d < t->ndim && n < 120; d++)
				n += (size_t)snprintf(sb + n, sizeof(sb) - n, "%s%lld",
				                      d ? "," : "", (long long)t->shape[d]);
			sb[n < sizeof(sb) ? n : sizeof(sb) - 1] = 0;
			emb_err_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu "
			            "bytes, but %s [%s] needs %zu", sh->path,
			            shown(nb, t->name), (unsigned long long)rg[i].b,
			            (unsigned long long)rg[i].e,
			            (unsigned long long)(rg[i].e - rg[i].b),
			            dtype_names[t->dtype], sb, t->nbytes);
			goto fail;
		}
	}
	/* overlap: sorted by begin, each non-empty range must start at or
	 * after the furthest end seen so far */
	{
		uint64_t end = 0;
		size_t owner = 0;
		int have = 0;
		for (i = 0; i < cnt; i++) {
			if (rg[i].b == rg[i].e)
				continue;
			if (have && rg[i].b < end) {
				emb_tensor *a = &st->t[owner], *t = &st->t[rg[i].idx];
				emb_err_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] "
				            "overlap tensor '%s'", sh->path, shown(nb, t->name),
				            (unsigned long long)rg[i].b,
				            (unsigned long long)rg[i].e, shown(nb2, a->name));
				goto fail;
			}
			end = rg[i].e;
			owner = rg[i].idx;
			have = 1;
		}
	}
	/* point into the map, and reorder this shard's tensors by offset */
	{
		emb_tensor *tmp = malloc((cnt + 1) * sizeof(*tmp));
		if (!tmp)
			goto oom;
		for (i = 0; i < cnt; i++) {
			tmp[i] = st->t[rg[i].idx];
			tmp[i].data = p + 8 + hlen + rg[i].b;
		}
		if (cnt)
			memcpy(st->t + first, tmp, cnt * sizeof(*tmp));
		free(tmp);
	}
	free(rg);
	json_decref(root);
	return 0;
badmeta:
	emb_err_set(err, "%s: field '__metadata__' must be an object of strings",
	            sh->path);
	goto fail;
oom:
	emb_err_set(err, "%s: out of memory", sh->path);
fail:
	free(rg);
	json_decref(root);
	return -1;
}

static shard *add_shard(emb_safetensors *st, char *path)
{
	shard *s = realloc(st->shards, (st->nshards + 1) * sizeof(*s));

	if (!s) {
		free(path);
		return NULL;
	}
	st->shards = s;
	s = &st->shards[st->nshards++];
	memset(s, 0, sizeof(*s));
	s->path = path;
	return s;
}

static int byname_cmp(const void *x, const void *y)
{
	return strcmp(((const struct byname *)x)->name,
	              ((const struct byname *)y)->name);
}

static int str_ptr_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* sort the name index; a name in two shards is an error */
static int build_index(emb_safetensors *st, const char *path, emb_err *err)
{
	free(st->byname);
	st->byname = malloc((st->n + 1) * sizeof(*st->byname));
	if (!st->byname)
		return emb_err_set(err, "%s: out of memory", path);
	for (size_t i = 0; i < st->n; i++) {
		st->byname[i].name = st->t[i].name;
		st->byname[i].idx = i;
	}
	qsort(st->byname, st->n, sizeof(*st->byname), byname_cmp);
	for (size_t i = 1; i < st->n; i++) {
		const emb_tensor *a = &st->t[st->byname[i - 1].idx];
		const emb_tensor *b = &st->t[st->byname[i].idx];
		if (!strcmp(a->name, b->name)) {
			char nb[132];
			return emb_err_set(err, "%s: tensor '%s' appears in both %s and %s",
			                   path, shown(nb, a->name), a->file, b->file);
		}
	}
	return 0;
}


static int open_sharded(emb_safetensors *st, const char *index, emb_err *err)
{
	size_t len, i, nf = 0;
	char *text, *dir, *slash, **files = NULL;
	json_t *root, *wm, *v, *seen = NULL;
	json_error_t jerr;
	const char *key;
	int rc = -1;

	if (!(text = emb_file_read(st->root, index, INDEX_MAX, &len, err)))
		return -1;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!root) {
		char tb[132];
		return emb_err_set(err, "%s: not valid JSON (line %d: %s)", index,
		                   jerr.line, emb_json_error_text(tb, sizeof(tb),
		                                                  jerr.text));
	}
	wm = json_object_get(root, "weight_map");
	if (!json_is_object(root) || !json_is_object(wm)) {
		emb_err_set(err, "%s: field 'weight_map' must be an object", index);
		goto out;
	}
	if (!(dir = strdup(index)))
		goto oom;
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = 0;
	else
		strcpy(dir, "./");
	files = calloc(json_object_size(wm) + 1, sizeof(*files));
	if (!files || !(seen = json_object())) {
		free(dir);
		goto oom;
	}
	json_object_foreach(wm, key, v) {
		char nb[132];
		const char *f = json_string_value(v);
		if (!json_is_string(v) || !emb_relpath_ok(f, 0)) {
			emb_err_set(err, "%s: field 'weight_map': tensor '%s' must map to a "
			            "relative file name", index, shown(nb, key));
			free(dir);
			goto out;
		}
		/* a hash set, not a scan: an index may name 80k shards */
		if (!json_object_get(seen, f)) {
			if (json_object_set_new(seen, f, json_true())) {
				free(dir);
				goto oom;
			}
			files[nf++] = (char *)f;
		}
	}
	qsort(files, nf, sizeof(*files), str_ptr_cmp);
	for (i = 0; i < nf; i++) {
		char *p = path_join(dir, files[i]);
		shard *sh;
		if (!p || !(sh = add_shard(st, p))) {
			free(dir);
			goto oom;
		}
		if (access(p, F_OK) != 0) {
			emb_err_set(err, "%s: shard %s: %s", index, files[i],
			            strerror(errno));
			free(dir);
			goto out;
		}
		if (parse_shard(st, sh, err)) {
			free(dir);
			goto out;
		}
	}
	free(dir);
	if (build_index(st, index, err))
		goto out;
	/* every listed tensor must be in the shard the index names */
	json_object_foreach(wm, key, v) {
		char nb[132];
		const char *f = json_string_value(v);
		const emb_tensor *t = emb_safetensors_find(st, key);
		size_t a = t ? strlen(t->file) : 0, b = strlen(f);
		if (!t || a < b || strcmp(t->file + a - b, f) ||
		    (a > b && t->file[a - b - 1] != '/')) {
			emb_err_set(err, "%s: tensor '%s' is missing from shard %s",
			            index, shown(nb, key), f);
			goto out;
		}
	}
	rc = 0;
	goto out;
oom:
	emb_err_set(err, "%s: out of memory", index);
out:
	free(files);
	json_decref(seen);
	json_decref(root);
	return rc;
}

int emb_safetensors_open(emb_safetensors **out, const char *path, emb_err *err)
{
	return emb_safetensors_open_in(out, NULL, path, err);
}

int emb_safetensors_open_in(emb_safetensors **out, const char *root,
                            const char *path, emb_err *err)
{
	emb_safetensors *st;
	struct stat sb;
	size_t pl = strlen(path);
	char *idir = NULL;
	int rc;

	*out = NULL;
	if (stat(path, &sb) < 0)
		return emb_err_set(err, "%s: %s", path, strerror(errno));
	if (!(st = calloc(1, sizeof(*st))))
		return emb_err_set(err, "%s: out of memory", path);
	/* the files a directory or an index names stay inside it */
	st->root = root ? root : S_ISDIR(sb.st_mode) ? path : NULL;
	if (S_ISDIR(sb.st_mode)) {
		char *single = path_join(path, "model.safetensors");
		char *index = path_join(path, "model.safetensors.index.json");
		if (!single || !index) {
			free(single);
			free(index);
			emb_safetensors_free(st);
			return emb_err_set(err, "%s: out of memory", path);
		}
		struct stat lsb;
		if (lstat(single, &lsb) == 0) {  /* a dangling link: its error */
			shard *sh = add_shard(st, single);
			rc = sh ? parse_shard(st, sh, err)
			        : emb_err_set(err, "%s: out of memory", path);
			free(index);
		} else if (access(index, F_OK) == 0) {
			free(single);
			rc = open_sharded(st, index, err);
			free(index);
		} else {
			free(single);
			free(index);
			rc = emb_err_set(err, "%s: no model.safetensors or "
			                 "model.safetensors.index.json", path);
		}
	} else if (pl >= 11 && !strcmp(path + pl - 11, ".index.json")) {
		char *slash;
		if (!root && (idir = strdup(path))) {
			slash = strrchr(idir, '/');
			if (slash)
				slash[slash == idir] = 0;
			else
				strcpy(idir, ".");
			st->root = idir;
		}
		rc = !root && !idir ? emb_err_set(err, "%s: out of memory", path)
		                    : open_sharded(st, path, err);
	} else {
		char *p = strdup(path);
		shard *sh = p ? add_shard(st, p) : NULL;
		rc = sh ? parse_shard(st, sh, err)
		        : emb_err_set(err, "%s: out of memory", path);
	}
	if (rc == 0 && !st->byname)
		rc = build_index(st, path, err);
	st->root = NULL;
	free(idir);
	if (rc) {
		emb_safetensors_free(st);
		return -1;
	}
	*out = st;
	return 0;
}

void emb_safetensors_free(emb_safetensors *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		free((char *)st->t[i].name);
	for (i = 0; i < st->nshards; i++) {
		if (st->shards[i].map)
			munmap(st->shards[i].map, st->shards[i].size);
		free(st->shards[i].path);
	}
	for (i = 0; i < 2 * st->nmeta; i++)
		free(st->meta[i]);
	free(st->meta);
	json_decref(st->metaseen);
	free(st->shards);
	free(st->t);
	free(st->byname);
	free(st);
}

size_t emb_safetensors_count(const emb_safetensors *st)
{
	return st ? st->n : 0;
}

const emb_tensor *emb_safetensors_at(const emb_safetensors *st, size_t i)
{
	return st && i < st->n ? &st->t[i] : NULL;
}

const emb_tensor *emb_safetensors_find(const emb_safetensors *st, const char *name)
{
	size_t lo = 0, hi;

	if (!st || !name)
		return NULL;
	hi = st->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const emb_tensor *t = &st->t[st->byname[mid].idx];
		int c = strcmp(name, t->name);
		if (!c)
			return t;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const char *emb_safetensors_meta(const emb_safetensors *st, const char *key)
{
	if (!st || !key)
		return NULL;
	for (size_t i = 0; i < st->nmeta; i++)
		if (!strcmp(st->meta[2 * i], key))
			return st->meta[2 * i + 1];
	return NULL;
}

static inline uint16_t ld16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/*
 * Non-finite weights: a NaN or infinity in a checkpoint (a flipped bit,
 * a diverged training run) either spreads through every vector or, worse,
 * is absorbed by a clamp or a max and leaves finite but wrong ones, so
 * models refuse them at load.  Blocks of 4096 elements are OR-reduced
 * (vectorizable); only a bad block is searched for the element.
 */
static inline uint32_t ld32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* index of the first element of p (n elements of W = 2 or 4 bytes) whose
 * exponent bits EX are all ones, n if none; *is_nan: that one is a NaN */
static size_t first_nonfinite(const unsigned char *p, size_t n, size_t w,
                              uint32_t ex, int *is_nan)
{
	const size_t blk = 4096;
	uint32_t mag = w == 4 ? 0x7fffffffu : 0x7fffu;

	*is_nan = 0;
	for (size_t b = 0; b < n; b += blk) {
		size_t e = n - b < blk ? n - b : blk;
		unsigned bad = 0;
		if (w == 4)
			for (size_t i = 0; i < e; i++)
				bad |= (ld32(p + 4 * (b + i)) & ex) == ex;
		else
			for (size_t i = 0; i < e; i++)
				bad |= (ld16(p + 2 * (b + i)) & ex) == ex;
		if (!bad)
			continue;
		for (size_t i = b; i < b + e; i++) {
			uint32_t u = w == 4 ? ld32(p + 4 * i) : ld16(p + 2 * i);
			if ((u & ex) == ex) {
				*is_nan = (u & mag) != ex;
				return i;
			}
		}
	}
	return n;
}

int emb_tensor_check_finite(const emb_tensor *t, emb_err *err)
{
	char nb[132];
	size_t n = (size_t)t->numel, i = n;
	int is_nan = 0;

	switch (t->dtype) {
	case EMB_DT_F32:
		i = first_nonfinite(t->data, n, 4, 0x7f800000u, &is_nan);
		break;
	case EMB_DT_F16:
		i = first_nonfinite(t->data, n, 2, 0x7c00u, &is_nan);
		break;
	case EMB_DT_BF16:
		i = first_nonfinite(t->data, n, 2, 0x7f80u, &is_nan);
		break;
	case EMB_DT_F64:
		for (i = 0; i < n; i++) {
			const unsigned char *q = (const unsigned char *)t->data + 8 * i;
			uint32_t hi = (uint32_t)q[4] | (uint32_t)q[5] << 8 |
			              (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
			uint32_t lo = (uint32_t)q[0] | (uint32_t)q[1] << 8 |
			              (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
			if ((hi & 0x7ff00000u) == 0x7ff00000u) {
				is_nan = (hi & 0xfffffu) || lo;
				break;
			}
		}
		break;
	default:
		return 0;
	}
	if (i < n)
		return emb_err_set(err, "%s: tensor '%s': element %zu is %s "
		                   "(weights must be finite)",
		                   t->file ? t->file : "safetensors",
		                   shown(nb, t->name ? t->name : ""), i,
		                   is_nan ? "NaN" : "infinite");
	return 0;
}

int emb_safetensors_check_finite(const emb_safetensors *st, emb_err *err)
{
	for (size_t i = 0; i < st->n; i++)
		if (emb_tensor_check_finite(&st->t[i], err) < 0)
			return -1;
	return 0;
}

int emb_tensor_to_f32(float *out, const emb_tensor *t, emb_err *err)
{
	const unsigned char *p = t->data;
	size_t n = (size_t)t->numel, i;

	switch (t->dtype) {
	case EMB_DT_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (n)
			memcpy(out, p, n * 4);
#else
		for (i = 0; i < n; i++) {
			uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			             (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
			memcpy(&out[i], &u, 4);
		}
#endif
		return 0;
	case EMB_DT_F16:
		for (i = 0; i < n; i++)
			out[i] = emb_f16_to_f32(ld16(p + 2 * i));
		return 0;
	case EMB_DT_BF16:
		for (i = 0; i < n; i++) {
			uint32_t u = (uint32_t)ld16(p + 2 * i) << 16;
			memcpy(&out[i], &u, 4);
		}
		return 0;
	case EMB_DT_F64:
		for (i = 0; i < n; i++) {
			uint64_t u = 0;
			double d;
			for (int k = 0; k < 8; k++)
				u |= (uint64_t)p[8 * i + k] << (8 * k);
			memcpy(&d, &u, 8);
			out[i] = (float)d;
		}
		return 0;
	default: {
		char nb[132];
		return emb_err_set(err, "%s: tensor '%s': dtype %s is not a float type",
		                   t->file ? t->file : "safetensors",
		                   shown(nb, t->name ? t->name : ""),
		                   emb_dtype_name(t->dtype) ? emb_dtype_name(t->dtype) : "?");
	}
	}
}

void emb_safetensors_write_header(FILE *f, const char *htext)
{
	size_t hlen = strlen(htext), padded = (hlen + 7) / 8 * 8;
	unsigned char len8[8];

	for (int b = 0; b < 8; b++)
		len8[b] = (unsigned char)((uint64_t)padded >> (8 * b));
	fwrite(len8, 1, 8, f);
	fwrite(htext, 1, hlen, f);
	for (size_t p = hlen; p < padded; p++)
		fputc(' ', f);
}
