# 33-pipes.sh - `| head -1` ends quietly; a write error (/dev/full) exits 4
# with one message; progress goes to stderr only
T=$(t_tmpdir 33-pipes)
M="$D/models/sentence-transformers--all-MiniLM-L6-v2"

awk 'BEGIN { for (i = 0; i < 30000; i++) printf "line number %d of many\n", i }' > "$T/many.txt"
awk '{ printf "{\"id\":%d,\"token_embeddings\":[[%d,1],[2,3]]}\n", NR, NR }' "$T/many.txt" > "$T/many.jsonl"

emb-tokenize -m "$M" --raw "$T/many.txt" 2> "$T/err" | head -1 > "$T/out"; s=$?
t_eq "emb-tokenize | head -1: pipeline status 0" "$s" 0
t_eq "emb-tokenize | head -1: first record" "$(cat "$T/out")" \
	'{"id":1,"text":"line number 0 of many","input_ids":[101,2240,2193,1014,1997,2116,102],"token_type_ids":[0,0,0,0,0,0,0]}'
t_eq "emb-tokenize | head -1: quiet" "$(cat "$T/err")" ""
emb-pool "$T/many.jsonl" 2> "$T/err" | head -1 > "$T/out"; s=$?
t_eq "emb-pool | head -1: status 0, quiet" "$s$(cat "$T/err")" 0
t_eq "emb-pool | head -1: first record" "$(cat "$T/out")" '{"id":1,"embedding":[1.5,2]}'
# still quiet when the caller ignores SIGPIPE (EPIPE path)
(trap '' PIPE; emb-pool "$T/many.jsonl" 2> "$T/err" | head -1 > /dev/null)
t_eq "SIGPIPE ignored: still quiet" "$(cat "$T/err")" ""

if [ -w /dev/full ]; then
	printf '{"text":"a"}\n' | emb-tokenize -m "$M" > /dev/full 2> "$T/err"; s=$?
	t_eq "small output to /dev/full: exit 4" "$s" 4
	t_eq "small output to /dev/full: message" "$(cat "$T/err")" \
		"emb-tokenize: error: write error: No space left on device"
	emb-pool "$T/many.jsonl" > /dev/full 2> "$T/err"; s=$?
	t_eq "large output to /dev/full: exit 4" "$s" 4
	t_eq "large output to /dev/full: one message" "$(cat "$T/err")" \
		"emb-pool: error: write error: No space left on device"
	emb-pool --help > /dev/full 2> "$T/err"; s=$?
	t_eq "--help to /dev/full: exit 4" "$s" 4
else
	t_skip "write-error checks" "/dev/full missing"
fi

# --progress=always: status on stderr even when it is a file, as plain
# lines; stdout unchanged; --no-progress: none
emb-pool --progress=always "$T/many.jsonl" > "$T/out1" 2> "$T/err"; s=$?
emb-pool --no-progress "$T/many.jsonl" > "$T/out2" 2> "$T/err2"
t_eq "--progress=always: exit 0" "$s" 0
t_ok "--progress=always: stdout unchanged" cmp -s "$T/out1" "$T/out2"
t_grep "--progress=always: records and rates" "emb-pool: 30000 records, .* records/s, .* tokens/s" "$T/err"
cr=$(printf '\r'); esc=$(printf '\033')
t_nogrep "--progress=always off a terminal: no carriage return" "$cr" "$T/err"
t_nogrep "--progress=always off a terminal: no escape sequence" "$esc" "$T/err"
t_eq "--no-progress: nothing on stderr" "$(cat "$T/err2")" ""
emb-pool --progress "$T/many.jsonl" > /dev/null 2> "$T/err"
t_eq "--progress, stderr not a terminal: nothing" "$(cat "$T/err")" ""
emb-pool --progress=sometimes < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--progress=sometimes: exit 2" "$s" 2
t_grep "... names the values" "auto, always or never" "$T/err"
emb-pool --progress=always < "$T/many.jsonl" > /dev/null 2> "$T/err"
t_grep "--progress=always on a regular-file stdin" "30000 records" "$T/err"
# the input size is known (a regular file): a percentage and an ETA; the
# first status line comes with the first records, then the final one
t_grep "--progress=always, regular file: ETA" "emb-pool: [0-9]* records, .*%, ETA [0-9]*:[0-9][0-9]:[0-9][0-9]" "$T/err"
cat "$T/many.jsonl" | emb-pool --progress=always > /dev/null 2> "$T/err"
t_grep "--progress=always, pipe: records" "30000 records" "$T/err"
t_nogrep "--progress=always, pipe: no ETA (size unknown)" "ETA" "$T/err"
# on a terminal (util-linux script(1) gives the command a pseudo-terminal):
# by default only a stage whose stdout is not a pipe reports, so a
# pipeline shows one line; --progress makes a middle stage report too
if script -qc true /dev/null > /dev/null 2>&1; then
	script -qc "emb-pool '$T/many.jsonl' > '$T/out3'" /dev/null > "$T/tty" 2>&1
	t_grep "stderr a terminal: progress by default" "emb-pool: 30000 records, " "$T/tty"
	t_ok "stderr a terminal: stdout unchanged" cmp -s "$T/out1" "$T/out3"
	script -qc "emb-pool '$T/many.jsonl' | emb-quantize --vectors binary > '$T/out4'" /dev/null > "$T/tty" 2>&1
	t_grep "pipeline on a terminal: the last stage reports" "emb-quantize: 30000 records, " "$T/tty"
	t_nogrep "pipeline on a terminal: the first stage does not" "emb-pool: " "$T/tty"
	script -qc "emb-pool --progress '$T/many.jsonl' | emb-quantize --vectors binary > /dev/null" /dev/null > "$T/tty" 2>&1
	t_grep "--progress: a middle stage reports when asked" "emb-pool: 30000 records, " "$T/tty"
	script -qc "emb-pool '$T/many.jsonl' | cat > /dev/null" /dev/null > "$T/tty" 2>&1
	t_nogrep "stdout a pipe: no progress by default" "records, " "$T/tty"
else
	echo "# script(1) -qc unavailable: the terminal default is not checked"
fi
printf '{"text":"a"}\n' > "$T/one.jsonl"
emb-tokenize -m "$M" --progress=always "$T/one.jsonl" > /dev/null 2> "$T/err"
t_grep "--progress: tokens/s counted" "emb-tokenize: 1 records, .* records/s, [0-9]* tokens/s" "$T/err"
# a reader that exits without reading: what it left in the pipe never
# drains, and the writer, waiting for room for its next whole line, must
# see the reader gone (SIGPIPE or EPIPE) rather than wait for ever
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "{\"id\":%d,\"text\":\"words and more words, line %d\"}\n", i, i }' > "$T/gone.jsonl"
timeout 60 sh -c "emb-pool '$T/many.jsonl' | sleep 1" 2> /dev/null; s=$?
t_ok "emb-pool | a reader that exits unread: the writer ends (exit $s, not the timeout's 124)" test "$s" -ne 124
timeout 60 sh -c "emb-tokenize -m '$M' '$T/gone.jsonl' | sleep 1" 2> /dev/null; s=$?
t_ok "emb-tokenize | a reader that exits unread: the writer ends (exit $s)" test "$s" -ne 124
