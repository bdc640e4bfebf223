# 30-cli-common.sh - options every filter shares: --help, --version, usage
# errors (exit 2), model errors (exit 3)
T=$(t_tmpdir 30-cli-common)
M="$D/models/sentence-transformers--all-MiniLM-L6-v2"

for p in emb-tokenize emb-encode emb-pool; do
	$p --help > "$T/help" 2> "$T/err"; s=$?
	t_eq "$p --help: exit 0" "$s" 0
	t_grep "$p --help: usage on stdout" "^usage: $p" "$T/help"
	t_eq "$p --help: nothing on stderr" "$(cat "$T/err")" ""
	t_ok "$p -h" $p -h > /dev/null
	t_eq "$p --version" "$($p --version)" "$p 0.1.0"
	$p --bogus < /dev/null > "$T/out" 2> "$T/err"; s=$?
	t_eq "$p --bogus: exit 2" "$s" 2
	t_grep "$p --bogus: named" "^$p: error: unknown option '--bogus'" "$T/err"
	t_grep "$p --bogus: a hint to --help" "^Try '$p --help' for more information.$" "$T/err"
	t_lines "$p --bogus: two lines, not the whole usage" 2 "$T/err"
	t_eq "$p --bogus: nothing on stdout" "$(cat "$T/out")" ""
	t_status "$p -Z: exit 2" 2 $p -Z < /dev/null 2> /dev/null
	t_status "$p --errors=maybe: exit 2" 2 $p -m "$M" --errors=maybe < /dev/null 2> "$T/err"
	t_grep "$p --errors=maybe: message" "skip or emit" "$T/err"
	t_status "$p --max-line x: exit 2" 2 $p -m "$M" --max-line x < /dev/null 2> /dev/null
	t_status "$p --max-line 0: exit 2" 2 $p -m "$M" --max-line 0 < /dev/null 2> /dev/null
	t_status "$p --strict=1: exit 2" 2 $p -m "$M" --strict=1 < /dev/null 2> /dev/null
done
# every program: a usage error is one line naming it, then the hint
for p in emb-tokenize emb-encode emb-pool emb-validate emb-rerank emb-quantize emb-fetch; do
	$p --no-such-option < /dev/null > "$T/out" 2> "$T/err"; s=$?
	t_eq "$p --no-such-option: exit 2" "$s" 2
	t_eq "$p --no-such-option: one line, then Try '$p --help'" "$(cat "$T/err")" \
		"$p: error: unknown option '--no-such-option'
Try '$p --help' for more information."
done
t_status "emb-encode -j 5000: exit 2" 2 emb-encode -m "$M" -j 5000 < /dev/null 2> "$T/err"
t_grep "-j 5000: says the range" "from 1 to 4096, not '5000'" "$T/err"
F=$(t_fixture minilm-l6)
t_status "emb-encode --max-length above the model's limit: exit 2 at start" 2 \
	emb-encode -m "$F" --max-length 1000 < /dev/null 2> "$T/err"
t_grep "... names the limit" "max length 1000 is above the model's limit of 512 tokens" "$T/err"
t_lines "... in one line and the hint" 2 "$T/err"
t_status "emb-encode --max-length at the limit: accepted" 0 \
	emb-encode -m "$F" --max-length 512 < /dev/null
t_status "emb-tokenize --max-length 1000: the same rule (config.json's limit)" 2 \
	emb-tokenize -m "$F" --max-length 1000 < /dev/null 2> /dev/null
# the same rule for every tool that takes --max-length: the
# cross-encoder, windows, late chunking (up to the positions by default)
CE=$(t_fixture ce-minilm-l6)
L=$(t_fixture modernbert-tiny)
while IFS='|' read -r over at c; do
	n=$(echo "$c" | sed 's/ -m [^ ]*//')
	t_status "$n --max-length $over, above the model's limit: exit 2" 2 \
		$c --max-length "$over" < /dev/null 2> "$T/err"
	t_grep "$n --max-length $over: names the limit" "max length $over is above the model's limit of $at tokens" "$T/err"
	t_status "$n --max-length $at (the limit): accepted" 0 \
		$c --max-length "$at" < /dev/null
