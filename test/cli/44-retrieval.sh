# 44-retrieval.sh - the retrieval flow of README.md ("Two-stage
# retrieval"), run as the README shows it, on long documents: windows ->
# index -> the best documents by their best window -> rerank -> document
# ids, each step checked against a brute-force reference (every window
# scored in Python, the cross-encoder run on the windows' texts as
# plain pairs); window identity and size, token ids included; late
# chunking up to the model's positions on an 8192-position model (a
# document of over 6,000 tokens)
T=$(t_tmpdir 44-retrieval)
M=$(t_fixture minilm-l6)
CE=$(t_fixture ce-minilm-l6)
PY=python3

# six long documents (ids of several JSON kinds): six passages each
$PY - "$D/corpus/passages.jsonl" > "$T/docs.jsonl" <<'PY'
import json, sys
ps = [json.loads(l)["text"] for l in open(sys.argv[1])]
ids = ["a", 1, "b", 2.5, [3], "f"]
for d in range(6):
    print(json.dumps({"id": ids[d], "src": "doc", "text": " ".join(ps[6 * d + 40:6 * d + 46])}))
PY
t_lines "six documents" 6 "$T/docs.jsonl"

# the recipe, as README.md shows it, with the models of the fixtures
awk '$0 == "<!-- recipe: retrieval -->" { on = 1; getline; next }
	on && /^```$/ { exit }
	on { print }' "$EMB_TOP/README.md" > "$T/recipe.sh"
t_grep "README.md has the retrieval recipe" 'emb-search --index windows.idx' "$T/recipe.sh"
t_nogrep "the recipe needs no jq" 'jq' "$T/recipe.sh"
sed '/^M=/d; /^CE=/d' "$T/recipe.sh" > "$T/run.sh"
(cd "$T" && M="$M" CE="$CE" sh -e ./run.sh) > "$T/out" 2> "$T/err"; s=$?
t_eq "the recipe: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "the recipe: one query record of hits" 1 "$T/hits.jsonl"
t_lines "the recipe: one record of the best" 1 "$T/best.jsonl"

# the reference: every window of every document, scored one by one
emb-encode -m "$M" --pool --chunk 128 --overlap 32 "$T/docs.jsonl" > "$T/windows.jsonl"
echo '{"text":"who may redistribute the work"}' | emb-encode -m "$M" --pool > "$T/q.jsonl"
$PY - "$T" > "$T/check.out" 2>&1 <<'PY'
import json, math, sys
T = sys.argv[1]
docs = [json.loads(l) for l in open(T + "/docs.jsonl")]
wins = [json.loads(l) for l in open(T + "/windows.jsonl")]
q = json.loads(open(T + "/q.jsonl").readline())["embedding"]
hits = json.loads(open(T + "/hits.jsonl").readline())["results"]
best = json.loads(open(T + "/best.jsonl").readline())
def say(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))
key = lambda v: json.dumps(v)
say(all(len(w) and w["chunks"] > 2 for w in wins) and len(wins) > 3 * len(docs),
    "reference: several windows per document (%d windows)" % len(wins))
# window identity: (id, chunk) unique, text its span's slice
text = {key(d["id"]): d["text"] for d in docs}
say(len({(key(w["id"]), w["chunk"]) for w in wins}) == len(wins), "windows: (id, chunk) unique")
say(all(w["text"] == text[key(w["id"])][w["span"][0]:w["span"][1]] for w in wins),
    "windows: each text is its span of the document's")
inb = sum(len(l.encode()) for l in open(T + "/docs.jsonl"))
vec = ("embedding", "input_ids", "token_type_ids")
outb = sum(len(json.dumps({k: v for k, v in w.items() if k not in vec}, separators=(",", ":")).encode()) + 1 for w in wins)
say(outb <= 2 * inb, "windows: %d bytes but the vectors and token ids, at most twice the %d of the documents" % (outb, inb))
# documents by their best window
bestw = {}
for i, w in enumerate(wins):
    s = cos(q, w["embedding"])
    k = key(w["id"])
    if k not in bestw or s > bestw[k][0]:
        bestw[k] = (s, i)
order = sorted(bestw.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:10]
say([key(h["id"]) for h in hits] == [k for k, _ in order],
    "search --best-per id: the documents by their best window, as brute force")
say(all(abs(h["score"] - v[0]) < 1e-5 and h["chunk"] == wins[v[1]]["chunk"] and h["span"] == wins[v[1]]["span"]
        for h, (k, v) in zip(hits, order)),
    "search --best-per id: each document's best window and score (1e-5)")
# the reranker's input, as pairs of the query and each hit's window text
with open(T + "/pairs.jsonl", "w") as f:
    for h in hits:
        w = next(w for w in wins if key(w["id"]) == key(h["id"]) and w["chunk"] == h["chunk"])
        f.write(json.dumps({"text": "who may redistribute the work", "text_pair": w["text"]}) + "\n")
say(list(best) == ["results"] and len(best["results"]) == 3, "rerank: --fields results, --top-k 3")
PY
cat "$T/check.out"
grep -v '^ok - \|^not ok - ' "$T/check.out" | head -5 | sed 's/^/# /'
emb-rerank -m "$CE" "$T/pairs.jsonl" > "$T/pairs.out"
$PY - "$T" <<'PY'
import json, sys
T = sys.argv[1]
hits = json.loads(open(T + "/hits.jsonl").readline())["results"]
best = json.loads(open(T + "/best.jsonl").readline())["results"]
sc = [json.loads(l)["scores"][0] for l in open(T + "/pairs.out")]
order = sorted(range(len(sc)), key=lambda i: (-sc[i], i))[:3]
ok = [r["index"] for r in best] == order and all(abs(r["score"] - sc[i]) < 1e-6 for r, i in zip(best, order))
print(("ok - " if ok else "not ok - ") + "rerank --texts: the order and scores of the windows' pairs")
ok = [json.dumps(r["id"]) for r in best] == [json.dumps(hits[i]["id"]) for i in order] and \
     all(r["chunk"] == hits[i]["chunk"] and r["span"] == hits[i]["span"] and "score" in r for r, i in zip(best, order))
print(("ok - " if ok else "not ok - ") + "rerank --texts: the documents' ids, chunks and spans, best first")
PY

# token ids are the windows' own too (README "Long documents"): the n
# windows of a document of L content tokens hold L + (n-1)K of them, and
# with K <= W/2 their texts and ids together take at most twice the
# document's tokenized whole (each window's own members apart: chunk,
# chunks, span, specials, the copied fields)
emb-tokenize -m "$M" --no-truncate "$T/docs.jsonl" > "$T/whole.tok"
for wk in 128:32 16:8; do
	emb-tokenize -m "$M" --chunk "${wk%:*}" --overlap "${wk#*:}" "$T/docs.jsonl" > "$T/win.tok"
	$PY - "$T" "${wk%:*}" "${wk#*:}" <<'PY'
import json, sys
T, W, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
whole = [json.loads(l) for l in open(T + "/whole.tok")]
wins = [json.loads(l) for l in open(T + "/win.tok")]
key = lambda v: json.dumps(v)
def say(ok, what):
    print(("ok - " if ok else "not ok - ") + "W %d K %d: " % (W, K) + what)
# [CLS] ... [SEP]: the content tokens are all but the first and last
L = {key(d["id"]): len(d["input_ids"]) - 2 for d in whole}
n, tok = {}, {}
for w in wins:
    k = key(w["id"])
    n[k] = n.get(k, 0) + 1
    tok[k] = tok.get(k, 0) + len(w["input_ids"]) - 2
say(sorted(L) == sorted(n) and all(tok[k] == L[k] + (n[k] - 1) * K for k in L),
    "each document's windows hold L + (n-1)K content tokens (%d windows)" % len(wins))
def own(r):   # the text and the content tokens' ids, as JSON writes them
    ids = r["input_ids"][1:-1]
    return len(json.dumps(r["text"], ensure_ascii=False).encode()) + \
        len(",".join(map(str, ids))) + len(",".join(str(t) for t in r["token_type_ids"][1:-1]))
wb, db = sum(own(w) for w in wins), sum(own(d) for d in whole)
say(wb <= 2 * db, "the windows' texts and ids, %d bytes, at most twice the document's whole, %d" % (wb, db))
tb = sum(len(l.encode()) for l in open(T + "/win.tok"))
ib = sum(len(l.encode()) for l in open(T + "/docs.jsonl"))
print("# W %d K %d: window records with their ids %d bytes, %.2fx the input's %d, %.2fx the documents tokenized whole" %
      (W, K, tb, tb / ib, ib, tb / sum(len(l.encode()) for l in open(T + "/whole.tok"))))
PY
done

# without --best-per: windows, several of a document, each its chunk
emb-search --index "$T/windows.idx" -k 30 "$T/q.jsonl" > "$T/wins.out"
n=$(grep -o '"chunk":[0-9]*' "$T/wins.out" | wc -l)
t_eq "search: 30 windows, each with its chunk" "$n" 30
t_grep "search: a window's result is id, chunk, span, score" '"results":\[{"id":[^,]*,"chunk":[0-9]*,"span":\[[0-9]*,[0-9]*\],"score":' "$T/wins.out"
# the same index read from the vectors file
emb-search --index "$T/windows.jsonl" -k 10 --best-per id "$T/q.jsonl" > "$T/hits2"
t_ok "search --best-per id: the index file and the vectors file agree" cmp -s "$T/hits.jsonl" "$T/hits2"
# --best-per with k above the documents: every document once
emb-search --index "$T/windows.idx" -k 50 --best-per id "$T/q.jsonl" > "$T/all"
t_eq "search -k 50 --best-per id: each of the 6 documents once" "$(grep -o '"chunk"' "$T/all" | wc -l)" 6
# a document whose windows fill the first 4k places: searched deeper
# until k ids (12 windows of "a" nearer than "b"'s one, k 2)
awk 'BEGIN { for (i = 0; i < 12; i++) printf "{\"id\":\"a\",\"chunk\":%d,\"span\":[%d,%d],\"embedding\":[1,%d]}\n", i, i, i + 1, i
	print "{\"id\":\"b\",\"chunk\":0,\"span\":[0,1],\"embedding\":[-1,0]}" }' > "$T/deep.jsonl"
echo '{"embedding":[1,0]}' | emb-search --index "$T/deep.jsonl" -k 2 --best-per id > "$T/deep.out"
t_grep "search --best-per id: past 4k windows of one document, the next one found" \
	'^{"results":\[{"id":"a","chunk":0,"span":\[0,1\],"score":1},{"id":"b","chunk":0,"span":\[0,1\],"score":-1}\]}$' "$T/deep.out"
emb-search --index "$T/windows.idx" --best-per title "$T/q.jsonl" > /dev/null 2> "$T/err"; s=$?
t_eq "search --best-per title: usage error" "$s" 2

# documents as objects, other members passed through
printf '%s\n' '{"query":"q","documents":[{"id":"x","text":"alpha beta","title":"T"},"gamma"]}' |
	emb-rerank -m "$CE" > "$T/obj.out"; s=$?
t_eq "rerank: documents as objects and strings, exit 0" "$s" 0
t_grep "rerank: an object's members go into its result" '{"index":0,"id":"x","title":"T","score":' "$T/obj.out"
printf '%s\n' '{"query":"q","documents":[{"id":"x"}]}' | emb-rerank -m "$CE" > /dev/null 2> "$T/err"; s=$?
t_eq "rerank: an object without text is a bad record" "$s" 1
t_grep "rerank: ... named" "element 0 has no string 'text'" "$T/err"
printf '%s\n' '{"text":"q","results":[{"id":"nope","score":1}]}' |
	emb-rerank -m "$CE" --texts "$T/docs.jsonl" > /dev/null 2> "$T/err"; s=$?
t_eq "rerank --texts: an id not in the file is a bad record" "$s" 1
t_grep "rerank --texts: ... named" 'id "nope" is not in' "$T/err"

# --window-text
head -n 1 "$T/docs.jsonl" > "$T/one.jsonl"
emb-tokenize -m "$M" --chunk 128 --overlap 32 --window-text=none "$T/one.jsonl" > "$T/none"
t_nogrep "--window-text=none: no text" '"text"' "$T/none"
emb-tokenize -m "$M" --chunk 128 --overlap 32 --window-text=full "$T/one.jsonl" > "$T/full"
t_eq "--window-text=full: every window the whole text" \
	"$(sed 's/.*"text": *\("[^"]*\)".*/\1/' "$T/full" | sort -u | wc -l)" 1
emb-tokenize -m "$M" --window-text=none "$T/one.jsonl" > /dev/null 2>&1; s=$?
t_eq "--window-text without --chunk: usage error" "$s" 2

# late chunking on a long-context model: up to its positions by default
L=$(t_fixture modernbert-tiny)
maxpos=$(sed -n 's/.*"max_position_embeddings": *\([0-9]*\).*/\1/p' "$L/config.json")
$PY - "$D/corpus/passages.jsonl" > "$T/long.jsonl" <<'PY'
import json, sys
ps = [json.loads(l)["text"] for l in open(sys.argv[1])]
print(json.dumps({"id": "long", "text": " ".join(ps[:26])}))
PY
ntok=$(emb-tokenize -m "$L" --no-truncate "$T/long.jsonl" | sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' | awk -F, '{ print NF - 2 }')
t_ok "late: a document of more than 6,000 tokens ($ntok)" test "$ntok" -gt 6000
want=$(awk -v l="$ntok" 'BEGIN { print l <= 128 ? 1 : 1 + int((l - 128 + 95) / 96) }')
emb-encode -m "$L" --pool --chunk 128 --overlap 32 --late "$T/long.jsonl" > "$T/late" 2> "$T/err"; s=$?
t_eq "late on a $maxpos-position model ($ntok tokens): exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "late: every window of the $ntok tokens ($want)" "$want" "$T/late"
t_nogrep "late: nothing truncated" '"truncated"' "$T/late"
emb-encode -m "$L" --pool --chunk 128 --overlap 32 --late --max-length 512 "$T/long.jsonl" > "$T/late512" 2> "$T/err"; s=$?
t_eq "late --max-length 512: exit 0 (a warning, not an error)" "$s" 0
t_eq "late --max-length 512: one warning for the document" "$(grep -c 'warning (at .*long.jsonl:1): late chunking' "$T/err")" 1
t_grep "late --max-length 512: truncated in the records" '"truncated":' "$T/late512"
