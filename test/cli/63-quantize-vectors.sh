# 63-quantize-vectors.sh - emb-quantize --vectors reproduces
# sentence-transformers' quantize_embeddings exactly (golden.vq.jsonl,
# ranges vq.ranges.json; also ranges from calibration records and from
# the input itself), saturation, --unpack, errors
T=$(t_tmpdir 63-quantize-vectors)
M="$D/fixtures/minilm-l6"

# input: only id and embedding
sed 's/, "int8".*$/}/' "$M/golden.vq.jsonl" > "$T/emb.jsonl"
t_nogrep "input holds no quantized fields" '"int8"' "$T/emb.jsonl"
emb-quantize --vectors int8,uint8,binary,ubinary --ranges "$M/vq.ranges.json" \
	"$T/emb.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "exit 0, quiet" "$s$(cat "$T/err")" 0
t_ok "int8, uint8, binary, ubinary equal sentence-transformers' exactly" \
	emb-validate --quiet --atol 0 --field int8 --field uint8 --field binary \
	--field ubinary "$M/golden.vq.jsonl" "$T/out"
t_nogrep "embedding dropped" '"embedding"' "$T/out"
# ranges from calibration records, and from the input (stdin, read twice)
emb-quantize --vectors uint8 --ranges "$T/emb.jsonl" "$T/emb.jsonl" > "$T/cal"
t_ok "--ranges JSONL calibration records: same uint8" \
	emb-validate --quiet --atol 0 --field uint8 "$M/golden.vq.jsonl" "$T/cal"
emb-quantize --vectors int8 --keep --save-ranges "$T/r.json" < "$T/emb.jsonl" > "$T/self"
t_ok "no --ranges: the input's own ranges (stdin)" \
	emb-validate --quiet --atol 0 --field int8 "$M/golden.vq.jsonl" "$T/self"
t_grep "--keep keeps embedding" '"embedding": *\[' "$T/self"
emb-quantize --vectors int8 --ranges "$T/r.json" "$T/emb.jsonl" > "$T/saved"
t_ok "--save-ranges written and read back" \
	emb-validate --quiet --atol 0 --field int8 "$M/golden.vq.jsonl" "$T/saved"

# saturation: values beyond the ranges clamp, and a warning counts them
printf '{"ranges": [[-1, 0], [1, 1]]}\n' > "$T/r2.json"
printf '{"id":1,"embedding":[5,-3]}\n{"id":2,"embedding":[-0.5,0.5]}\n' > "$T/sat.jsonl"
emb-quantize --vectors int8,uint8 --ranges "$T/r2.json" "$T/sat.jsonl" > "$T/sat.out" 2> "$T/err"; s=$?
t_eq "saturation: exit 0" "$s" 0
t_grep "over max -> 127/255, under min -> -128/0" '"id":1,"int8":\[127,-128\],"uint8":\[255,0\]' "$T/sat.out"
t_grep "in range: truncated toward zero" '"id":2,"int8":\[-64,0\],"uint8":\[63,127\]' "$T/sat.out"
t_grep "warning counts the saturated values" "warning: 4 values outside the ranges saturated" "$T/err"

# unpacking for scoring
emb-quantize --unpack ubinary "$T/out" > "$T/unb"
sed 's/.*"embedding":\[\([^]]*\)\].*/\1/' "$T/unb" | tr ',' '\n' | sort -u > "$T/vals"
t_eq "--unpack ubinary: +1/-1" "$(tr '\n' ' ' < "$T/vals")" "-1 1 "
sed 's/.*"embedding": *\[\([^]]*\)\].*/\1/; s/ //g' "$T/emb.jsonl" | head -3 > "$T/a"
sed 's/.*"embedding": *\[\([^]]*\)\].*/\1/' "$T/unb" | head -3 > "$T/b"
paste -d' ' "$T/a" "$T/b" | awk '{n = split($1, a, ","); split($2, b, ","); for (i = 1; i <= n; i++) if ((a[i] + 0 > 0) != (b[i] + 0 > 0)) bad = 1} END {exit bad}'
t_eq "--unpack ubinary: the signs of the embedding" "$?" 0
emb-quantize --unpack uint8 --ranges "$M/vq.ranges.json" "$T/out" > "$T/unu"
t_ok "--unpack uint8: within one step of the embedding" \
	emb-validate --quiet --atol 0.0015 --field embedding "$T/emb.jsonl" "$T/unu"

# errors
printf '{"id":1,"embedding":[1,2,3]}\n{"id":2}\n' > "$T/bad.jsonl"
emb-quantize --vectors int8 --ranges "$M/vq.ranges.json" "$T/bad.jsonl" > "$T/bad.out" 2> "$T/err"; s=$?
t_eq "bad records: exit 1" "$s" 1
t_grep "dimension mismatch named" "bad.jsonl:1.*384" "$T/err"
t_grep "missing embedding named" "bad.jsonl:2.*'embedding'" "$T/err"
emb-quantize --vectors float16 < /dev/null > /dev/null 2>&1; s=$?
t_eq "unknown kind: exit 2" "$s" 2
emb-quantize < /dev/null > /dev/null 2>&1; s=$?
t_eq "nothing to do: exit 2" "$s" 2
emb-quantize --vectors int8 --ranges "$T/nonexistent" < /dev/null > /dev/null 2>&1; s=$?
t_eq "unreadable --ranges: exit 5 (an input file)" "$s" 5
printf '{"ranges": 5}\n' > "$T/noranges.json"
emb-quantize --vectors int8 --ranges "$T/noranges.json" < /dev/null > /dev/null 2>&1; s=$?
t_eq "a --ranges file that holds no ranges: exit 3" "$s" 3
emb-quantize --unpack int8 < /dev/null > /dev/null 2>&1; s=$?
t_eq "--unpack int8 without --ranges: exit 2" "$s" 2
