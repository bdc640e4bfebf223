# 21-tokenize-fuzz.sh - parity fuzzer: random strings (mixed scripts,
# combining marks, emoji, whitespace and control runs, compatibility and
# odd-but-valid code points, added-token strings, pairs) through
# emb-tokenize and through Hugging Face tokenizers (npm `tokenizers`,
# the Rust library) for every model in test/data/models with a
# tokenizer.json; input_ids and token_type_ids must be equal, a
# mismatch prints the input shrunk to a minimal one.
#
# The reference is looked up in $EMB_REFJS/node_modules/tokenizers, then
# in the repository's node_modules (.ci/run installs it there with
# `npm install --ignore-scripts --no-save tokenizers@0.23.2`).  Without
# node or the package the check is skipped, and says so.
# EMB_FUZZ_N strings per model (default 2000; CI: 20000), EMB_FUZZ_SEED.
refdir=
for d in "${EMB_REFJS:-}" "$EMB_TOP"; do
	if [ -n "$d" ] && [ -f "$d/node_modules/tokenizers/package.json" ]; then
		refdir=$d
		break
	fi
done
if ! command -v node > /dev/null 2>&1; then
	t_skip 21-tokenize-fuzz "node is not installed"
elif [ -z "$refdir" ]; then
	t_skip 21-tokenize-fuzz "npm package tokenizers not found (set EMB_REFJS=DIR with DIR/node_modules/tokenizers, or run: npm install --ignore-scripts --no-save tokenizers@0.23.2)"
else
	T=$(t_tmpdir 21-tokenize-fuzz)
	v=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$refdir/node_modules/tokenizers/package.json" | head -1)
	t_eq "reference is tokenizers 0.23.2" "$v" "0.23.2"
	n=${EMB_FUZZ_N:-2000}
	node "$EMB_TOP/test/tokfuzz.js" --tokenizers "$refdir" \
		--emb "$EMB_TOP/cmd/emb-tokenize" --n "$n" --seed "${EMB_FUZZ_SEED:-1}" \
		"$D"/models/* "$D"/tokenize-synth/*/ > "$T/out" 2>&1
	st=$?
	sed 's/^/# /' "$T/out"
	t_eq "fuzzer: $n strings per model, no mismatch" "$st" 0
	t_grep "fuzzer: the byte-level BPE model was compared" \
		"all-distilroberta-v1: $n strings, 0 mismatches" "$T/out"
	t_grep "fuzzer: the Unigram model was compared" \
		"paraphrase-albert-small-v2: $n strings, 0 mismatches" "$T/out"
	t_grep "fuzzer: the synthetic Split-regex tokenizer was compared" \
		"bpe-qwen-split: $n strings, 0 mismatches" "$T/out"
	# the fuzzer itself must catch a difference: compare one model's
	# tokens against another model's reference
	cat > "$T/other" <<EOS
#!/bin/sh
shift 2
exec "$EMB_TOP/cmd/emb-tokenize" -m "$D/models/sentence-transformers--all-distilroberta-v1" "\$@"
EOS
	chmod +x "$T/other"
	node "$EMB_TOP/test/tokfuzz.js" --tokenizers "$refdir" --emb "$T/other" \
		--n 20 "$D/models/answerdotai--ModernBERT-large" > "$T/out2" 2>&1
	t_eq "fuzzer: a wrong tokenizer fails" "$?" 1
	t_grep "fuzzer: a mismatch prints the minimal input" "minimal input:" "$T/out2"
fi
