# 41-encode.sh - emb-encode: batching and threads do not change a bit;
# --b64 and JSON agree; pipeline == one process; --pool modes, --dim;
# bad input_ids are bad records
T=$(t_tmpdir 41-encode)
F=$(t_fixture minilm-l6)
B=$(t_fixture bert-tiny-cls-bf16)
C="$D/corpus/texts.jsonl"

head -120 "$C" > "$T/in.jsonl"
emb-encode -m "$F" -j 2 --pool "$T/in.jsonl" > "$T/pool-j2" 2> "$T/err"; s=$?
t_eq "--pool: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "--pool: one record per line" 120 "$T/pool-j2"
emb-encode -m "$F" -j 1 --batch-tokens 1 --pool "$T/in.jsonl" > "$T/pool-j1"
t_ok "one record per forward, 1 thread == batched, 2 threads" cmp -s "$T/pool-j1" "$T/pool-j2"
emb-encode -m "$F" -j 2 --batch-tokens 100 --pool "$T/in.jsonl" > "$T/pool-b100"
t_ok "--batch-tokens 100 == default" cmp -s "$T/pool-b100" "$T/pool-j2"
if command -v emb-validate > /dev/null; then
	head -120 "$D/fixtures/minilm-l6/golden.jsonl" > "$T/golden"
	t_ok "--pool matches the golden embeddings" emb-validate --quiet "$T/golden" "$T/pool-j2"
fi

# three stages == one process, byte for byte; b64 between stages too
head -40 "$C" > "$T/in40.jsonl"
emb-encode -m "$F" -j 2 --pool "$T/in40.jsonl" > "$T/one"
emb-tokenize -m "$F" "$T/in40.jsonl" | emb-encode -m "$F" -j 2 | emb-pool -m "$F" > "$T/three"
t_ok "tokenize | encode | pool == encode --pool" cmp -s "$T/one" "$T/three"
emb-tokenize -m "$F" "$T/in40.jsonl" | emb-encode -m "$F" -j 2 --b64 > "$T/enc-b64"
t_grep "--b64: token_embeddings_b64 rows" '"token_embeddings_b64":\["' "$T/enc-b64"
t_nogrep "--b64: no JSON matrix" '"token_embeddings":' "$T/enc-b64"
emb-pool -m "$F" < "$T/enc-b64" > "$T/three-b64"
t_ok "--b64 read back by emb-pool: same vectors" cmp -s "$T/one" "$T/three-b64"
emb-encode -m "$F" -j 2 --pool --b64 "$T/in40.jsonl" > "$T/one-b64"
t_grep "--pool --b64: embedding_b64" '"embedding_b64":"' "$T/one-b64"
emb-pool --no-normalize --mode mean < "$T/enc-b64" > /dev/null; s=$?
t_eq "emb-pool accepts the b64 matrix without -m" "$s" 0

# text and input_ids paths agree; tokenizing writes the token fields
emb-encode -m "$F" -j 2 "$T/in40.jsonl" > "$T/enc-text"
emb-tokenize -m "$F" "$T/in40.jsonl" | emb-encode -m "$F" -j 2 > "$T/enc-ids"
t_ok "emb-encode from text == from input_ids" cmp -s "$T/enc-text" "$T/enc-ids"
t_eq "token_embeddings: one row per token (id 3: [CLS] a [SEP])" \
	"$(sed -n 4p "$T/enc-text" | grep -o '"token_embeddings":\[\[' | wc -l | tr -d ' ')$(sed -n 4p "$T/enc-text" | grep -o '\],\[' | wc -l | tr -d ' ')" "12"

