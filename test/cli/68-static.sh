# 68-static.sh - static embedding models (Model2Vec folders and the
# sentence-transformers StaticEmbedding module) against the goldens of
# their own libraries (test/data/static/, make.py): emb-encode --pool,
# the pipeline emb-tokenize | emb-encode | emb-pool (equal bit for bit),
# --b64, -j, prompts, --dim, token_embeddings, the quantized and search
# flow, the real distilled all-MiniLM-L6-v2, bad folders and options.
T=$(t_tmpdir 68-static)
S=$D/static

# a fixture with its tokenizer.json (the base model's, named by BASE)
fixture() { t_static_fixture "$1" "$T"; }
# the golden's texts, ids t*, p*, s* (corpus texts, passages, static/texts)
awk '{ sub(/"id": /, "\"id\": \"t"); sub(/, "src"/, "\", \"src\""); print }' \
	"$D/corpus/texts.jsonl" > "$T/texts.jsonl"
awk '{ sub(/"id": /, "\"id\": \"p"); sub(/, "src"/, "\", \"src\""); print }' \
	"$D/corpus/passages.jsonl" >> "$T/texts.jsonl"
awk '{ sub(/"id": /, "\"id\": \"s"); sub(/, "text"/, "\", \"text\""); print }' \
	"$S/texts.jsonl" >> "$T/texts.jsonl"
t_lines "the goldens' texts" 798 "$T/texts.jsonl"

# sanitizer builds (3-5x slower): the corpus texts only
san=$(sed -n 's/^EMB_SANITIZE = //p; s/^EMB_TSAN = //p' "$EMB_TOP/config.mk" | grep -c yes)
if [ "$san" -gt 0 ]; then
	head -n 532 "$T/texts.jsonl" > "$T/in.jsonl"
	only=--input-only
else
	cp "$T/texts.jsonl" "$T/in.jsonl"
	only=
fi

for f in wordpiece-f32 bpe-vq-f16 unigram-int8 st-wordpiece; do
	M=$(fixture $f)
	emb-encode -m "$M" --pool "$T/in.jsonl" > "$T/$f.one" 2> "$T/$f.err"
	t_eq "$f: emb-encode --pool exits 0" "$?$(head -c 300 "$T/$f.err")" 0
	t_ok "$f: ids and vectors as its library's encode (atol 1e-5)" \
		emb-validate --quiet $only --atol 1e-5 "$S/$f/golden.jsonl" "$T/$f.one"
	emb-tokenize -m "$M" "$T/in.jsonl" | emb-encode -m "$M" |
		emb-pool -m "$M" > "$T/$f.pipe"
	t_ok "$f: the pipeline gives the same vectors, bit for bit" \
		emb-validate --quiet --field embedding --atol 0 "$T/$f.one" "$T/$f.pipe"
done

M=$T/wordpiece-f32
emb-encode -m "$M" --pool --b64 -j 1 "$T/in.jsonl" > "$T/b64"
t_ok "--b64 -j 1: the same vectors" \
	emb-validate --quiet --field embedding --atol 0 "$T/wordpiece-f32.one" "$T/b64"
t_grep "--b64 writes embedding_b64" '"embedding_b64":"' "$T/b64"
# an empty text: no tokens, the zero vector (model2vec's)
echo '{"id":1,"text":""}' | emb-encode -m "$M" --pool > "$T/empty"
t_grep "an empty text: the zero vector" '"embedding":\[0,0,0,0\]' "$T/empty"
# token_embeddings: one row per id
echo '{"text":"hello world again"}' | emb-encode -m "$M" > "$T/rows"
n=$(tr -cd '[' < "$T/rows" | wc -c)
ids=$(sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' "$T/rows" | tr ',' '\n' | wc -l)
t_eq "token_embeddings: one row per input id (+ its own bracket and the ids')" "$n" $((ids + 2))
# --dim: the first N values, renormalized
echo '{"text":"hello world again"}' | emb-encode -m "$M" --pool --dim 2 > "$T/dim"
t_eq "--dim 2: two values of norm 1" "$(sed 's/.*"embedding":\[\([^]]*\)\].*/\1/' "$T/dim" |
	awk -F, '{ printf "%d %.5f", NF, sqrt($1 * $1 + $2 * $2) }')" "2 1.00000"

# the StaticEmbedding form: a prompt of config_sentence_transformers.json
M=$T/st-wordpiece
head -n 128 "$T/texts.jsonl" | emb-encode -m "$M" --pool --prompt-name query > "$T/query"
t_ok "st-wordpiece: --prompt-name query as SentenceTransformer.encode(prompt_name='query')" \
	emb-validate --quiet --atol 1e-5 "$S/st-wordpiece/golden.query.jsonl" "$T/query"
t_status "st-wordpiece: an unknown prompt name is a usage error" 2 \
	emb-encode -m "$M" --pool --prompt-name nope < /dev/null 2> "$T/err"
t_grep "... naming it" "unknown prompt name 'nope'" "$T/err"

