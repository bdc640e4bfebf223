# 52-manifest.sh - emb-validate --manifest: the runner on small manifests
T=$(t_tmpdir 52-manifest)
M="$D/models/sentence-transformers--all-MiniLM-L6-v2"
TOK="$D/tokenize/sentence-transformers--all-MiniLM-L6-v2"

cat > "$T/tok.jsonl" <<'EOF'
{"id":1,"token_embeddings":[[1,2],[3,4]]}
{"id":2,"token_embeddings":[[0.5,-1],[1.5,3],[1,1]]}
EOF
cat > "$T/mean.jsonl" <<'EOF'
{"id":1,"embedding":[2,3]}
{"id":2,"embedding":[1,1]}
EOF
sed 's/\[1,1\]/[1,1.5]/' "$T/mean.jsonl" > "$T/wrong.jsonl"

cat > "$T/ok.yaml" <<EOF
cases:
  - name: pool-mean
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-pool --mode mean
    fields: [embedding]
  - name: pool-b64
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-pool
    args: ["--mode", "mean", "--b64"]
    tolerance: {embedding: 0}
  - name: pool-words
    description: args as one string, one tolerance for every field
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-pool
    args: --mode mean
    tolerance: 0
  - name: pool-loose
    input: tok.jsonl
    golden: wrong.jsonl
    command: emb-pool --mode mean
    tolerance: 0.5
  - name: tokenize-pipeline
    model: $M
    input: $TOK/trunc16.jsonl
    input_fields: [id, text]
    golden: $TOK/trunc16.jsonl
    limit: 20
    command: emb-tokenize | emb-tokenize --tokens
    args: ["--max-length", "16"]
    fields: [input_ids, token_type_ids, tokens]
  - name: same-as-before
    model: $M
    input: $TOK/trunc16.jsonl
    input_fields: [id, text]
    golden_case: tokenize-pipeline
    limit: 20
    command: emb-tokenize --tokens --max-length 16
    fields: [input_ids, tokens]
EOF
emb-validate --manifest "$T/ok.yaml" > "$T/out" 2> "$T/err"
t_eq "passing manifest: exit 0" "$?" 0
t_grep "a line per case" '^pool-mean: ok (' "$T/out"
t_grep "a line per field" '^pool-mean: embedding: 2 records, max abs diff 0 (id 1), min cos 1 (id 1): ok$' "$T/out"
t_grep "args appended (b64 read back)" '^pool-b64: embedding: 2 records, max abs diff 0' "$T/out"
t_grep "pipeline with args on each stage" '^tokenize-pipeline: input_ids: 20 records, 0 mismatches: ok$' "$T/out"
t_grep "tokens compared" '^tokenize-pipeline: tokens: 20 records, 0 mismatches: ok$' "$T/out"
t_grep "golden_case compares with an earlier output" '^same-as-before: input_ids: 20 records, 0 mismatches: ok$' "$T/out"
t_grep "args as a string" '^pool-words: embedding: 2 records, max abs diff 0' "$T/out"
t_grep "one tolerance for all fields" '^pool-loose: embedding: 2 records, max abs diff 0.5 (id 2), .*: ok$' "$T/out"
t_grep "last line counts" "ok.yaml: 6 cases, 0 failed\$" "$T/out"

# --case runs one case (and what it depends on)
emb-validate --manifest "$T/ok.yaml" --case same-as-before > "$T/out" 2>&1
t_eq "--case: exit 0" "$?" 0
t_grep "--case pulls in its golden_case" '^tokenize-pipeline: ok' "$T/out"
t_nogrep "--case skips the others" '^pool-mean' "$T/out"
t_grep "--case count" ': 2 cases, 0 failed$' "$T/out"
emb-validate --manifest "$T/ok.yaml" --case nosuch > "$T/out" 2> "$T/err"
t_eq "--case unknown: exit 3" "$?" 3
t_grep "--case unknown named" "no case named 'nosuch'" "$T/err"

