# 51-validate.sh - emb-validate GOLDEN [INPUT] on crafted goldens
T=$(t_tmpdir 51-validate)

cat > "$T/golden.jsonl" <<'EOF'
{"id": 1, "text": "a", "input_ids": [101, 1037, 102], "token_type_ids": [0, 0, 0], "embedding": [0.5, 0.25]}
{"id": 2, "text": "b", "input_ids": [101, 1038, 102], "token_type_ids": [0, 0, 0], "embedding": [1, 0]}
{"id": "x-3", "text": "c", "input_ids": [101, 1039, 102], "token_type_ids": [0, 0, 0], "embedding": [0, 1], "last_hidden_state": [[1.5, -1], [0.25, 8]]}
EOF

# the same records, another order, other formatting, fields added
cat > "$T/same.jsonl" <<'EOF'
{"id":"x-3","input_ids":[101,1039,102],"embedding":[0.0,1.0],"token_embeddings":[[1.5,-1],[0.25,8]],"extra":true}
{"id":1,"input_ids":[101,1037,102],"token_type_ids":[0,0,0],"embedding":[0.5,0.25]}
{"id":2,"input_ids":[101,1038,102],"token_type_ids":[0,0,0],"embedding":[1,0]}
EOF
emb-validate "$T/golden.jsonl" "$T/same.jsonl" > "$T/out" 2>&1
t_eq "identical records: exit 0" "$?" 0
t_grep "summary line per field" '^embedding: 3 records, max abs diff 0 (id 1), min cos 1 (id 1): ok$' "$T/out"
t_grep "input_ids exact" '^input_ids: 3 records, 0 mismatches: ok$' "$T/out"
t_grep "token_type_ids when both have it" '^token_type_ids: 2 records, 0 mismatches: ok$' "$T/out"
t_grep "token_embeddings vs last_hidden_state" '^token_embeddings: 1 records, max abs diff 0 (id "x-3")' "$T/out"
t_lines "four summary lines" 4 "$T/out"

# stdin as INPUT
emb-validate "$T/golden.jsonl" < "$T/same.jsonl" > "$T/out" 2>&1
t_eq "input from stdin" "$?" 0
emb-validate "$T/golden.jsonl" - < "$T/same.jsonl" > "$T/out" 2>&1
t_eq "input from - (stdin)" "$?" 0

# one id out of tolerance: exit 1, the id named
sed 's/"embedding":\[1,0\]/"embedding":[1,0.001]/' "$T/same.jsonl" > "$T/one.jsonl"
emb-validate "$T/golden.jsonl" "$T/one.jsonl" > "$T/out" 2>&1
t_eq "a mismatch in one id: exit 1" "$?" 1
t_grep "worst id named in the summary" '^embedding: 3 records, max abs diff 0.001 (id 2), .*: FAIL (atol 1e-05: 1 records out of tolerance)$' "$T/out"
t_grep "the record's message names id and position" '^id 2: embedding: max abs diff 0.001 > 1e-05 at \[1\]' "$T/out"
t_grep "other fields still ok" '^input_ids: 3 records, 0 mismatches: ok$' "$T/out"

# tolerance boundaries: |0.5078125 - 0.5| = 2^-7 exactly
printf '{"id":1,"embedding":[0.5,1]}\n' > "$T/b-golden.jsonl"
printf '{"id":1,"embedding":[0.5078125,1]}\n' > "$T/b-input.jsonl"
emb-validate --atol 0.0078125 "$T/b-golden.jsonl" "$T/b-input.jsonl" > "$T/out" 2>&1
t_eq "diff equal to --atol passes" "$?" 0
emb-validate --atol 0.0078124 "$T/b-golden.jsonl" "$T/b-input.jsonl" > "$T/out" 2>&1
t_eq "diff just above --atol fails" "$?" 1
emb-validate --tol embedding=0.0078125 "$T/b-golden.jsonl" "$T/b-input.jsonl" > "$T/out" 2>&1
t_eq "--tol FIELD=X sets one field's tolerance" "$?" 0
emb-validate "$T/b-golden.jsonl" "$T/b-input.jsonl" > "$T/out" 2>&1
t_eq "default atol 1e-5 rejects 2^-7" "$?" 1

