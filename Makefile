# emb - POSIX Makefile; ./configure writes config.mk (compiler, flags, libs)
.POSIX:
.SUFFIXES:
.SUFFIXES: .c .o .po

include config.mk

# the library, layer by layer (lib/README: which layer may include which)
BASE_OBJ = lib/base/err.o lib/base/cpu.o lib/base/threadpool.o \
	lib/base/strmap.o lib/base/utf8.o lib/base/grow.o lib/base/bigmem.o
KERN_OBJ = lib/kern/dispatch.o lib/kern/kernels.o lib/kern/kernels_i8.o \
	lib/kern/kernels_i8_avx2.o lib/kern/kernels_i8_avx512.o \
	lib/kern/kernels_bf16.o lib/kern/kernels_bf16_avx2.o \
	lib/kern/kernels_bf16_avx512.o lib/kern/kernels_i8_amx.o \
	lib/kern/kernels_bf16_amx.o $(SIMD_OBJ)
IO_OBJ = lib/io/safetensors.o lib/io/tensorval.o lib/io/hub.o lib/io/stconfig.o lib/io/lines.o \
	lib/io/record.o lib/io/recnum.o lib/io/write.o lib/io/numfmt.o \
	lib/io/file.o lib/io/base64.o lib/io/jscan.o
TOK_OBJ = lib/tok/text.o lib/tok/vocab.o lib/tok/fastjson.o lib/tok/pattern.o lib/tok/normalizer.o \
	lib/tok/precompiled.o lib/tok/pretok.o lib/tok/wordpiece.o lib/tok/bpe.o \
	lib/tok/unigram.o lib/tok/acmatch.o lib/tok/model.o lib/tok/addedtok.o \
	lib/tok/postproc.o lib/tok/chunksafe.o lib/tok/vocabtxt.o \
	lib/tok/tokenizer.o lib/tok/chunk.o
NN_OBJ = lib/nn/config.o lib/nn/precision.o lib/nn/weights.o lib/nn/pack.o \
	lib/nn/smooth.o lib/nn/layers.o lib/nn/attention.o lib/nn/profile.o \
	lib/nn/heads.o lib/nn/driver.o lib/nn/model.o lib/nn/arch_bert.o \
	lib/nn/arch_nomic.o \
	lib/nn/arch_modernbert.o lib/nn/arch_qwen3.o lib/nn/arch_gemma3.o
# the families (emb_family_NAME, defined in the arch_*.c files above), in
# the order model.c tries them: a new family is its arch_*.c file, its
# object above and its name here (lib/nn/families.h is made from this)
NN_FAMILIES = bert roberta distilbert mpnet nomic modernbert qwen3 gemma3
STATIC_OBJ = lib/static/load.o lib/static/embed.o lib/static/quantize.o
ST_OBJ = lib/st/pool.o lib/st/rerank.o lib/st/quant.o lib/st/qstatic.o lib/st/ckpt.o lib/st/search.o \
	lib/st/index.o lib/st/indexfile.o lib/st/query.o lib/st/topk.o \
	lib/st/chunk.o lib/st/embed.o lib/st/embedder.o lib/st/searchwin.o
TOOL_OBJ = lib/tool/cli.o lib/tool/msg.o lib/tool/run.o lib/tool/progress.o \
	lib/tool/signals.o lib/tool/outwrite.o lib/tool/mask.o \
	lib/tool/modcheck.o lib/tool/rerank.o lib/tool/encode.o lib/tool/xalloc.o \
	lib/tool/validate.o lib/tool/manifest.o lib/tool/synth.o lib/tool/chunk.o \
	lib/tool/static.o \
	lib/tool/quantvec.o lib/tool/quantckpt.o lib/tool/vdiag.o lib/tool/vfield.o \
	lib/tool/vcompare.o lib/tool/vsummary.o lib/tool/vfiles.o \
	lib/tool/myaml.o lib/tool/mpolicy.o lib/tool/mparse.o lib/tool/mfixture.o \
	lib/tool/mproject.o lib/tool/mexec.o
LIB_OBJ = $(BASE_OBJ) $(KERN_OBJ) $(IO_OBJ) $(TOK_OBJ) $(NN_OBJ) \
	$(STATIC_OBJ) $(ST_OBJ) $(TOOL_OBJ)

