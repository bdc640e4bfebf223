# 43-chunk.sh - long documents: windows (--chunk W --overlap K) on
# emb-tokenize and emb-encode against golden.chunks.jsonl (token-exact,
# embeddings within 1e-5), late chunking (--late) on emb-encode and
# emb-pool against golden.latechunks.jsonl, spans in code points,
# prompts, -j identity, pairs, empty texts, bad options, --group-by
T=$(t_tmpdir 43-chunk)
M=$(t_fixture minilm-l6)
C=$(t_fixture coderank-tiny)
GW="$D/fixtures/minilm-l6/golden.chunks.jsonl"
GL="$D/fixtures/coderank-tiny/golden.latechunks.jsonl"

# the documents: passages 2d and 2d+1 joined by one space (id d)
awk '{ t = $0; sub(/^.*"text": *"/, "", t); sub(/" *} *$/, "", t)
	if (NR % 2) prev = t
	else printf "{\"id\": %d, \"text\": \"%s %s\"}\n", NR / 2 - 1, prev, t }' \
	"$D/corpus/passages.jsonl" | head -n 24 > "$T/docs.jsonl"
t_lines "24 documents" 24 "$T/docs.jsonl"

# emb-validate joins windows on id and chunk
# "id chunk chunks start end" per line
spans() { sed 's/.*"id": *\([0-9]*\).*"chunk": *\([0-9]*\), *"chunks": *\([0-9]*\), *"span": *\[\([0-9]*\), *\([0-9]*\)\].*/\1 \2 \3 \4 \5/' "$1"; }
spans "$GW" > "$T/gw.spans"
spans "$GL" > "$T/gl.spans"

# --- windows --------------------------------------------------------------
emb-tokenize -m "$M" --chunk 62 --overlap 16 "$T/docs.jsonl" > "$T/tok" 2> "$T/err"; s=$?
t_eq "emb-tokenize --chunk 62 --overlap 16: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "one record per window (246)" 246 "$T/tok"
t_ok "windows: input_ids token-exact, spans exact" \
	emb-validate --quiet --field input_ids --field span "$GW" "$T/tok"
spans "$T/tok" > "$T/tok.spans"
t_ok "windows: chunk, chunks and span as the golden" cmp -s "$T/gw.spans" "$T/tok.spans"
emb-tokenize -m "$M" --chunk 62 --overlap 15 "$T/docs.jsonl" > "$T/tok15"
emb-validate --quiet --field input_ids "$GW" "$T/tok15" > /dev/null 2>&1
t_eq "another overlap does not pass for the golden's" "$?" 1
t_grep "the document's fields pass through, text its window's slice" '^{"id": 0,"text":"Apache License' "$T/tok"

emb-encode -m "$M" --pool --chunk 62 --overlap 16 -j 2 "$T/docs.jsonl" > "$T/enc" 2> "$T/err"; s=$?
t_eq "emb-encode --pool --chunk: exit 0, quiet" "$s$(cat "$T/err")" 0
t_ok "windows: embeddings within 1e-5 (and input_ids exact)" \
	emb-validate --quiet --atol 1e-5 --field embedding --field input_ids "$GW" "$T/enc"
emb-validate "$GW" "$T/enc" > "$T/v.out"
t_grep "emb-validate joins windows on id and chunk" "^embedding: 246 records, .*(id [0-9]* chunk [0-9]*).*: ok" "$T/v.out"
spans "$T/enc" > "$T/enc.spans"
t_ok "emb-encode windows: chunk, chunks, span" cmp -s "$T/gw.spans" "$T/enc.spans"
# the first four documents' windows again, other ways (kept short)
head -n 4 "$T/docs.jsonl" > "$T/four.jsonl"
emb-encode -m "$M" --pool --chunk 62 --overlap 16 -j 1 --batch-tokens 200 "$T/four.jsonl" > "$T/enc1"
head -n "$(wc -l < "$T/enc1")" "$T/enc" > "$T/enc.four"
t_ok "-j 1 --batch-tokens 200: the same bytes as -j 2" cmp -s "$T/enc.four" "$T/enc1"
emb-tokenize -m "$M" --chunk 62 --overlap 16 "$T/four.jsonl" | emb-encode -m "$M" --pool -j 2 > "$T/pipe"
t_ok "emb-tokenize --chunk | emb-encode --pool: the same bytes" cmp -s "$T/enc.four" "$T/pipe"
# other sizes on a byte-level BPE model: window counts from the arithmetic
R=$(t_fixture roberta-tiny)
head -n 6 "$T/docs.jsonl" > "$T/six.jsonl"
emb-tokenize -m "$R" --no-truncate "$T/six.jsonl" |
	sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' |
	awk -F, '{ L = NF - 2; n = L <= 40 ? 1 : 1 + int((L - 40 + 32) / 33); print n }' > "$T/want.n"
