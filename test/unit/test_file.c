/*
 * test_file.c - io/file.h: the files a model names stay inside its
 * directory (or its Hugging Face cache blobs/), are regular files, and
 * are opened without waiting; JSON errors without the file's bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "io/io.h"

static const char *scratch(const char *name)
{
	static char dir[1024];
	char cmd[2200];
	const char *t = getenv("EMB_TOP");

	snprintf(dir, sizeof(dir), "%s/test/tmp/unit-file/%s",
	         t && *t ? t : ".", name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	cr_assert_eq(system(cmd), 0, "cannot create %s", dir);
	return dir;
}

static char *pathf(const char *dir, const char *name)
{
	static char bufs[4][2300];
	static int k;
	char *b = bufs[k++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

Test(file, path_within)
{
	cr_assert(emb_path_within("/m/config.json", "/m"));
	cr_assert(emb_path_within("/m/1_Pooling/config.json", "/m"));
	cr_assert(!emb_path_within("/m", "/m"), "the directory itself");
	cr_assert(!emb_path_within("/mx/config.json", "/m"), "a sibling");
	cr_assert(!emb_path_within("/etc/shadow", "/m"));
	/* a cache snapshot: its repository's blobs/, nothing else */
	cr_assert(emb_path_within("/c/models--a--b/blobs/0123",
	                          "/c/models--a--b/snapshots/abc"));
	cr_assert(!emb_path_within("/c/models--a--b/blobs/x/y",
	                           "/c/models--a--b/snapshots/abc"));
	cr_assert(!emb_path_within("/c/models--z--z/blobs/0123",
	                           "/c/models--a--b/snapshots/abc"));
	cr_assert(!emb_path_within("/c/models--a--b/blobs/0123",
	                           "/c/models--a--b/other/abc"));
	cr_assert(!emb_path_within("/c/models--a--b/blobs/..",
	                           "/c/models--a--b/snapshots/abc"));
}

Test(file, open_inside_and_links)
{
	const char *d = scratch("links");
	char m[1200], err_at[1300];
	emb_err err = { "" };
	size_t size = 0;
	int fd;

	snprintf(m, sizeof(m), "%s/m", d);
	cr_assert_eq(mkdir(m, 0755), 0);
	put(pathf(m, "config.json"), "{}");
	put(pathf(d, "secret"), "root:x:0:0\n");
	fd = emb_file_open(m, pathf(m, "config.json"), &size, &err);
	cr_assert_geq(fd, 0, "%s", err.msg);
	cr_assert_eq(size, 2);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "blocking again");
	close(fd);
	/* a link inside the directory is fine, one out of it is not */
	cr_assert_eq(symlink("config.json", pathf(m, "inner.json")), 0);
	fd = emb_file_open(m, pathf(m, "inner.json"), NULL, &err);
	cr_assert_geq(fd, 0, "%s", err.msg);
	close(fd);
	cr_assert_eq(symlink("../secret", pathf(m, "out.json")), 0);
	cr_assert_eq(emb_file_open(m, pathf(m, "out.json"), NULL, &err), -1);
	snprintf(err_at, sizeof(err_at), "%s: resolves to a file outside the "
	         "model directory", pathf(m, "out.json"));
	cr_assert_not_null(strstr(err.msg, err_at), "%s", err.msg);
	/* without a root (a file the user named) the link is followed */
	fd = emb_file_open(NULL, pathf(m, "out.json"), NULL, &err);
	cr_assert_geq(fd, 0, "%s", err.msg);
	close(fd);
	/* absent: errno ENOENT, for callers that take defaults */
	cr_assert_eq(emb_file_open(m, pathf(m, "none.json"), NULL, &err), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(file, not_regular_never_waits)
{
	const char *d = scratch("fifo");
	emb_err err = { "" };

	cr_assert_eq(mkfifo(pathf(d, "f"), 0644), 0);
	alarm(10);      /* a blocking open would hang the test */
	cr_assert_eq(emb_file_open(d, pathf(d, "f"), NULL, &err), -1);
	cr_assert_not_null(strstr(err.msg, "not a regular file (a FIFO)"),
	                   "%s", err.msg);
	cr_assert_eq(emb_file_open(NULL, pathf(d, "f"), NULL, &err), -1);
	cr_assert_eq(emb_file_open(NULL, d, NULL, &err), -1);
	cr_assert_not_null(strstr(err.msg, "(a directory)"), "%s", err.msg);
	cr_assert_eq(emb_file_open(NULL, "/dev/null", NULL, &err), -1);
	cr_assert_not_null(strstr(err.msg, "(a character device)"), "%s",
	                   err.msg);
	alarm(0);
}

Test(file, read_limit_and_json_errors)
{
	const char *d = scratch("read");
	emb_err err = { "" };
	size_t len;
	char *t, buf[64];
	json_t *j;

	put(pathf(d, "a.json"), "{\"k\": 1}");
	t = emb_file_read(d, pathf(d, "a.json"), 100, &len, &err);
	cr_assert_not_null(t, "%s", err.msg);
	cr_assert_eq(len, 8);
	cr_assert_str_eq(t, "{\"k\": 1}");
	free(t);
	cr_assert_null(emb_file_read(d, pathf(d, "a.json"), 4, &len, &err));
	cr_assert_not_null(strstr(err.msg, "larger than 4 bytes"), "%s", err.msg);
	/* the parser's error without the text it quotes */
	put(pathf(d, "b.json"), "root:x:0:0:SECRET\n");
	j = emb_json_file_load(d, pathf(d, "b.json"), 100, 0, &err);
	cr_assert_null(j);
	cr_assert_not_null(strstr(err.msg, "invalid JSON at line 1 column"),
	                   "%s", err.msg);
	cr_assert_null(strstr(err.msg, "root"), "%s", err.msg);
	cr_assert_null(strstr(err.msg, "SECRET"), "%s", err.msg);
	put(pathf(d, "c.json"), "\xef\xbb\xbf{}");
	cr_assert_null(emb_json_file_load(d, pathf(d, "c.json"), 100, 0, &err));
	cr_assert_not_null(strstr(err.msg, "UTF-8 byte order mark"), "%s",
	                   err.msg);
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "unexpected token near 'x'"), "unexpected token");
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "unexpected token near end of file"),
	                 "unexpected token near end of file");
	/* jansson's other messages that show input: not shown either */
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "invalid Unicode escape '\\uSECR' near '\"\\uSECR'"),
	                 "invalid Unicode escape");
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "invalid Unicode '\\uD834'"), "invalid Unicode escape");
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "unable to decode byte 0xe9 near '\"caf'"),
	                 "invalid UTF-8");
	cr_assert_str_eq(emb_json_error_text(buf, sizeof(buf),
	                 "control character 0x1 near '\"a'"),
	                 "control character in a string");
}

