# 35-fields.sh - --fields LIST / --drop LIST on the filters: only the
# chosen members written, each byte for byte as without the option, in
# the record's order; NAME also selects NAME_b64; bad lists are usage
# errors; an --errors=emit line is written whole
T=$(t_tmpdir 35-fields)
M=$(t_fixture bert-tiny-cls-bf16)

head -n 40 "$D/corpus/texts.jsonl" > "$T/in.jsonl"
emb-encode -m "$M" --pool -j 1 "$T/in.jsonl" > "$T/full" 2> "$T/err"
t_status "emb-encode --pool: the full output" 0 test -s "$T/full"

# embedding is the last member --pool writes: the full record with every
# member before it cut off is what --fields embedding must write
sed 's/^{.*,"embedding":/{"embedding":/' "$T/full" > "$T/want"
emb-encode -m "$M" --pool -j 1 --fields embedding "$T/in.jsonl" > "$T/out"; s=$?
t_eq "emb-encode --fields embedding: exit 0" "$s" 0
t_ok "emb-encode --fields embedding: the same vectors, nothing else" cmp -s "$T/out" "$T/want"

# id is the first member of every input line
sed 's/^{\("id": [0-9]*\),.*,"embedding":/{\1,"embedding":/' "$T/full" > "$T/want"
emb-encode -m "$M" --pool -j 1 --fields embedding,id "$T/in.jsonl" > "$T/out"
t_ok "--fields embedding,id: id then embedding, the record's order" cmp -s "$T/out" "$T/want"
emb-encode -m "$M" --pool -j 1 --drop src,text,input_ids,token_type_ids,truncated "$T/in.jsonl" > "$T/out2"
t_ok "--drop text,...: the same as --fields id,embedding" cmp -s "$T/out2" "$T/want"
full=$(wc -c < "$T/full") small=$(wc -c < "$T/out")
t_ok "--fields id,embedding: smaller output ($small < $full bytes)" test "$small" -lt "$full"
t_lines "--fields: one line per record" 40 "$T/out"

emb-encode -m "$M" --pool -j 1 --b64 --fields id,embedding "$T/in.jsonl" > "$T/out"
t_grep "--b64 --fields embedding keeps embedding_b64" '^{"id": 0,"embedding_b64":"[A-Za-z0-9+/=]*"}$' "$T/out"
emb-encode -m "$M" --pool -j 1 --fields id,text --drop text "$T/in.jsonl" > "$T/out"
t_eq "--fields and --drop together" "$(head -n 1 "$T/out")" '{"id": 0}'

# emb-tokenize and emb-pool share the option
emb-tokenize -m "$M" --fields input_ids "$T/in.jsonl" > "$T/out"
emb-tokenize -m "$M" "$T/in.jsonl" | sed 's/^{.*,"input_ids":\(\[[0-9,]*\]\).*/{"input_ids":\1}/' > "$T/want"
t_ok "emb-tokenize --fields input_ids" cmp -s "$T/out" "$T/want"
printf '{"id":"a","token_embeddings":[[1,-2],[3,4],[2,1]],"x":1}\n' > "$T/a.jsonl"
t_eq "emb-pool --drop x" "$(emb-pool --drop x "$T/a.jsonl")" '{"id":"a","embedding":[2,1]}'
t_eq "emb-pool --fields nothing-there: an empty object per record" \
	"$(emb-pool --fields nothing "$T/a.jsonl")" '{}'

# the diagnostic line of --errors=emit is not filtered
printf '{"id":"bad","text":7}\n{"id":"ok","text":"x"}\n' > "$T/bad.jsonl"
emb-encode -m "$M" --pool --errors=emit --fields embedding "$T/bad.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--errors=emit with --fields: exit 1" "$s" 1
t_grep "--errors=emit line whole" '^{"id":"bad","error":' "$T/out"
t_grep "--fields on the good record" '^{"embedding":\[' "$T/out"

for bad in "" "a,,b" "a," ",a"; do
	emb-encode -m "$M" --fields "$bad" < /dev/null > "$T/out" 2> "$T/err"; s=$?
	t_eq "--fields '$bad': usage error" "$s" 2
	t_grep "--fields '$bad': message" "^emb-encode: error: --fields: empty field name in '$bad'" "$T/err"
done
emb-pool --drop "" < /dev/null > "$T/out" 2> "$T/err"; s=$?
t_eq "emb-pool --drop '': usage error" "$s" 2
