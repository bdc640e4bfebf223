# 31-bad-records.sh - the per-record error policy: invalid JSON, invalid
# UTF-8, missing field, empty line, NUL byte, empty input; --errors=emit
# keeps lines aligned; --strict stops; diagnostics name FILE:LINE
T=$(t_tmpdir 31-bad-records)
M="$D/models/sentence-transformers--all-MiniLM-L6-v2"

# empty input: no output, exit 0
: > "$T/empty.jsonl"
B=$(t_fixture bert-tiny-cls-bf16)
for p in "emb-tokenize -m $M" "emb-pool" "emb-encode -j 2 -m $B --pool"; do
	$p "$T/empty.jsonl" > "$T/out" 2> "$T/err"; s=$?
	t_eq "${p%% *} empty input: exit 0" "$s" 0
	t_eq "${p%% *} empty input: no output" "$(cat "$T/out")" ""
	t_eq "${p%% *} empty input: no diagnostic" "$(cat "$T/err")" ""
	$p < /dev/null > "$T/out" 2> "$T/err"; s=$?
	t_eq "${p%% *} /dev/null stdin: exit 0, nothing" "$s$(cat "$T/out" "$T/err")" 0
done

# one good line, then one bad line of each kind, then a good one
{
	printf '{"id":1,"text":"hello"}\n'
	printf '{"id":2,"text":"unterminated}\n'
	printf '{"id":3,"text":"bad \377 byte"}\n'
	printf '{"id":4,"txt":"no text field"}\n'
	printf '\n'
	printf '   \n'
	printf '{"id":7,"text":"NUL\000byte"}\n'
	printf '[1,2]\n'
	printf '{"id":9,"text":42}\n'
	printf '{"id":"ten","text":"crlf line"}\r\n'
	printf '{"id":11,"text":"no final newline"}'
} > "$T/in.jsonl"
emb-tokenize -m "$M" "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "bad records: exit 1" "$s" 1
t_lines "bad records skipped: 3 outputs" 3 "$T/out"
t_lines "one diagnostic per bad record" 8 "$T/err"
t_grep "good first record" '^{"id":1,"text":"hello","input_ids":\[101,7592,102\]' "$T/out"
t_grep "CRLF line: CR removed" '^{"id":"ten","text":"crlf line","input_ids":' "$T/out"
t_grep "last line without newline" '^{"id":11,' "$T/out"
t_grep "invalid JSON: FILE:LINE" "^emb-tokenize: error (at $T/in.jsonl:2): invalid JSON at column 30: unterminated string\$" "$T/err"
t_grep "invalid UTF-8" "^emb-tokenize: error (at $T/in.jsonl:3): invalid UTF-8 at column 21\$" "$T/err"
t_grep "missing field" "^emb-tokenize: error (at $T/in.jsonl:4): missing field 'text'\$" "$T/err"
t_grep "empty line" "^emb-tokenize: error (at $T/in.jsonl:5): empty line\$" "$T/err"
t_grep "blank line" "^emb-tokenize: error (at $T/in.jsonl:6): empty line\$" "$T/err"
t_grep "NUL byte" "^emb-tokenize: error (at $T/in.jsonl:7): NUL byte in line\$" "$T/err"
t_grep "not an object" "^emb-tokenize: error (at $T/in.jsonl:8): invalid JSON at column 1: expected a JSON object\$" "$T/err"
t_grep "wrong type" "^emb-tokenize: error (at $T/in.jsonl:9): field 'text' is not a string\$" "$T/err"

# stdin is named <stdin>
emb-tokenize -m "$M" < "$T/in.jsonl" > /dev/null 2> "$T/err"
t_grep "stdin named <stdin>" "^emb-tokenize: error (at <stdin>:4): missing field 'text'" "$T/err"