# the shared library: version, soname and objects (see "the shared library")
SO_MAJOR = 0
SO_VERSION = 0.1.0
SO_OBJ = $(BASE_OBJ) $(KERN_OBJ) $(IO_OBJ) $(TOK_OBJ) $(NN_OBJ) $(STATIC_OBJ) \
	$(ST_OBJ)
SO_PIC = $(SO_OBJ:.o=.po)

BINS = cmd/emb-tokenize cmd/emb-encode cmd/emb-pool cmd/emb-validate \
	cmd/emb-rerank cmd/emb-quantize cmd/emb-search
TEST_TOOLS = test/emb-synth
UNIT_OBJ = test/unit/test_tokenizer.o test/unit/test_safetensors.o \
	test/unit/test_stconfig.o test/unit/test_hub.o \
	test/unit/test_synth.o test/unit/test_kernels.o test/unit/test_model.o \
	test/unit/test_jsonl.o test/unit/test_pool.o test/unit/test_validate.o \
	test/unit/test_heads.o test/unit/testutil.o test/unit/test_threadpool.o \
	test/unit/test_i8.o test/unit/test_attention.o test/unit/test_fields.o \
	test/unit/test_search.o test/unit/test_chunk.o test/unit/test_file.o \
	test/unit/test_bf16.o test/unit/test_static.o test/unit/test_strmap.o \
	test/unit/test_utf8.o test/unit/test_grow.o test/unit/test_half.o

# scripts installed as programs (cmd/ holds them under their installed
# names, so that tests and man pages use those)
SCRIPT_BINS = cmd/emb-fetch cmd/emb-shard cmd/emb-merge
all: lib/libemb.a $(BINS) $(SCRIPT_BINS) $(TEST_TOOLS)

cmd/emb-fetch: scripts/fetch-model
	cp -f scripts/fetch-model $@
	chmod 755 $@

cmd/emb-shard: scripts/emb-shard
	cp -f scripts/emb-shard $@
	chmod 755 $@

cmd/emb-merge: scripts/emb-merge
	cp -f scripts/emb-merge $@
	chmod 755 $@

config.mk: configure
	./configure $(CONFIGURE_ARGS)

lib/libemb.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# every object depends on every header: coarse, but never stale
HDR = lib/emb.h lib/base/base.h lib/base/half.h lib/base/bigmem.h lib/base/cpu.h lib/base/threadpool.h lib/kern/kernels.h \
	lib/base/strmap.h lib/base/utf8.h lib/base/grow.h \
	lib/kern/qkernels.h lib/kern/bkernels.h lib/kern/round512.h lib/kern/amx.h lib/io/io.h lib/io/file.h lib/io/jscan.h lib/io/numfmt.h lib/io/record.h lib/io/safetensors-internal.h lib/st/ckpt.h lib/tok/tok.h lib/tok/tok-internal.h \
	lib/tok/text.h lib/tok/vocab.h lib/tok/acmatch.h lib/tool/outwrite.h lib/tool/mask.h lib/tool/modcheck.h lib/tool/encode.h lib/tool/xalloc.h \
	lib/tool/quantize.h lib/tool/vstate.h lib/tool/mcase.h \
	lib/nn/nn.h lib/nn/nn-internal.h lib/st/st.h lib/tool/emb-tool.h lib/tool/driver.h \
	lib/st/search.h lib/st/search-internal.h lib/st/embed.h lib/nn/families.h lib/static/static.h \
	lib/static/static-internal.h lib/tool/static.h
CMD_OBJ = cmd/emb-tokenize.o cmd/emb-encode.o cmd/emb-pool.o \
	cmd/emb-validate.o cmd/emb-rerank.o cmd/emb-quantize.o cmd/emb-search.o \
	test/emb-synth.o
$(LIB_OBJ) $(SO_PIC) $(UNIT_OBJ) $(CMD_OBJ) $(FUZZ_REPLAY_OBJ): $(HDR) config.mk

# (rewritten only when the list changes: a Makefile edit rebuilds nothing)
lib/nn/families.h: Makefile
	{ echo '/* made by the Makefile from NN_FAMILIES: do not edit */'; \
	for f in $(NN_FAMILIES); do echo "EMB_FAMILY($$f)"; done; } > $@.tmp
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