# min cos: tiny vectors within atol but pointing elsewhere
printf '{"id":1,"embedding":[1e-6,0]}\n' > "$T/c-golden.jsonl"
printf '{"id":1,"embedding":[0,1e-6]}\n' > "$T/c-input.jsonl"
emb-validate "$T/c-golden.jsonl" "$T/c-input.jsonl" > "$T/out" 2>&1
t_eq "min cos is off by default" "$?" 0
emb-validate --min-cos 0.99 "$T/c-golden.jsonl" "$T/c-input.jsonl" > "$T/out" 2>&1
t_eq "--min-cos catches orthogonal vectors" "$?" 1
t_grep "min cos reported" 'min cos 0 (id 1): FAIL' "$T/out"

# missing records on either side: exit 1, ids named
head -n 2 "$T/same.jsonl" > "$T/missing.jsonl"
printf '{"id":99,"input_ids":[1]}\n' >> "$T/missing.jsonl"
emb-validate "$T/golden.jsonl" "$T/missing.jsonl" > "$T/out" 2>&1
t_eq "missing records: exit 1" "$?" 1
t_grep "missing ids named" '^records: 3 golden, 3 input, 2 joined by id: FAIL (1 missing in input: id 2; 1 missing in golden: id 99)$' "$T/out"

# an empty input is a failure, not a vacuous pass
: > "$T/empty.jsonl"
emb-validate "$T/golden.jsonl" "$T/empty.jsonl" > "$T/out" 2>&1
t_eq "empty input: exit 1" "$?" 1
t_grep "all golden ids missing" '3 missing in input: id 1, id 2, id "x-3"' "$T/out"

# shape mismatch: the id and both shapes
printf '{"id":1,"embedding":[0.5,0.25,0]}\n{"id":2,"embedding":[1,0]}\n{"id":"x-3","embedding":[0,1],"token_embeddings":[[1.5,-1]]}\n' > "$T/shape.jsonl"
emb-validate "$T/golden.jsonl" "$T/shape.jsonl" > "$T/out" 2>&1
t_eq "shape mismatch: exit 1" "$?" 1
t_grep "shape message" '^id 1: embedding: shape \[1,3\], golden \[1,2\]$' "$T/out"
t_grep "matrix shape message" '^id "x-3": token_embeddings: shape \[1,2\], golden \[2,2\]$' "$T/out"
t_grep "shape count in summary" 'embedding: 3 records.*1 shape mismatches (first id 1): FAIL' "$T/out"

# input_ids differ
sed 's/1038/1040/' "$T/same.jsonl" > "$T/ids.jsonl"
emb-validate "$T/golden.jsonl" "$T/ids.jsonl" > "$T/out" 2>&1
t_eq "input_ids mismatch: exit 1" "$?" 1
t_grep "input_ids message" '^id 2: input_ids: \[1\] is 1040, golden 1038' "$T/out"
t_grep "input_ids summary" '^input_ids: 3 records, 1 mismatches (first id 2): FAIL$' "$T/out"

# base64 vectors: embedding_b64 and token_embeddings_b64 (one per row)
cat > "$T/b64.jsonl" <<'EOF'
{"id":1,"embedding_b64":"AAAAPwAAgD4="}
{"id":2,"embedding":[1,0]}
{"id":"x-3","embedding":[0,1],"token_embeddings_b64":["AADAPwAAgL8=","AACAPgAAAEE="]}
EOF
emb-validate "$T/golden.jsonl" "$T/b64.jsonl" > "$T/out" 2>&1
t_eq "b64 inputs accepted" "$?" 0
t_grep "b64 matrix compared" '^token_embeddings: 1 records, max abs diff 0' "$T/out"
# and a b64 value that differs is caught
sed 's/AACAPgAAAEE=/AACAPgAAAEI=/' "$T/b64.jsonl" > "$T/b64bad.jsonl"
emb-validate "$T/golden.jsonl" "$T/b64bad.jsonl" > "$T/out" 2>&1
t_eq "a wrong b64 row fails" "$?" 1
t_grep "at row 1" 'token_embeddings: max abs diff .* at \[1,1\]' "$T/out"

