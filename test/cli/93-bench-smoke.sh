# 93-bench-smoke.sh - every benchmark script runs from this tree
# (`make bench-smoke`): each one's --smoke run (tiny sizes, one
# repetition) exits 0, prints its tables with emb's rows in them,
# appends nothing to bench/RESULTS.md and leaves bench/seqlen.svg alone;
# each names the machine as bench/machine.py does.
# A peer runs when the reference venv (EMB_REFS, default build/refs;
# scripts/install-refs --full) has its modules, and then its rows must be
# there; when it does not, the script must say "skip" with what to run,
# and this test says skip too.  No timing is asserted (but that a 0.2 s
# sleep outlasts true).
refs=${EMB_REFS:-$EMB_TOP/build/refs}
if grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null; then
	t_skip "benchmark smoke runs" "sanitizer build: the figures mean nothing here and the peers run uninstrumented (make check compiled and linked bench/*.c)"
else
T=$(t_tmpdir 93-bench-smoke)
cp "$EMB_TOP/bench/RESULTS.md" "$T/results.before"
cp "$EMB_TOP/bench/seqlen.svg" "$T/svg.before"
# has MODULE...: the venv has every python module (found, not imported)
has() {
	[ -x "$refs/bin/python" ] && [ -z "$("$refs/bin/python" -c '
import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@" 2>&1)" ]
}
# smoke SCRIPT: run it, EMB_REFS set to the venv
smoke() {
	(cd "$EMB_TOP" && EMB_REFS=$refs sh "scripts/$1" --smoke) > "$T/$1.out" 2> "$T/$1.err"
	s=$?
	t_eq "$1 --smoke exits 0" "$s" 0
	[ "$s" -eq 0 ] || sed -n '$p' "$T/$1.err" | sed 's/^/#   /'
}
# names_machine SCRIPT: its header names the CPU by bench/machine.py:
# family, model and stepping, the instruction sets or their absence
names_machine() {
	t_grep "$1: the machine line (CPU family, model, instruction sets)" \
		'[Mm]achine: [0-9]* CPUs, .* family [0-9?]* model [0-9?]* stepping [0-9?]*; .*\(avx2\|none of \).*\(no AVX-512\|avx512f\)' "$T/$1.out"
}
# peer SCRIPT NAME PATTERN MODULE...: with the modules, the output has a
# line matching PATTERN; without, the script's stderr says it skipped NAME
peer() {
	_s=$1 _n=$2 _p=$3
	shift 3
	if has "$@"; then
		t_grep "$_s: the $_n peer's row" "$_p" "$T/$_s.out"
	else
		t_grep "$_s: says it skipped $_n, and what to run" "skip $_n.*scripts/install-refs" "$T/$_s.err"
		t_skip "$_s: the $_n peer" "python module(s) $* not in $refs (scripts/install-refs --full)"
	fi
}

# bench/machine.py on a CPU of the AVX-512 kind and on an empty file
printf 'vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9R14\nstepping\t: 1\nflags\t\t: fpu avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16\n\nprocessor\t: 1\n' > "$T/cpuinfo.zen4"
: > "$T/cpuinfo.empty"
for f in zen4 empty; do
	(cd "$EMB_TOP/bench" && python3 -c 'import machine, sys; print(machine.describe(sys.argv[1]))' "$T/cpuinfo.$f") > "$T/machine.$f" 2>&1
done
t_grep "bench/machine.py: family, model, the AVX-512 flags, no AMX" \
	' CPUs, AMD EPYC 9R14 (AuthenticAMD family 25 model 17 stepping 1; avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16; no AMX)$' "$T/machine.zen4"
t_grep "bench/machine.py: an unreadable or empty cpuinfo gives ? and says what is missing" \
	' CPUs, ? (? family ? model ? stepping ?; none of avx2 fma f16c; no AVX-512; no AMX)$' "$T/machine.empty"