# the real one: model2vec's distill of all-MiniLM-L6-v2 (float16)
R=$S/m2v-minilm-l6
emb-encode -m "$R" --pool "$T/in.jsonl" > "$T/real.one"
t_ok "m2v-minilm-l6: as StaticModel.encode (atol 1e-5)" \
	emb-validate --quiet $only --atol 1e-5 "$R/golden.jsonl" "$T/real.one"
t_ok "m2v-minilm-l6: ... and exactly (float16 rounding as numpy's)" \
	emb-validate --quiet $only --atol 0 "$R/golden.jsonl" "$T/real.one"
emb-tokenize -m "$R" "$T/in.jsonl" | emb-encode -m "$R" | emb-pool -m "$R" > "$T/real.pipe"
t_ok "m2v-minilm-l6: the pipeline, bit for bit" \
	emb-validate --quiet --field embedding --atol 0 "$T/real.one" "$T/real.pipe"
# int8 vectors and a search over them
emb-quantize --vectors int8 --keep "$T/real.one" > "$T/real.q"
t_lines "emb-quantize --vectors int8 on its vectors" "$(wc -l < "$T/in.jsonl" | tr -d ' ')" "$T/real.q"
head -n 532 "$T/real.one" | emb-search --build "$T/idx" --precision f32,int8 2> "$T/err"
t_eq "emb-search --build over its vectors" "$?$(head -c 200 "$T/err")" 0
sed -n '100p' "$T/real.one" | emb-search --index "$T/idx" -k 3 > "$T/hits"
t_grep "a document's own vector finds it first" '"results":\[{"id":"t99"' "$T/hits"

# bad folders: one line, exit 3
bad() {     # bad NAME: a copy of wordpiece-f32 to break
	rm -rf "$T/$1"; cp -R "$T/wordpiece-f32" "$T/$1"; echo "$T/$1"
}
B=$(bad nomodel); rm "$B/model.safetensors"
t_status "no model.safetensors: exit 3" 3 emb-encode -m "$B" --pool < /dev/null 2> "$T/err"
t_lines "... one line" 1 "$T/err"
t_grep "... naming the file" "model.safetensors" "$T/err"
B=$(bad norm); sed 's/"normalize": true/"normalize": "yes"/' "$T/wordpiece-f32/config.json" > "$B/config.json"
t_status "normalize not a boolean: exit 3" 3 emb-encode -m "$B" --pool < /dev/null 2> "$T/err"
t_grep "... naming the field" "field 'normalize'" "$T/err"
B=$(bad maxlen); sed 's/"max_length": 512/"max_length": -4/' "$T/wordpiece-f32/config.json" > "$B/config.json"
t_status "max_length negative: exit 3" 3 emb-tokenize -m "$B" < /dev/null 2> "$T/err"
t_grep "... naming the field" "field 'max_length'" "$T/err"
# a table shorter than the vocabulary: the ids past it would read past it
B=$(bad short)
printf '{"embeddings":{"dtype":"F32","shape":[100,4],"data_offsets":[0,1600]}}' > "$T/h"
hl=$(wc -c < "$T/h")
{ printf "\\$(printf %o $((hl % 256)))\\$(printf %o $((hl / 256)))\\0\\0\\0\\0\\0\\0"; cat "$T/h"; head -c 1600 /dev/zero; } > "$B/model.safetensors"
t_status "a table of 100 rows for 30522 token ids: exit 3" 3 emb-encode -m "$B" --pool < /dev/null 2> "$T/err"
t_grep "... saying both counts" "covers 100 token ids, the tokenizer has 30522" "$T/err"
B=$(bad path); printf '[{"idx":0,"name":"0","path":"../x","type":"sentence_transformers.models.StaticEmbedding"}]' > "$B/modules.json"
sed 's/"model2vec"/"other"/' "$T/wordpiece-f32/config.json" > "$B/config.json"
t_status "a StaticEmbedding path outside the folder: exit 3" 3 emb-encode -m "$B" --pool < /dev/null 2> "$T/err"
t_grep "... naming the field" "field 'path'" "$T/err"

# options a static model cannot take; input_ids past the table
M=$T/wordpiece-f32
t_status "--pool=cls: a usage error" 2 emb-encode -m "$M" --pool=cls < /dev/null 2> "$T/err"
t_status "--weights int8: a usage error" 2 emb-encode -m "$M" --pool --weights int8 < /dev/null 2> "$T/err"
echo '{"id":3,"input_ids":[5,40000]}' | emb-encode -m "$M" --pool --errors=emit > "$T/out"
t_grep "an input id past the table: the record's error" '"error":.*out of range' "$T/out"
echo '{"id":4,"text":"a","text_pair":"b"}' | emb-encode -m "$M" --pool --errors=emit > "$T/out"
t_grep "text_pair: the record's error" "text_pair" "$T/out"
echo '{"query":"a","documents":["b"]}' | emb-rerank -m "$M" > /dev/null 2> "$T/err"
t_eq "emb-rerank: exit 3" "$?" 3
t_grep "... saying a static model is no cross-encoder" "not a cross-encoder" "$T/err"
