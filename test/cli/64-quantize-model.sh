# 64-quantize-model.sh - int8 models on minilm-l6 over the corpus:
# cosine to the fp32 goldens >= 0.999 (W8) and >= 0.99 (W8A8), for a
# quantized checkpoint (emb-quantize --weights int8) and for
# quantize-at-load (emb-encode --weights int8); the quantized paths are
# really taken (outputs differ from fp32 and from each other); the
# scalar and VNNI int8 GEMMs agree bit for bit; f16/bf16 checkpoints
T=$(t_tmpdir 64-quantize-model)
F=$(t_fixture minilm-l6)
G="$D/fixtures/minilm-l6/golden.jsonl"
C="$D/corpus/texts.jsonl"
# a sanitizer build (minutes of instrumented matrix products) runs the
# whole-corpus cases on the first 60 texts
if grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null; then
	head -60 "$C" > "$T/c60s"
	head -60 "$G" > "$T/g60s"
	C=$T/c60s G=$T/g60s
fi

emb-quantize -m "$F" -o "$T/w8" --weights int8 2> "$T/err"; s=$?
t_eq "emb-quantize --weights int8: exit 0, quiet" "$s$(cat "$T/err")" 0
t_ok "the checkpoint keeps the tokenizer and modules" test -f "$T/w8/tokenizer.json" -a -f "$T/w8/1_Pooling/config.json"
t_grep "I8 weights with F32 row scales, scheme in the metadata" \
	'"dtype":"I8".*_scale.*"emb.quantization":"int8-rowwise' "$T/w8/model.safetensors"
a=$(wc -c < "$F/model.safetensors"); b=$(wc -c < "$T/w8/model.safetensors")
t_ok "int8 checkpoint is smaller ($b < $a bytes)" test "$b" -lt "$a"

head -60 "$C" > "$T/c60"
head -60 "$G" > "$T/g60"
emb-encode -m "$F" -j 2 --pool "$T/c60" > "$T/fp32"
emb-encode -m "$T/w8" -j 2 --pool "$C" > "$T/w8.out"; s=$?
t_eq "W8 checkpoint loads and runs" "$s" 0
t_ok "W8 (checkpoint): cosine to the fp32 goldens >= 0.999" \
	emb-validate --quiet --atol 1 --min-cos 0.999 --field embedding "$G" "$T/w8.out"
emb-encode -m "$F" -j 2 --pool --weights int8 "$T/c60" > "$T/w8load.out"
head -60 "$T/w8.out" > "$T/w8-60"
t_ok "W8 at load (--weights int8) == W8 checkpoint" cmp -s "$T/w8-60" "$T/w8load.out"
emb-encode -m "$T/w8" -j 2 --pool --act int8 "$C" > "$T/a8.out"; s=$?
t_eq "W8A8 (--act int8) runs" "$s" 0
t_ok "W8A8: cosine to the fp32 goldens >= 0.99" \
	emb-validate --quiet --atol 1 --min-cos 0.99 --field embedding "$G" "$T/a8.out"