# line order when the input has no ids
sed 's/"id":[^,]*,//' "$T/same.jsonl" > "$T/noid.jsonl"
emb-validate --field input_ids "$T/golden.jsonl" "$T/noid.jsonl" > "$T/out" 2>&1
t_eq "no ids: joined in line order (other order: mismatch)" "$?" 1
t_grep "line-order labels" '^record 1: input_ids' "$T/out"
grep -v '"x-3"' "$T/same.jsonl" | sed 's/"id":[^,]*,//' > "$T/noid2.jsonl"
head -n 2 "$T/golden.jsonl" > "$T/g2.jsonl"
emb-validate "$T/g2.jsonl" "$T/noid2.jsonl" > "$T/out" 2>&1
t_eq "no ids, same order: exit 0" "$?" 0

# --field: only that field; a requested field must be there
emb-validate --field embedding "$T/golden.jsonl" "$T/ids.jsonl" > "$T/out" 2>&1
t_eq "--field embedding ignores input_ids" "$?" 0
t_lines "--field: one line" 1 "$T/out"
emb-validate --field logits "$T/golden.jsonl" "$T/same.jsonl" > "$T/out" 2>&1
t_eq "--field that is absent: exit 1" "$?" 1
t_grep "absent field said" '^logits: 0 records: FAIL (not present in both)$' "$T/out"

# --quiet: nothing on success, the failures otherwise
emb-validate --quiet "$T/golden.jsonl" "$T/same.jsonl" > "$T/out" 2>&1
t_eq "--quiet ok: exit 0" "$?" 0
t_lines "--quiet ok: no output" 0 "$T/out"
emb-validate --quiet "$T/golden.jsonl" "$T/one.jsonl" > "$T/out" 2>&1
t_eq "--quiet failure: exit 1" "$?" 1
t_grep "--quiet still prints the failure" '^embedding: .*FAIL' "$T/out"
t_nogrep "--quiet hides ok lines" ': ok$' "$T/out"

# a bad line in the input
printf '{"id":1,"input_ids":[101,1037,102]}\nnot json\n' > "$T/badline.jsonl"
emb-validate --field input_ids "$T/g2.jsonl" "$T/badline.jsonl" > "$T/out" 2>&1
t_eq "an unreadable input line: exit 1" "$?" 1
t_grep "names file and line" "badline.jsonl:2" "$T/out"

# an --errors=emit record in the input
printf '{"id":1,"input_ids":[101,1037,102]}\n{"id":2,"error":"missing field '"'"'text'"'"'"}\n' > "$T/errrec.jsonl"
emb-validate "$T/g2.jsonl" "$T/errrec.jsonl" > "$T/out" 2>&1
t_eq "an error record: exit 1" "$?" 1
t_grep "error record shown" "^input: id 2: error record: missing field 'text'\$" "$T/out"
t_grep "error record counted" '(1 error records)$' "$T/out"

