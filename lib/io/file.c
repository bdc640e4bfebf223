/*
 * file.c - opening the files a model names: inside the model directory
 * (or the Hugging Face cache blobs its snapshot links into), regular
 * files only, never waiting in open() (see io/file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <unistd.h>

#include <jansson.h>

#include "io/io.h"
#include "io/jscan.h"

const char *const emb_model_file_names[] = {
	"config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
	"special_tokens_map.json", "modules.json", "sentence_bert_config.json",
	"config_sentence_transformers.json", "model.safetensors",
	"model.safetensors.index.json", NULL
};

static const char *kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       S_ISSOCK(m) ? "a socket" : "not a plain file";
}

/* set err and return -1 with errno E kept for the caller */
static int fail(int e, emb_err *err, const char *fmt, const char *a,
                const char *b)
{
	emb_err_set(err, fmt, a, b);
	errno = e;
	return -1;
}

int emb_path_within(const char *real, const char *realroot)
{
	size_t n = strlen(realroot);
	const char *r, *s, *name;

	if (n == 1 && realroot[0] == '/')
		return real[0] == '/' && real[1] != 0;
	if (!strncmp(real, realroot, n) && real[n] == '/' && real[n + 1])
		return 1;
	/* CACHE/models--X/snapshots/REV -> CACHE/models--X/blobs/NAME */
	r = strrchr(realroot, '/');
	if (!r || r == realroot)
		return 0;
	for (s = r - 1; s > realroot && *s != '/'; s--)
		;
	if (*s != '/' || (size_t)(r - s) != 10 || strncmp(s, "/snapshots", 10))
		return 0;
	n = (size_t)(s - realroot);       /* CACHE/models--X */
	if (n == 0 || strncmp(real, realroot, n) || strncmp(real + n, "/blobs/", 7))
		return 0;
	name = real + n + 7;
	return *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..");
}

int emb_file_open(const char *root, const char *path, size_t *size,
                  emb_err *err)
{
	char rp[PATH_MAX], rr[PATH_MAX];
	const char *p = path;
	struct stat sb;
	int fd, fl, e;

	/* stat first: a FIFO or device is refused without being opened */
	if (stat(path, &sb) < 0)
		return fail(errno, err, "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return fail(EINVAL, err, "%s: not a regular file (%s)", path,
		            kind(sb.st_mode));
	if (root) {
		if (!realpath(root, rr))
			return fail(errno, err, "%s: %s", root, strerror(errno));
		if (!realpath(path, rp))
			return fail(errno, err, "%s: %s", path, strerror(errno));
		if (!emb_path_within(rp, rr))
			return fail(EPERM, err, "%s: resolves to a file outside the "
			            "model directory %s (refused: see emb(7) SECURITY)",
			            path, root);
		p = rp;
	}
	/* non-blocking, so that a FIFO swapped in since cannot stall us;
	 * the resolved path must not have become a link meanwhile */
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
	          (root ? O_NOFOLLOW : 0));
	if (fd < 0)
		return fail(errno, err, "%s: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		e = errno;
		close(fd);
		if (S_ISREG(sb.st_mode))
			return fail(e, err, "%s: %s", path, strerror(e));
		return fail(EINVAL, err, "%s: not a regular file (%s)", path,
		            kind(sb.st_mode));
	}
	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		e = errno;
		close(fd);
		return fail(e, err, "%s: %s", path, strerror(e));
	}
	if (size)
		*size = (size_t)sb.st_size;
	return fd;
}

int emb_file_open_stream(const char *path, emb_err *err)
{
	struct stat sb;
	int fd;

	if (stat(path, &sb) < 0)
		return fail(errno, err, "%s: %s", path, strerror(errno));
	if (!S_ISFIFO(sb.st_mode))
		return emb_file_open(NULL, path, NULL, err);
	/* a pipe by name: waiting for its writer is what reading one means */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(errno, err, "%s: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !(S_ISFIFO(sb.st_mode) || S_ISREG(sb.st_mode))) {
		close(fd);
		return fail(EINVAL, err, "%s: not a regular file (%s)", path,
		            kind(sb.st_mode));
	}
	return fd;
}

