/*
 * fuzz_manifest.c - the YAML parity manifest (emb-validate --manifest):
 * libyaml, then every case key (names, paths, commands split into
 * stages, tolerances, limits, golden_case references).  Parse and check
 * only (emb_manifest_check): nothing from the fuzzed input is ever run.
 * The input is written to SCRATCH/m.yaml, next to a "data" link to
 * test/data and an empty "tmp", so that the paths of test/parity.yaml
 * resolve as they do in test/.
 */
#include "fuzz.h"

static char *path;

int FUZZ_ENTRY(manifest)(const uint8_t *data, size_t size)
{
	emb_err err;

	if (!path) {
		char *link = fuzz_tmp_path("data"), *tmp = fuzz_tmp_path("tmp");
		char *target = fuzz_data("test/data");
		if (symlink(target, link) < 0 || mkdir(tmp, 0755) < 0)
			abort();
		free(link);
		free(tmp);
		free(target);
		path = fuzz_tmp_path("m.yaml");
	}
	fuzz_write(path, data, size);
	if (emb_manifest_check(path, &err) < 0) {
		FUZZ_CHECK(err.msg[0] && strlen(err.msg) < EMB_ERR_MAX);
		fuzz_note("manifest", err.msg);
	} else {
		fuzz_note("manifest", "ok");
	}
	return 0;
}