# usage and unreadable files
emb-validate > "$T/out" 2> "$T/err"
t_eq "no operand: exit 2" "$?" 2
t_grep "a one-line usage error" '^emb-validate: error: missing GOLDEN$' "$T/err"
t_grep "... and the hint" "^Try 'emb-validate --help' for more information.$" "$T/err"
t_lines "... and nothing else" 2 "$T/err"
emb-validate --atol nope "$T/golden.jsonl" "$T/same.jsonl" > "$T/out" 2> "$T/err"
t_eq "bad --atol: exit 2" "$?" 2
emb-validate --field embeddings "$T/golden.jsonl" "$T/same.jsonl" > "$T/out" 2> "$T/err"
t_eq "unknown --field: exit 2" "$?" 2
t_grep "names the field" "unknown field 'embeddings'" "$T/err"
emb-validate --frobnicate "$T/golden.jsonl" > "$T/out" 2> "$T/err"
t_eq "unknown option: exit 2" "$?" 2
emb-validate "$T/nonexistent.jsonl" "$T/same.jsonl" > "$T/out" 2> "$T/err"
t_eq "unreadable golden: exit 5 (an input file)" "$?" 5
t_grep "names the file" 'nonexistent.jsonl' "$T/err"
emb-validate "$T/golden.jsonl" "$T/nonexistent.jsonl" > "$T/out" 2> "$T/err"
t_eq "unreadable input: exit 5" "$?" 5
emb-validate "$T" "$T/same.jsonl" > "$T/out" 2> "$T/err"
t_eq "a directory as golden: exit 5" "$?" 5
t_grep "directory said" 'not a regular file (a directory)' "$T/err"
printf '{"id":1,"input_ids":[1]}\n{"input_ids":[1]}\n' > "$T/noid-golden.jsonl"
emb-validate "$T/noid-golden.jsonl" "$T/noid-golden.jsonl" > "$T/out" 2>&1
t_eq "a record without id while joining by id: exit 1" "$?" 1
t_grep "where it is" 'noid-golden.jsonl:2): record has no id' "$T/out"
emb-validate --help > "$T/out" 2>&1
t_eq "--help: exit 0" "$?" 0
t_grep "--help on stdout" '^usage: emb-validate' "$T/out"
t_eq "--version" "$(emb-validate --version)" "emb-validate 0.1.0"
if [ -w /dev/full ]; then
	emb-validate "$T/golden.jsonl" "$T/same.jsonl" > /dev/full 2> "$T/err"
	t_eq "/dev/full: exit 4" "$?" 4
	t_grep "write error message" '^emb-validate: error: write error: No space left on device$' "$T/err"
fi
# empty golden and input: nothing was compared, which is a failure
: > "$T/empty.jsonl"
emb-validate "$T/empty.jsonl" < /dev/null > "$T/out" 2>&1
t_eq "empty golden and input: exit 1" "$?" 1
t_grep "empty: says nothing was compared" '^records: 0 golden, 0 input, 0 joined: FAIL (no field compared)$' "$T/out"
emb-validate "$T/golden.jsonl" "$T/empty.jsonl" > "$T/out" 2>&1
t_eq "empty input against a golden: exit 1" "$?" 1
t_grep "empty input: the golden records are missing" 'missing in input' "$T/out"

# --golden-only: input records the golden lacks are counted, not failed
cp "$T/same.jsonl" "$T/more.jsonl"
printf '{"id":4,"input_ids":[101,102],"embedding":[1,1]}\n{"id":5,"input_ids":[101,102],"embedding":[1,1]}\n' >> "$T/more.jsonl"
emb-validate "$T/golden.jsonl" "$T/more.jsonl" > "$T/out" 2>&1
t_eq "more input than golden: exit 1" "$?" 1
t_grep "... 2 missing in golden" "2 missing in golden" "$T/out"
emb-validate --golden-only "$T/golden.jsonl" "$T/more.jsonl" > "$T/out" 2>&1
t_eq "--golden-only: exit 0" "$?" 0
t_grep "--golden-only: the rest counted" "^records: 2 input records not in the golden, not compared (--golden-only)$" "$T/out"
t_grep "--golden-only: the golden's records compared" '^embedding: 3 records, ' "$T/out"
head -n 2 "$T/same.jsonl" > "$T/fewer.jsonl"
emb-validate --golden-only "$T/golden.jsonl" "$T/fewer.jsonl" > "$T/out" 2>&1
t_eq "--golden-only: a golden record missing in the input still fails" "$?" 1
sed 's/"embedding":\[1,0\]/"embedding":[1,0.5]/' "$T/more.jsonl" > "$T/more-bad.jsonl"
emb-validate --golden-only "$T/golden.jsonl" "$T/more-bad.jsonl" > "$T/out" 2>&1
t_eq "--golden-only: a mismatch still fails" "$?" 1