# --errors=emit: one output line per input line, error records in place
emb-tokenize -m "$M" --errors=emit "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--errors=emit: exit 1" "$s" 1
t_lines "--errors=emit: lines aligned" 11 "$T/out"
t_lines "--errors=emit: diagnostics still on stderr" 8 "$T/err"
t_eq "--errors=emit: line 4 carries the id" "$(sed -n 4p "$T/out")" \
	'{"id":4,"error":"missing field '"'"'text'"'"'"}'
t_eq "--errors=emit: not JSON, no id" "$(sed -n 2p "$T/out")" \
	'{"error":"invalid JSON at column 30: unterminated string"}'
t_eq "--errors=emit: empty line" "$(sed -n 5p "$T/out")" '{"error":"empty line"}'
t_eq "--errors=emit: good line 10 in place" "$(sed -n 10p "$T/out" | cut -c1-30)" \
	'{"id":"ten","text":"crlf line"'
emb-tokenize -m "$M" --errors emit "$T/in.jsonl" > "$T/out2" 2> /dev/null
t_ok "--errors emit (separate argument) is the same" cmp -s "$T/out" "$T/out2"
# the emitted error records are themselves valid records downstream
emb-pool --errors=emit < "$T/out" > "$T/out3" 2> "$T/err3"
t_lines "emitted errors read back: aligned again" 11 "$T/out3"

# --strict: stop at the first bad record, after writing the ones before it
emb-tokenize -m "$M" --strict "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--strict: exit 1" "$s" 1
t_lines "--strict: records before the bad one written" 1 "$T/out"
t_lines "--strict: one diagnostic" 1 "$T/err"
t_grep "--strict: the first bad line" "(at $T/in.jsonl:2)" "$T/err"
emb-tokenize -m "$M" --strict --errors=emit "$T/in.jsonl" > "$T/out" 2> /dev/null
t_lines "--strict --errors=emit: the error record too" 2 "$T/out"

# several files: line numbers restart, names change; a missing file is
# reported and the others are still read, and the exit status says so
# (5, before the bad records' 1)
printf '{"text":"x"}\n{"nope":1}\n' > "$T/b.jsonl"
emb-tokenize -m "$M" "$T/b.jsonl" "$T/missing.jsonl" "$T/b.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "several files, one missing: exit 5" "$s" 5
t_lines "several files: good records of each" 2 "$T/out"
t_grep "missing file reported" "^emb-tokenize: error: $T/missing.jsonl: No such file or directory" "$T/err"
t_eq "line numbers per file" "$(grep -c "(at $T/b.jsonl:2)" "$T/err")" 2
emb-tokenize -m "$M" "$T" < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "a directory operand: exit 5" "$s" 5
t_grep "a directory operand: named" "^emb-tokenize: error: $T: not a regular file (a directory)" "$T/err"
emb-tokenize -m "$M" "$T/missing.jsonl" < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "a missing operand alone: exit 5, not 1 (bad records)" "$s" 5
emb-tokenize -m "$M" "$T/b.jsonl" > /dev/null 2> /dev/null; s=$?
t_eq "bad records but every file read: exit 1" "$s" 1

# the same status for every file a program reads, not only record
# operands: the files options name (read before anything is done) and
# emb-shard's and emb-merge's inputs; @ is the file, missing or a
# directory (not for emb-merge's CHUNKS, which is one)
printf '{"id":1,"embedding":[1,0]}\n' > "$T/vec.jsonl"
mkdir -p "$T/outs"
while IFS='|' read -r kinds c; do
	for k in $kinds; do
		case $k in missing) f="$T/missing.jsonl" ;; dir) f="$T/outs" ;; esac
		$(echo "$c" | sed "s|@|$f|") < /dev/null > "$T/out" 2> "$T/err"; s=$?
		t_eq "${c%% @*} ($k): exit 5" "$s" 5
		t_eq "${c%% @*} ($k): one line naming it, nothing on stdout" \
			"$(wc -l < "$T/err" | tr -d ' ') $(grep -c -F "$f" "$T/err") $(wc -c < "$T/out" | tr -d ' ')" "1 1 0"
	done
