# 65-search.sh - emb-search against a reference computed here (awk, in
# double precision): exact top-k ids, order and scores for every precision
# (f32, f16, int8, binary) and score function (cosine, dot), from a JSONL
# index and from an index file; binary + rescore; tie order; -j identity;
# threshold; quantized query fields; ids of every JSON type; empty index;
# dimension mismatch; NaN queries; bad index files and usage errors.
T=$(t_tmpdir 65-search)

# --- data: values k/256 (exact in float32 and in f16) --------------------
# dim 70 (two 64-bit words for binary, not a multiple of 16), 301 docs
# (not a multiple of 8 or 16), 23 queries; docs 40, 90 and 250 are copies
# of doc 7 (ties), query 0 is doc 7 itself
awk 'BEGIN {
	s = 12345
	for (i = 0; i < 301 + 23; i++) {
		line = ""
		for (j = 0; j < 70; j++) {
			s = (s * 1103515245 + 12345) % 2147483648
			k = int(s / 65536) % 511 - 255
			line = line (j ? " " : "") k / 256
		}
		v[i] = line
	}
	v[40] = v[90] = v[250] = v[7]
	v[301] = v[7]
	for (i = 0; i < 301; i++) print v[i] > "/dev/stdout"
	for (i = 301; i < 324; i++) print v[i] > "/dev/stderr"
}' > "$T/docs.txt" 2> "$T/q.txt"
tojsonl() { awk -v key="$1" '{ gsub(/ /, ","); printf "{\"id\":%d,\"%s\":[%s]}\n", NR - 1, key, $0 }' "$2"; }
tojsonl embedding "$T/docs.txt" > "$T/docs.jsonl"
tojsonl embedding "$T/q.txt" | sed 's/^{"id"/{"qid"/' > "$T/q.jsonl"

# ref.awk MODE K < (docs.txt then q.txt): per query "id:score ..." best
# first, ties to the lower index; MODE cos, dot, bcos, bdot (binary: the
# +1/-1 sign vectors, dim - 2 * hamming, / dim for cosine)
cat > "$T/ref.awk" <<'EOF'
FNR == NR { nd++; n = split($0, a, " "); dim = n
	for (j = 1; j <= n; j++) { D[nd - 1, j] = a[j]; if (mode ~ /^b/) D[nd - 1, j] = a[j] > 0 ? 1 : -1 }
	next }
{
	split($0, q, " "); qq = 0
	for (j = 1; j <= dim; j++) { if (mode ~ /^b/) q[j] = q[j] > 0 ? 1 : -1; qq += q[j] * q[j] }
	for (i = 0; i < nd; i++) {
		s = 0; dd = 0
		for (j = 1; j <= dim; j++) { s += q[j] * D[i, j]; dd += D[i, j] * D[i, j] }
		if (mode == "cos" || mode == "bcos") s /= sqrt(qq) * sqrt(dd)
		S[i] = s; used[i] = 0
	}
	out = ""
	for (r = 0; r < k && r < nd; r++) {
		b = -1
		for (i = 0; i < nd; i++) if (!used[i] && (b < 0 || S[i] > S[b])) b = i
		used[b] = 1
		out = out (r ? " " : "") b ":" sprintf("%.9g", S[b])
	}
	print out
}
EOF
ref() { awk -v mode="$1" -v k="$2" -f "$T/ref.awk" "$3" "$T/q.txt"; }
# the results of emb-search output as "id:score ..."
res() { sed 's/.*"results":\[//; s/\]}$//; s/{"id":\([^,]*\),"score":\([^}]*\)}/\1:\2/g; s/,/ /g' "$1"; }
# same DESC REF GOT: ids and order equal, scores within 1e-6 (relative
# above 1)
same() {
	if awk 'FNR == NR { r[FNR] = $0; nr = FNR; next }
	{ n = split(r[FNR], a, " "); m = split($0, b, " ")
	  if (n != m) { print "query " FNR - 1 ": " m " results, want " n; bad = 1; next }
	  for (i = 1; i <= n; i++) { split(a[i], x, ":"); split(b[i], y, ":")
	    d = x[2] - y[2]; if (d < 0) d = -d; t = x[2] < 0 ? -x[2] : x[2]; t = t > 1 ? t : 1
	    if (x[1] != y[1] || d > 1e-6 * t) { print "query " FNR - 1 " rank " i ": got " b[i] ", want " a[i]; bad = 1; break } } }
	END { if (FNR != nr) { print FNR " lines, want " nr; bad = 1 } exit bad }' "$2" "$3" > "$T/diff"; then
		t_pass "$1"
	else
		t_fail "$1" "$(head -n 3 "$T/diff")"
	fi
}

