# 20-tokenize-golden.sh - emb-tokenize reproduces the Hugging Face
# tokenizers goldens (test/data/tokenize) id for id: every model (WordPiece,
# byte-level BPE, Unigram with a Precompiled charsmap; the real Gemma 3
# and Qwen3 BPE files)
# full (no truncation), trunc16 (max 16 with specials) and
# pairs64 (text + text_pair, longest_first to 64).
T=$(t_tmpdir 20-tokenize-golden)
# the real Gemma 3 (33 MB, 262,144 pieces, 514,906 merges, byte
# fallback) and Qwen3 tokenizer.json files, kept gzipped in
# test/data/bigtok (PROVENANCE.md there) and unpacked here; their
# Hugging Face goldens are in test/data/tokenize like the others.  The
# big BPE vocab and merges take the streaming reader
# (lib/tok/fastjson.c); these goldens hold it to Hugging Face's ids.
big="google--gemma-3-tokenizer Qwen--Qwen3-tokenizer"
for m in $big; do
	mkdir -p "$T/$m"
	for f in tokenizer.json tokenizer_config.json; do
		gzip -dc "$D/bigtok/$m/$f.gz" > "$T/$m/$f" 2> "$T/err"
		t_eq "$m: $f unpacked" "$?$(cat "$T/err")" 0
	done
done
for m in sentence-transformers--all-MiniLM-L6-v2 BAAI--bge-small-en-v1.5 \
	sentence-transformers--all-distilroberta-v1 answerdotai--ModernBERT-large \
	sentence-transformers--paraphrase-albert-small-v2 Falconsai--text_summarization \
	intfloat--e5-small-v2 cross-encoder--ms-marco-MiniLM-L-6-v2 \
	sentence-transformers--all-mpnet-base-v2 $big; do
	case " $big " in *" $m "*) dir=$T/$m ;; *) dir=$D/models/$m ;; esac
	for fm in full:0 trunc16:16 pairs64:64; do
		f=${fm%:*} max=${fm#*:}
		gold="$D/tokenize/$m/$f.jsonl"
		# hide the golden ids from emb-tokenize: its output must hold
		# ids it computed, not ones passed through
		sed -e 's/"input_ids":/"golden_ids":/' \
			-e 's/"token_type_ids":/"golden_type_ids":/' \
			-e 's/"tokens":/"golden_tokens":/' "$gold" > "$T/in.jsonl"
		if [ "$max" -eq 0 ]; then opt=--no-truncate; else opt="--max-length $max"; fi
		emb-tokenize -m "$dir" $opt "$T/in.jsonl" > "$T/out.jsonl" 2> "$T/err"
		t_eq "$m $f: emb-tokenize exits 0" "$?" 0
		t_lines "$m $f: one output line per record" "$(wc -l < "$gold" | tr -d ' ')" "$T/out.jsonl"
		# plain comparison of the id arrays, line by line
		sed -n 's/.*"input_ids":\(\[[^]]*\]\).*/\1/p' "$gold" > "$T/want"
		sed -n 's/.*"input_ids":\(\[[^]]*\]\).*/\1/p' "$T/out.jsonl" > "$T/got"
		if cmp -s "$T/want" "$T/got" && [ -s "$T/want" ]; then
			t_pass "$m $f: input_ids exact"
		else
			n=$(awk 'NR == FNR { w[FNR] = $0; next } w[FNR] != $0 { print FNR; exit }' "$T/want" "$T/got")
			t_fail "$m $f: input_ids exact" "first mismatch at record line ${n:-?}" \
				"want: $(sed -n "${n:-1}p" "$T/want")" "got:  $(sed -n "${n:-1}p" "$T/got")"
		fi
		sed -n 's/.*"token_type_ids":\(\[[^]]*\]\).*/\1/p' "$gold" > "$T/want"
		sed -n 's/.*"token_type_ids":\(\[[^]]*\]\).*/\1/p' "$T/out.jsonl" > "$T/got"
		if cmp -s "$T/want" "$T/got" && [ -s "$T/want" ]; then
			t_pass "$m $f: token_type_ids exact"
		else
			t_fail "$m $f: token_type_ids exact"
		fi
		if command -v emb-validate > /dev/null; then
			emb-validate "$gold" "$T/out.jsonl" > "$T/val" 2>&1
			t_eq "$m $f: emb-validate agrees" "$?" 0
			t_grep "$m $f: emb-validate counts no mismatch" \
				'^input_ids: [0-9]* records, 0 mismatches: ok' "$T/val"
		fi
	done
done


# code points PCRE2's Unicode tables may not know (Unicode 15: CJK
# Extension H U+32159, Kawi U+11F04, Nag Mundari U+1E4D0) are letters in
# Hugging Face's regex, as in utf8proc: Qwen3's \p{L} must take them
# (ids from tokenizers 0.23.2; a Unicode 14 \p{L} gives [...,247,62,69])
printf '%s\n' '{"id":1,"text":"\ud888\udd59_f"}' '{"id":2,"text":"\ud807\udf04x_y"}' \
	'{"id":3,"text":"\ud839\udcd0-ab"}' > "$T/u15.jsonl"
emb-tokenize -m "$T/Qwen--Qwen3-tokenizer" "$T/u15.jsonl" > "$T/u15.out" 2> "$T/err"
t_eq "Qwen3, Unicode 15 letters: exit 0" "$?$(cat "$T/err")" 0
t_grep "Qwen3: U+32159 (CJK Ext. H) is \\p{L}: '_f' one token" '"id":1,.*"input_ids":\[172,110,227,247,761\]' "$T/u15.out"
t_grep "Qwen3: U+11F04 (Kawi) is \\p{L}" '"id":2,.*"input_ids":\[128240,120,226,87,4178\]' "$T/u15.out"
t_grep "Qwen3: U+1E4D0 (Nag Mundari) is \\p{L}" '"id":3,.*"input_ids":\[172,252,241,238,38030\]' "$T/u15.out"