done <<EOF
missing dir|emb-search --index @ $T/vec.jsonl
missing dir|emb-search --build $T/o.idx @
missing dir|emb-rerank -m $B --texts @ $T/vec.jsonl
missing dir|emb-rerank --maxsim --query @ $T/vec.jsonl
missing dir|emb-quantize --vectors int8 --ranges @ $T/vec.jsonl
missing dir|emb-quantize --vectors int8 @
missing dir|emb-validate @ $T/vec.jsonl
missing dir|emb-validate $T/vec.jsonl @
missing dir|emb-shard -n 2 @ $T/chunks
missing dir|emb-merge --check @ $T/vec.jsonl
missing|emb-merge @ $T/outs
EOF
emb-quantize --vectors binary "$T/missing.jsonl" "$T/vec.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "emb-quantize, a missing operand beside a good one: exit 5, the good one written" "$s $(wc -l < "$T/out" | tr -d ' ')" "5 1"
emb-quantize --vectors int8 "$T/missing.jsonl" "$T/vec.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "emb-quantize, ranges from the input, one operand missing: exit 5, the other written" "$s $(wc -l < "$T/out" | tr -d ' ')" "5 1"
t_eq "emb-quantize, ranges from the input: the missing operand said once" "$(grep -c missing.jsonl "$T/err")" 1

# emb-pool's own fields
{
	printf '{"id":1,"token_embeddings":[[1,2],[3]]}\n'
	printf '{"id":2,"token_embeddings":[]}\n'
	printf '{"id":3,"token_embeddings":"x"}\n'
	printf '{"id":4,"token_embeddings":[[1,"a"]]}\n'
	printf '{"id":5,"token_embeddings_b64":["AAAA"]}\n'
	printf '{"id":6,"token_embeddings":[[1e39]]}\n'
	printf '{"id":7}\n'
} > "$T/pool.jsonl"
emb-pool "$T/pool.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "emb-pool bad matrices: exit 1" "$s" 1
t_eq "emb-pool bad matrices: no output" "$(cat "$T/out")" ""
t_lines "emb-pool: one diagnostic each" 7 "$T/err"
t_grep "ragged rows" "(at $T/pool.jsonl:1): field 'token_embeddings': row 1 has 1 values, row 0 has 2" "$T/err"
t_grep "empty matrix" "(at $T/pool.jsonl:2): field 'token_embeddings' is empty" "$T/err"
t_grep "bad base64" "(at $T/pool.jsonl:5): field 'token_embeddings_b64' is not valid base64" "$T/err"
t_grep "out of float32 range" "(at $T/pool.jsonl:6): field 'token_embeddings': number out of float32 range" "$T/err"
t_grep "missing matrix" "(at $T/pool.jsonl:7): missing field 'token_embeddings'" "$T/err"

# a file of plain text given as JSON Lines: one line saying so, not one
# per line
printf 'hello world\nsecond line\n{"text":"x"}\n' > "$T/plain.txt"
emb-tokenize -m "$M" "$T/plain.txt" "$T/b.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "plain text as JSON Lines: exit 1" "$s" 1
t_eq "plain text as JSON Lines: one line for the file (and b.jsonl's one)" "$(grep -c 'plain.txt' "$T/err")" 1
t_grep "plain text as JSON Lines: --raw suggested" "^emb-tokenize: error (at $T/plain.txt:1): not JSON Lines: .*--raw" "$T/err"
t_lines "plain text as JSON Lines: the next file still read" 1 "$T/out"
emb-tokenize -m "$M" --raw "$T/plain.txt" > "$T/out" 2> "$T/err"; s=$?
t_eq "the same with --raw: exit 0, three records" "$s$(wc -l < "$T/out" | tr -d ' ')" 03
printf '{"text":"ok"}\nnot json\nnor this\n' > "$T/late-bad.jsonl"
emb-tokenize -m "$M" "$T/late-bad.jsonl" > /dev/null 2> "$T/err"
t_eq "a bad line after the first: one error per line, as before" "$(grep -c 'late-bad.jsonl:[23]): invalid JSON' "$T/err")" 2