# --- exact f32: JSONL index and index file, cosine and dot --------------
for sc in cos dot; do
	opt=cosine; [ $sc = dot ] && opt=dot
	ref $sc 10 "$T/docs.txt" > "$T/ref.$sc"
	emb-search --index "$T/docs.jsonl" --score $opt < "$T/q.jsonl" > "$T/out" 2> "$T/err"
	t_eq "f32 $opt, JSONL index: exit 0, quiet" "$?$(cat "$T/err")" 0
	res "$T/out" > "$T/got"
	same "f32 $opt, JSONL index: top 10 ids, order, scores = reference" "$T/ref.$sc" "$T/got"
done
t_grep "queries pass through, vectors dropped" '^{"qid":0,"results":\[{"id":7,' "$T/out"
t_nogrep "embedding dropped" '"embedding"' "$T/out"
t_grep "ties in index order: copies 7, 40, 90, 250 first" '^{"qid":0,"results":\[{"id":7,[^]]*{"id":40,[^]]*{"id":90,[^]]*{"id":250,' "$T/out"

emb-search --build "$T/all.idx" --precision f32,f16,int8,binary < "$T/docs.jsonl" 2> "$T/err"
t_eq "--build f32,f16,int8,binary: exit 0, quiet" "$?$(cat "$T/err")" 0
head -c 8 "$T/all.idx" | od -An -tu8 > "$T/hl"
t_grep "the index file is safetensors (header length first)" '[0-9]' "$T/hl"
for sc in cos dot; do
	opt=cosine; [ $sc = dot ] && opt=dot
	emb-search --index "$T/all.idx" --score $opt -j 2 < "$T/q.jsonl" > "$T/out"
	res "$T/out" > "$T/got"
	same "f32 $opt, index file: = reference" "$T/ref.$sc" "$T/got"
done

# --- f16: the values are exact in half precision, so the same answer ----
emb-search --index "$T/all.idx" --search f16 < "$T/q.jsonl" > "$T/out"
res "$T/out" > "$T/got"
same "f16 cosine: = reference (values exact in f16)" "$T/ref.cos" "$T/got"
# and a value that rounds: 1/3 -> 0x3555 = 0.333251953125
printf '{"id":"a","embedding":[0.3333333333,0]}\n' > "$T/third.jsonl"
emb-search --build "$T/third.idx" --precision f16 < "$T/third.jsonl"
echo '{"embedding":[1,0]}' | emb-search --index "$T/third.idx" --score dot > "$T/out"
t_grep "f16: rounded to nearest (1/3 -> 0.33325195)" '"score":0.33325195}' "$T/out"

# --- int8: against the bucket centers emb-quantize --unpack gives -------
emb-quantize --vectors int8 --save-ranges "$T/r.json" < "$T/docs.jsonl" > "$T/docs.i8"
emb-quantize --unpack int8 --ranges "$T/r.json" < "$T/docs.i8" |
	sed 's/.*"embedding":\[\([^]]*\)\].*/\1/; s/,/ /g' > "$T/docs.deq"
for sc in cos dot; do
	opt=cosine; [ $sc = dot ] && opt=dot
	ref $sc 10 "$T/docs.deq" > "$T/ref.i8.$sc"
	emb-search --index "$T/all.idx" --search int8 --score $opt < "$T/q.jsonl" > "$T/out"
	res "$T/out" > "$T/got"
	same "int8 $opt: = reference over the dequantized documents" "$T/ref.i8.$sc" "$T/got"
