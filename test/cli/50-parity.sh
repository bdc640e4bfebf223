# 50-parity.sh - the project's parity manifest (test/parity.yaml): the
# fixtures minilm-l6 and bert-tiny-cls-bf16 through the 3-stage pipeline
# and emb-encode --pool (embedding within 1e-5), token embeddings vs
# last_hidden_state (1e-4), batched vs one-at-a-time (identical), and the
# WordPiece tokenizer goldens (exact).  One line per case and field.
#
# A sanitizer build (make check-sanitize) skips, saying so, the cases
# that run a full-width model (minilm-l6, ce-minilm-l6) record by record
# (and the full-width cross-encoder on the whole corpus),
# on the passages, with int8 weights or activations or in bf16 (minutes
# of instrumented matrix products); the same code runs under the sanitizers in the
# bert-tiny-cls-bf16 and tiny-family cases, the int8 and bf16 unit tests
# and check-valgrind, and the normal build runs them.
T=$(t_tmpdir 50-parity)
M="$EMB_TOP/test/parity.yaml"
slow="minilm-l6-encode-pool-one-at-a-time minilm-l6-token-embeddings-one-at-a-time"
slow="$slow minilm-l6-w8 minilm-l6-w8a8 minilm-l6-w8a8-smooth minilm-l6-bf16 ce-minilm-l6-rerank-bf16"
slow="$slow minilm-l6-passages ce-minilm-l6-rerank"
sanitized=
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null && sanitized=1
n=$(grep -c '^  - name:' "$M")
if [ -n "$sanitized" ]; then
	set --
	for c in $(sed -n 's/^  - name: *//p' "$M"); do
		case " $slow " in
		*" $c "*) t_skip "$c" "a sanitizer build skips the full-width record-by-record, W8A8 and bf16 cases" ;;
		*) set -- "$@" --case "$c" ;;
		esac
	done
	n=$(( $# / 2 ))
	emb-validate --manifest "$M" "$@" > "$T/out" 2>&1
else
	emb-validate --manifest "$M" > "$T/out" 2>&1
fi
s=$?
cat "$T/out"
t_eq "emb-validate --manifest test/parity.yaml: exit 0" "$s" 0
t_grep "every case ran and passed" "parity.yaml: $n cases, 0 failed\$" "$T/out"
t_eq "one ok line per case" "$(grep -c '^[^ :]*: ok (' "$T/out")" "$n"
for f in minilm-l6 bert-tiny-cls-bf16; do
	t_grep "$f: pipeline embeddings compared" "^$f-pipeline: embedding: 532 records, .*: ok\$" "$T/out"
	t_grep "$f: encode --pool embeddings compared" "^$f-encode-pool: embedding: 532 records, .*: ok\$" "$T/out"
	t_grep "$f: last_hidden_state compared" "^$f-token-embeddings: token_embeddings: [1-9][0-9]* records, .*: ok\$" "$T/out"
	case " $slow " in
	*" $f-token-embeddings-one-at-a-time "*) [ -n "$sanitized" ] && continue ;;
	esac
	t_grep "$f: one-at-a-time identical" "^$f-token-embeddings-one-at-a-time: token_embeddings: 532 records, max abs diff 0 " "$T/out"
done