# --pool=MODE, --normalize, --dim
emb-encode -m "$F" -j 2 --pool=cls "$T/in40.jsonl" > "$T/cls"
emb-encode -m "$F" -j 2 "$T/in40.jsonl" | emb-pool --mode cls --normalize > "$T/cls2"
t_ok "--pool=cls (+ model Normalize) == emb-pool --mode cls --normalize" cmp -s "$T/cls" "$T/cls2"
emb-encode -m "$F" -j 2 --pool --no-normalize "$T/in40.jsonl" > "$T/nn"
emb-encode -m "$F" -j 2 "$T/in40.jsonl" | emb-pool > "$T/nn2"
t_ok "--pool --no-normalize == emb-pool (mean, no normalize)" cmp -s "$T/nn" "$T/nn2"
emb-encode -m "$F" -j 2 --pool --dim 32 "$T/in40.jsonl" > "$T/d32"
n=$(sed -n 5p "$T/d32" | sed 's/.*"embedding":\[//; s/\].*//' | tr ',' '\n' | wc -l | tr -d ' ')
t_eq "--dim 32: 32 values" "$n" 32
norm=$(sed -n 5p "$T/d32" | sed 's/.*"embedding":\[//; s/\].*//' | tr ',' '\n' |
	awk '{ s += $1 * $1 } END { printf "%.5f", s }')
t_eq "--dim 32: unit norm" "$norm" "1.00000"
emb-pool -m "$F" --dim 32 < "$T/enc-ids" > "$T/d32b"
t_ok "--dim: emb-encode --pool == emb-pool" cmp -s "$T/d32" "$T/d32b"
emb-encode -m "$F" --pool --dim 385 < /dev/null 2> "$T/err"; s=$?
t_eq "--dim larger than the embedding: exit 2" "$s" 2
t_grep "--dim too large: says the size" "384" "$T/err"

# the CLS / BF16 fixture: pooling config read from 1_Pooling
head -30 "$C" | emb-encode -m "$B" -j 2 --pool > "$T/tiny"
if command -v emb-validate > /dev/null; then
	head -30 "$D/fixtures/bert-tiny-cls-bf16/golden.jsonl" > "$T/tiny-golden"
	t_ok "bert-tiny: --pool (cls, no Normalize) matches golden" \
		emb-validate --quiet "$T/tiny-golden" "$T/tiny"
fi
head -30 "$C" | emb-encode -m "$B" -j 2 | emb-pool --mode cls > "$T/tiny2"
t_ok "bert-tiny: --pool == emb-pool --mode cls" cmp -s "$T/tiny" "$T/tiny2"

# bad records
{
	printf '{"id":1,"input_ids":[101,30522,102]}\n'
	printf '{"id":2,"input_ids":[101,-1,102]}\n'
	printf '{"id":3,"input_ids":[101,102],"token_type_ids":[0]}\n'
	printf '{"id":4,"input_ids":[101,102],"token_type_ids":[0,2]}\n'
	printf '{"id":5,"input_ids":[]}\n'
	printf '{"id":6}\n'
	printf '{"id":7,"input_ids":"101"}\n'
	printf '{"id":8,"input_ids":[101,7592,102]}\n'
	awk 'BEGIN { printf "{\"id\":9,\"input_ids\":[101"; for (i = 0; i < 600; i++) printf ",1037"; printf ",102]}\n" }'
} > "$T/bad.jsonl"
emb-encode -m "$F" -j 2 --errors=emit "$T/bad.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "bad input_ids: exit 1" "$s" 1
t_lines "bad input_ids: aligned output" 9 "$T/out"
t_grep "id out of range" "(at $T/bad.jsonl:1): field 'input_ids': id 30522 at position 1 is out of range (vocabulary size 30522)" "$T/err"
t_grep "negative id" "(at $T/bad.jsonl:2): field 'input_ids': id -1 at position 1 is out of range" "$T/err"
t_grep "token_type_ids length" "(at $T/bad.jsonl:3): field 'token_type_ids' has 1 values, 'input_ids' has 2" "$T/err"
t_grep "token type out of range" "(at $T/bad.jsonl:4): field 'token_type_ids': 2 at position 1 is out of range" "$T/err"
t_grep "empty input_ids" "(at $T/bad.jsonl:5): field 'input_ids' is empty" "$T/err"
t_grep "no input_ids, no text: names both" "(at $T/bad.jsonl:6): the record has neither 'text' nor 'input_ids'" "$T/err"
t_grep "input_ids not an array" "(at $T/bad.jsonl:7): field 'input_ids' is not an array of integers" "$T/err"
t_grep "too many tokens" "(at $T/bad.jsonl:9): field 'input_ids' has 602 tokens, more than the model's maximum of 512" "$T/err"
t_grep "the good record among them" '^{"id":8,"input_ids":\[101,7592,102\],"token_embeddings":\[\[' "$T/out"
t_eq "error record in place" "$(sed -n 6p "$T/out")" '{"id":6,"error":"the record has neither '"'"'text'"'"' nor '"'"'input_ids'"'"'"}'