done
# a query given as emb-quantize's int8 field: its bucket centers
emb-quantize --vectors int8 --ranges "$T/r.json" --keep < "$T/q.jsonl" > "$T/q.i8" 2>/dev/null
emb-quantize --unpack int8 --ranges "$T/r.json" < "$T/q.i8" > "$T/q.deq"
emb-search --index "$T/all.idx" --search int8 < "$T/q.deq" > "$T/a"
sed 's/"embedding":\[[^]]*\],//' "$T/q.i8" | emb-search --index "$T/all.idx" --search int8 > "$T/b"
t_eq "int8 query field = its dequantized embedding" "$(res "$T/b" | cksum)" "$(res "$T/a" | cksum)"

# --- binary: Hamming, and rescoring --------------------------------------
for sc in cos dot; do
	opt=cosine; [ $sc = dot ] && opt=dot
	ref b$sc 10 "$T/docs.txt" > "$T/ref.b.$sc"
	emb-search --index "$T/all.idx" --search binary --score $opt < "$T/q.jsonl" > "$T/out"
	res "$T/out" > "$T/got"
	same "binary $opt: dim - 2 hamming (/ dim) = reference, ties in index order" "$T/ref.b.$sc" "$T/got"
done
# a ubinary query field: the same bits
emb-quantize --vectors ubinary < "$T/q.jsonl" | emb-search --index "$T/all.idx" --search binary > "$T/out"
res "$T/out" > "$T/got"
same "ubinary query field = the embedding's sign bits" "$T/ref.b.cos" "$T/got"
# rescore: the best 3 x 4 by Hamming, scored again in f32, best 3 kept
ref bcos 12 "$T/docs.txt" > "$T/cand"
awk -v k=3 'FNR == NR { n = split($0, a, " "); for (j = 1; j <= n; j++) D[FNR - 1, j] = a[j]; dim = n; next }
FILENAME ~ /cand$/ { C[FNR] = $0; next }
{ split($0, q, " "); qq = 0; for (j = 1; j <= dim; j++) qq += q[j] * q[j]
  m = split(C[FNR], c, " "); for (r = 1; r <= m; r++) { split(c[r], x, ":"); id[r] = x[1]; s = 0; dd = 0
    for (j = 1; j <= dim; j++) { s += q[j] * D[id[r], j]; dd += D[id[r], j] ^ 2 }
    S[r] = s / sqrt(qq) / sqrt(dd); u[r] = 0 }
  out = ""; for (t = 0; t < k; t++) { b = 0
    for (r = 1; r <= m; r++) if (!u[r] && (!b || S[r] > S[b] || (S[r] == S[b] && id[r] + 0 < id[b] + 0))) b = r
    u[b] = 1; out = out (t ? " " : "") id[b] ":" sprintf("%.9g", S[b]) }
  print out }' "$T/docs.txt" "$T/cand" "$T/q.txt" > "$T/ref.rs"
emb-search --index "$T/all.idx" --search binary --rescore 4 -k 3 < "$T/q.jsonl" > "$T/out"
res "$T/out" > "$T/got"
same "binary + --rescore 4 (f32): = reference" "$T/ref.rs" "$T/got"

# --- -j identity, batching ------------------------------------------------
for a in "" "--search f16" "--search int8" "--search binary" "--search binary --rescore 3 --rescore-with int8"; do
	emb-search --index "$T/all.idx" -k 7 -j 1 $a < "$T/q.jsonl" > "$T/j1"
	emb-search --index "$T/all.idx" -k 7 -j 2 $a < "$T/q.jsonl" > "$T/j2"
	emb-search --index "$T/all.idx" -k 7 -j 3 $a < "$T/q.jsonl" > "$T/j3"
	if cmp -s "$T/j1" "$T/j2" && cmp -s "$T/j1" "$T/j3"; then
		t_pass "-j 1, 2, 3 identical: ${a:-f32}"
	else
		t_fail "-j 1, 2, 3 identical: ${a:-f32}"
	fi
done
# one query at a time (a slow producer) equals the batch
while read -r l; do echo "$l" | emb-search --index "$T/all.idx" -k 7; done < "$T/q.jsonl" > "$T/one"
emb-search --index "$T/all.idx" -k 7 < "$T/q.jsonl" > "$T/batch"
t_ok "one query per run = one batch of all" cmp -s "$T/one" "$T/batch"