emb-tokenize -m "$R" --chunk 40 --overlap 7 "$T/six.jsonl" > "$T/r40"
sed 's/.*"chunk":\([0-9]*\),"chunks":\([0-9]*\).*/\1 \2/' "$T/r40" |
	awk '$1 == 0 { print $2 }' > "$T/got.n"
t_ok "roberta --chunk 40 --overlap 7: window counts" cmp -s "$T/want.n" "$T/got.n"
awk -F'"input_ids":\\[' '{ split($2, a, "]"); n = split(a[1], x, ","); if (n > 42 || x[1] != 0 || x[n] != 2) bad = 1 } END { exit bad }' "$T/r40"
t_eq "roberta windows: <s> + at most 40 + </s>" "$?" 0
emb-tokenize -m "$R" --chunk 40 --overlap 39 "$T/six.jsonl" > "$T/r39" 2>&1
t_eq "--overlap W-1: windows step by one token" \
	"$(sed -n 2p "$T/r39" | sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' | cut -d, -f2-40)" \
	"$(sed -n 1p "$T/r39" | sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' | cut -d, -f3-41)"

# code points of multi-byte text (minilm lowercases and strips accents)
printf '{"id":"u","text":"\303\234n\303\257c\303\266d\303\251 \346\227\245\346\234\254\350\252\236 \303\274ber stra\303\237e and more words"}\n' > "$T/u.jsonl"
emb-tokenize -m "$M" --chunk 4 --overlap 1 --offsets "$T/u.jsonl" > "$T/u.out"
t_eq "multi-byte text: spans in code points" \
	"$(sed 's/.*"span":\(\[[0-9,]*\]\).*/\1/' "$T/u.out" | tr '\n' ' ')" "[0,11] [10,23] [19,38] "
t_grep "--offsets of a window: code points of the text" '"offsets":\[\[0,0\],\[10,11\],\[12,16\],\[17,19\],\[19,23\],\[0,0\]\]' "$T/u.out"

# --- prompts: every window starts with the prompt; W counts content only --
printf '{"id":"p","text":"hello big wide world of text"}\n' > "$T/p.jsonl"
emb-tokenize -m "$M" --prompt "query: " --chunk 3 --overlap 1 "$T/p.jsonl" > "$T/p.out"
t_eq "prompt: windows [CLS] query : + 3 content tokens + [SEP]" \
	"$(sed 's/.*"input_ids":\(\[[0-9,]*\]\).*"prompt_length":\([0-9]*\).*/\1 \2/' "$T/p.out" | tr '\n' ' ')" \
	"[101,23032,1024,7592,2502,2898,102] 3 [101,23032,1024,2898,2088,1997,102] 3 [101,23032,1024,1997,3793,102] 3 "
printf 'hello big wide world of text\n' | emb-tokenize -m "$M" --raw --prompt "query: " --chunk 3 --overlap 1 > "$T/p.raw"
t_eq "--raw --chunk: the same windows" "$(sed 's/.*"chunk"/"chunk"/' "$T/p.raw")" "$(sed 's/.*"chunk"/"chunk"/' "$T/p.out")"
t_eq "prompt: spans in code points of the text" \
	"$(sed 's/.*"span":\(\[[0-9,]*\]\).*/\1/' "$T/p.out" | tr '\n' ' ')" "[0,14] [10,23] [21,28] "
emb-encode -m "$M" --pool --prompt "query: " "$T/p.jsonl" | sed 's/.*"embedding"/"embedding"/' > "$T/p.whole"
emb-encode -m "$M" --pool --prompt "query: " --chunk 16 "$T/p.jsonl" | sed 's/.*"embedding"/"embedding"/' > "$T/p.one"
t_ok "prompt, one window: the same vector as the whole text" cmp -s "$T/p.whole" "$T/p.one"

# --- late chunking ----------------------------------------------------------
# the golden cuts at 512 tokens, as --max-length 512 does; the cut is
# said once per document that loses tokens
emb-encode -m "$C" --pool --chunk 64 --overlap 16 --late --max-length 512 "$T/docs.jsonl" > "$T/late" 2> "$T/err"; s=$?
t_eq "emb-encode --pool --chunk 64 --overlap 16 --late --max-length 512: exit 0" "$s" 0
t_eq "late: one warning per document cut (3)" \
	"$(grep -c '^emb-encode: warning (at .*docs.jsonl:[0-9]*): late chunking: [0-9]* of the [0-9]* tokens' "$T/err")" 3
