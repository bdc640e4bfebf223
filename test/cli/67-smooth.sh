# 67-smooth.sh - W8A8 with smoothing (--act int8-smooth) on the outlier
# fixture (bert-outlier-tiny: LayerNorm gains 16-64x on four channels):
# the smoothed path is really taken (its output differs from plain
# W8A8's) and is closer to the fp32 goldens than plain W8A8; one record
# at a time equals the batch (the portable and SIMD smoothed quantizers
# agree bit for bit: test/unit/test_i8.c); an emb-quantize int8 checkpoint
# smooths too; usage errors.  (The accuracy floors themselves are the
# parity cases, test/parity.yaml.)
T=$(t_tmpdir 67-smooth)
F=$(t_fixture bert-outlier-tiny)
G="$D/fixtures/bert-outlier-tiny/golden.jsonl"

head -80 "$G" > "$T/g80"
emb-encode -m "$F" -j 2 --pool --weights int8 --act int8 "$T/g80" > "$T/a8"; s=$?
t_eq "plain W8A8: exit 0" "$s" 0
emb-encode -m "$F" -j 2 --pool --weights int8 --act int8-smooth "$T/g80" > "$T/sm" 2> "$T/err"; s=$?
t_eq "--act int8-smooth: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "... one vector per record" 80 "$T/sm"
if cmp -s "$T/a8" "$T/sm"; then t_fail "smoothed output differs from plain W8A8 (the scales are used)"; else t_pass "smoothed output differs from plain W8A8 (the scales are used)"; fi
t_ok "smoothed: min cosine to the fp32 goldens >= 0.9999" \
	emb-validate --quiet --atol 1 --min-cos 0.9999 --field embedding "$T/g80" "$T/sm"
if emb-validate --quiet --atol 1 --min-cos 0.9999 --field embedding "$T/g80" "$T/a8" > /dev/null 2>&1; then
	t_fail "plain W8A8 falls below 0.9999 on the outlier fixture (what smoothing fixes)"
else
	t_pass "plain W8A8 falls below 0.9999 on the outlier fixture (what smoothing fixes)"
fi
emb-encode -m "$F" -j 1 --batch-tokens 1 --pool --weights int8 --act int8-smooth "$T/g80" > "$T/sm-one"
t_ok "one record at a time == the batch" cmp -s "$T/sm" "$T/sm-one"

# --compute names the whole mode; --weights and --act are its older
# spelling, the same modes bit for bit
emb-encode -m "$F" -j 2 --pool --compute w8a8-smooth "$T/g80" > "$T/c-sm"; s=$?
t_eq "--compute w8a8-smooth: exit 0" "$s" 0
t_ok "... == --weights int8 --act int8-smooth" cmp -s "$T/sm" "$T/c-sm"
emb-encode -m "$F" -j 2 --pool --compute w8a8 "$T/g80" > "$T/c-a8"
t_ok "--compute w8a8 == --weights int8 --act int8" cmp -s "$T/a8" "$T/c-a8"
emb-encode -m "$F" -j 2 --pool --weights int8 "$T/g80" > "$T/w8a"
emb-encode -m "$F" -j 2 --pool --compute w8 "$T/g80" > "$T/c-w8"
t_ok "--compute w8 == --weights int8" cmp -s "$T/w8a" "$T/c-w8"
if cmp -s "$T/w8a" "$T/a8"; then t_fail "W8 differs from W8A8"; else t_pass "W8 differs from W8A8"; fi
emb-encode -m "$F" -j 2 --pool --compute w8a8 --compute fp32 "$T/g80" > "$T/c-fp"
emb-encode -m "$F" -j 2 --pool "$T/g80" > "$T/fp"
t_ok "the last --compute wins (w8a8 then fp32 is fp32)" cmp -s "$T/fp" "$T/c-fp"
emb-encode -m "$F" --compute bf16 --act int8 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--compute bf16 --act int8: exit 2" "$s" 2
t_grep "... says why" "exclude each other" "$T/err"

# an int8 checkpoint: smoothing re-rounds its (dequantized) weights
emb-quantize -m "$F" -o "$T/w8" --weights int8 2> "$T/err"; s=$?
t_eq "emb-quantize --weights int8: exit 0" "$s" 0
emb-encode -m "$T/w8" -j 2 --pool --act int8-smooth "$T/g80" > "$T/w8sm"; s=$?
t_eq "int8 checkpoint with --act int8-smooth: exit 0" "$s" 0
t_ok "... min cosine to the fp32 goldens >= 0.999" \
	emb-validate --quiet --atol 1 --min-cos 0.999 --field embedding "$T/g80" "$T/w8sm"

# usage
emb-encode -m "$F" --act int4 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--act int4: exit 2" "$s" 2
t_grep "... names the choices" "int8 or int8-smooth" "$T/err"
emb-encode -m "$F" --compute bf16 --weights int8 --act int8-smooth < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--compute bf16 with --act int8-smooth: exit 2" "$s" 2
emb-encode -m "$F" --act int8-smooth < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--act int8-smooth on float weights: exit 3" "$s" 3
t_grep "... says why" "int8 activations need int8 weights" "$T/err"