# --- threshold, -k ------------------------------------------------------
emb-search --index "$T/all.idx" -k 300 --threshold 0.2 < "$T/q.jsonl" > "$T/out"
res "$T/out" | awk '{ for (i = 1; i <= NF; i++) { split($i, x, ":"); if (x[2] < 0.2) bad = 1 } n += NF } END { exit bad || n == 0 }'
t_eq "--threshold: every score >= 0.2, some results" "$?" 0
ref cos 301 "$T/docs.txt" | awk '{ n = 0; for (i = 1; i <= NF; i++) { split($i, x, ":"); if (x[2] >= 0.2) n++ } print n }' > "$T/want.n"
res "$T/out" | awk '{ print NF }' > "$T/got.n"
t_ok "--threshold: exactly the results at or above it" cmp -s "$T/want.n" "$T/got.n"
emb-search --index "$T/docs.jsonl" -k 1000 < "$T/q.jsonl" | res /dev/stdin | awk '{ print NF }' | sort -u > "$T/n"
t_eq "-k above the index size: every document" "$(cat "$T/n")" 301

# --- ids of every JSON type pass through byte for byte ------------------
cat > "$T/ids.jsonl" <<'EOF'
{"id":"text \"quoted\" \u00e9","embedding":[1,0,0]}
{"id":-12.5e3,"embedding":[0.9,0.1,0]}
{"id":true,"embedding":[0.8,0.2,0]}
{"id":false,"embedding":[0.7,0.3,0]}
{"id":null,"embedding":[0.6,0.4,0]}
{"id": {"a": [1, {"b": null}]},"embedding":[0.5,0.5,0]}
{"id":[1,"two",3.0],"embedding":[0.4,0.6,0]}
{"embedding":[0.3,0.7,0]}
{"id":42,"embedding":[0.2,0.8,0]}
EOF
want='{"results":[{"id":"text \"quoted\" \u00e9","score":1},{"id":-12.5e3,"score":0.9938837},{"id":true,"score":0.9701425},{"id":false,"score":0.91914505},{"id":null,"score":0.8320503},{"id":{"a": [1, {"b": null}]},"score":0.70710677},{"id":[1,"two",3.0],"score":0.5547002},{"id":7,"score":0.39391932},{"id":42,"score":0.24253562}]}'
echo '{"embedding":[1,0,0]}' | emb-search --index "$T/ids.jsonl" > "$T/out"
t_eq "ids: string, number, true, false, null, object, array; record number when absent" "$(cat "$T/out")" "$want"
emb-search --build "$T/ids.idx" < "$T/ids.jsonl"
echo '{"embedding":[1,0,0]}' | emb-search --index "$T/ids.idx" > "$T/out"
t_eq "ids: the same from an index file" "$(cat "$T/out")" "$want"

# --- empty index ----------------------------------------------------------
: > "$T/empty.jsonl"
emb-search --index "$T/empty.jsonl" < "$T/q.jsonl" > "$T/out" 2> "$T/err"
t_eq "empty JSONL index: exit 0, one warning" "$?$(grep -c '^emb-search: warning: .*empty.jsonl holds no documents' "$T/err")$(wc -l < "$T/err" | tr -d ' ')" 011
t_eq "empty index: no results, one record per query" "$(sort -u "$T/out" | sed 's/"qid":[0-9]*,//' | sort -u)" '{"results":[]}'
emb-search --build "$T/empty.idx" --precision f32,int8,binary < "$T/empty.jsonl" 2> /dev/null
t_eq "--build of an empty input: exit 0" "$?" 0
emb-search --index "$T/empty.idx" --search binary < "$T/q.jsonl" > "$T/out" 2> /dev/null
t_lines "empty index file: one record per query" 23 "$T/out"
t_nogrep "empty index file: no results" '"id":' "$T/out"

