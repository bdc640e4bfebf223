# 55-st-golden.sh - scripts/st-golden's output format, with a stand-in
# sentence_transformers module (test/st-golden/) on PYTHONPATH that hands
# back emb's own vectors, so that what is checked is that st-golden writes
# goldens emb-validate joins and compares (ids and texts kept, float32
# values exact, one label flat), and that it passes the prompt and batch
# size on.  Where the reference environment has the real
# sentence-transformers (scripts/install-refs --full), st-golden also runs
# on the real all-MiniLM-L6-v2 and must write what test/data/real holds
# (its ids exactly, its vectors within 1e-6).
if ! command -v python3 > /dev/null 2>&1; then
	t_skip st-golden "python3 not found"
	return 0 2>/dev/null || exit 0
fi
T=$(t_tmpdir 55-st-golden)
SG="$EMB_TOP/scripts/st-golden"
export PYTHONPATH="$EMB_TOP/test/st-golden" EMB_STANDIN_LOG="$T/calls.log" PYTHONDONTWRITEBYTECODE=1

# encode: gemma-embed-tiny with its "query" prompt
m=$(t_fixture gemma-embed-tiny)
head -n 20 "$D/corpus/texts.jsonl" > "$T/texts.jsonl"
emb-encode -m "$m" -j 2 --pool --prompt-name query "$T/texts.jsonl" > "$T/emb.jsonl"
EMB_STANDIN_VECTORS="$T/emb.jsonl" python3 "$SG" encode some/model --prompt-name query \
	--batch-size 7 "$T/texts.jsonl" > "$T/golden.jsonl" 2> "$T/err"; s=$?
t_eq "encode: exit 0" "$s$(cat "$T/err")" 0
t_lines "encode: one golden record per input" 20 "$T/golden.jsonl"
t_ok "encode: emb-validate joins and compares it (atol 0)" \
	emb-validate --quiet --atol 0 --field embedding "$T/golden.jsonl" "$T/emb.jsonl"
t_grep "encode: the prompt name passed on" '"call": "encode".*"prompt_name": "query"' "$T/calls.log"
t_grep "encode: the batch size passed on" '"batch_size": 7' "$T/calls.log"
t_grep "encode: the model id passed on" '"model": "some/model"' "$T/calls.log"
head -c 300 "$T/texts.jsonl" | head -n 1 | sed 's/"text".*//' > "$T/first"
t_grep "encode: the input members kept" "^$(cat "$T/first")" "$T/golden.jsonl"
emb-validate "$T/golden.jsonl" "$T/emb.jsonl" > "$T/out" 2>&1
t_grep "encode: joined by id" '^embedding: 20 records, max abs diff 0 ' "$T/out"

# predict: the cross-encoder, one label (scores flat in CrossEncoder)
ce=$(t_fixture ce-minilm-l6)
sed 's/, "input_ids".*$/}/' "$D/fixtures/ce-minilm-l6/golden.jsonl" | head -n 12 > "$T/pairs.jsonl"
emb-rerank -m "$ce" -j 2 "$T/pairs.jsonl" > "$T/rr.jsonl"
EMB_STANDIN_VECTORS="$T/rr.jsonl" python3 "$SG" predict other/model < "$T/pairs.jsonl" > "$T/g2.jsonl" 2> "$T/err"; s=$?
t_eq "predict: exit 0" "$s$(cat "$T/err")" 0
t_grep "predict: scores as a list of one" '"scores": \[[-0-9.e]*\]}$' "$T/g2.jsonl"
t_ok "predict: emb-validate compares scores (atol 0)" \
	emb-validate --quiet --atol 0 --field scores "$T/g2.jsonl" "$T/rr.jsonl"

# a mismatch is caught (the goldens are not vacuous)
sed '3s/"embedding": \[\([-0-9.e]*\)/"embedding": [9/' "$T/golden.jsonl" > "$T/g-bad.jsonl"
emb-validate --quiet --field embedding "$T/g-bad.jsonl" "$T/emb.jsonl" > /dev/null 2>&1
t_eq "a changed golden value fails validation" "$?" 1

# usage
python3 "$SG" frobnicate m < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "unknown mode: exit 2" "$s" 2
t_grep "... one line and the hint" "^Try 'st-golden --help'" "$T/err"
python3 "$SG" --help > "$T/help"; s=$?
t_eq "--help: exit 0" "$s" 0
t_grep "--help names both modes" "st-golden predict MODEL" "$T/help"
printf '{"id":1}\n' | EMB_STANDIN_VECTORS=/dev/null python3 "$SG" encode m > /dev/null 2> "$T/err"; s=$?
t_eq "a record without text: exit 1" "$s" 1
t_grep "... names the line and field" "<stdin>:1: field 'text'" "$T/err"
(unset PYTHONPATH; python3 "$SG" encode m < /dev/null > /dev/null 2> "$T/err"); s=$?
if python3 -c 'import sentence_transformers' 2> /dev/null; then
	t_skip "without sentence-transformers: a clear error" "it is installed for $(command -v python3)"
else
	t_eq "without sentence-transformers: exit 1" "$s" 1
	t_grep "... says where to run it" "run this where sentence-transformers is installed" "$T/err"
fi

# the real library on the real model, against the committed goldens
if ! py=$(t_refs_python sentence_transformers torch); then
	t_skip "st-golden with the real sentence-transformers" "$py"
elif ! m=$(t_real_model all-MiniLM-L6-v2); then
	t_skip "st-golden with the real sentence-transformers" "$m"
else
	head -n 24 "$D/real/all-MiniLM-L6-v2/golden.pairs.jsonl" |
		sed 's/, "embedding".*$/}/' > "$T/rp.jsonl"
	(unset PYTHONPATH; HF_HUB_OFFLINE=1 "$py" "$SG" encode "$m" --ids "$T/rp.jsonl" \
		> "$T/rg.jsonl" 2> "$T/err"); s=$?
	t_eq "real sentence-transformers: exit 0" "$s" 0
	t_ok "real sentence-transformers: the committed pairs golden again (ids exact, 1e-6)" \
		emb-validate --quiet --golden-only --atol 1e-6 --field input_ids --field token_type_ids \
		--field embedding "$T/rg.jsonl" "$D/real/all-MiniLM-L6-v2/golden.pairs.jsonl"
	head -n 8 "$D/corpus/texts.jsonl" > "$T/r8.jsonl"
	(unset PYTHONPATH; HF_HUB_OFFLINE=1 "$py" "$SG" encode "$m" --ids --truncate-dim 128 \
		"$T/r8.jsonl" > "$T/rd.jsonl" 2> "$T/err"); s=$?
	t_eq "real sentence-transformers --truncate-dim: exit 0" "$s" 0
	t_ok "real sentence-transformers --truncate-dim 128: the committed dim golden again" \
		emb-validate --quiet --golden-only --atol 1e-6 "$T/rd.jsonl" "$D/real/all-MiniLM-L6-v2/golden.dim.jsonl"
fi