t_grep "late: the warning names the document's line and the windows lost" \
	'docs.jsonl:4): late chunking: 50 of the 560 tokens .* 11 windows instead of 12' "$T/err"
t_ok "late: embeddings within 1e-5, spans exact" \
	emb-validate --quiet --atol 1e-5 --field embedding --field span "$GL" "$T/late"
spans "$T/late" > "$T/late.spans"
t_ok "late: chunk, chunks, span as the golden" cmp -s "$T/gl.spans" "$T/late.spans"
t_nogrep "late: no input_ids" '"input_ids"' "$T/late"
t_grep "late: the cut past the maximum length is reported" '"truncated":50,' "$T/late"
emb-encode -m "$C" --max-length 512 "$T/docs.jsonl" | emb-pool -m "$C" --chunk 64 --overlap 16 --late > "$T/latep" 2> "$T/err"
t_ok "emb-encode | emb-pool --late: the same bytes" cmp -s "$T/late" "$T/latep"
t_grep "emb-pool --late: the cut is said too" '^emb-pool: warning (at <stdin>:4): late chunking' "$T/err"
emb-encode -m "$C" --pool --chunk 64 --overlap 16 --late --max-length 512 --strict "$T/docs.jsonl" > "$T/lates" 2> "$T/err"; s=$?
t_eq "late --strict: a cut document is an error, exit 1" "$s" 1
t_grep "late --strict: said as an error" '^emb-encode: error (at .*docs.jsonl:4): late chunking' "$T/err"
t_eq "late --strict: stops after the cut document's windows" "$(tail -n 1 "$T/lates" | sed 's/^{"id": *\([0-9]*\),.*/\1/')" 3
# without --max-length, late chunking reads as far as the model's
# positions go (not max_seq_length): nothing cut
maxpos=$(sed -n 's/.*"n_positions": *\([0-9]*\).*/\1/p' "$C/config.json")
emb-encode -m "$C" --pool --chunk 64 --overlap 16 --late "$T/docs.jsonl" > "$T/latefull" 2> "$T/err"; s=$?
t_eq "late up to the model's $maxpos positions: exit 0, quiet" "$s$(cat "$T/err")" 0
t_nogrep "late up to the model's positions: nothing truncated" '"truncated"' "$T/latefull"
t_eq "late up to the model's positions: document 3 has all its 12 windows" \
	"$(grep -c '^{"id": 3,' "$T/latefull")" 12
emb-encode -m "$C" --pool --chunk 64 --overlap 16 --late -j 1 --batch-tokens 600 --max-length 512 "$T/docs.jsonl" > "$T/late1" 2> /dev/null
t_ok "late -j 1: the same bytes" cmp -s "$T/late" "$T/late1"

# late with a prompt, by hand: [CLS] query : hello big wide world of text
# [SEP]; windows of 3 overlapping by 1 are rows 3-5, 5-7, 7-8 (coderank:
# no Dense, no Normalize)
emb-encode -m "$C" --prompt "query: " "$T/p.jsonl" |
	sed 's/.*"token_embeddings":\[\[\(.*\)\]\].*/\1/; s/\],\[/\n/g' > "$T/rows"
emb-encode -m "$C" --pool --prompt "query: " --chunk 3 --overlap 1 --late "$T/p.jsonl" > "$T/plate"
sed 's/.*"embedding":\[\([^]]*\)\].*/\1/' "$T/plate" > "$T/pvec"
awk -F, 'NR == FNR { for (j = 1; j <= NF; j++) r[FNR - 1, j] = $j; next }
	{ a = FNR == 1 ? 3 : FNR == 2 ? 5 : 7; b = FNR == 3 ? 9 : a + 3
	  for (j = 1; j <= NF; j++) { m = 0; for (i = a; i < b; i++) m += r[i, j]
	  m /= b - a; d = m - $j; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } }
	END { exit bad || FNR != 3 }' "$T/rows" "$T/pvec"
t_eq "late with a prompt: means of the windows' rows after the prompt" "$?" 0
t_eq "late with a prompt: spans of the text" \
	"$(sed 's/.*"span":\(\[[0-9,]*\]\).*/\1/' "$T/plate" | tr '\n' ' ')" "[0,14] [10,23] [21,28] "
emb-tokenize -m "$C" --prompt "query: " "$T/p.jsonl" | emb-encode -m "$C" |
	emb-pool -m "$C" --chunk 3 --overlap 1 --late > "$T/plate2"
t_ok "late with a prompt through emb-pool: the same bytes" cmp -s "$T/plate" "$T/plate2"

