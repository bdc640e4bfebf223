# 32-long-lines.sh - a 10 MB line: processed (and passed through byte for
# byte) under the default --max-line; with a lower limit it is one bad
# record ("line too long") and the lines around it are still processed
T=$(t_tmpdir 32-long-lines)
M="$D/models/sentence-transformers--all-MiniLM-L6-v2"

big=10485760
{
	printf '{"id":1,"text":"before"}\n'
	printf '{"id":2,"pad":"'
	head -c $big /dev/zero | tr '\0' 'x'
	printf '","text":"big line"}\n'
	printf '{"id":3,"text":"after"}\n'
} > "$T/in.jsonl"
t_eq "input line 2 is over 10 MB" "$(sed -n 2p "$T/in.jsonl" | wc -c | tr -d ' ')" \
	$((big + 36))

emb-tokenize -m "$M" "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "default limit: exit 0" "$s" 0
t_eq "default limit: no diagnostic" "$(cat "$T/err")" ""
t_lines "default limit: three records" 3 "$T/out"
# the output line starts with the input line's members, byte for byte
sed -n 2p "$T/in.jsonl" | head -c $((big + 34)) > "$T/want"
sed -n 2p "$T/out" | head -c $((big + 34)) > "$T/got"
t_ok "10 MB member passed through byte for byte" cmp -s "$T/want" "$T/got"
t_grep "big line tokenized" '"text":"big line","input_ids":\[101,2502,2240,102\]' "$T/out"

emb-tokenize -m "$M" --max-line 1000000 "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--max-line 1000000: exit 1" "$s" 1
t_eq "--max-line 1000000: diagnostic" "$(cat "$T/err")" \
	"emb-tokenize: error (at $T/in.jsonl:2): line too long (more than 1000000 bytes)"
t_lines "--max-line 1000000: the other lines processed" 2 "$T/out"
t_grep "line 3 after the long line" '^{"id":3,"text":"after"' "$T/out"
emb-tokenize -m "$M" --max-line 1M --errors=emit < "$T/in.jsonl" > "$T/out" 2> /dev/null
t_eq "--max-line 1M --errors=emit: error record keeps no id (line unread)" \
	"$(sed -n 2p "$T/out")" '{"error":"line too long (more than 1048576 bytes)"}'
# the limit counts the line without its newline: exactly N bytes is fine
printf '{"text":"a"}\n{"text":"ab"}\n' > "$T/edge.jsonl"
emb-tokenize -m "$M" --max-line 12 "$T/edge.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "line of exactly --max-line bytes accepted, one more rejected" \
	"$s $(wc -l < "$T/out" | tr -d ' ')" "1 1"
t_grep "limit named" "line too long (more than 12 bytes)" "$T/err"

# a long line through emb-pool (many rows), also via stdin
awk 'BEGIN { printf "{\"id\":\"m\",\"token_embeddings\":["
	for (i = 0; i < 40000; i++) printf "%s[1,%d,0.5]", (i ? "," : ""), i % 7
	printf "]}\n" }' > "$T/rows.jsonl"
emb-pool < "$T/rows.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "40000-row matrix: exit 0" "$s" 0
t_eq "40000-row matrix: mean" "$(cat "$T/out")" '{"id":"m","embedding":[1,2.999875,0.5]}'