smoke bench
names_machine bench
t_grep "bench: the texts table" '^### texts: 16 texts' "$T/bench.out"
t_grep "bench: emb's end-to-end row" '^| emb-e2e | 1 | [0-9.]* |' "$T/bench.out"
t_grep "bench: the W8A8 row" '^| emb-w8a8 | 1 | [0-9.]* |' "$T/bench.out"
t_grep "bench: emb fp32 against the goldens" '^| texts | 1 | [^|]* | [0-9.]*e-0[5-9] |' "$T/bench.out"
t_grep "bench: the targets" '^- W8A8, texts: need' "$T/bench.out"
peer bench "ONNX Runtime" '^| ort | 1 | [0-9.]* |' onnxruntime torch onnx numpy
peer bench "PyTorch" '^| torch | 1 | [0-9.]* |' torch numpy onnx

smoke bench-tokenize
names_machine bench-tokenize
for k in WordPiece byte-level-BPE Unigram; do
	t_grep "bench-tokenize: the $k row" "^| [^|]* | $k | [0-9]* | [0-9]* |" "$T/bench-tokenize.out"
done
t_grep "bench-tokenize: the regex scanner agrees with PCRE2" 'passages: .*identical splits' "$T/bench-tokenize.out"
peer bench-tokenize "Hugging Face tokenizers" '^| [^|]* | WordPiece | [0-9]* | [0-9]* | [0-9][0-9]* | [0-9][0-9]* |' tokenizers

smoke bench-families
names_machine bench-families
t_grep "bench-families: the minilm-l6 row" '^| minilm-l6 | texts | fp32 | 1 | 8 |' "$T/bench-families.out"
t_grep "bench-families: the peak RSS table" '^| minilm-l6 | texts | [0-9]* | [0-9]* |' "$T/bench-families.out"
peer bench-families "PyTorch" '^Checked first: PyTorch reference' torch numpy onnx
peer bench-families "ONNX Runtime" '^| minilm-l6 | texts | fp32 | 1 | 8 | [0-9]* | [0-9.]* | [0-9.][0-9.]* |' onnxruntime torch onnx numpy

smoke bench-search
if has numpy; then
	names_machine bench-search
	t_grep "bench-search: emb-search's row" '^| emb-search core (in process) | 1 |' "$T/bench-search.out"
	t_grep "bench-search: exact ids as the reference's" 'emb-search 20 of 20 queries with the same 10 ids' "$T/bench-search.out"
	t_grep "bench-search: the binary index's recall" '^| int8 | 1 | [0-9.]* |' "$T/bench-search.out"
	peer bench-search "FAISS" '^| FAISS IndexFlatIP | 1 | [0-9.]* |' faiss numpy
else
	t_grep "bench-search: says it stopped for numpy" 'skip numpy (the data).*scripts/install-refs' "$T/bench-search.err"
	t_skip "bench-search tables" "numpy not in $refs (scripts/install-refs)"
fi

smoke bench-real
if EMB_REFS=$refs sh "$EMB_TOP/scripts/real-model" all-MiniLM-L6-v2 >/dev/null 2>&1; then
	t_grep "bench-real: the texts table" '^### texts: 8 texts' "$T/bench-real.out"
	names_machine bench-real
	t_grep "bench-real: the FMA peak of the run" '^FMA peak (fp32, bench/fma-peak.c, this run): 1 thread' "$T/bench-real.out"
	if grep -q '^flags.* avx512_bf16' /proc/cpuinfo; then
		t_grep "bench-real: the bf16 dot product's ceiling of the run" '^bf16 dot product ceiling (vdpbf16ps, bench/fma-peak.c --bf16, this run): 1 thread(s) [0-9.]* GFLOP/s' "$T/bench-real.out"
	else
		t_grep "bench-real: says the CPU has no AVX-512 BF16" '^bf16 dot product ceiling .*: none (no AVX-512 BF16' "$T/bench-real.out"
	fi
	for e in emb-fp32 emb-bf16 emb-w8a8; do
		t_grep "bench-real: the $e row" "^| $e | 1 | [0-9.]* |" "$T/bench-real.out"
	done
	# ids in, start-up taken off: on 8 texts the difference may be noise ("-")
	t_grep "bench-real: the emb-fwd row" '^| emb-fwd | 1 | \([0-9.]* | [0-9.]* \|- | - \)|' "$T/bench-real.out"
	peer bench-real "ONNX Runtime" '^| ort-int8 | 1 | [0-9.]* |' onnxruntime onnx torch transformers numpy
	peer bench-real "PyTorch" '^| torch-bf16 | 1 | [0-9.]* |' torch transformers numpy
	# emb fp32 against sentence-transformers: an accuracy, not a timing
	peer bench-real "sentence-transformers (the reference)" \
		'^| emb-fp32 | 1 |.*| \(0\.99999[0-9]\|1\.000000\) | [0-9.]*e-0[5-9] |$' sentence_transformers torch numpy