# libemb.a's objects are FILE.o, the shared library's FILE.po: the same
# source, rules and flags, plus -fPIC (PIC, in the recipes that serve
# both, says -fPIC for a .po target only)
PIC = `case $@ in *.po) echo -fPIC ;; esac`
.c.o:
	$(CC) $(CFLAGS) $(CPPFLAGS) -Ilib -c -o $@ $<
.c.po:
	$(CC) $(CFLAGS) $(CPPFLAGS) -fPIC -Ilib -c -o $@ $<

# the SIMD kernels: one file per instruction set, each with its flags
lib/kern/kernels_avx2.o lib/kern/kernels_avx2.po: lib/kern/kernels_avx2.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX2_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_avx2.c
lib/kern/kernels_avx512.o lib/kern/kernels_avx512.po: lib/kern/kernels_avx512.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX512_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_avx512.c
lib/kern/kernels_i8_avx2.o lib/kern/kernels_i8_avx2.po: lib/kern/kernels_i8_avx2.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX2_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_i8_avx2.c
lib/kern/kernels_i8_avx512.o lib/kern/kernels_i8_avx512.po: lib/kern/kernels_i8_avx512.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(VNNI_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_i8_avx512.c
lib/kern/kernels_bf16_avx2.o lib/kern/kernels_bf16_avx2.po: lib/kern/kernels_bf16_avx2.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX2_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_bf16_avx2.c
lib/kern/kernels_i8_amx.o lib/kern/kernels_i8_amx.po: lib/kern/kernels_i8_amx.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AMX_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_i8_amx.c
lib/kern/kernels_bf16_amx.o lib/kern/kernels_bf16_amx.po: lib/kern/kernels_bf16_amx.c
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AMX_CFLAGS) $(PIC) -Ilib -c -o $@ lib/kern/kernels_bf16_amx.c

# every program: its own object and the library
cmd/emb-tokenize: cmd/emb-tokenize.o
cmd/emb-encode: cmd/emb-encode.o
cmd/emb-pool: cmd/emb-pool.o
cmd/emb-validate: cmd/emb-validate.o
cmd/emb-rerank: cmd/emb-rerank.o
cmd/emb-quantize: cmd/emb-quantize.o
cmd/emb-search: cmd/emb-search.o
test/emb-synth: test/emb-synth.o
$(BINS) $(TEST_TOOLS): lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ $@.o lib/libemb.a $(LDLIBS)
test/unit/units: $(UNIT_OBJ) lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJ) lib/libemb.a $(CRITERION_LIBS) $(LDLIBS)

check: all lib/libemb.so.$(SO_VERSION) test/unit/units test/fuzz/replay bench-progs
	sh test/run-checks

# the benchmark programs of scripts/bench* (bench/*.c), into the
# git-ignored bench/work/bin/: make check compiles and links them (never
# runs them), so that a header they use cannot move without the build
# saying so.  They include the layer headers cmd/ may, and no other
# (scripts/check-layers).
BENCH_BIN = bench/work/bin
BENCH_PROGS = $(BENCH_BIN)/fma-peak $(BENCH_BIN)/runtime $(BENCH_BIN)/gemm-bench \
	$(BENCH_BIN)/gemm-i8-bench $(BENCH_BIN)/search-bench $(BENCH_BIN)/pretok-regex \
	$(BENCH_BIN)/unicode-cmp $(BENCH_BIN)/static-bench $(BENCH_BIN)/gemm-fwd \
	$(BENCH_BIN)/fmt-f32-all
bench-progs: $(BENCH_PROGS)
$(BENCH_PROGS): lib/libemb.a $(HDR) config.mk
	@mkdir -p $(BENCH_BIN)
	$(CC) $(CFLAGS) $(CPPFLAGS) -Ilib $(LDFLAGS) -o $@ bench/$$(basename $@).c lib/libemb.a $(LDLIBS)
$(BENCH_BIN)/fma-peak: bench/fma-peak.c
$(BENCH_BIN)/runtime: bench/runtime.c
$(BENCH_BIN)/gemm-bench: bench/gemm-bench.c
$(BENCH_BIN)/gemm-i8-bench: bench/gemm-i8-bench.c
$(BENCH_BIN)/search-bench: bench/search-bench.c
$(BENCH_BIN)/pretok-regex: bench/pretok-regex.c
$(BENCH_BIN)/unicode-cmp: bench/unicode-cmp.c
$(BENCH_BIN)/static-bench: bench/static-bench.c
$(BENCH_BIN)/gemm-fwd: bench/gemm-fwd.c
$(BENCH_BIN)/fmt-f32-all: bench/fmt-f32-all.c

