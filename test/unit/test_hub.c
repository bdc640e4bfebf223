/*
 * test_hub.c - -m ORG/NAME[@REV] resolution in the Hugging Face cache.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tool/emb-tool.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* hub: -m ORG/NAME[@REV] in the Hugging Face cache                     */

static const char *fake_cache(const char *name)
{
	const char *d = tu_scratch(name);
	char cmd[3000];

	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && mkdir -p hub/models--org--name/refs hub/models--org--name/snapshots/abc123 "
	         "hub/models--org--name/snapshots/def456 hub/models--org--name/refs/refs/pr "
	         "hub/models--solo/snapshots/0a0a hub/models--org--one/snapshots/f00d && "
	         "printf abc123 > hub/models--org--name/refs/main && "
	         "printf 'def456\\n' > hub/models--org--name/refs/v2 && "
	         "printf def456 > hub/models--org--name/refs/refs/pr/1 && "
	         "printf 'nothere' > hub/models--org--name/refs/broken && "
	         "mkdir -p hub/models--solo/refs && printf 0a0a > hub/models--solo/refs/main && "
	         "touch plainfile", d);
	cr_assert_eq(system(cmd), 0);
	return d;
}

static void resolve_ok(const char *arg, const char *want_suffix)
{
	char *out = NULL;
	emb_err err = {{0}};
	size_t a, b;

	cr_assert_eq(emb_model_resolve(&out, arg, &err), 0, "%s: %s", arg, err.msg);
	a = strlen(out);
	b = strlen(want_suffix);
	cr_assert(a >= b && !strcmp(out + a - b, want_suffix), "%s -> %s, want ...%s",
	          arg, out, want_suffix);
	free(out);
}

static void resolve_fail(const char *arg, const char *want)
{
	char *out = (char *)&out;
	emb_err err = {{0}};

	cr_assert_eq(emb_model_resolve(&out, arg, &err), -1, "%s resolved", arg);
	cr_assert_null(out);
	cr_assert_not_null(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
}

Test(hub, directory_as_is)
{
	const char *d = fake_cache("hub-dir");
	char *out;
	emb_err err;

	cr_assert_eq(emb_model_resolve(&out, d, &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, d);
	free(out);
	resolve_fail(tu_pathf(d, "plainfile"), "not a directory");
	resolve_fail(tu_pathf(d, "nonexistent"), "no such model directory");
}

Test(hub, cache_lookup)
{
	const char *d = fake_cache("hub-cache");
	char hub[1200];

	snprintf(hub, sizeof(hub), "%s/hub", d);
	setenv("HF_HUB_CACHE", hub, 1);
	resolve_ok("org/name", "/hub/models--org--name/snapshots/abc123");
	resolve_ok("org/name@main", "/hub/models--org--name/snapshots/abc123");
	resolve_ok("org/name@v2", "/hub/models--org--name/snapshots/def456");
	resolve_ok("org/name@refs/pr/1", "/hub/models--org--name/snapshots/def456");
	resolve_ok("org/name@def456", "/hub/models--org--name/snapshots/def456");
	resolve_ok("solo", "/hub/models--solo/snapshots/0a0a");
	/* no refs/main but a single snapshot */
	resolve_ok("org/one", "/hub/models--org--one/snapshots/f00d");
	resolve_fail("org/one@v9", "revision 'v9' not in the Hugging Face cache");
	resolve_fail("org/name@v9", "refs/v9");
	resolve_fail("org/name@broken", "names commit nothere");
	resolve_fail("org/missing", "models--org--missing");
	resolve_fail("org/missing", "emb-fetch org/missing");
	resolve_fail("../etc", "no such model directory");
	resolve_fail("org/..", "not a Hub model id");
	resolve_fail("org/name@../../x", "bad revision");
	resolve_fail("/abs/nonexistent", "no such model directory");
	resolve_fail("a/b/c", "not a Hub model id");
	resolve_fail("org/na me", "not a Hub model id");
	resolve_fail("", "empty");
}

Test(hub, env_precedence)
{
	const char *d = fake_cache("hub-env");
	char home[1200];

	snprintf(home, sizeof(home), "%s", d);
	unsetenv("HF_HUB_CACHE");
	unsetenv("HUGGINGFACE_HUB_CACHE");
	setenv("HF_HOME", home, 1);   /* HF_HOME/hub */
	resolve_ok("org/name", "/hub-env/hub/models--org--name/snapshots/abc123");
	unsetenv("HF_HOME");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/nonexistent-home", 1);
	resolve_fail("org/name", "/nonexistent-home/.cache/huggingface/hub/models--org--name");
}