# --errors=skip: error records (a stage's --errors=emit) left out
sed 's/^{"id":2,.*/{"id":2,"error":"field '"'"'text'"'"' is not a string"}/' "$T/same.jsonl" > "$T/err-rec.jsonl"
emb-validate "$T/golden.jsonl" "$T/err-rec.jsonl" > "$T/out" 2>&1
t_eq "an error record: exit 1" "$?" 1
t_grep "... counted as an error record" "1 error records" "$T/out"
emb-validate --errors=skip "$T/golden.jsonl" "$T/err-rec.jsonl" > "$T/out" 2>&1
t_eq "--errors=skip: exit 0" "$?" 0
t_grep "--errors=skip: counted" "^records: 1 error records skipped (--errors=skip)$" "$T/out"
emb-validate --errors=emit "$T/golden.jsonl" "$T/err-rec.jsonl" > /dev/null 2>&1
t_eq "--errors=emit: the default, exit 1" "$?" 1

# --strict: stop at the first failure
i=0; : > "$T/big-g.jsonl"; : > "$T/big-i.jsonl"
while [ $i -lt 50 ]; do
	printf '{"id":%d,"embedding":[%d,1]}\n' $i $i >> "$T/big-g.jsonl"
	if [ $i = 3 ] || [ $i = 40 ]; then v=0.5; else v=1; fi
	printf '{"id":%d,"embedding":[%d,%s]}\n' $i $i $v >> "$T/big-i.jsonl"
	i=$((i + 1))
done
emb-validate "$T/big-g.jsonl" "$T/big-i.jsonl" > "$T/out" 2>&1
t_grep "without --strict: both failures" "2 records out of tolerance" "$T/out"
emb-validate --strict "$T/big-g.jsonl" "$T/big-i.jsonl" > "$T/out" 2>&1
t_eq "--strict: exit 1" "$?" 1
t_grep "--strict: stopped at the first" "stopped at the first failure: --strict" "$T/out"
t_grep "--strict: one failure seen" "1 records out of tolerance" "$T/out"
t_nogrep "--strict: id 40 not reached" "id 40" "$T/out"

# --progress=always: records read on stderr, stdout as without it
emb-validate --progress=always "$T/big-g.jsonl" "$T/big-g.jsonl" > "$T/out" 2> "$T/err"
t_eq "--progress=always: exit 0" "$?" 0
t_grep "--progress=always: records read" "^emb-validate: 50 golden, 50 input records read$" "$T/err"
emb-validate "$T/big-g.jsonl" "$T/big-g.jsonl" > "$T/out2" 2> "$T/err2"
t_ok "--progress=always: stdout unchanged" cmp -s "$T/out" "$T/out2"
t_eq "no progress by default off a terminal" "$(cat "$T/err2")" ""

# --input-only: an input of some of the golden's records
head -n 1 "$T/same.jsonl" > "$T/one.jsonl"
emb-validate --input-only "$T/golden.jsonl" "$T/one.jsonl" > "$T/out" 2>&1; s=$?
t_eq "--input-only: a subset of the golden passes" "$s" 0
t_grep "--input-only: the golden records left out are counted" '^records: [0-9]* golden records not in the input, not compared (--input-only)' "$T/out"
emb-validate "$T/golden.jsonl" "$T/one.jsonl" > /dev/null 2>&1; s=$?
t_eq "without --input-only: the same subset fails" "$s" 1
printf '{"id":99,"input_ids":[1]}\n' | cat "$T/one.jsonl" - > "$T/extra.jsonl"
emb-validate --input-only "$T/golden.jsonl" "$T/extra.jsonl" > /dev/null 2>&1; s=$?
t_eq "--input-only: an input record missing from the golden still fails" "$s" 1
