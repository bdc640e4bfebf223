# 61-splade.sh - emb-encode --pool=splade: the golden SPLADE vectors of
# splade-tiny (BertForMaskedLM, decoder tied to the word embeddings):
# same index sets, values within 1e-4; --top-k, --terms; batching and
# threads do not change a bit; usage errors
T=$(t_tmpdir 61-splade)
S=$(t_fixture splade-tiny)
F=$(t_fixture minilm-l6)
G="$D/fixtures/splade-tiny/golden.jsonl"

emb-encode -m "$S" -j 2 --pool=splade "$G" > "$T/out" 2> "$T/err"; s=$?
t_eq "exit 0, quiet" "$s$(cat "$T/err")" 0
t_ok "sparse values within 1e-4 of the goldens" \
	emb-validate --quiet --atol 1e-4 --field sparse "$G" "$T/out"
sed 's/.*"sparse": {\([^}]*\)}.*/\1/; s/"\([0-9]*\)": [^,]*/\1/g; s/ //g' "$G" > "$T/want.idx"
sed 's/.*"indices":\[\([^]]*\)\].*/\1/' "$T/out" > "$T/got.idx"
t_ok "index sets equal the goldens' (every record)" cmp -s "$T/want.idx" "$T/got.idx"
awk -F, '{for (i = 2; i <= NF; i++) if ($i + 0 <= $(i - 1) + 0) bad = 1} END {exit bad}' "$T/got.idx"
t_eq "indices ascending" "$?" 0
t_grep "indices and values" '"sparse":{"indices":\[[0-9]*,[0-9,]*\],"values":\[0\.' "$T/out"

# text input, one at a time, one thread: identical
sed 's/, "input_ids".*$/}/' "$G" | head -40 > "$T/text.jsonl"
emb-encode -m "$S" -j 1 --batch-tokens 1 --pool=splade "$T/text.jsonl" > "$T/single"
head -40 "$G" | sed 's/, "input_ids".*$/}/' | emb-encode -m "$S" -j 2 --pool=splade > "$T/batched"
t_ok "one at a time, 1 thread == batched, 2 threads" cmp -s "$T/single" "$T/batched"
head -40 "$G" > "$T/g40"
t_ok "from text: matches the goldens" emb-validate --quiet --atol 1e-4 --field sparse --field input_ids "$T/g40" "$T/single"

# --top-k: the k largest, still ascending
emb-encode -m "$S" -j 2 --pool=splade --top-k 3 "$T/text.jsonl" > "$T/top3"
n=$(sed -n 5p "$T/top3" | sed 's/.*"indices":\[\([^]]*\)\].*/\1/' | tr ',' '\n' | wc -l | tr -d ' ')
t_eq "--top-k 3: three entries" "$n" 3
sed -n 5p "$T/out" | sed 's/.*"values":\[\([^]]*\)\].*/\1/' | tr ',' '\n' | sort -gr | head -3 | sort -g > "$T/best3"
sed -n 5p "$T/top3" | sed 's/.*"values":\[\([^]]*\)\].*/\1/' | tr ',' '\n' | sort -g > "$T/got3"
t_ok "--top-k keeps the largest values" cmp -s "$T/best3" "$T/got3"
emb-encode -m "$S" -j 2 --pool=splade --terms --top-k 3 "$T/text.jsonl" > "$T/terms"
t_grep "--terms: vocabulary strings" '"sparse":{"terms":\["[^"]*","[^"]*","[^"]*"\],"values"' "$T/terms"
t_nogrep "--terms: no indices" '"indices"' "$T/terms"

# usage and model errors
emb-encode -m "$F" --pool=splade < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "a model without a masked-LM head: exit 3" "$s" 3
t_grep "... says so" "masked-LM" "$T/err"
emb-encode -m "$S" --top-k 3 < /dev/null > /dev/null 2>&1; s=$?
t_eq "--top-k without --pool=splade: exit 2" "$s" 2
emb-encode -m "$S" --pool=splade --dim 8 < /dev/null > /dev/null 2>&1; s=$?
t_eq "--pool=splade --dim: exit 2" "$s" 2

# a NaN in row 7 of the word embeddings, a row no input here uses: mean
# pooling (rows checked at first use) encodes; SPLADE's decoder, tied to
# the whole table, checks all of it when it loads (as at load before)
rm -rf "$T/nan"; cp -R "$S" "$T/nan"
python3 - "$T/nan/model.safetensors" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
t = json.loads(b[8:8 + n])["bert.embeddings.word_embeddings.weight"]
o = 8 + n + t["data_offsets"][0] + 4 * (7 * t["shape"][1] + 3)
b[o:o + 4] = struct.pack("<f", float("nan"))
open(sys.argv[1], "wb").write(b)
PY
echo '{"text":"hello"}' > "$T/hello.jsonl"
emb-encode -m "$T/nan" --pool "$T/hello.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "NaN in an unused embedding row, --pool: exit 0, quiet" "$s$(cat "$T/err")" 0
t_grep "... an embedding" '"embedding":\[' "$T/out"
emb-encode -m "$T/nan" --pool=splade "$T/hello.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "... --pool=splade (the tied decoder): exit 3" "$s" 3
t_grep "... names the element" "^emb-encode: error: $T/nan/model.safetensors: tensor 'bert.embeddings.word_embeddings.weight': element 899 is NaN (weights must be finite)$" "$T/err"
t_lines "... nothing on stdout" 0 "$T/out"