# --keep keeps outputs
emb-validate --manifest "$T/ok.yaml" --case pool-mean --keep "$T/kept" > "$T/out" 2>&1
t_eq "--keep: exit 0" "$?" 0
t_lines "--keep: the output is there" 2 "$T/kept/pool-mean.jsonl"

# failing cases: exit 1, the others still run and pass
cat > "$T/fail.yaml" <<EOF
cases:
  - name: wrong-golden
    input: tok.jsonl
    golden: wrong.jsonl
    command: emb-pool --mode mean
  - name: right
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-pool --mode mean
  - name: no-such-command
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-nonexistent-tool
  - name: command-fails
    input: mean.jsonl
    golden: mean.jsonl
    command: emb-pool --mode mean
  - name: depends-on-failed
    input: tok.jsonl
    golden_case: wrong-golden
    command: emb-pool --mode mean
EOF
# (--trusted: emb-nonexistent-tool is no program of the allow-list, which
# would refuse the whole manifest at load; here it is to fail when run)
emb-validate --trusted --manifest "$T/fail.yaml" > "$T/out" 2> "$T/err"
t_eq "failing manifest: exit 1" "$?" 1
t_grep "the failing field and id" '^wrong-golden: embedding: 2 records, max abs diff 0.5 (id 2), .*FAIL' "$T/out"
t_grep "the failing case" '^wrong-golden: FAIL (output differs from the golden' "$T/out"
t_grep "other cases still pass" '^right: ok (' "$T/out"
t_grep "command not found" '^no-such-command: FAIL (emb-nonexistent-tool: command not found' "$T/out"
t_grep "a command's exit status" '^command-fails: FAIL (emb-pool exited 1, expected 0' "$T/out"
t_grep "its stderr is shown" "^command-fails:   | emb-pool: error (at .*mean.jsonl:1): missing field 'token_embeddings'" "$T/out"
t_grep "no comparison with a failed case" "^depends-on-failed: FAIL (case 'wrong-golden' failed" "$T/out"
t_grep "summary" 'fail.yaml: 5 cases, 4 failed$' "$T/out"
# --strict: stop after the first failing case; --progress=always: the
# case being run on stderr
emb-validate --trusted --strict --progress=always --manifest "$T/fail.yaml" > "$T/out" 2> "$T/err"
t_eq "--strict manifest: exit 1" "$?" 1
t_grep "--strict: says it stopped" "fail.yaml: stopped after the first failing case (--strict)" "$T/out"
t_grep "--strict: one case run, one failed" 'fail.yaml: 1 cases, 1 failed$' "$T/out"
t_nogrep "--strict: the next case not run" '^right: ' "$T/out"
t_grep "--progress=always: the case on stderr" "^emb-validate: case 1 of 5: wrong-golden$" "$T/err"

# expect_exit: a command expected to report bad records
printf '{"id":1,"token_embeddings":[[1,2],[3,4]]}\n{"id":2}\n' > "$T/half.jsonl"
printf '{"id":1,"embedding":[2,3]}\n' > "$T/half-golden.jsonl"
cat > "$T/expect.yaml" <<EOF
cases:
  - name: skips-bad-record
    input: half.jsonl
    golden: half-golden.jsonl
    command: emb-pool --mode mean
    expect_exit: 1
EOF
emb-validate --manifest "$T/expect.yaml" > "$T/out" 2>&1
t_eq "expect_exit 1 met: exit 0" "$?" 0

# a command that hangs is killed after its timeout
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec sleep 30\n' > "$T/bin/emb-sleepy"
chmod +x "$T/bin/emb-sleepy"
cat > "$T/timeout.yaml" <<EOF
cases:
  - name: sleepy
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-sleepy
    timeout: 0.5
