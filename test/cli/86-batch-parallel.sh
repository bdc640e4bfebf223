# 86-batch-parallel.sh - the xargs -P and GNU parallel --pipe --keep-order
# recipes of README.md and emb(7), run as written over 3192 records:
# byte-identical to one emb-encode --pool run; a bad record in the input
# fails each of them (exit non-zero, no vectors.jsonl) instead of leaving
# short output
. "$EMB_TOP/test/cli/batch-lib.sh"
T=$(t_tmpdir 86-batch-parallel)
b_setup
b_recipe xargs "$T/xargs.sh"
b_recipe parallel "$T/parallel.sh"
# record 1000 (the last of the first --pipe block) is bad
sed '1000s/"text": "[^"]*"/"text": 7/' "$B_IN" > "$T/bad.jsonl"

W=$(b_work xargs)
(cd "$W" && b_time "xargs -P 2 recipe" sh "$T/xargs.sh") > "$T/log1" 2>&1; s=$?
t_eq "xargs recipe: exit 0" "$s" 0
grep '^# time' "$T/log1"
b_same "xargs -P 2: vectors.jsonl identical to the single run" "$W/vectors.jsonl"
W=$(b_work xargs-bad)
cp "$T/bad.jsonl" "$W/texts.jsonl"
(cd "$W" && sh "$T/xargs.sh") > "$T/log2" 2>&1; s=$?
t_ok "xargs recipe with a bad record: exit non-zero ($s)" test "$s" -ne 0
t_grep "xargs recipe with a bad record: the record named" "error (at chunks/part-[0-9]*.jsonl:[0-9]*): field 'text' is not a string" "$T/log2"
t_ok "xargs recipe with a bad record: no vectors.jsonl" test ! -e "$W/vectors.jsonl"

if ! command -v parallel > /dev/null 2>&1; then
	b_skip "GNU parallel --pipe --keep-order recipe" "GNU parallel is not installed (scripts/install-deps installs it)"
elif ! parallel --version 2>/dev/null | grep -q '^GNU parallel'; then
	b_skip "GNU parallel --pipe --keep-order recipe" "'parallel' is not GNU parallel (moreutils?)"
else
	W=$(b_work parallel)
	(cd "$W" && b_time "parallel --pipe -j 2 recipe" sh "$T/parallel.sh") > "$T/log3" 2>&1; s=$?
	t_eq "parallel recipe: exit 0" "$s" 0
	grep '^# time' "$T/log3"
	b_same "parallel --pipe --keep-order: vectors.jsonl identical to the single run" "$W/vectors.jsonl"
	t_ok "parallel recipe: no temporary file left" test ! -e "$W/vectors.jsonl.tmp"
	W=$(b_work parallel-bad)
	cp "$T/bad.jsonl" "$W/texts.jsonl"
	(cd "$W" && sh "$T/parallel.sh") > "$T/log4" 2>&1; s=$?
	t_ok "parallel recipe with a bad record: exit non-zero ($s)" test "$s" -ne 0
	t_grep "parallel recipe with a bad record: the record named" "error (at <stdin>:1000): field 'text' is not a string" "$T/log4"
	t_ok "parallel recipe with a bad record: no vectors.jsonl" test ! -e "$W/vectors.jsonl"
	# short output is caught even when every job says it succeeded
	head -n 3000 "$B_REF" > "$T/short.jsonl"
	emb-merge --check "$B_IN" "$T/short.jsonl" 2> "$T/err"; s=$?
	t_eq "emb-merge --check: short output fails" "$s" 1
	t_grep "emb-merge --check: says how short" "short.jsonl: 3000 lines, .*texts.jsonl has $(wc -l < "$B_IN" | tr -d ' ')" "$T/err"
fi