Test(file, model_dir_check)
{
	const char *d = scratch("dircheck");
	char m[1200];
	emb_err err = { "" };

	snprintf(m, sizeof(m), "%s/m", d);
	cr_assert_eq(mkdir(m, 0755), 0);
	put(pathf(m, "config.json"), "{}");
	cr_assert_eq(emb_model_dir_check(m, &err), 0, "%s", err.msg);
	cr_assert_eq(mkfifo(pathf(m, "tokenizer.json"), 0644), 0);
	cr_assert_eq(emb_model_dir_check(m, &err), -1);
	cr_assert_not_null(strstr(err.msg, "tokenizer.json: not a regular file"),
	                   "%s", err.msg);
}

/* the one relative-path check, with the rules of its three callers */
Test(file, relpath_rules)
{
	static const struct {
		const char *s;
		int strict, empty_ok, no_dot;
	} cases[] = {
		{ "a", 1, 1, 1 }, { "a/b.json", 1, 1, 1 }, { "a/", 1, 1, 1 },
		{ "", 0, 1, 0 }, { "/a", 0, 0, 0 }, { "..", 0, 0, 0 },
		{ "a/../b", 0, 0, 0 }, { "a/..", 0, 0, 0 }, { "a//b", 0, 1, 0 },
		{ "./a", 1, 1, 0 }, { "a/.", 1, 1, 0 }, { "...", 1, 1, 1 },
		{ "..a", 1, 1, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(emb_relpath_ok(cases[i].s, 0), cases[i].strict,
		             "'%s'", cases[i].s);
		cr_assert_eq(emb_relpath_ok(cases[i].s, EMB_RELPATH_EMPTY_OK),
		             cases[i].empty_ok, "'%s' empty ok", cases[i].s);
		cr_assert_eq(emb_relpath_ok(cases[i].s, EMB_RELPATH_NO_DOT),
		             cases[i].no_dot, "'%s' no dot", cases[i].s);
	}
}

/* a message prefixed to itself: emb_err_set builds the new string apart
 * (overlapping vsnprintf arguments are undefined behaviour) */
Test(file, err_prefix_own_message)
{
	emb_err err = { "" };

	emb_err_set(&err, "bad field '%s'", "embedding");
	cr_assert_eq(emb_err_set(&err, "l.jsonl:2: %s", err.msg), -1);
	cr_assert_str_eq(err.msg, "l.jsonl:2: bad field 'embedding'");
	emb_err_set(&err, "%s and %s", err.msg, err.msg);
	cr_assert_str_eq(err.msg, "l.jsonl:2: bad field 'embedding' and "
	                 "l.jsonl:2: bad field 'embedding'");
}

Test(file, rm_tree)
{
	const char *d = scratch("rm-tree"), *keep;
	char p[2400];
	struct stat st;

	/* a tree with more entries than one directory read gives, nested
	 * directories, and a link to a file outside it */
	keep = pathf(d, "outside");
	put(keep, "kept");
	snprintf(p, sizeof(p), "%s/t", d);
	cr_assert_eq(mkdir(p, 0755), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "%s/t/a-rather-long-file-name-%03d", d, i);
		put(p, "x");
	}
	snprintf(p, sizeof(p), "%s/t/sub", d);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/t/sub/deeper", d);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/t/sub/deeper/f", d);
	put(p, "y");
	snprintf(p, sizeof(p), "%s/t/sub/link", d);
	cr_assert_eq(symlink(keep, p), 0);
	snprintf(p, sizeof(p), "%s/t/sub/dirlink", d);
	cr_assert_eq(symlink(d, p), 0);

	snprintf(p, sizeof(p), "%s/t", d);
	cr_assert_eq(emb_rm_tree(p), 0, "%s", strerror(errno));
	cr_assert_eq(lstat(p, &st), -1, "the tree is gone");
	cr_assert_eq(stat(keep, &st), 0, "the link's target stays");
	cr_assert_eq(emb_rm_tree(p), -1, "no tree: -1");
	cr_assert_eq(errno, ENOENT);
	/* a plain file is removed too */
	cr_assert_eq(emb_rm_tree(keep), 0);
	cr_assert_eq(stat(keep, &st), -1);
}
