# 69-static-retrieval.sh - the static model's first stage of README.md
# ("Static embedding models"), run as the README shows it: the corpus
# through a static model into an index, a shortlist of 100 per query,
# a cross-encoder rerank down to 10 ids (two queries); and, on the 256
# passages as queries, the shortlist's recall of
# all-MiniLM-L6-v2's own top 10 (sentence-transformers' vectors, the
# goldens of test/data/real), held to the figure README.md gives.
T=$(t_tmpdir 69-static-retrieval)
S=$D/static/m2v-minilm-l6
CE=$(t_fixture ce-minilm-l6)
G=$D/real/all-MiniLM-L6-v2

# documents: the 532 corpus texts; the recipe's queries: two questions
cp "$D/corpus/texts.jsonl" "$T/docs.jsonl"
printf '%s\n' '{"qid":"q1","text":"who may redistribute the work"}' \
	'{"qid":"q2","text":"a cat sat on the mat"}' > "$T/queries.jsonl"

# the recipe, as README.md shows it (between its marker and the end of
# the code block), with the fixtures' models
sed -n '/^<!-- recipe: static-retrieval -->$/,/^```$/p' "$EMB_TOP/README.md" |
	sed '1,2d; $d' > "$T/recipe.sh"
t_grep "README.md has the static recipe" 'emb-search --index static.idx -k 100' "$T/recipe.sh"
grep -v '^S=\|^CE=' "$T/recipe.sh" > "$T/run.sh"
(cd "$T" && S="$S" CE="$CE" sh -e ./run.sh) > "$T/out" 2> "$T/err"; s=$?
t_eq "the recipe: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "the recipe: a shortlist per query" 2 "$T/shortlist.jsonl"
t_lines "the recipe: the best per query" 2 "$T/best.jsonl"

# the recall: the 256 passages as queries, step 2 of the recipe on its
# index, against the transformer alone
sed 's/^{"id": /{"qid": /' "$D/corpus/passages.jsonl" > "$T/passages.jsonl"
emb-encode -m "$S" --pool "$T/passages.jsonl" |
	emb-search --index "$T/static.idx" -k 100 --fields qid,results > "$T/short256.jsonl"
t_lines "a shortlist per passage" 256 "$T/short256.jsonl"
# the transformer alone: all-MiniLM-L6-v2's top 10 from its vectors
emb-search --build "$T/mini.idx" < "$G/golden.jsonl"
sed 's/^{"id": /{"qid": /' "$G/golden.passages.jsonl" |
	emb-search --index "$T/mini.idx" -k 10 --fields qid,results > "$T/mini.jsonl"
python3 - "$T" "$EMB_TOP/README.md" > "$T/check.out" 2>&1 <<'PY'
import json, re, sys
T, readme = sys.argv[1], sys.argv[2]
def say(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
ids = lambda r: [x["id"] for x in r["results"]]
rshort = {r["qid"]: ids(r) for r in map(json.loads, open(T + "/shortlist.jsonl"))}
best = {r["qid"]: ids(r) for r in map(json.loads, open(T + "/best.jsonl"))}
say(all(len(v) == 100 for v in rshort.values()), "the recipe: 100 candidates per query")
say(all(len(best[q]) == 10 and set(best[q]) <= set(rshort[q]) for q in rshort),
    "the recipe: the rerank keeps 10 of each query's candidates")
short = {r["qid"]: ids(r) for r in map(json.loads, open(T + "/short256.jsonl"))}
mini = {r["qid"]: ids(r) for r in map(json.loads, open(T + "/mini.jsonl"))}
rec = sum(len(set(mini[q]) & set(short[q])) for q in short) / (10.0 * len(short))
alone = sum(len(set(mini[q]) & set(short[q][:10])) for q in short) / (10.0 * len(short))
print("# recall@10 of the shortlist %.3f, of the static top 10 alone %.3f (%d queries)" %
      (rec, alone, len(short)))
m = re.search(r"shortlist\s+\(100\s+of\s+the\s+532\s+documents\)\s+holds\s+([0-9.]+)%\s+of\s+"
              r"all-MiniLM-L6-v2's\s+own\s+top\s+10", open(readme).read())
say(m is not None, "README.md gives the shortlist's recall")
if m and len(short) == 256:
    say(abs(100 * rec - float(m.group(1))) < 0.05,
        "the shortlist's recall is README.md's %s%% (measured %.1f%%)" % (m.group(1), 100 * rec))
PY
cat "$T/check.out"