EOF
PATH="$T/bin:$PATH" emb-validate --manifest "$T/timeout.yaml" > "$T/out" 2>&1
t_eq "an emb-* program not on the allow-list: exit 3" "$?" 3
t_grep "an emb-* program not on the allow-list: named" "timeout.yaml:5: case 'sleepy': key 'command': 'emb-sleepy' is not a program a manifest may run" "$T/out"
PATH="$T/bin:$PATH" emb-validate --trusted --manifest "$T/timeout.yaml" > "$T/out" 2>&1
t_eq "timeout: exit 1" "$?" 1
t_grep "timeout said" '^sleepy: FAIL (timed out after 0.5 s' "$T/out"

# no shell: metacharacters are refused before anything runs
cat > "$T/shell.yaml" <<EOF
cases:
  - name: sneaky
    input: tok.jsonl
    golden: mean.jsonl
    command: emb-pool; touch $T/pwned
EOF
emb-validate --manifest "$T/shell.yaml" > "$T/out" 2> "$T/err"
t_eq "shell metacharacters: exit 3" "$?" 3
t_grep "names line and key" "shell.yaml:5: case 'sneaky': key 'command': ';' is not allowed" "$T/err"
t_ok "nothing was run" test ! -e "$T/pwned"

# malformed manifests: exit 3, message naming the line and the key
bad() {     # bad NAME WANT-REGEX: the manifest on stdin
	cat > "$T/$1.yaml"
	emb-validate --manifest "$T/$1.yaml" > "$T/out" 2> "$T/err"
	t_eq "malformed ($1): exit 3" "$?" 3
	t_grep "malformed ($1): message" "$2" "$T/err"
	t_lines "malformed ($1): nothing ran" 0 "$T/out"
}
printf 'cases:\n  - name: a\n    input: [unclosed\n' | bad yaml '^emb-validate: error: .*yaml.yaml:[0-9]*: invalid YAML'
printf 'case:\n  - name: a\n' | bad topkey "topkey.yaml:1: key 'case': unknown key (expected 'cases')"
printf 'cases: []\n' | bad nocases "nocases.yaml:1: key 'cases': expected a non-empty list"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n    tolerence: {embedding: 1e-5}\n' \
	| bad typo "typo.yaml:6: case 'a': key 'tolerence': unknown key"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n    tolerance: {embedding: tight}\n' \
	| bad tolnum "tolnum.yaml:6: case 'a': key 'tolerance': expected a number >= 0, got 'tight'"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n    tolerance: {embeddings: 1}\n' \
	| bad tolfield "tolfield.yaml:6: case 'a': key 'tolerance': unknown field 'embeddings'"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n    args: {x: 1}\n' \
	| bad args "args.yaml:6: case 'a': key 'args': expected a list"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n' \
	| bad nocmd "nocmd.yaml:2: case 'a': key 'command': missing"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: ls -l\n' \
	| bad notemb "notemb.yaml:5: case 'a': key 'command': 'ls' is not an emb-\\* command"
printf 'cases:\n  - name: a\n    input: nosuch.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n' \
	| bad noinput "noinput.yaml:3: case 'a': key 'input': .*nosuch.jsonl: No such file or directory"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n' \
	| bad dup "dup.yaml:6: case 'a': key 'name': duplicate case name (also on line 2)"
printf 'cases:\n  - name: ../a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n' \
	| bad name "name.yaml:2: case '../a': key 'name': use only letters"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden_case: b\n    command: emb-pool\n' \
	| bad gcase "gcase.yaml:4: case 'a': key 'golden_case': 'b' is not the name of an earlier case"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    synth: mean.jsonl\n    command: emb-pool\n' \
	| bad synthmodel "synthmodel.yaml:5: case 'a': key 'synth': needs 'model'"
printf 'cases:\n  - name: a\n    input: tok.jsonl\n    golden: mean.jsonl\n    command: emb-pool\n    limit: -3\n' \
	| bad limit "limit.yaml:6: case 'a': key 'limit': expected a positive integer"
emb-validate --manifest "$T/nonexistent.yaml" > "$T/out" 2> "$T/err"
t_eq "missing manifest: exit 3" "$?" 3
emb-validate --manifest "$T/ok.yaml" --atol 1 > "$T/out" 2> "$T/err"
t_eq "--atol with --manifest: exit 2" "$?" 2