# a suffix-only post-processor (</s>) and Dense + Normalize modules:
# late windows are the model's own pooling of the windows' rows
G=$(t_fixture gemma-embed-tiny)
emb-tokenize -m "$G" --chunk 3 --overlap 1 "$T/p.jsonl" > "$T/g.tok"
t_eq "suffix only: content + </s>, no prefix" \
	"$(sed 's/.*"input_ids":\(\[[0-9,]*\]\).*/\1/' "$T/g.tok" | tr '\n' ' ')" \
	"[21820,600,1148,1] [1148,296,13,1] [13,1499,1] "
emb-encode -m "$G" "$T/p.jsonl" |
	sed 's/.*"token_embeddings":\[\[\(.*\)\]\].*/\1/; s/\],\[/\n/g' > "$T/grows"
awk '{ r[NR - 1] = $0 } END { split("0 3 2 5 4 6", w, " ")
	for (j = 1; j < 6; j += 2) { printf "{\"token_embeddings\":[["
	  for (i = w[j]; i < w[j + 1]; i++) printf "%s%s", (i > w[j] ? "],[" : ""), r[i]
	  print "]]}" } }' "$T/grows" | emb-pool -m "$G" --mode mean > "$T/gwin"
emb-encode -m "$G" --pool --chunk 3 --overlap 1 --late "$T/p.jsonl" > "$T/glate"
t_ok "late, Dense + Normalize: emb-pool --mode mean of each window's rows" \
	emb-validate --quiet --atol 1e-6 --field embedding "$T/gwin" "$T/glate"
# the windows' Dense products run together, each row the bits it has
# alone: the same numbers as emb-pool's one vector at a time
sed 's/.*"embedding":\(\[[^]]*\]\).*/\1/' "$T/gwin" > "$T/gwin.v"
sed 's/.*"embedding":\(\[[^]]*\]\).*/\1/' "$T/glate" > "$T/glate.v"
t_lines "late, Dense + Normalize: three windows" 3 "$T/glate.v"
t_ok "late, Dense + Normalize: the windows' vectors have emb-pool's bits" \
	cmp -s "$T/gwin.v" "$T/glate.v"

# --- pairs, empty texts, bad records --------------------------------------
printf '{"id":1,"text":"a b","text_pair":"c"}\n{"id":2,"text":""}\n' > "$T/odd.jsonl"
emb-tokenize -m "$M" --chunk 4 --errors=emit "$T/odd.jsonl" > "$T/odd.out" 2> "$T/err"; s=$?
t_eq "a pair: exit 1" "$s" 1
t_grep "a pair: not cut, named" "odd.jsonl:1): field 'text_pair': pairs are not cut" "$T/err"
t_grep "a pair: --errors=emit names its id" '^{"id":1,"error":' "$T/odd.out"
t_grep "empty text: one window of the specials" '^{"id":2,"text":"","chunk":0,"chunks":1,"span":\[0,0\],"input_ids":\[101,102\]' "$T/odd.out"
printf '{"id":2,"text":""}\n{"id":3,"text":"ok"}\n' > "$T/empty.jsonl"
emb-encode -m "$C" --pool --chunk 4 --late "$T/empty.jsonl" > "$T/e.out" 2> "$T/err"; s=$?
t_eq "late, empty text: exit 1" "$s" 1
t_grep "late, empty text: nothing to pool" "empty.jsonl:1): field 'text' has no tokens" "$T/err"
t_lines "late, empty text: the next record still comes" 1 "$T/e.out"
printf '{"id":4}\n' | emb-encode -m "$M" --pool --chunk 4 > /dev/null 2> "$T/err"; s=$?
t_eq "no text: exit 1" "$s" 1
t_grep "no text: named" "missing field 'text'" "$T/err"

# a document with members named as a window's: the window's replace them,
# once each, in the window's order; the rest pass through in their order
printf '%s\n' '{"id":"h","chunk":99,"chunks":7,"span":[1,2],"input_ids":[5,6],"token_type_ids":[0,0],"tokens":["a"],"prompt_length":3,"truncated":1,"offsets":[[0,1]],"keep":{"a":[1]},"text":"alpha beta gamma delta epsilon zeta"}' > "$T/named.jsonl"
emb-tokenize -m "$M" --chunk 4 --overlap 1 "$T/named.jsonl" > "$T/named.out"
t_eq "window members replace the document's of the same names" "$(head -n 1 "$T/named.out")" \
	'{"id":"h","keep":{"a":[1]},"text":"alpha beta gamma delta","chunk":0,"chunks":2,"span":[0,22],"input_ids":[101,6541,8247,13091,7160,102],"token_type_ids":[0,0,0,0,0,0]}'