done <<EOF
513|512|emb-rerank -m $CE
1000|512|emb-tokenize -m $F --chunk 128 --overlap 32
1000|512|emb-encode -m $F --pool --chunk 128
9000|8192|emb-encode -m $L --pool --chunk 128 --late
EOF
mkdir -p "$T/tokonly"
cp "$F/tokenizer.json" "$T/tokonly/"
t_status "emb-tokenize --max-length 1000 on a tokenizer without config.json: no limit to check" 0 \
	emb-tokenize -m "$T/tokonly" --max-length 1000 < /dev/null
t_status "emb-pool --mode: missing argument, exit 2" 2 emb-pool --mode < /dev/null 2> "$T/err"
t_grep "missing argument named" "option '--mode' needs an argument" "$T/err"
t_status "emb-pool --mode bogus: exit 2" 2 emb-pool --mode bogus < /dev/null 2> "$T/err"
t_grep "unknown mode named" "unknown pooling mode 'bogus'" "$T/err"
t_status "emb-pool --dim 0: exit 2" 2 emb-pool --dim 0 < /dev/null 2> /dev/null
t_status "emb-pool --raw is not an emb-pool option: exit 2" 2 emb-pool --raw < /dev/null 2> /dev/null
t_status "emb-tokenize --b64 is not an emb-tokenize option: exit 2" 2 \
	emb-tokenize -m "$M" --b64 < /dev/null 2> /dev/null
t_status "emb-tokenize without -m: exit 2" 2 emb-tokenize < /dev/null 2> "$T/err"
t_grep "without -m: says so" "model is required" "$T/err"
t_status "emb-encode without -m: exit 2" 2 emb-encode < /dev/null 2> /dev/null
t_status "emb-tokenize --max-length -3: exit 2" 2 emb-tokenize -m "$M" --max-length -3 < /dev/null 2> /dev/null
t_status "emb-encode -j x: exit 2" 2 emb-encode -m "$M" -j x < /dev/null 2> /dev/null
t_status "emb-encode --batch-tokens 0: exit 2" 2 emb-encode -m "$M" --batch-tokens 0 < /dev/null 2> /dev/null
t_status "emb-encode --pool=bogus: exit 2" 2 emb-encode -m "$M" --pool=bogus < /dev/null 2> /dev/null
t_status "emb-encode --dim without --pool: exit 2" 2 emb-encode -m "$M" --dim 8 < /dev/null 2> "$T/err"
t_grep "--dim without --pool: says so" "needs --pool" "$T/err"

# model load errors: exit 3, one line naming the problem
t_status "emb-tokenize -m missing dir: exit 3" 3 emb-tokenize -m "$T/nonexistent" < /dev/null 2> "$T/err"
t_grep "missing model: message" "^emb-tokenize: error: " "$T/err"
t_lines "missing model: one line" 1 "$T/err"
mkdir -p "$T/empty"
t_status "emb-tokenize -m dir without tokenizer: exit 3" 3 emb-tokenize -m "$T/empty" < /dev/null 2> /dev/null
t_status "emb-encode -m dir without weights: exit 3" 3 emb-encode -m "$M" < /dev/null 2> "$T/err"
t_grep "no weights: message" "^emb-encode: error: " "$T/err"
t_status "emb-pool -m missing dir: exit 3" 3 emb-pool -m "$T/nonexistent" < /dev/null 2> /dev/null

# options after operands, "--" and "-" operands
printf '{"text":"a"}\n' > "$T/a.jsonl"
emb-tokenize "$T/a.jsonl" -m "$M" > "$T/out"; s=$?
t_eq "options after operands: exit 0" "$s" 0
t_lines "options after operands: one record" 1 "$T/out"
emb-tokenize -m "$M" - < "$T/a.jsonl" > "$T/out"; s=$?
t_eq "'-' is stdin" "$s$(wc -l < "$T/out" | tr -d ' ')" "01"
emb-tokenize -m "$M" -- "$T/a.jsonl" "$T/a.jsonl" > "$T/out"; s=$?
t_eq "'--' then two operands: two records" "$s$(wc -l < "$T/out" | tr -d ' ')" "02"
emb-tokenize --model="$M" "$T/a.jsonl" > "$T/out"; s=$?
t_eq "--model=DIR" "$s" 0