# --- dimension mismatch, NaN: per-record errors -------------------------
printf '{"id":"a","embedding":[1,2,3]}\n{"id":"b","embedding_b64":"AADAfwAAgD8AAAAA"}\n{"id":"c","embedding":[1,0,0]}\n{"id":"d","embedding":[NaN,0,0]}\n{"id":"e","embedding":[1,0]}\n' > "$T/badq.jsonl"
emb-search --index "$T/ids.idx" --errors=emit "$T/badq.jsonl" > "$T/out" 2> "$T/err"
t_eq "bad queries: exit 1" "$?" 1
t_lines "bad queries: one output record each" 5 "$T/out"
t_grep "NaN in embedding_b64: error at its line" 'badq.jsonl:2): field .embedding_b64. holds a value that is not finite' "$T/err"
t_grep "NaN literal: invalid JSON at its line" 'badq.jsonl:4): invalid JSON' "$T/err"
t_grep "dimension mismatch names the index file" "badq.jsonl:5): field 'embedding' has 2 values, the index .*ids.idx 3" "$T/err"
t_grep "good records still answered" '^{"id":"c","results":\[{"id":"text' "$T/out"
t_grep "--errors=emit: the error record" '^{"id":"e","error":"field' "$T/out"
printf '{"id":1,"embedding":[1,2,3]}\n{"id":2,"embedding":[1,2]}\n' > "$T/baddocs.jsonl"
echo '{"embedding":[1,2,3]}' | emb-search --index "$T/baddocs.jsonl" > /dev/null 2> "$T/err"
t_eq "index records of two dimensions: exit 3" "$?" 3
t_grep "... naming the file and line" "baddocs.jsonl:2: field 'embedding' has 2 values, the first record 3" "$T/err"
echo '{"embedding":[1,2,3]}' | emb-search --build "$T/x.idx" "$T/baddocs.jsonl" 2> "$T/err"
t_eq "--build of such a file: exit 3" "$?" 3

# --- bad index files ------------------------------------------------------
head -c 200 "$T/all.idx" > "$T/cut.idx"
echo '{"embedding":[1,2,3]}' | emb-search --index "$T/cut.idx" > /dev/null 2> "$T/err"
t_eq "truncated index file: exit 3" "$?" 3
t_grep "... an error naming it" 'cut.idx' "$T/err"
echo '{"embedding":[1,2,3]}' | emb-search --index "$(t_fixture bert-tiny-cls-bf16)/model.safetensors" > /dev/null 2> "$T/err"
t_eq "a model's safetensors: exit 3" "$?" 3
t_grep "... not an emb-search index" 'model.safetensors: not an emb-search index' "$T/err"
emb-search --index "$T/docs.jsonl" --search binary < /dev/null 2> "$T/err"
t_eq "--search a precision the index lacks: exit 3" "$?" 3
t_grep "... says what it has" 'no binary vectors (it has f32' "$T/err"
emb-search --build "$T/b.idx" --precision binary < "$T/docs.jsonl"
emb-search --index "$T/b.idx" --rescore 2 < /dev/null 2> "$T/err"
t_eq "--rescore with nothing finer: exit 3" "$?" 3

# --- usage ------------------------------------------------------------------
emb-search < /dev/null > /dev/null 2>&1
t_eq "no --index: exit 2" "$?" 2
emb-search --index "$T/all.idx" --score l2 < /dev/null > /dev/null 2> "$T/err"
t_eq "--score l2: exit 2" "$?" 2
t_grep "usage error names the value" "'l2' is not cosine or dot" "$T/err"
emb-search --index "$T/all.idx" -k 0 < /dev/null > /dev/null 2>&1
t_eq "-k 0: exit 2" "$?" 2
emb-search --build "$T/x.idx" --precision f8 < /dev/null > /dev/null 2>&1
t_eq "--precision f8: exit 2" "$?" 2
emb-search --help > "$T/help"
t_eq "--help: exit 0" "$?" 0
t_grep "--help: usage on stdout" '^usage: emb-search' "$T/help"

# an empty index is built and searched, with a word each time
emb-search --build "$T/empty.idx" < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--build on no records: exit 0" "$s" 0
t_grep "--build on no records: a warning" '^emb-search: warning: the input holds no vectors: .*empty.idx is an empty index$' "$T/err"
echo '{"embedding":[1,0]}' | emb-search --index "$T/empty.idx" > "$T/out" 2> "$T/err"; s=$?
t_eq "an empty index: exit 0, empty results" "$s$(cat "$T/out")" '0{"results":[]}'
t_grep "an empty index: a warning at start" '^emb-search: warning: .*empty.idx holds no documents' "$T/err"