emb-encode -m "$M" --pool --chunk 4 --overlap 1 --fields id,chunk,span,input_ids "$T/named.jsonl" > "$T/named.enc"
t_eq "emb-encode: the window's members, --fields applied" "$(cat "$T/named.enc")" \
	'{"id":"h","chunk":0,"span":[0,22],"input_ids":[101,6541,8247,13091,7160,102]}
{"id":"h","chunk":1,"span":[17,35],"input_ids":[101,7160,28038,23870,102]}'
# the document's attention_mask is checked against each window's tokens
printf '%s\n' '{"id":"m","attention_mask":[1,1,1,0,0],"text":"alpha beta gamma delta"}' |
	emb-encode -m "$M" --pool --chunk 4 > "$T/mask.out" 2> "$T/err"; s=$?
t_eq "a document's attention_mask of another length: exit 1, no record" "$s$(cat "$T/mask.out")" 1
t_grep "a document's attention_mask of another length: named" "field 'attention_mask' has 5 values, 'input_ids' has 6" "$T/err"

# --- bad options: one line, exit 2 ------------------------------------------
badopt() {
	desc=$1; shift
	"$@" < /dev/null > /dev/null 2> "$T/err"; s=$?
	t_eq "$desc: exit 2" "$s" 2
	t_grep "$desc: one-line error" "^$1: error: " "$T/err"
}
badopt "--chunk 0" emb-tokenize -m "$M" --chunk 0
badopt "--chunk -4" emb-tokenize -m "$M" --chunk -4
badopt "--chunk x" emb-encode -m "$M" --chunk x
badopt "--overlap = W" emb-tokenize -m "$M" --chunk 8 --overlap 8
badopt "--overlap > W" emb-encode -m "$M" --pool --chunk 8 --overlap 9
badopt "--overlap without --chunk" emb-tokenize -m "$M" --overlap 2
badopt "--late without --chunk" emb-encode -m "$M" --pool --late
badopt "--late without --pool" emb-encode -m "$C" --chunk 8 --late
badopt "--late --pool=cls" emb-encode -m "$C" --pool=cls --chunk 8 --late
badopt "emb-tokenize --late" emb-tokenize -m "$M" --chunk 8 --late
badopt "emb-pool --chunk without --late" emb-pool -m "$C" --chunk 8
badopt "emb-pool --late without -m" emb-pool --chunk 8 --late
badopt "windows longer than the maximum length" emb-tokenize -m "$M" --chunk 255
t_grep "too long: the maximum named" "maximum length 256" "$T/err"
emb-tokenize -m "$M" --chunk 254 < /dev/null; t_eq "--chunk 254 + 2 specials fits 256" "$?" 0

# --- one vector per document -----------------------------------------------
emb-pool --group-by id "$T/enc" > "$T/doc" 2> "$T/err"; s=$?
t_eq "--group-by id: exit 0" "$s$(cat "$T/err")" 0
t_lines "--group-by id: one record per document" 24 "$T/doc"
t_eq "--group-by id: chunks count the windows" \
	"$(sed 's/.*"chunks":\([0-9]*\).*/\1/' "$T/doc" | awk '{ n += $1 } END { print n }')" 246
sed 's/.*"embedding":\[\([^]]*\)\].*/\1/' "$T/doc" |
	awk -F, '{ s = 0; for (i = 1; i <= NF; i++) s += $i * $i; d = s - 1; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } END { exit bad }'
t_eq "--group-by id: unit vectors" "$?" 0
t_nogrep "--group-by: no span or chunk left" '"span"\|"chunk":' "$T/doc"
# by hand: the mean of two windows, renormalized
printf '{"id":"a","chunk":0,"embedding":[1,0]}\n{"id":"a","chunk":1,"embedding":[0,3]}\n{"id":"b","embedding":[0,-2]}\n' > "$T/g.jsonl"
emb-pool --group-by id "$T/g.jsonl" > "$T/g.out"
t_eq "--group-by: mean then L2-normalize, consecutive runs" "$(cat "$T/g.out")" \
	'{"id":"a","chunks":2,"embedding":[0.31622776,0.94868326]}
{"id":"b","chunks":1,"embedding":[0,-1]}'
printf '{"id":"a","embedding":[1,0]}\n{"x":1,"embedding":[1]}\n' | emb-pool --group-by id > /dev/null 2> "$T/err"; s=$?
t_eq "--group-by: a record without the field: exit 1" "$s" 1
t_grep "--group-by: missing field named" "missing field 'id' (--group-by)" "$T/err"