# synth: built inside the run directory (here --keep), once, again only
# when the recipe changes; never where the manifest's model: points
K="$T/keep"
cat > "$T/synth.yaml" <<EOF
cases:
  - name: bert-tiny
    model: fx/bert-tiny
    synth: $D/fixtures/bert-tiny-cls-bf16/recipe.json
    synth_root: $D
    input: $D/corpus/texts.jsonl
    golden: $D/fixtures/bert-tiny-cls-bf16/golden.jsonl
    limit: 8
    command: emb-encode -j 2 --pool
    fields: [input_ids, embedding]
EOF
emb-validate --manifest "$T/synth.yaml" --keep "$K" > "$T/out" 2>&1
t_eq "synth case: exit 0" "$?" 0
t_grep "synth case compared" '^bert-tiny: embedding: 8 records' "$T/out"
t_ok "the recipe is recorded" cmp -s "$K/models/fx/bert-tiny/.done" "$D/fixtures/bert-tiny-cls-bf16/recipe.json"
t_ok "nothing written where model: points" test ! -e "$T/fx"
: > "$K/models/fx/bert-tiny/marker"
emb-validate --manifest "$T/synth.yaml" --keep "$K" > "$T/out" 2>&1
t_eq "synth case again: exit 0" "$?" 0
t_ok "an up-to-date model is not rebuilt" test -e "$K/models/fx/bert-tiny/marker"
echo stale > "$K/models/fx/bert-tiny/.done"
emb-validate --manifest "$T/synth.yaml" --keep "$K" > "$T/out" 2>&1
t_eq "synth case, stale: exit 0" "$?" 0
t_ok "a stale model is rebuilt" test ! -e "$K/models/fx/bert-tiny/marker"
t_ok "and recorded again" cmp -s "$K/models/fx/bert-tiny/.done" "$D/fixtures/bert-tiny-cls-bf16/recipe.json"
mkdir -p "$K/models/fx/mine" && : > "$K/models/fx/mine/precious"
sed 's|fx/bert-tiny|fx/mine|' "$T/synth.yaml" > "$T/synth2.yaml"
emb-validate --manifest "$T/synth2.yaml" --keep "$K" > "$T/out" 2>&1
t_eq "synth into a foreign directory: exit 1" "$?" 1
t_grep "refused" "refusing to write into it" "$T/out"
t_ok "foreign files untouched" test -e "$K/models/fx/mine/precious"
emb-validate --manifest "$T/synth.yaml" > "$T/out" 2>&1
t_eq "synth case in a temporary directory: exit 0" "$?" 0
t_ok "nothing written where model: points (temporary run)" test ! -e "$T/fx"

# input_only: the command's output holds some of the golden's records
head -n 1 "$T/tok.jsonl" > "$T/tok1.jsonl"
for v in true false; do
	cat > "$T/io-$v.yaml" <<EOF2
cases:
  - name: some
    input: tok1.jsonl
    golden: mean.jsonl
    command: emb-pool --mode mean
    input_only: $v
EOF2
done
emb-validate --manifest "$T/io-true.yaml" > "$T/out" 2>&1; s=$?
t_eq "input_only: true: a run over some of the golden's records passes" "$s" 0
t_grep "input_only: true: the records left out counted" 'not in the input, not compared' "$T/out"
emb-validate --manifest "$T/io-false.yaml" > /dev/null 2>&1; s=$?
t_eq "input_only: false: the same case fails" "$s" 1
sed 's/input_only: true/input_only: maybe/' "$T/io-true.yaml" > "$T/io-bad.yaml"
emb-validate --manifest "$T/io-bad.yaml" > /dev/null 2> "$T/err"; s=$?
t_eq "input_only: maybe: a manifest error (exit 3)" "$s" 3
t_grep "input_only: maybe: named" "key 'input_only': expected true or false" "$T/err"