else
	t_grep "bench-real: says the real model is missing, and what to run" 'skip: .*install-refs' "$T/bench-real.err"
	t_skip "bench-real tables" "the real all-MiniLM-L6-v2 is not in $refs (scripts/install-refs)"
fi

smoke bench-static
names_machine bench-static
t_grep "bench-static: emb's static row" '^| emb-encode --pool, static | 2 | [0-9.]* |' "$T/bench-static.out"
t_grep "bench-static: where the time goes" '^Where emb.s time goes .*tokenize .*gather .*JSON out' "$T/bench-static.out"
peer bench-static "model2vec" '^| model2vec [0-9.]* StaticModel.encode |' model2vec numpy
if EMB_REFS=$refs sh "$EMB_TOP/scripts/real-model" all-MiniLM-L6-v2 >/dev/null 2>&1; then
	t_grep "bench-static: emb's MiniLM-L6 row" '^| emb-encode --pool, all-MiniLM-L6-v2 fp32' "$T/bench-static.out"
else
	t_grep "bench-static: says MiniLM is missing, and what to run" 'skip emb MiniLM: .*install-refs' "$T/bench-static.err"
	t_skip "bench-static: the MiniLM-L6 row" "the real all-MiniLM-L6-v2 is not in $refs (scripts/install-refs)"
fi

# the tile unit's ceiling where the CPU and OS allow AMX, else a refusal
# that says why
"$EMB_TOP/bench/work/bin/fma-peak" --amx-int8 1 > "$T/amx.out" 2> "$T/amx.err"; s=$?
if [ "$s" -eq 0 ]; then
	t_grep "fma-peak --amx-int8: the tile unit's rate" '^{"threads":1,"isa":"amx-int8","gflops":[1-9]' "$T/amx.out"
else
	t_eq "fma-peak --amx-int8 without AMX: exit 1" "$s" 1
	t_grep "... says why" '^fma-peak: no AMX here: ' "$T/amx.err"
fi

# the paired timer bench/RESULTS.md's A/B figures name: pairs in turn,
# ratios per pair; a command that fails stops it
"$EMB_TOP/scripts/paired" -n 3 --warmup 0 --vs true -- sleep 0.2 > "$T/paired.out"; s=$?
t_eq "scripts/paired: exit 0" "$s" 0
t_grep "scripts/paired: 3 pairs" '^3 pairs' "$T/paired.out"
awk '$1 == "A/B" && $2 == "wall" { ok = $4 > 1 } END { exit !(ok && NR == 7) }' "$T/paired.out"
t_eq "scripts/paired: seven lines, a 0.2 s sleep outlasts true (A/B wall > 1)" "$?" 0
"$EMB_TOP/scripts/paired" -n 2 --vs false -- true > /dev/null 2> "$T/paired.err"; s=$?
t_eq "scripts/paired: a failing command: exit 1" "$s" 1
t_grep "... naming it" 'false exited 1' "$T/paired.err"

if cmp -s "$T/results.before" "$EMB_TOP/bench/RESULTS.md"; then
	t_pass "nothing appended to bench/RESULTS.md"
else
	t_fail "nothing appended to bench/RESULTS.md" "bench/RESULTS.md changed during the smoke runs"
fi
t_ok "bench/seqlen.svg left alone" cmp -s "$T/svg.before" "$EMB_TOP/bench/seqlen.svg"
fi
