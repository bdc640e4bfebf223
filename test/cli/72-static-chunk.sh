# 72-static-chunk.sh - emb-encode --chunk W --overlap K --pool on static
# embedding models: long documents (README's paragraphs), a short one and
# an empty one cut into windows of the whole text's tokens, one vector
# each; against model2vec itself where the reference environment is
# installed (test/static-windows.py: the windows are model2vec's tokens
# cut at stride W - K, each vector within 1e-5 of model2vec's mean of
# them); every vector equal to emb-encode --pool on the window's
# input_ids; --late refused with the reason.
T=$(t_tmpdir 72-static-chunk)
S=$D/static

fixture() { t_static_fixture "$1" "$T"; }
# six documents of README's long paragraphs, a short and an empty text
awk -v RS= 'length($0) > 200 { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, " ");
	gsub(/\n/, "\\n"); d = int(n / 8); n++; if (d < 6) t[d] = t[d] (t[d] == "" ? "" : "\\n\\n") $0 }
	END { for (i = 0; i < 6; i++) printf "{\"id\":\"d%d\",\"text\":\"%s\"}\n", i, t[i] }' \
	"$EMB_TOP/README.md" > "$T/docs.jsonl"
printf '{"id":"short","text":"hello"}\n{"id":"empty","text":""}\n' >> "$T/docs.jsonl"
t_lines "the documents" 8 "$T/docs.jsonl"
py=$(t_refs_python model2vec) || { why=$py; py=; }

for f in wordpiece-f32 bpe-vq-f16 unigram-int8 m2v-minilm-l6 st-wordpiece; do
	M=$(fixture $f)
	emb-encode -m "$M" --pool --chunk 32 --overlap 8 --max-length 64 \
		"$T/docs.jsonl" > "$T/$f.win" 2> "$T/err"; s=$?
	t_eq "$f --chunk 32 --overlap 8: exit 0, quiet" "$s$(cat "$T/err")" 0
	n=$(wc -l < "$T/$f.win")
	t_ok "$f: long documents give many windows ($n)" test "$n" -gt 100
	t_grep "$f: windows carry chunk, chunks, span and input_ids" \
		'"chunk":1,"chunks":[0-9]*,"span":\[[0-9]*,[0-9]*\],"input_ids"' "$T/$f.win"
	# the same vectors from the windows' ids alone
	sed 's/,"embedding":.*/}/; s/"text":"[^"]*\(\\"[^"]*\)*",//' "$T/$f.win" > "$T/$f.ids"
	emb-encode -m "$M" --pool "$T/$f.ids" | sed 's/.*"embedding"/"embedding"/' > "$T/$f.a"
	sed 's/.*"embedding"/"embedding"/' "$T/$f.win" > "$T/$f.b"
	t_ok "$f: each window's vector is --pool on its input_ids" cmp -s "$T/$f.a" "$T/$f.b"
	case $f in st-*) continue ;; esac
	t_refs_check "$f: model2vec's tokens in windows, its mean within 1e-5" \
		"$py" "$why" "$EMB_TOP/test/static-windows.py" "$M" 32 8 \
		"$T/docs.jsonl" "$T/$f.win"
done

M=$T/m2v-minilm-l6
t_status "--late: a usage error" 2 emb-encode -m "$M" --pool --chunk 32 --late "$T/docs.jsonl" 2> "$T/err"
t_grep "... saying why" 'do not depend on their context' "$T/err"

# a static model adds no special tokens: windows of W tokens fit a
# maximum length of W (not W + 2), and the bound names 0 extra tokens
emb-encode -m "$M" --pool --chunk 32 --overlap 8 --max-length 32 \
	"$T/docs.jsonl" > "$T/ml32.win" 2> "$T/err"; s=$?
t_eq "--chunk 32 --max-length 32: exit 0, quiet" "$s$(cat "$T/err")" 0
t_eq "... the longest window holds 32 ids" "$(sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' "$T/ml32.win" |
	awk -F, '{ if (NF > m) m = NF } END { print m + 0 }')" 32
t_ok "... the same windows as with --max-length 64" \
	cmp -s "$T/ml32.win" "$T/m2v-minilm-l6.win"
t_status "--chunk 32 --max-length 31: a usage error" 2 \
	emb-encode -m "$M" --pool --chunk 32 --max-length 31 "$T/docs.jsonl" 2> "$T/err"
t_grep "... naming the 0 special tokens" 'windows of 32 tokens with the 0 special' "$T/err"
