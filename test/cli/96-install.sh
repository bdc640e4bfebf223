# 96-install.sh - make install DESTDIR=... PREFIX=/usr/local into a
# staging tree: every program, emb-fetch, the man pages, libemb.a,
# libemb.so with its soname links, emb.h and emb.pc; then a program
# outside emb (test/install/embed.c) built with `pkg-config --cflags
# --libs emb`, statically and against the shared library, embeds texts
# exactly as emb-encode --pool does (--atol 0: the same float32 values),
# with a prompt, Dense and Normalize (gemma-embed-tiny) and without
# (minilm-l6).  lib/emb.h includes only C standard headers (it is the one
# declaration of the API: lib/st/embed.h includes it).
T=$(t_tmpdir 96-install)
S="$T/stage"
P=/usr/local

# lib/emb.h stands alone: only <...> standard headers, and it compiles
# by itself
n=$(grep -c '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$EMB_TOP/lib/emb.h")
t_eq "lib/emb.h includes no header of emb's" "$n" 0
printf '#include "emb.h"\nint main(void) { return emb_version() == 0; }\n' > "$T/alone.c"
t_ok "lib/emb.h compiles on its own" ${CC:-cc} -std=c11 -c -I"$EMB_TOP/lib" -o "$T/alone.o" "$T/alone.c"
n=$(grep -rl '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]emb\.h[">]' "$EMB_TOP/lib" "$EMB_TOP/cmd" 2>/dev/null | grep -v '/lib/emb\.h$\|/lib/st/embed\.h$' | wc -l | tr -d ' ')
t_eq "in lib/ and cmd/ only lib/st/embed.h includes emb.h" "$n" 0

(cd "$EMB_TOP" && make install DESTDIR="$S" PREFIX="$P") > "$T/make.log" 2>&1; s=$?
t_eq "make install DESTDIR PREFIX: exit 0" "$s" 0
for f in bin/emb-tokenize bin/emb-encode bin/emb-pool bin/emb-validate \
	bin/emb-rerank bin/emb-quantize bin/emb-fetch lib/libemb.a \
	lib/libemb.so.0.1.0 include/emb.h lib/pkgconfig/emb.pc \
	share/man/man1/emb-fetch.1 share/man/man1/emb-encode.1 share/man/man7/emb.7; do
	t_ok "installed: $f" test -f "$S$P/$f"
done
t_eq "libemb.so.0 -> libemb.so.0.1.0" "$(readlink "$S$P/lib/libemb.so.0")" libemb.so.0.1.0
t_eq "libemb.so -> libemb.so.0" "$(readlink "$S$P/lib/libemb.so")" libemb.so.0
t_ok "emb-fetch runs (--help)" sh "$S$P/bin/emb-fetch" --help > "$T/fetch.help"
t_grep "emb-fetch names itself" "^usage: emb-fetch" "$T/fetch.help"
# every program installed has its page and a --help that names it (and
# nothing is installed that the pages do not show: st-golden runs from
# scripts/, as README says)
n=0 bad=
for f in "$S$P"/bin/*; do
	b=${f##*/}
	n=$((n + 1))
	[ -f "$S$P/share/man/man1/$b.1" ] || bad="$bad $b(no page)"
	"$f" --help > "$T/help" 2> /dev/null || bad="$bad $b(--help exit $?)"
	grep -q "^usage: $b" "$T/help" || bad="$bad $b(--help: no usage line)"
done
t_eq "each of the $n installed programs: a page in man1, --help naming it" "${bad:-none}" none
t_ok "st-golden is not installed" test ! -e "$S$P/bin/st-golden"
if command -v readelf > /dev/null 2>&1; then
	readelf -d "$S$P/lib/libemb.so.0.1.0" > "$T/dyn"
	t_grep "soname libemb.so.0" "SONAME.*\[libemb.so.0\]" "$T/dyn"
else
	t_skip "soname libemb.so.0" "readelf not found"
fi

if ! command -v pkg-config > /dev/null 2>&1; then
	t_skip "programs built with pkg-config" "pkg-config not found (scripts/install-deps installs it)"
	return 0 2>/dev/null || exit 0
fi
export PKG_CONFIG_PATH="$S$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$S"
t_eq "pkg-config --modversion emb" "$(pkg-config --modversion emb)" 0.1.0
CC=$(sed -n 's/^CC = //p' "$EMB_TOP/config.mk")
CC=${CC:-cc}
san=$(sed -n 's/^EMB_SANITIZE = //p; s/^EMB_TSAN = //p' "$EMB_TOP/config.mk" | grep -c yes)
static_libs=$(pkg-config --static --libs emb | sed 's/-lemb/-Wl,-Bstatic -lemb -Wl,-Bdynamic/')
$CC -std=c11 -Wall -Werror -o "$T/embed-static" "$EMB_TOP/test/install/embed.c" \
	$(pkg-config --cflags emb) $static_libs > "$T/cc.log" 2>&1; s=$?
