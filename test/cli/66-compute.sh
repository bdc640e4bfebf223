# 66-compute.sh - bf16 compute (--compute bf16) on minilm-l6: the option
# (a bad value and bf16 with int8 activations are usage errors, exit 2),
# the path is taken (output differs from fp32) and stays within cosine
# 0.9999 of the fp32 goldens, results do not depend on threads or
# batching, and the portable kernels (EMB_ISA=scalar) run it as well;
# EMB_ISA=amx (the AMX tile GEMM) keeps the floor and the invariance,
# or, where AMX is not usable, is refused in one line that says why.
# That every bf16 GEMM gives the scalar one's bits is in the unit tests
# (test_bf16.c); the other families: test/parity.yaml.
T=$(t_tmpdir 66-compute)
F=$(t_fixture minilm-l6)
G="$D/fixtures/minilm-l6/golden.jsonl"
C="$D/corpus/texts.jsonl"
# 60 texts; 20 in a sanitizer build (instrumented matrix products)
n=60
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null && n=20
head -$n "$C" > "$T/c60"
head -$n "$G" > "$T/g60"

emb-encode -m "$F" --compute fp64 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--compute fp64: exit 2" "$s" 2
t_grep "... names the value" "'fp64' is not fp32, bf16, w8, w8a8 or w8a8-smooth" "$T/err"
emb-encode -m "$F" --compute bf16 --weights int8 --act int8 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--compute bf16 with --act int8: exit 2" "$s" 2
t_grep "... says why" "exclude each other" "$T/err"
emb-rerank -m "$F" --compute half < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "emb-rerank --compute half: exit 2" "$s" 2
# emb-rerank takes every mode of --compute (the same option parser)
CE=$(t_fixture ce-minilm-l6)
head -20 "$D/real/pairs.jsonl" > "$T/p20"
emb-rerank -m "$CE" -j 2 --logits "$T/p20" > "$T/rr-fp32"
emb-rerank -m "$CE" -j 2 --logits --compute w8a8 "$T/p20" > "$T/rr-w8a8"; s=$?
t_eq "emb-rerank --compute w8a8: exit 0" "$s" 0
t_eq "... one record per pair" "$(wc -l < "$T/rr-w8a8" | tr -d ' ')" 20
if cmp -s "$T/rr-fp32" "$T/rr-w8a8"; then t_fail "... differs from fp32 (int8 GEMM used)"; else t_pass "... differs from fp32 (int8 GEMM used)"; fi

emb-encode -m "$F" -j 2 --pool "$T/c60" > "$T/fp32"
emb-encode -m "$F" -j 2 --pool --compute fp32 "$T/c60" > "$T/fp32b"
t_ok "--compute fp32 is the default" cmp -s "$T/fp32" "$T/fp32b"
emb-encode -m "$F" -j 2 --pool --compute bf16 "$T/c60" > "$T/bf16"; s=$?
t_eq "--compute bf16: exit 0" "$s" 0
t_lines "... one vector per record" $n "$T/bf16"
if cmp -s "$T/fp32" "$T/bf16"; then t_fail "bf16 output differs from fp32 (the bf16 GEMM is used)"; else t_pass "bf16 output differs from fp32 (the bf16 GEMM is used)"; fi
t_ok "bf16: cosine to the fp32 goldens >= 0.9999" \
	emb-validate --quiet --atol 1 --min-cos 0.9999 --field embedding "$T/g60" "$T/bf16"
emb-encode -m "$F" -j 1 --batch-tokens 1 --pool --compute bf16 "$T/c60" > "$T/bf16-1"
t_ok "bf16: one thread, one record a pass == batched, 2 threads" cmp -s "$T/bf16" "$T/bf16-1"
EMB_ISA=scalar emb-encode -m "$F" -j 2 --pool --compute bf16 "$T/c60" > "$T/bf16-scalar" 2> "$T/err"; s=$?
t_eq "EMB_ISA=scalar (portable bf16 GEMM): exit 0" "$s$(cat "$T/err")" 0
t_ok "... cosine to the fp32 goldens >= 0.9999" \
	emb-validate --quiet --atol 1 --min-cos 0.9999 --field embedding "$T/g60" "$T/bf16-scalar"

# AMX (EMB_ISA=amx): the tile bf16 GEMM sums in its own order (not the
# other kernels' bits, lib/kern/bkernels.h) but keeps the same floor,
# and its results do not depend on threads or batching; fp32 is the
# AVX-512 kernels' as before.  Where the CPU or OS does not allow AMX,
# asking for it is a load error of one line that says why.
EMB_ISA=amx emb-encode -m "$F" -j 2 --pool --compute bf16 "$T/c60" > "$T/bf16-amx" 2> "$T/err"; s=$?
if [ "$s" = 0 ]; then
	t_ok "EMB_ISA=amx bf16: cosine to the fp32 goldens >= 0.9999" \
		emb-validate --quiet --atol 1 --min-cos 0.9999 --field embedding "$T/g60" "$T/bf16-amx"
	EMB_ISA=amx emb-encode -m "$F" -j 1 --batch-tokens 1 --pool --compute bf16 "$T/c60" > "$T/bf16-amx1"
	t_ok "... one thread, one record a pass == batched, 2 threads" cmp -s "$T/bf16-amx" "$T/bf16-amx1"
	EMB_ISA=amx emb-encode -m "$F" -j 2 --pool "$T/c60" > "$T/fp32-amx"
	EMB_ISA=avx512 emb-encode -m "$F" -j 2 --pool "$T/c60" > "$T/fp32-avx512"
	t_ok "EMB_ISA=amx fp32 == EMB_ISA=avx512 fp32, bit for bit" cmp -s "$T/fp32-avx512" "$T/fp32-amx"
else
	t_eq "EMB_ISA=amx where AMX is not usable: exit 3" "$s" 3
	t_grep "... says why" "EMB_ISA: amx is not usable here: " "$T/err"
	t_lines "... in one line" 1 "$T/err"
fi
