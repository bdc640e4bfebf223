# 22-tokenize-offsets.sh - emb-tokenize --offsets: the character offsets
# of every token equal Hugging Face tokenizers' (test/data/tokenize/*/
# offsets.jsonl and test/data/tokenize-synth/*/golden.jsonl, made by
# test/tokgold.js with tokenizers 0.23.2; special tokens are [0,0] in
# both), for byte-level BPE (trim_offsets), Unigram with a Precompiled
# charsmap, and the synthetic pipelines (NFKC, Replace, Prepend, Strip,
# Split regex, Metaspace, byte fallback...).
T=$(t_tmpdir 22-tokenize-offsets)
for mg in \
	models/sentence-transformers--all-distilroberta-v1:tokenize/sentence-transformers--all-distilroberta-v1/offsets.jsonl \
	models/answerdotai--ModernBERT-large:tokenize/answerdotai--ModernBERT-large/offsets.jsonl \
	models/sentence-transformers--paraphrase-albert-small-v2:tokenize/sentence-transformers--paraphrase-albert-small-v2/offsets.jsonl \
	models/Falconsai--text_summarization:tokenize/Falconsai--text_summarization/offsets.jsonl \
	tokenize-synth/bpe-qwen-split:tokenize-synth/bpe-qwen-split/golden.jsonl \
	tokenize-synth/bpe-chars-fallback:tokenize-synth/bpe-chars-fallback/golden.jsonl \
	tokenize-synth/bpe-splits:tokenize-synth/bpe-splits/golden.jsonl \
	tokenize-synth/unigram-fallback:tokenize-synth/unigram-fallback/golden.jsonl \
	tokenize-synth/bl-prefix:tokenize-synth/bl-prefix/golden.jsonl \
	tokenize-synth/uni-punct:tokenize-synth/uni-punct/golden.jsonl \
	tokenize-synth/empty-matches:tokenize-synth/empty-matches/golden.jsonl; do
	m=${mg%%:*} gold="$D/${mg#*:}" name=${m##*/}
	sed -e 's/"input_ids":/"g_ids":/' -e 's/"offsets":/"g_offsets":/' \
		-e 's/"token_type_ids":/"g_types":/' "$gold" > "$T/in.jsonl"
	emb-tokenize -m "$D/$m" --no-truncate --offsets "$T/in.jsonl" > "$T/out.jsonl" 2> "$T/err"
	t_eq "$name: emb-tokenize --offsets exits 0" "$?" 0
	for f in input_ids offsets; do
		sed -n "s/.*\"$f\":\(\[[][0-9,]*\]\).*/\1/p" "$gold" > "$T/want"
		sed -n "s/.*\"$f\":\(\[[][0-9,]*\]\).*/\1/p" "$T/out.jsonl" > "$T/got"
		if [ -s "$T/want" ] && [ "$(wc -l < "$T/want")" -eq "$(wc -l < "$gold")" ] &&
		    cmp -s "$T/want" "$T/got"; then
			t_pass "$name: $f exact"
		else
			n=$(awk 'NR == FNR { w[FNR] = $0; next } w[FNR] != $0 { print FNR; exit }' "$T/want" "$T/got")
			t_fail "$name: $f exact" "first mismatch at record line ${n:-?}" \
				"want: $(sed -n "${n:-1}p" "$T/want" | cut -c1-300)" \
				"got:  $(sed -n "${n:-1}p" "$T/got" | cut -c1-300)"
		fi
	done
done
# without --offsets there is no offsets field
printf '{"text":"a b"}\n' | emb-tokenize -m "$D/models/Falconsai--text_summarization" > "$T/plain"
t_nogrep "no offsets without --offsets" '"offsets"' "$T/plain"
