# 71-static-quantize.sh - emb-quantize -m on static embedding models: a
# Model2Vec folder written again at float16 and int8 as model2vec's own
# quantization saves it (the table, config.json's embedding_dtype, the
# weights and mapping kept), loaded by emb-encode; against model2vec
# itself where the reference environment is installed (test/static-quant.py:
# the table bit for bit, and StaticModel.from_pretrained(OUT).encode within
# 1e-5 of emb-encode); the refusals (bf16, the sentence-transformers form).
T=$(t_tmpdir 71-static-quantize)
S=$D/static

fixture() { t_static_fixture "$1" "$T"; }
awk '{ sub(/"id": /, "\"id\": \"s"); sub(/, "text"/, "\", \"text\""); print }' \
	"$S/texts.jsonl" > "$T/texts.jsonl"
head -n 200 "$D/corpus/texts.jsonl" |
awk '{ sub(/"id": /, "\"id\": \"t"); sub(/, "src"/, "\", \"src\""); print }' \
	>> "$T/texts.jsonl"
py=$(t_refs_python model2vec safetensors) || { why=$py; py=; }

for f in wordpiece-f32 bpe-vq-f16 unigram-int8 m2v-minilm-l6; do
	M=$(fixture $f)
	for w in f16 int8; do
		O=$T/$f.$w
		emb-quantize -m "$M" -o "$O" --weights $w 2> "$T/err"; s=$?
		t_eq "$f --weights $w: exit 0, quiet" "$s$(cat "$T/err")" 0
		want=$([ $w = f16 ] && echo float16 || echo int8)
		t_grep "$f $w: config.json embedding_dtype $want" \
			"\"embedding_dtype\": \"$want\"" "$O/config.json"
		t_ok "$f $w: tokenizer.json and modules.json copied" \
			cmp -s "$M/tokenizer.json" "$O/tokenizer.json"
		emb-encode -m "$O" --pool "$T/texts.jsonl" > "$T/$f.$w.vec" 2> "$T/err"; s=$?
		t_eq "$f $w: emb-encode loads it" "$s$(cat "$T/err")" 0
		t_lines "$f $w: a vector a text" "$(wc -l < "$T/texts.jsonl")" "$T/$f.$w.vec"
		t_refs_check "$f $w: model2vec's table bit for bit, its encode within 1e-5" \
			"$py" "$why" "$EMB_TOP/test/static-quant.py" "$M" "$O" $w \
			"$T/$f.$w.vec" "$T/texts.jsonl"
	done
done

# a table already of the type is kept as it is: the same vectors
emb-encode -m "$T/unigram-int8" --pool "$T/texts.jsonl" > "$T/u.vec"
t_ok "int8 of an int8 table: the same vectors" cmp -s "$T/u.vec" "$T/unigram-int8.int8.vec"
emb-encode -m "$T/bpe-vq-f16" --pool "$T/texts.jsonl" > "$T/b.vec"
t_ok "f16 of a float16 table: the same vectors" cmp -s "$T/b.vec" "$T/bpe-vq-f16.f16.vec"
# float32 to int8 really changes the table (4x smaller), vectors close
a=$(wc -c < "$T/wordpiece-f32/model.safetensors")
b=$(wc -c < "$T/wordpiece-f32.int8/model.safetensors")
t_ok "int8 table smaller ($b < $a bytes)" test "$b" -lt "$a"
t_nogrep "an unmapped table has no vocabulary_quantization" '"vocabulary_quantization"' \
	"$T/wordpiece-f32.int8/config.json"
t_grep "a mapped table's vocabulary_quantization stays" '"vocabulary_quantization": 64' \
	"$T/bpe-vq-f16.int8/config.json"

# refusals: one line, exit 3, nothing written
M=$T/wordpiece-f32
emb-quantize -m "$M" -o "$T/bf" --weights bf16 2> "$T/err"; s=$?
t_eq "bf16: exit 3" "$s" 3
t_grep "bf16: names the types" 'float16 or int8' "$T/err"
t_lines "bf16: one line" 1 "$T/err"
t_ok "bf16: nothing written" test ! -e "$T/bf"
M=$(fixture st-wordpiece)
for w in f16 int8; do
	emb-quantize -m "$M" -o "$T/st.$w" --weights $w 2> "$T/err"; s=$?
	t_eq "StaticEmbedding folder, $w: exit 3" "$s" 3
	t_grep "StaticEmbedding folder, $w: says why" 'torch averages' "$T/err"
	t_ok "StaticEmbedding folder, $w: nothing written" test ! -e "$T/st.$w"
done