clean:
	rm -f lib/*/*.o lib/*/*.po lib/nn/families.h lib/libemb.a lib/libemb.so lib/libemb.so.* lib/emb.pc cmd/*.o $(BINS) $(SCRIPT_BINS) test/*.o test/unit/*.o \
		test/unit/units $(TEST_TOOLS) test/fuzz/replay $(FUZZ_REPLAY_OBJ)
	rm -rf test/tmp test/fuzz/build build/pic $(BENCH_BIN)

distclean: clean
	rm -f config.mk config.log

# install, uninstall, demo (docs).  PREFIX, BINDIR, MANDIR, LIBDIR and
# INCLUDEDIR come from config.mk; `make install PREFIX=/opt/emb
# DESTDIR=/tmp/stage` overrides.  Installs the programs, scripts/fetch-model
# as emb-fetch, the man pages, lib/libemb.a, the shared library (below),
# lib/emb.h and a pkg-config file written for these directories
# (pkg-config --cflags --libs emb; --static for libemb.a).
MAN1 = man/emb-tokenize.1 man/emb-encode.1 man/emb-pool.1 man/emb-validate.1 \
	man/emb-rerank.1 man/emb-quantize.1 man/emb-search.1 man/emb-fetch.1 \
	man/emb-shard.1 man/emb-merge.1
MAN7 = man/emb.7
# batch jobs (emb(7) BATCH JOBS): sh scripts installed beside the filters
SCRIPTS = scripts/emb-shard scripts/emb-merge

install: $(BINS) $(SCRIPT_BINS) lib/libemb.a lib/libemb.so.$(SO_VERSION)
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	for f in $(BINS); do \
		cp -f $$f $(DESTDIR)$(BINDIR)/ && \
		chmod 755 $(DESTDIR)$(BINDIR)/$${f##*/} || exit 1; \
	done
	for f in $(SCRIPTS); do \
		cp -f $$f $(DESTDIR)$(BINDIR)/ && \
		chmod 755 $(DESTDIR)$(BINDIR)/$${f##*/} || exit 1; \
	done
	cp -f cmd/emb-fetch $(DESTDIR)$(BINDIR)/emb-fetch
	chmod 755 $(DESTDIR)$(BINDIR)/emb-fetch
	for f in $(MAN1); do \
		cp -f $$f $(DESTDIR)$(MANDIR)/man1/ && \
		chmod 644 $(DESTDIR)$(MANDIR)/man1/$${f##*/} || exit 1; \
	done
	for f in $(MAN7); do \
		cp -f $$f $(DESTDIR)$(MANDIR)/man7/ && \
		chmod 644 $(DESTDIR)$(MANDIR)/man7/$${f##*/} || exit 1; \
	done
	cp -f lib/libemb.a $(DESTDIR)$(LIBDIR)/libemb.a
	chmod 644 $(DESTDIR)$(LIBDIR)/libemb.a
	cp -f lib/libemb.so.$(SO_VERSION) $(DESTDIR)$(LIBDIR)/
	chmod 755 $(DESTDIR)$(LIBDIR)/libemb.so.$(SO_VERSION)
	ln -sf libemb.so.$(SO_VERSION) $(DESTDIR)$(LIBDIR)/libemb.so.$(SO_MAJOR)
	ln -sf libemb.so.$(SO_MAJOR) $(DESTDIR)$(LIBDIR)/libemb.so
	cp -f lib/emb.h $(DESTDIR)$(INCLUDEDIR)/emb.h
	chmod 644 $(DESTDIR)$(INCLUDEDIR)/emb.h
	{ echo 'prefix=$(PREFIX)'; echo 'libdir=$(LIBDIR)'; \
	  echo 'includedir=$(INCLUDEDIR)'; echo; echo 'Name: emb'; \
	  echo 'Description: sentence-transformers embeddings on CPUs'; \
	  echo 'Version: $(SO_VERSION)'; echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -lemb'; \
	  echo 'Libs.private: $(LDFLAGS) $(LDLIBS)'; } > lib/emb.pc
	cp -f lib/emb.pc $(DESTDIR)$(LIBDIR)/pkgconfig/emb.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/emb.pc

uninstall:
	for f in $(BINS); do rm -f $(DESTDIR)$(BINDIR)/$${f##*/}; done
	for f in $(SCRIPTS); do rm -f $(DESTDIR)$(BINDIR)/$${f##*/}; done
	rm -f $(DESTDIR)$(BINDIR)/emb-fetch
	for f in $(MAN1); do rm -f $(DESTDIR)$(MANDIR)/man1/$${f##*/}; done
	for f in $(MAN7); do rm -f $(DESTDIR)$(MANDIR)/man7/$${f##*/}; done
	rm -f $(DESTDIR)$(LIBDIR)/libemb.a $(DESTDIR)$(LIBDIR)/libemb.so \
		$(DESTDIR)$(LIBDIR)/libemb.so.$(SO_MAJOR) \
		$(DESTDIR)$(LIBDIR)/libemb.so.$(SO_VERSION) \
		$(DESTDIR)$(LIBDIR)/pkgconfig/emb.pc $(DESTDIR)$(INCLUDEDIR)/emb.h

# ---- the shared library ----------------------------------------------
# lib/libemb.so.$(SO_VERSION), soname libemb.so.$(SO_MAJOR): the layers
# below lib/tool/ (all lib/emb.h needs), compiled a second time with
# -fPIC as FILE.po beside each FILE.o (the rules above), so that
# libemb.a is untouched and a change of CFLAGS or of a header rebuilds
# both.  Only the lib/emb.h functions are exported (lib/libemb.map).

shared: lib/libemb.so.$(SO_VERSION)

lib/libemb.so.$(SO_VERSION): $(SO_PIC) lib/libemb.map
	$(CC) -shared -Wl,-soname,libemb.so.$(SO_MAJOR) \
		-Wl,--version-script=lib/libemb.map $(LDFLAGS) -o $@ $(SO_PIC) \
		$(LDLIBS)
	ln -sf libemb.so.$(SO_VERSION) lib/libemb.so.$(SO_MAJOR)
	ln -sf libemb.so.$(SO_MAJOR) lib/libemb.so

demo: all
	sh scripts/demo

.PHONY: all check clean distclean install uninstall demo shared bench-progs

# side-by-side speed against ONNX Runtime, PyTorch, Hugging Face
# tokenizers and FAISS (never part of CI; appends to bench/RESULTS.md).
# The peers run in the reference venv, ${EMB_REFS:-build/refs}, made by
# scripts/install-refs --full; a peer that is missing is skipped with a
# line saying so.  BENCH_ARGS go to scripts/bench.  bench-smoke: every
# script with --smoke (tiny sizes, one repetition, nothing appended), the
# check that test/cli/93-bench-smoke.sh makes.
bench: all bench-progs
	sh scripts/bench $(BENCH_ARGS)
	sh scripts/bench-tokenize
	sh scripts/bench-families
	sh scripts/bench-search
	sh scripts/bench-real
	sh scripts/bench-static

bench-smoke: all bench-progs
	sh scripts/bench --smoke
	sh scripts/bench-tokenize --smoke
	sh scripts/bench-families --smoke
	sh scripts/bench-search --smoke
	sh scripts/bench-real --smoke
	sh scripts/bench-static --smoke

.PHONY: bench bench-smoke

# ---- sanitizers and valgrind -----------------------------------------
# Each sanitizer build lives in its own copy of the source tree under
# build/ (test/sanitize/tree copies the tracked and untracked-but-not-
# ignored files, keeps their times so a second run only rebuilds what
# changed, and configures the copy once); the normal build here is not
# touched.  EMB_REFS points the copy's tests at this tree's reference
# environment (build/refs: scripts/install-refs).  Variables: EMB_FUZZ_N (parity fuzzer strings per
# model), EMB_TESTS (a subset of test/cli, as for make check).
#   check-sanitize  the whole make check under ASan+LSan+UBSan, build/sanitize
#   sanitize-build  only build that tree (CI builds it, then runs its
#                   suite in two parts: .ci/run)
#   check-tsan      the thread pool test, emb-encode (every architecture)
#                   and emb-rerank at -j 1, 2 and 4, under ThreadSanitizer,
#                   build/tsan
#   check-valgrind  test/sanitize/valgrind.list under memcheck, this build
#   clean-sanitize  remove build/sanitize and build/tsan
check-sanitize: sanitize-build
	top=$$(pwd) && cd build/sanitize && \
		EMB_REFS="$${EMB_REFS:-$$top/build/refs}" $(MAKE) check
sanitize-build:
	sh test/sanitize/tree sanitize --enable-sanitize
	cd build/sanitize && $(MAKE) -j2 all test/unit/units test/fuzz/replay \
		bench-progs lib/libemb.so.$(SO_VERSION)

check-tsan:
	sh test/sanitize/tree tsan --enable-tsan
	cd build/tsan && $(MAKE) -j2 all test/sanitize/threadpool-run
	cd build/tsan && sh test/sanitize/check-tsan

# test/unit/test_threadpool.c as a program of its own: Criterion cannot
# run under TSan (test/sanitize/check-tsan says why)
test/sanitize/threadpool-run: test/unit/test_threadpool.c lib/libemb.a $(HDR) config.mk
	$(CC) $(CFLAGS) $(CPPFLAGS) -DEMB_NO_CRITERION -Ilib $(LDFLAGS) -o $@ \
		test/unit/test_threadpool.c lib/libemb.a $(LDLIBS)

check-valgrind: all
	sh test/sanitize/check-valgrind

clean-sanitize:
	rm -rf build/sanitize build/tsan test/sanitize/threadpool-run

.PHONY: check-sanitize sanitize-build check-tsan check-valgrind clean-sanitize

# ---- fuzzing ----------------------------------------------------------
# test/fuzz/replay: every fuzz target's LLVMFuzzerTestOneInput (renamed)
# over the committed seeds and regression inputs, built with $(CC):
# `make check` runs it (test/cli/25-fuzz-replay.sh), check-sanitize under
# ASan/UBSan.  `make fuzz`: the targets with clang + libFuzzer in
# test/fuzz/build/ (git-ignored), each run FUZZ_TIME seconds, FUZZ_JOBS at
# a time; exit 1 and the reproducer's name on any finding
# (test/fuzz/README).
FUZZ_TARGETS = safetensors config tokenizer_json tokenizer_fast tokenize_wordpiece \
	tokenize_bpe tokenize_unigram jsonl manifest index normalizer paths
FUZZ_TIME = 60
FUZZ_JOBS = 2
FUZZ_CC = clang
FUZZ_HDR = test/fuzz/fuzz.h test/fuzz/fuzz_tok.h test/fuzz/targets.h
FUZZ_REPLAY_OBJ = test/fuzz/replay.o test/fuzz/fuzz_safetensors.o \
	test/fuzz/fuzz_config.o test/fuzz/fuzz_tokenizer_json.o \
	test/fuzz/fuzz_tokenizer_fast.o \
	test/fuzz/fuzz_tokenize_wordpiece.o test/fuzz/fuzz_tokenize_bpe.o \
	test/fuzz/fuzz_tokenize_unigram.o test/fuzz/fuzz_jsonl.o \
	test/fuzz/fuzz_manifest.o test/fuzz/fuzz_index.o test/fuzz/fuzz_normalizer.o \
	test/fuzz/fuzz_paths.o

test/fuzz/replay: $(FUZZ_REPLAY_OBJ) lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ $(FUZZ_REPLAY_OBJ) lib/libemb.a $(LDLIBS)
$(FUZZ_REPLAY_OBJ): $(FUZZ_HDR) $(HDR) config.mk

fuzz:
	FUZZ_CC='$(FUZZ_CC)' FUZZ_TIME='$(FUZZ_TIME)' FUZZ_JOBS='$(FUZZ_JOBS)' \
	FUZZ_TARGETS='$(FUZZ_TARGETS)' LIB_OBJ='$(LIB_OBJ)' \
	CPPFLAGS='$(CPPFLAGS)' LDLIBS='$(LDLIBS)' AVX2_CFLAGS='$(AVX2_CFLAGS)' \
	AVX512_CFLAGS='$(AVX512_CFLAGS)' VNNI_CFLAGS='$(VNNI_CFLAGS)' \
	AMX_CFLAGS='$(AMX_CFLAGS)' \
	sh test/fuzz/run.sh

fuzz-clean:
	rm -rf test/fuzz/build

.PHONY: fuzz fuzz-clean
