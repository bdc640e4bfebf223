# 26-tokenize-scaling.sh - tokenizing is linear in the text length: a
# text 8 times longer may not take more than about 8 times longer (a
# quadratic step, like the Split regex re-checking the whole rest of the
# text as UTF-8 on every match, found while fuzzing, gives 64 times).
# Ratios in the same run, best of 2, so a busy machine does not matter.
T=$(t_tmpdir tokenize-scaling)
mk() {  # mk FILE N UNIT: one record whose text is UNIT repeated to N chars
	python3 -c '
import json, sys
u = sys.argv[2]
print(json.dumps({"text": (u * (int(sys.argv[1]) // len(u) + 1))[:int(sys.argv[1])]}))
' "$2" "$3" > "$1"
}
best() {  # best MODEL FILE: best of 2 wall times in ms
	b=
	for i in 1 2; do
		s=$(date +%s%N)
		emb-tokenize -m "$1" --no-truncate "$2" > /dev/null || return 1
		e=$(( ($(date +%s%N) - s) / 1000000 ))
		if [ -z "$b" ] || [ "$e" -lt "$b" ]; then b=$e; fi
	done
	echo "$b"
}
for c in "bpe-qwen-split:ab cd, ef! " "empty-matches:x y" "uni-punct:a, b. "; do
	m=${c%%:*}
	u=${c#*:}
	mk "$T/short.jsonl" 20000 "$u"
	mk "$T/long.jsonl" 160000 "$u"
	s=$(best "$D/tokenize-synth/$m" "$T/short.jsonl")
	l=$(best "$D/tokenize-synth/$m" "$T/long.jsonl")
	# linear: about 8 (less, with the load time in both); quadratic: ~64
	t_ok "tokenize $m: 8x longer text takes < 24x as long ($s ms, $l ms)" \
		test "$l" -lt $((24 * s))
done

# a Split regex that backtracks catastrophically ("(a+)+$") gives up at
# PCRE2's match limit: the record fails with a message that says so (it
# used to say "out of memory"), quickly, and the next record still runs
mkdir -p "$T/cat"
cp "$EMB_TOP/test/fuzz/regress/tokenizer_json/split-regex-catastrophic-backtracking" \
	"$T/cat/tokenizer.json"
python3 -c 'print("{\"text\": \"" + "a" * 3000 + "b\"}")' > "$T/a.jsonl"
echo '{"text": "b c"}' >> "$T/a.jsonl"
s=$(date +%s)
emb-tokenize -m "$T/cat" "$T/a.jsonl" > "$T/cat.out" 2> "$T/cat.err"
t_eq "catastrophic regex: exit 1 (one bad record)" "$?" 1
t_ok "catastrophic regex: within 30 s" test $(( $(date +%s) - s )) -lt 30
t_grep "catastrophic regex: says why" 'a.jsonl:1): pre-tokenizer failed: out of memory, or a regex exceeded its match limit' "$T/cat.err"
t_lines "catastrophic regex: the other record is tokenized" 1 "$T/cat.out"
