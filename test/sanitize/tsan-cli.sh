# test/sanitize/tsan-cli.sh - the thread pool under ThreadSanitizer, run
# by test/sanitize/check-tsan in the TSan build (make check-tsan);
# sourced by test/run-checks like a test/cli test.
# 1. test/sanitize/threadpool-run (test/unit/test_threadpool.c as a
#    program): its "ok -"/"not ok -" lines count as checks here.
# 2. emb-encode on a fixture of every architecture (BERT fp32, W8, W8A8,
#    SPLADE head; RoBERTa, DistilBERT, MPNet, NomicBERT, ModernBERT,
#    Qwen3, Gemma3), emb-search (each precision, rescoring) and emb-rerank
#    at -j 2 and -j 4 (4 threads on 2 cores
#    is oversubscription: more interleavings, same answer) must exit 0
#    with nothing on stderr and write the same bytes as -j 1.
# Any TSan report fails the check (run-checks scans the reports after
# this file).
T=$(t_tmpdir tsan-cli)
# bert-tiny-cls-bf16, not the full-width minilm-l6: under TSan a model
# load costs seconds per 100 MB of weights and every case here loads
# one three times; the thread splits are the same code at any width
F=$(t_fixture bert-tiny-cls-bf16)
CE=$(t_fixture ce-minilm-l6)
SP=$(t_fixture splade-tiny)
C="$D/corpus/texts.jsonl"
G="$D/fixtures/ce-minilm-l6/golden.jsonl"
head -24 "$C" > "$T/in.jsonl"

# tsan_same NAME CMD...: CMD at -j 1, 2 and 4 (appended); -j 2 and -j 4
# exit 0, quiet, and byte-identical to -j 1
tsan_same() {
	n=$1; shift
	"$@" -j 1 > "$T/$n.j1" 2> "$T/$n.e1"
	t_eq "$n -j 1: exit 0, quiet" "$?$(cat "$T/$n.e1")" 0
	t_ok "$n -j 1: some output" test -s "$T/$n.j1"
	for j in 2 4; do
		"$@" -j $j > "$T/$n.j$j" 2> "$T/$n.e$j"
		t_eq "$n -j $j: exit 0, quiet" "$?$(cat "$T/$n.e$j")" 0
		t_ok "$n -j $j == -j 1, bit for bit" cmp -s "$T/$n.j1" "$T/$n.j$j"
	done
}

if [ -x "$EMB_TOP/test/sanitize/threadpool-run" ]; then
	"$EMB_TOP/test/sanitize/threadpool-run" > "$T/tp.out" 2> "$T/tp.err"
	s=$?
	cat "$T/tp.out"
	t_eq "threadpool-run: exit 0, quiet" "$s$(cat "$T/tp.err")" 0
	t_grep "threadpool-run: every test ran" '^[1-9][0-9]* tests, 0 failed$' "$T/tp.out"
else
	t_fail "test/sanitize/threadpool-run is built (make check-tsan builds it)"
fi

tsan_same encode-pool emb-encode -m "$F" --pool --batch-tokens 256 "$T/in.jsonl"
head -6 "$T/in.jsonl" > "$T/in6.jsonl"
tsan_same encode-tokens emb-encode -m "$F" "$T/in6.jsonl"
tsan_same encode-w8 emb-encode -m "$F" --pool --weights int8 "$T/in.jsonl"
tsan_same encode-w8a8 emb-encode -m "$F" --pool --weights int8 --act int8 "$T/in.jsonl"
tsan_same encode-splade emb-encode -m "$SP" --pool=splade "$T/in6.jsonl"
for f in roberta-tiny distilbert-tiny mpnet-tiny coderank-tiny modernbert-tiny \
	qwen3-tiny gemma-embed-tiny; do
	tsan_same "encode-$f" emb-encode -m "$(t_fixture $f)" --pool "$T/in6.jsonl"
done
emb-encode -m "$F" --pool "$T/in.jsonl" > "$T/emb.jsonl"
emb-search --build "$T/s.idx" --precision f32,f16,int8,binary < "$T/emb.jsonl"
for a in f32 f16 int8 binary; do
	tsan_same "search-$a" emb-search --index "$T/s.idx" --search $a -k 5 "$T/emb.jsonl"
done
tsan_same search-rescore emb-search --index "$T/s.idx" --search binary --rescore 3 -k 4 "$T/emb.jsonl"
head -12 "$G" > "$T/pairs.jsonl"
tsan_same rerank emb-rerank -m "$CE" --logits "$T/pairs.jsonl"
# a pipeline: three threaded processes at once
emb-tokenize -m "$F" "$T/in.jsonl" | emb-encode -m "$F" -j 4 |
	emb-pool -m "$F" > "$T/pipe" 2> "$T/pipe.err"
t_eq "tokenize | encode -j 4 | pool: quiet" "$(cat "$T/pipe.err")" ""
t_ok "tokenize | encode -j 4 | pool == encode --pool -j 1" \
	cmp -s "$T/pipe" "$T/encode-pool.j1"
