# 50-parity.sh - the project's parity manifest (test/parity.yaml): the
# fixtures minilm-l6 and bert-tiny-cls-bf16 through the 3-stage pipeline
# and emb-encode --pool (embedding within 1e-5), token embeddings vs
# last_hidden_state (1e-4), batched vs one-at-a-time (identical), and the
# WordPiece tokenizer goldens (exact).  One line per case and field.
T=$(t_tmpdir 50-parity)
emb-validate --manifest "$EMB_TOP/test/parity.yaml" > "$T/out" 2>&1
s=$?
cat "$T/out"
t_eq "emb-validate --manifest test/parity.yaml: exit 0" "$s" 0
n=$(grep -c '^  - name:' "$EMB_TOP/test/parity.yaml")
t_grep "every case ran and passed" "parity.yaml: $n cases, 0 failed\$" "$T/out"
t_eq "one ok line per case" "$(grep -c '^[^ :]*: ok (' "$T/out")" "$n"
for f in minilm-l6 bert-tiny-cls-bf16; do
	t_grep "$f: pipeline embeddings compared" "^$f-pipeline: embedding: 532 records, .*: ok\$" "$T/out"
	t_grep "$f: encode --pool embeddings compared" "^$f-encode-pool: embedding: 532 records, .*: ok\$" "$T/out"
	t_grep "$f: last_hidden_state compared" "^$f-token-embeddings: token_embeddings: [1-9][0-9]* records, .*: ok\$" "$T/out"
	t_grep "$f: one-at-a-time identical" "^$f-token-embeddings-one-at-a-time: token_embeddings: 532 records, max abs diff 0 " "$T/out"
done