char *emb_file_read(const char *root, const char *path, size_t max,
                    size_t *len, emb_err *err)
{
	size_t size, got = 0;
	char *buf;
	ssize_t r;
	int fd = emb_file_open(root, path, &size, err), e;

	if (fd < 0)
		return NULL;
	if (size > max) {
		close(fd);
		if (max % (1 << 20) == 0)
			emb_err_set(err, "%s: larger than %zu MiB", path, max >> 20);
		else
			emb_err_set(err, "%s: larger than %zu bytes", path, max);
		errno = EFBIG;
		return NULL;
	}
	if (!(buf = malloc(size + 1))) {
		close(fd);
		emb_err_set(err, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	while (got < size && (r = read(fd, buf + got, size - got)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			emb_err_set(err, "%s: %s", path, strerror(e));
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		got += (size_t)r;
	}
	close(fd);
	buf[got] = 0;
	*len = got;
	return buf;
}

int emb_file_map(emb_filebuf *out, const char *root, const char *path,
                 size_t max, emb_err *err)
{
	size_t size;
	void *p;
	int fd;

	memset(out, 0, sizeof(*out));
	if ((fd = emb_file_open(root, path, &size, err)) < 0)
		return -1;
	/* a small file, or one past MAX (emb_file_read says so): read */
	if (size < ((size_t)1 << 20) || size > max) {
		close(fd);
		if (!(out->text = emb_file_read(root, path, max, &out->len, err)))
			return -1;
		return 0;
	}
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		if (!(out->text = emb_file_read(root, path, max, &out->len, err)))
			return -1;
		return 0;
	}
	out->text = p;
	out->len = size;
	out->mapped = 1;
	return 0;
}

void emb_filebuf_release(emb_filebuf *b)
{
	if (b->mapped)
		munmap((void *)b->text, b->len);
	else
		free((void *)b->text);
	memset(b, 0, sizeof(*b));
}

int emb_model_dir_check(const char *dir, emb_err *err)
{
	struct stat sb;

	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return 0;       /* a file named directly: the user's own */
	for (int i = 0; emb_model_file_names[i]; i++) {
		size_t n = strlen(dir) + strlen(emb_model_file_names[i]) + 2;
		char *p = malloc(n);
		int fd;

		if (!p)
			return emb_err_set(err, "%s: out of memory", dir);
		snprintf(p, n, "%s/%s", dir, emb_model_file_names[i]);
		if (lstat(p, &sb) < 0) {
			free(p);
			continue;
		}
		fd = emb_file_open(dir, p, NULL, err);
		free(p);
		if (fd < 0 && errno != ENOENT)
			return -1;
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

const char *emb_json_error_text(char *buf, size_t n, const char *text)
{
	char *near;

	snprintf(buf, n, "%s", text ? text : "parse error");
	if ((near = strstr(buf, " near '")))   /* not " near end of file" */
		*near = 0;
	/* the messages that show input another way: an escape's text or
	 * value, a byte's value */
	if (!strncmp(buf, "invalid Unicode", 15))
		snprintf(buf, n, "invalid Unicode escape");
	else if (!strncmp(buf, "unable to decode byte", 21))
		snprintf(buf, n, "invalid UTF-8");
	else if (!strncmp(buf, "control character", 17))
		snprintf(buf, n, "control character in a string");
	return buf;
}

json_t *emb_json_text_load(const char *text, size_t len, const char *path,
                           size_t flags, emb_err *err)
{
	json_error_t je;
	char tb[160];
	json_t *j;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		emb_err_set(err, "%s: starts with a UTF-8 byte order mark (not "
		            "allowed in JSON: remove it)", path);
		errno = EINVAL;
		return NULL;
	}
	j = json_loadb(text, len, flags, &je);
	if (!j) {
		emb_err_set(err, "%s: invalid JSON at line %d column %d: %s", path,
		            je.line, je.column,
		            emb_json_error_text(tb, sizeof(tb), je.text));
		errno = EINVAL;
	}
	return j;
}

json_t *emb_json_file_load(const char *root, const char *path, size_t max,
                           size_t flags, emb_err *err)
{
	char *text;
	size_t len;
	json_t *j;

	if (!(text = emb_file_read(root, path, max, &len, err)))
		return NULL;
	j = emb_json_text_load(text, len, path, flags, err);
	free(text);
	return j;
}

json_t *emb_json_file_load_skip(const char *root, const char *path,
                                size_t max, size_t flags, const char *skip,
                                emb_err *err)
{
	emb_filebuf fb;
	json_t *j = NULL;
	char *res;
	size_t rlen;

	if (emb_file_map(&fb, root, path, max, err) < 0)
		return NULL;
	if (emb_jscan_zero_member(fb.text, fb.len, skip, &res, &rlen) == 1) {
		j = json_loadb(res, rlen, flags, NULL);
		free(res);
	}
	/* nothing to skip, or jansson refused: the whole text, and its
	 * own message */
	if (!j)
		j = emb_json_text_load(fb.text, fb.len, path, flags, err);
	emb_filebuf_release(&fb);
	return j;
}

int emb_relpath_ok(const char *s, unsigned flags)
{
	int empty_ok = !!(flags & EMB_RELPATH_EMPTY_OK);

	if ((!*s && !empty_ok) || *s == '/')
		return 0;
	while (*s) {
		size_t n = strcspn(s, "/");
		if ((n == 0 && !empty_ok) || (n == 2 && s[0] == '.' && s[1] == '.') ||
		    (n == 1 && s[0] == '.' && (flags & EMB_RELPATH_NO_DOT)))
			return 0;
		s += n;
		if (*s)
			s++;
	}
	return 1;
}

char *emb_path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

char *emb_str_cat3(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s%s%s", a, b, c);
	return p;
}

#ifdef SYS_getdents64
/* remove NAME (in directory DFD) and, when it is a directory on the
 * device DEV, what it holds, DEPTH levels down at most: 0, or -1 with
 * errno set.  Async-signal-safe calls only (no opendir, no malloc). */
static int rm_at(int dfd, const char *name, int depth, dev_t dev)
{
	struct stat st;
	int fd, e;

	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > 0 && (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
	                              O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		char buf[2048];
		long n;
		if (fstat(fd, &st) == 0 && st.st_dev == dev) {
			/* entries go as they are read: read again from the
			 * start until a pass removes nothing */
			while ((n = syscall(SYS_getdents64, fd, buf,
			                    sizeof(buf))) > 0) {
				int removed = 0;
				for (long k = 0; k < n; ) {
					/* struct linux_dirent64: ino 8, off 8,
					 * reclen 2, type 1, then the name */
					unsigned short reclen;
					const char *nm = buf + k + 19;
					memcpy(&reclen, buf + k + 16, sizeof(reclen));
					if (reclen == 0)
						break;
					if (strcmp(nm, ".") && strcmp(nm, "..") &&
					    rm_at(fd, nm, depth - 1, dev) == 0)
						removed = 1;
					k += reclen;
				}
				if (!removed)
					break;
				lseek(fd, 0, SEEK_SET);
			}
		}
		e = errno;
		close(fd);
		errno = e;
	}
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

int emb_rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -1;
	return rm_at(AT_FDCWD, path, 16, st.st_dev);
}
#else
static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

int emb_rm_tree(const char *path)
{
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
#endif
