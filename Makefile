# emb - POSIX Makefile; ./configure writes config.mk (compiler, flags, libs)
.POSIX:
.SUFFIXES:
.SUFFIXES: .c .o

include config.mk

LIB_OBJ = lib/err.o lib/hub.o lib/safetensors.o lib/stconfig.o \
	lib/tokenizer.o lib/normalizer.o lib/wordpiece.o lib/bpe.o lib/unigram.o \
	lib/precompiled.o lib/pretok.o \
	lib/model.o lib/arch_bert.o lib/arch_nomic.o lib/arch_modernbert.o \
	lib/arch_qwen3.o lib/arch_gemma3.o lib/kernels.o lib/cpu.o lib/threadpool.o \
	lib/pool.o lib/jsonl.o lib/cli.o lib/validate.o lib/manifest.o \
	lib/synth.o lib/rerank.o lib/quant.o lib/kernels_i8.o \
	lib/kernels_vnni.o $(SIMD_OBJ)

BINS = cmd/emb-tokenize cmd/emb-encode cmd/emb-pool cmd/emb-validate \
	cmd/emb-rerank cmd/emb-quantize
TEST_TOOLS = test/emb-synth
UNIT_OBJ = test/unit/test_tokenizer.o test/unit/test_safetensors.o \
	test/unit/test_synth.o test/unit/test_kernels.o test/unit/test_model.o \
	test/unit/test_jsonl.o test/unit/test_pool.o test/unit/test_validate.o \
	test/unit/test_heads.o test/unit/testutil.o

all: lib/libemb.a $(BINS) $(TEST_TOOLS)

config.mk: configure
	./configure $(CONFIGURE_ARGS)

lib/libemb.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# every object depends on every header: coarse, but never stale
HDR = lib/emb.h lib/kernels.h lib/qkernels.h lib/model-internal.h \
	lib/tokenizer-internal.h
CMD_OBJ = cmd/emb-tokenize.o cmd/emb-encode.o cmd/emb-pool.o \
	cmd/emb-validate.o cmd/emb-rerank.o cmd/emb-quantize.o test/emb-synth.o
$(LIB_OBJ) $(UNIT_OBJ) $(CMD_OBJ): $(HDR) config.mk

.c.o:
	$(CC) $(CFLAGS) $(CPPFLAGS) -Ilib -c -o $@ $<

lib/kernels_avx2.o: lib/kernels_avx2.c lib/emb.h lib/kernels.h config.mk
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX2_CFLAGS) -Ilib -c -o $@ lib/kernels_avx2.c
lib/kernels_avx512.o: lib/kernels_avx512.c lib/emb.h lib/kernels.h config.mk
	$(CC) $(CFLAGS) $(CPPFLAGS) $(AVX512_CFLAGS) -Ilib -c -o $@ lib/kernels_avx512.c

# int8 kernels: VNNI_CFLAGS (config.mk) enables the vpdpbusd version
lib/kernels_vnni.o: lib/kernels_vnni.c lib/qkernels.h config.mk
	$(CC) $(CFLAGS) $(CPPFLAGS) $(VNNI_CFLAGS) -Ilib -c -o $@ lib/kernels_vnni.c
lib/kernels_i8.o lib/model.o: lib/qkernels.h

cmd/emb-tokenize: cmd/emb-tokenize.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-tokenize.o lib/libemb.a $(LDLIBS)
cmd/emb-encode: cmd/emb-encode.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-encode.o lib/libemb.a $(LDLIBS)
cmd/emb-pool: cmd/emb-pool.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-pool.o lib/libemb.a $(LDLIBS)
cmd/emb-validate: cmd/emb-validate.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-validate.o lib/libemb.a $(LDLIBS)
cmd/emb-rerank: cmd/emb-rerank.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-rerank.o lib/libemb.a $(LDLIBS)
cmd/emb-quantize: cmd/emb-quantize.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ cmd/emb-quantize.o lib/libemb.a $(LDLIBS)
test/emb-synth: test/emb-synth.o lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ test/emb-synth.o lib/libemb.a $(LDLIBS)
test/unit/units: $(UNIT_OBJ) lib/libemb.a
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJ) lib/libemb.a $(CRITERION_LIBS) $(LDLIBS)

check: all test/unit/units
	sh test/run-checks

clean:
	rm -f lib/*.o lib/libemb.a cmd/*.o $(BINS) test/*.o test/unit/*.o \
		test/unit/units $(TEST_TOOLS)
	rm -rf test/tmp

distclean: clean
	rm -f config.mk config.log

# install, uninstall, demo (docs).  PREFIX, BINDIR and MANDIR come from
# config.mk; `make install PREFIX=/opt/emb DESTDIR=/tmp/stage` overrides.
MAN1 = man/emb-tokenize.1 man/emb-encode.1 man/emb-pool.1 man/emb-validate.1 \
	man/emb-rerank.1 man/emb-quantize.1
MAN7 = man/emb.7

install: $(BINS)
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	for f in $(BINS); do \
		cp -f $$f $(DESTDIR)$(BINDIR)/ && \
		chmod 755 $(DESTDIR)$(BINDIR)/$${f##*/} || exit 1; \
	done
	for f in $(MAN1); do \
		cp -f $$f $(DESTDIR)$(MANDIR)/man1/ && \
		chmod 644 $(DESTDIR)$(MANDIR)/man1/$${f##*/} || exit 1; \
	done
	for f in $(MAN7); do \
		cp -f $$f $(DESTDIR)$(MANDIR)/man7/ && \
		chmod 644 $(DESTDIR)$(MANDIR)/man7/$${f##*/} || exit 1; \
	done

uninstall:
	for f in $(BINS); do rm -f $(DESTDIR)$(BINDIR)/$${f##*/}; done
	for f in $(MAN1); do rm -f $(DESTDIR)$(MANDIR)/man1/$${f##*/}; done
	for f in $(MAN7); do rm -f $(DESTDIR)$(MANDIR)/man7/$${f##*/}; done

demo: all
	sh scripts/demo

.PHONY: all check clean distclean install uninstall demo

# side-by-side speed against ONNX Runtime and PyTorch (never part of CI;
# installs its peers itself; appends to bench/RESULTS.md)
bench: all
	sh scripts/bench $(BENCH_ARGS)
	[ -d node_modules/tokenizers ] || npm install --ignore-scripts \
		--no-save --no-audit --no-fund tokenizers@0.23.2
	sh scripts/bench-tokenize
	sh scripts/bench-families

.PHONY: bench