t_eq "static: cc embed.c \$(pkg-config --cflags --static --libs emb)" "$s$(head -c 300 "$T/cc.log")" 0
shared=1
if [ "$san" -gt 0 ]; then
	t_skip "shared library linking" "sanitizer build: an instrumented libemb.so needs the sanitizer runtime first"
	shared=0
else
	$CC -std=c11 -Wall -Werror -o "$T/embed-shared" "$EMB_TOP/test/install/embed.c" \
		$(pkg-config --cflags --libs emb) > "$T/cc.log" 2>&1; s=$?
	t_eq "shared: cc embed.c \$(pkg-config --cflags --libs emb)" "$s$(head -c 300 "$T/cc.log")" 0
	if command -v readelf > /dev/null 2>&1; then
		readelf -d "$T/embed-shared" > "$T/dyn.shared"
		readelf -d "$T/embed-static" > "$T/dyn.static"
		t_grep "the shared build needs libemb.so.0" "NEEDED.*\[libemb.so.0\]" "$T/dyn.shared"
		t_nogrep "the static build does not" "libemb" "$T/dyn.static"
	fi
fi

printf '%s\n' "How many people live in Berlin?" "Berlin is well known for its museums." \
	"" "naïve café — ünïcödé" "x" > "$T/texts.txt"
# check MODEL_FIXTURE [PROMPT_NAME]
check() {
	m=$(t_fixture "$1")
	if [ -n "${2:-}" ]; then po="--prompt-name $2"; else po=; fi
	emb-encode -m "$m" -j 2 --pool --raw $po "$T/texts.txt" > "$T/cli.jsonl" 2> "$T/err"
	t_eq "$1 ${2:-}: emb-encode --pool" "$?$(cat "$T/err")" 0
	for kind in static shared; do
		[ $kind = shared ] && [ $shared = 0 ] && continue
		LD_LIBRARY_PATH="$S$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$T/embed-$kind" "$m" ${2:-} < "$T/texts.txt" > "$T/lib.jsonl" 2> "$T/err"
		t_eq "$1 ${2:-}: $kind program: exit 0" "$?" 0
		t_lines "$1 ${2:-}: $kind program: one vector per text" 5 "$T/lib.jsonl"
		t_ok "$1 ${2:-}: $kind program == emb-encode --pool (atol 0)" \
			emb-validate --quiet --atol 0 --field embedding "$T/cli.jsonl" "$T/lib.jsonl"
	done
}
check minilm-l6
check gemma-embed-tiny query
# the precision modes through emb_embedder_opts.precision: the same bits
# as the command's flags, and not those of fp32
# precision NAME FLAGS...
precision() {
	p=$1; shift
	emb-encode -m "$m" -j 2 --pool --raw "$@" "$T/texts.txt" > "$T/cli-$p.jsonl" 2> "$T/err"
	t_eq "$p: emb-encode --pool $*" "$?$(cat "$T/err")" 0
	"$T/embed-static" -p $p "$m" < "$T/texts.txt" > "$T/lib-$p.jsonl" 2> "$T/err"
	t_eq "$p: precision $p: exit 0" "$?" 0
	t_ok "$p: precision $p == emb-encode --pool $* (atol 0)" \
		emb-validate --quiet --atol 0 --field embedding "$T/cli-$p.jsonl" "$T/lib-$p.jsonl"
	[ "$p" = fp32 ] && return
	if emb-validate --quiet --atol 0 --field embedding "$T/cli-fp32.jsonl" "$T/lib-$p.jsonl" > /dev/null 2>&1; then
		t_fail "$p: precision $p differs from fp32"
	else
		t_pass "$p: precision $p differs from fp32"
	fi
}
m=$(t_fixture minilm-l6)
precision fp32
precision bf16 --compute bf16
precision w8 --weights int8
precision w8a8 --weights int8 --act int8
precision w8a8-smooth --weights int8 --act int8-smooth
"$T/embed-static" -p fp16 "$m" < /dev/null > /dev/null 2>&1
t_eq "an unknown precision is a usage error" "$?" 2
# the prompt matters (the test would pass vacuously otherwise)
m=$(t_fixture gemma-embed-tiny)
"$T/embed-static" "$m" < "$T/texts.txt" > "$T/noprompt.jsonl" 2> /dev/null
if emb-validate --quiet --atol 1e-3 --field embedding "$T/noprompt.jsonl" "$T/lib.jsonl" > /dev/null; then
	t_fail "without the prompt the vectors differ"
