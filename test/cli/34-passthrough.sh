# 34-passthrough.sh - fields a tool does not own pass through byte for
# byte, through the whole pipeline; owned fields are replaced, not doubled
T=$(t_tmpdir 34-passthrough)
F=$(t_fixture minilm-l6)

{
	printf '{"id": {"k": [1, 2.50, "\\u00e9\\n"], "z": null},"text":"Hello there","meta" :  "caf\303\251 \\ud83d\\ude00",  "n":1.0E+2, "t":true}\n'
	printf '{"id":"\\u0069d-2","text":"second","input_ids":[1,2,3],"embedding":[9],"tokens":["x"]}\n'
	printf '{"text":"no id","x":[[],{}]}\n'
} > "$T/in.jsonl"

emb-tokenize -m "$F" "$T/in.jsonl" > "$T/tok" 2> "$T/err"; s=$?
t_eq "emb-tokenize: exit 0" "$s$(cat "$T/err")" 0
t_eq "emb-tokenize: members kept byte for byte" "$(sed -n 1p "$T/tok")" \
	'{"id": {"k": [1, 2.50, "\u00e9\n"], "z": null},"text":"Hello there","meta" :  "café \ud83d\ude00","n":1.0E+2,"t":true,"input_ids":[101,7592,2045,102],"token_type_ids":[0,0,0,0]}'
t_eq "emb-tokenize: stale input_ids/tokens replaced, others kept" "$(sed -n 2p "$T/tok")" \
	'{"id":"\u0069d-2","text":"second","embedding":[9],"input_ids":[101,2117,102],"token_type_ids":[0,0,0]}'

emb-encode -m "$F" -j 2 "$T/tok" > "$T/enc" 2> "$T/err"; s=$?
t_eq "emb-encode: exit 0" "$s$(cat "$T/err")" 0
emb-pool -m "$F" "$T/enc" > "$T/pool" 2> "$T/err"; s=$?
t_eq "emb-pool: exit 0" "$s$(cat "$T/err")" 0
t_lines "three records out" 3 "$T/pool"
# everything before the vectors is exactly what emb-tokenize wrote
sed 's/,"embedding":\[[^]]*\]}$//' "$T/pool" > "$T/got"
sed 's/}$//; s/,"embedding":\[9\]//' "$T/tok" > "$T/want"
t_ok "pipeline: ids and unknown fields untouched" cmp -s "$T/want" "$T/got"
t_nogrep "emb-pool drops token_embeddings" "token_embeddings" "$T/pool"
t_eq "stale embedding replaced, not doubled" \
	"$(sed -n 2p "$T/pool" | grep -o '"embedding"' | wc -l | tr -d ' ')" 1
t_grep "no id stays without id" '^{"text":"no id","x":\[\[\],{}\],"input_ids"' "$T/pool"

# --raw: the line becomes the text, its line number the id, nothing else
# is added
printf 'plain "quoted" \\ text\n' | emb-tokenize -m "$F" --raw > "$T/raw"
t_eq "--raw: text field escaped" "$(cut -c1-43 "$T/raw")" '{"id":1,"text":"plain \"quoted\" \\ text","'
printf 'bad \377\n' | emb-tokenize -m "$F" --raw > /dev/null 2> "$T/err"
t_grep "--raw: invalid UTF-8 named" "(at <stdin>:1): invalid UTF-8 at column 5" "$T/err"
