# 23-tokenize-badfiles.sh - malformed tokenizer files fail at load with
# exit 3 and one clear line naming the file and the field, never a
# crash: bad JSON, a truncated file, merges that reference unknown
# tokens, a truncated or corrupt charsmap, an unsupported component.
T=$(t_tmpdir 23-tokenize-badfiles)
R="$D/models/sentence-transformers--all-distilroberta-v1/tokenizer.json"
A="$D/models/sentence-transformers--paraphrase-albert-small-v2/tokenizer.json"
bad() {  # NAME WANT: $T/NAME/tokenizer.json must fail with WANT
	printf '{"text":"hello"}\n' | emb-tokenize -m "$T/$1" > "$T/$1.out" 2> "$T/$1.err"
	t_eq "$1: exit 3" "$?" 3
	t_grep "$1: message" "$2" "$T/$1.err"
	t_lines "$1: one line on stderr" 1 "$T/$1.err"
	t_lines "$1: nothing on stdout" 0 "$T/$1.out"
}
mk() { mkdir -p "$T/$1"; cat > "$T/$1/tokenizer.json"; }

head -c 100000 "$R" | mk truncated
bad truncated "tokenizer.json: invalid JSON"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' | mk merges
bad merges "field 'model.merges\[0\]' references token 'b' that is not in the vocabulary"
# the real ALBERT file with its charsmap cut after 20000 base64 characters
awk '{ i = index($0, "\"precompiled_charsmap\": \"")
	if (i) { j = i + 25; $0 = substr($0, 1, j + 19999) substr($0, j + 20000 + index(substr($0, j + 20000), "\"") - 1) }
	print }' "$A" | mk charsmap
t_ok "charsmap: the test file was cut" test "$(wc -c < "$T/charsmap/tokenizer.json")" -lt "$(($(wc -c < "$A") - 100000))"
bad charsmap "precompiled_charsmap' is truncated or corrupt"
printf '{"model": {"type": "Unigram", "vocab": [["a", 0]]}, "normalizer": {"type": "Precompiled", "precompiled_charsmap": "not*base64"}}' | mk b64
bad b64 "precompiled_charsmap' is not valid base64"
printf '{"model": {"type": "WordLevel", "vocab": {}}}' | mk unsupported
bad unsupported "model type 'WordLevel' is not supported"
printf '{"model": {"type": "Unigram", "vocab": [["a", 0]]}, "pre_tokenizer": {"type": "UnicodeScripts"}}' | mk unsupported2
bad unsupported2 "pre_tokenizer type 'UnicodeScripts' is not supported"