head -60 "$T/a8.out" > "$T/a8-60"
emb-encode -m "$F" -j 2 --pool --weights int8 --act int8 "$T/c60" > "$T/a8load.out"
t_ok "W8A8 at load == W8A8 checkpoint" cmp -s "$T/a8-60" "$T/a8load.out"
# the quantized paths are taken: their outputs are not the fp32 ones
if cmp -s "$T/fp32" "$T/w8-60"; then t_fail "W8 output differs from fp32 (int8 weights used)"; else t_pass "W8 output differs from fp32 (int8 weights used)"; fi
if cmp -s "$T/w8-60" "$T/a8-60"; then t_fail "W8A8 output differs from W8 (int8 activations used)"; else t_pass "W8A8 output differs from W8 (int8 activations used)"; fi
t_ok "fp32 still matches the goldens to 1e-5" emb-validate --quiet --field embedding "$T/g60" "$T/fp32"
# the int8 GEMMs give the same bits: the plain AVX2 one (avx2 and avx512
# tables) against AVX-VNNI, AVX-512 VNNI and AMX-INT8 beside the same
# float kernels (each when this CPU has it; against the portable one:
# the unit tests, test_i8.c)
EMB_ISA=scalar emb-encode -m "$T/w8" -j 1 --pool --act int8 "$T/c60" > "$T/a8-scalar" 2> "$T/err"; s=$?
t_eq "EMB_ISA=scalar (portable float and int8): exit 0" "$s$(cat "$T/err")" 0
t_lines "... one vector per record" "$(wc -l < "$T/c60" | tr -d ' ')" "$T/a8-scalar"
for pair in avx2:avxvnni avx512:vnni avx512:amx; do
	base=${pair%%:*} fast=${pair#*:}
	if ! EMB_ISA=$fast emb-encode -m "$T/w8" -j 2 --pool --act int8 "$T/c60" > "$T/a8-$fast" 2> "$T/err"; then
		t_skip "EMB_ISA=$fast == EMB_ISA=$base" "$(head -c 200 "$T/err")"
		continue
	fi
	EMB_ISA=$base emb-encode -m "$T/w8" -j 1 --pool --act int8 "$T/c60" > "$T/a8-$base" 2> "$T/err"; s=$?
	t_eq "EMB_ISA=$base: exit 0" "$s$(cat "$T/err")" 0
	if [ "$fast" = amx ]; then
		# the amx table runs attention's GEMMs in bf16 in the int8
		# modes (its AMX-BF16 GEMM), the avx512 one in fp32 on every
		# CPU with AMX (Intel's): close, not the same bits; the AMX
		# int8 GEMM's own bits are test_i8.c's
		t_ok "EMB_ISA=amx (its int8 GEMM, bf16 attention) close to EMB_ISA=avx512: cosine >= 0.999" \
			emb-validate --quiet --atol 1 --min-cos 0.999 --field embedding "$T/a8-$base" "$T/a8-$fast"
		continue
	fi
	t_ok "EMB_ISA=$fast (its int8 GEMM) == EMB_ISA=$base (portable int8 GEMM), bit for bit" cmp -s "$T/a8-$base" "$T/a8-$fast"
done
EMB_ISA=bogus emb-encode -m "$T/w8" --act int8 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "EMB_ISA=bogus: exit 3" "$s" 3
t_grep "... names the variable" "EMB_ISA" "$T/err"

# f16 / bf16 checkpoints
for ty in f16 bf16; do
	emb-quantize -m "$F" -o "$T/$ty" --weights $ty
	t_grep "$ty: tensors converted" "\"dtype\":\"$(echo $ty | tr a-z A-Z)\"" "$T/$ty/model.safetensors"
	emb-encode -m "$T/$ty" -j 2 --pool "$T/c60" > "$T/$ty.out"
	t_ok "$ty checkpoint: cosine to the goldens >= 0.999" \
		emb-validate --quiet --atol 1 --min-cos 0.999 --field embedding "$T/g60" "$T/$ty.out"
done

# errors
emb-encode -m "$F" --act int8 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--act int8 on float weights: exit 3" "$s" 3
t_grep "... says why" "int8 activations need int8 weights" "$T/err"
emb-quantize -m "$F" -o "$F" --weights int8 2> "$T/err"; s=$?
t_eq "output directory == the model: exit 3" "$s" 3
emb-quantize -m "$F" --weights int8 2> /dev/null; s=$?
t_eq "no -o: exit 2" "$s" 2
emb-quantize -m "$F" -o "$T/x" --weights int4 2> /dev/null; s=$?
t_eq "unknown --weights: exit 2" "$s" 2
emb-encode -m "$F" --weights int4 < /dev/null > /dev/null 2>&1; s=$?
t_eq "emb-encode --weights int4: exit 2" "$s" 2