# a 10 MB line through emb-encode
{
	printf '{"id":"big","pad":"'
	head -c 10485760 /dev/zero | tr '\0' 'y'
	printf '","input_ids":[101,7592,102]}\n'
} > "$T/big.jsonl"
emb-encode -m "$F" -j 2 --pool "$T/big.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "10 MB line: exit 0, quiet" "$s$(cat "$T/err")" 0
t_eq "10 MB line: pad kept" "$(head -c 20 "$T/out")" '{"id":"big","pad":"y'
t_grep "10 MB line: embedding" '"input_ids":\[101,7592,102\],"embedding":\[' "$T/out"
emb-encode -m "$F" --max-line 1000000 "$T/big.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "10 MB line over --max-line: exit 1, no output" "$s$(cat "$T/out")" 1
t_grep "10 MB line over --max-line: message" "line too long (more than 1000000 bytes)" "$T/err"

# | head -1 quiet, /dev/full
emb-encode -m "$F" -j 2 "$T/in.jsonl" 2> "$T/err" | head -1 > "$T/out"; s=$?
t_eq "emb-encode | head -1: status 0, quiet" "$s$(cat "$T/err")" 0
t_lines "emb-encode | head -1: one line" 1 "$T/out"
if [ -w /dev/full ]; then
	emb-encode -m "$F" -j 2 "$T/in40.jsonl" > /dev/full 2> "$T/err"; s=$?
	t_eq "emb-encode > /dev/full: exit 4" "$s" 4
	t_eq "emb-encode > /dev/full: message" "$(cat "$T/err")" \
		"emb-encode: error: write error: No space left on device"
fi

# include_prompt false: the prompt's tokens are left out of the mean, the
# same in one process (prompt applied by emb-encode) and in the pipeline
# (prompt_length carried by the record)
P="$T/prompted"
cp -R "$B" "$P"
printf '{"word_embedding_dimension":64,"pooling_mode_mean_tokens":true,"include_prompt":false}\n' > "$P/1_Pooling/config.json"
printf '{"prompts":{"query":"query: "},"default_prompt_name":null}\n' > "$P/config_sentence_transformers.json"
head -12 "$C" > "$T/in12.jsonl"
emb-encode -m "$P" -j 2 --pool --prompt-name query "$T/in12.jsonl" > "$T/pp1" 2> "$T/err"; s=$?
t_eq "include_prompt false, --prompt-name: exit 0" "$s$(cat "$T/err")" 0
t_grep "prompt_length written" '"prompt_length":3,"embedding":\[' "$T/pp1"
emb-tokenize -m "$P" --prompt-name query "$T/in12.jsonl" | emb-encode -m "$P" -j 2 --pool > "$T/pp2"
t_ok "include_prompt false: prompt_length from the record == emb-encode's own" cmp -s "$T/pp1" "$T/pp2"
emb-tokenize -m "$P" --prompt-name query "$T/in12.jsonl" | emb-encode -m "$P" -j 2 | emb-pool -m "$P" > "$T/pp3"
t_ok "include_prompt false: three stages agree" cmp -s "$T/pp1" "$T/pp3"
emb-tokenize -m "$P" --prompt-name query "$T/in12.jsonl" | emb-encode -m "$P" -j 2 | emb-pool --mode mean > "$T/pp4"
t_ok "include_prompt true (no -m): a different vector" test "$(sed -n 4p "$T/pp1")" != "$(sed -n 4p "$T/pp4")"
