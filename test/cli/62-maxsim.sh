# 62-maxsim.sh - emb-rerank --maxsim: late interaction over
# token_embeddings records (the brute-force reference is in
# test/unit/test_heads.c): a document equal to a query scores its token
# count, --skip-special and --skip-prefix drop query rows, b64 input,
# errors
T=$(t_tmpdir 62-maxsim)
F=$(t_fixture minilm-l6)

printf '{"id":"q1","text":"license terms"}\n{"id":"q2","text":"hello world again"}\n' > "$T/q.jsonl"
emb-encode -m "$F" -j 2 "$T/q.jsonl" > "$T/q.te"
sed -n 100,111p "$D/corpus/texts.jsonl" | emb-encode -m "$F" -j 2 > "$T/d.te"
emb-rerank --maxsim --query "$T/q.te" "$T/d.te" > "$T/out" 2> "$T/err"; s=$?
t_eq "exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "one record per document" 12 "$T/out"
t_grep "scores: one per query" '"scores":\[[0-9.e-]*,[0-9.e-]*\]}$' "$T/out"
# every score is at most the number of query tokens (4 and 5)
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/out" | awk -F, '{if (!($1 > 0 && $1 <= 4.0001 && $2 > 0 && $2 <= 5.0001)) bad = 1} END {exit bad}'
t_eq "scores within (0, query tokens]" "$?" 0
# the queries themselves as documents: query i scores its token count
emb-rerank --maxsim --query "$T/q.te" "$T/q.te" > "$T/self"
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/self" | awk -F, 'NR == 1 {if ($1 < 3.9999 || $1 > 4.0001) bad = 1} NR == 2 {if ($2 < 4.9999 || $2 > 5.0001) bad = 1} END {exit bad}'
t_eq "a document equal to the query scores its token count" "$?" 0
# --skip-special: [CLS] and [SEP] leave both sides
emb-rerank --maxsim --skip-special -m "$F" --query "$T/q.te" "$T/q.te" > "$T/self-sp"
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/self-sp" | awk -F, 'NR == 1 {if ($1 < 1.9999 || $1 > 2.0001) bad = 1} NR == 2 {if ($2 < 2.9999 || $2 > 3.0001) bad = 1} END {exit bad}'
t_eq "--skip-special: 2 and 3 query tokens left" "$?" 0
emb-rerank --maxsim --skip-prefix=1 --query "$T/q.te" "$T/q.te" > "$T/self-p"
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/self-p" | awk -F, 'NR == 1 {if ($1 < 2.9999 || $1 > 3.0001) bad = 1} END {exit bad}'
t_eq "--skip-prefix=1: one query token fewer" "$?" 0
# prompt_length as the default prefix
sed 's/^{/{"prompt_length":2,/' "$T/q.te" > "$T/qp.te"
emb-rerank --maxsim --skip-prefix --query "$T/qp.te" "$T/q.te" > "$T/self-pl"
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/self-pl" | awk -F, 'NR == 1 {if ($1 < 1.9999 || $1 > 2.0001) bad = 1} END {exit bad}'
t_eq "--skip-prefix: each query's prompt_length" "$?" 0
# b64 documents: same scores
sed -n 100,111p "$D/corpus/texts.jsonl" | emb-encode -m "$F" -j 2 --b64 > "$T/d.b64"
emb-rerank --maxsim --query "$T/q.te" "$T/d.b64" | sed 's/.*"scores"//' > "$T/out-b64"
sed 's/.*"scores"//' "$T/out" > "$T/out-json"
t_ok "token_embeddings_b64 documents: same scores" cmp -s "$T/out-json" "$T/out-b64"

# errors
printf '{"id":1,"token_embeddings":[[1,2],[3,4]]}\n{"id":2}\n' > "$T/bad.te"
emb-rerank --maxsim --query "$T/q.te" "$T/bad.te" > "$T/bad.out" 2> "$T/err"; s=$?
t_eq "bad documents: exit 1" "$s" 1
t_grep "dimension mismatch named" "bad.te:1.*columns" "$T/err"
t_grep "missing field named" "bad.te:2.*token_embeddings" "$T/err"
emb-rerank --maxsim < /dev/null > /dev/null 2>&1; s=$?
t_eq "--maxsim without --query: exit 2" "$s" 2
emb-rerank --maxsim --query "$T/q.te" --skip-special < /dev/null > /dev/null 2>&1; s=$?
t_eq "--skip-special without -m: exit 2" "$s" 2
emb-rerank --maxsim --query "$T/nonexistent" < /dev/null > /dev/null 2>&1; s=$?
t_eq "unreadable --query file: exit 5 (an input file)" "$s" 5
