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

# BPE vocab and merges take the streaming reader (lib/tok/fastjson.c);
# whatever it declines falls back to jansson over the whole file, so
# the messages stay those above.  Over 1 MB the file is mapped, not read.
bigbpe() {  # NAME TAIL: a 1.5 MB BPE file, TAIL closing its merges
	awk -v tail="$2" 'BEGIN {
		printf "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2"
		for (i = 3; i < 60000; i++) printf ",\n    \"tok%06d\": %d", i, i
		printf "},\n  \"merges\": [\n    [\"a\", \"b\"]"
		for (i = 0; i < 30000; i++) printf ",\n    [\"a\", \"b\"]"
		printf "%s}}\n", tail }' | mk "$1"
}
bigbpe big-ok ']'
printf '{"text":"ab ba"}\n' | emb-tokenize -m "$T/big-ok" > "$T/big-ok.out" 2> "$T/big-ok.err"
t_eq "big-ok: loads" "$?" 0
t_grep "big-ok: ids" '"input_ids":\[2,1,0\]' "$T/big-ok.out"
t_ok "big-ok: over 1 MB (mapped)" test "$(wc -c < "$T/big-ok/tokenizer.json")" -gt 1100000
bigbpe big-comma ', ]'
bad big-comma "tokenizer.json: invalid JSON at line 9000[0-9] column"
bigbpe big-shape ', ["a", "b", "c"]]'
bad big-shape "field 'model.merges\[30001\]' must be \"A B\" or \[\"A\", \"B\"\]"
bigbpe big-unknown ', ["a", "tok999999"]]'
bad big-unknown "field 'model.merges\[30001\]' references token 'tok999999' that is not in the vocabulary"
bigbpe big-surrogate ', ["a", "\ud800"]]'
bad big-surrogate "tokenizer.json: invalid JSON at line 9000[0-9] column .*: invalid Unicode escape"
bigbpe big-deep ", $(awk 'BEGIN { for (i = 0; i < 3000; i++) printf "["; for (i = 0; i < 3000; i++) printf "]" }')]"
bad big-deep "tokenizer.json: invalid JSON at line 9000[0-9] column .*: maximum parsing depth reached"
bigbpe big-cut ', ["a", "b'
bad big-cut "tokenizer.json: invalid JSON"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 7}, "merges": ["a b"]}}' | mk two-models
printf '{"text":"ab"}\n' | emb-tokenize -m "$T/two-models" > "$T/two.out" 2>&1
t_grep "two models: the last one counts (as jansson)" '"input_ids":\[7\]' "$T/two.out"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "ab": 5}, "merges": ["a b"]}}' | mk dup-vocab
printf '{"text":"ab"}\n' | emb-tokenize -m "$T/dup-vocab" > "$T/dup.out" 2>&1
t_grep "a token listed twice: the later id (as jansson)" '"input_ids":\[5\]' "$T/dup.out"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1.5}, "merges": []}}' | mk id-real
bad id-real "field 'model.vocab' entry 'b' must be an integer id"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 123456789012345678901234567890}, "merges": []}}' | mk id-huge
bad id-huge "tokenizer.json: invalid JSON at line 1 column .*: too big integer"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b\\u0000": 1}, "merges": []}}' | mk id-nul
bad id-nul "tokenizer.json: invalid JSON at line 1 column"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "\355\240\200": 1}, "merges": []}}' | mk utf8-surrogate
bad utf8-surrogate "tokenizer.json: invalid JSON at line 1 column .*: invalid UTF-8"
printf '{"model": {"type": "BPE", "vocab": {"\\ud83d\\ude00": 0, "\\"": 1, "\\ud83d\\ude00\\"": 2}, "merges": ["\\ud83d\\ude00 \\""]}}' | mk escapes
printf '{"text":"\\ud83d\\ude00\\""}\n' | emb-tokenize -m "$T/escapes" > "$T/esc.out" 2>&1
t_grep "escapes in vocab and merges (surrogate pair, quote)" '"input_ids":\[2\]' "$T/esc.out"