else
	t_pass "without the prompt the vectors differ"
fi
"$T/embed-static" "$m" nosuchprompt < "$T/texts.txt" > /dev/null 2> "$T/err"; s=$?
t_eq "unknown prompt name: load fails" "$s" 3
t_grep "... naming the known ones" "unknown prompt name 'nosuchprompt' (known: " "$T/err"
# README's o.prompt_name = "query" on a model without prompts (the shape
# of all-MiniLM-L6-v2): a load error that names the file prompts live in
m=$(t_fixture minilm-l6)
"$T/embed-static" "$m" query < "$T/texts.txt" > /dev/null 2> "$T/err"; s=$?
t_eq "prompt name query on a model without prompts: load fails" "$s" 3
t_grep "... naming config_sentence_transformers.json" \
	"unknown prompt name 'query' (known: none; the prompts of $m/config_sentence_transformers.json)" "$T/err"
n=$(grep -l 'scripts/fetch-model' "$S$P"/bin/emb-[a-eg-z]* 2>/dev/null | wc -l | tr -d ' ')
t_eq "no installed program tells users to run scripts/fetch-model" "$n" 0
HF_HUB_CACHE="$T/hub" "$S$P/bin/emb-encode" -m nosuchorg/nosuchmodel < /dev/null 2> "$T/err"
t_grep "a model missing from the cache: fetch it with emb-fetch" "fetch it with emb-fetch nosuchorg/nosuchmodel" "$T/err"

# more tokens than one forward pass holds (4096): the texts are split over
# passes, the vectors stay those of emb-encode --pool
m=$(t_fixture minilm-l6)
awk 'BEGIN { for (i = 0; i < 100; i++) { s = "text " i; for (j = 0; j < 55; j++) s = s " w" (i * 7 + j) % 97; print s } }' > "$T/long.txt"
emb-encode -m "$m" -j 2 --pool --raw "$T/long.txt" > "$T/long-cli.jsonl"
"$T/embed-static" "$m" < "$T/long.txt" > "$T/long-lib.jsonl" 2> "$T/err"
t_eq "100 texts (13k tokens), two passes: exit 0" "$?" 0
t_ok "several passes: == emb-encode --pool (atol 0)" \
	emb-validate --quiet --atol 0 --field embedding "$T/long-cli.jsonl" "$T/long-lib.jsonl"

# the README's lines for a make install PREFIX of one's own, as written
# (DIR and prog.c replaced): pkg-config finds emb.pc, the program finds
# libemb.so.0 at run time without LD_LIBRARY_PATH
if [ "$shared" = 1 ]; then
	R="$T/prefix"
	(cd "$EMB_TOP" && make install PREFIX="$R") > "$T/make2.log" 2>&1; s=$?
	t_eq "make install PREFIX=own: exit 0" "$s" 0
	for f in bin/emb-shard bin/emb-merge share/man/man1/emb-shard.1 share/man/man1/emb-merge.1; do
		t_ok "installed: $f" test -f "$R/$f"
	done
	sed -n '/^    export PKG_CONFIG_PATH=DIR/,/-Wl,-rpath,DIR/p' "$EMB_TOP/README.md" |
		sed "s|DIR|$R|g; s|prog\.c|\"$EMB_TOP/test/install/embed.c\" -o \"$T/embed-own\"|; s|^    ||" > "$T/own.sh"
	t_eq "README: the two lines for a PREFIX of one's own" "$(wc -l < "$T/own.sh" | tr -d ' ')" 2
	(unset PKG_CONFIG_SYSROOT_DIR; CC=$CC; . "$T/own.sh") > "$T/cc.log" 2>&1; s=$?
	t_eq "README's lines compile and link" "$s$(head -c 300 "$T/cc.log")" 0
	(unset LD_LIBRARY_PATH; "$T/embed-own" "$(t_fixture minilm-l6)" < "$T/texts.txt" > "$T/own.jsonl" 2> "$T/err"); s=$?
	t_eq "the program runs without LD_LIBRARY_PATH" "$s" 0
	t_nogrep "... and finds libemb.so.0" 'libemb.so' "$T/err"
	t_lines "... one vector per text" 5 "$T/own.jsonl"
	(cd "$EMB_TOP" && make uninstall PREFIX="$R") > /dev/null 2>&1
fi
