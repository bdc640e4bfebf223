# 25-fuzz-replay.sh - every fuzz target (test/fuzz/fuzz_*.c) over its
# committed seeds (test/fuzz/corpus/TARGET) and regression inputs
# (test/fuzz/regress/TARGET: each a crash `make fuzz` once found), built
# without libFuzzer (test/fuzz/replay; under ASan/UBSan in
# make check-sanitize).  Each input must run to the end: a crash, a
# sanitizer report or a broken invariant aborts the replay.
T=$(t_tmpdir fuzz-replay)
R="$EMB_TOP/test/fuzz/replay"
t_ok "fuzz replay driver is built" test -x "$R"

# one replay per target, so a failure names its target and last input
total=0
for f in "$EMB_TOP"/test/fuzz/fuzz_*.c; do
	t=$(basename "$f" .c)
	t=${t#fuzz_}
	want=0
	for d in corpus regress; do
		[ -d "$EMB_TOP/test/fuzz/$d/$t" ] || continue
		n=$(find "$EMB_TOP/test/fuzz/$d/$t" -type f ! -name '.*' | wc -l)
		want=$((want + n))
	done
	total=$((total + want))
	set --
	for d in corpus regress; do
		[ -d "$EMB_TOP/test/fuzz/$d/$t" ] && set -- "$@" "$EMB_TOP/test/fuzz/$d/$t"
	done
	"$R" -v "$t" "$@" > "$T/$t.out" 2> "$T/$t.err"
	s=$?
	if [ "$s" -eq 0 ]; then
		t_pass "fuzz replay $t: exit 0"
	else
		t_fail "fuzz replay $t: exit 0" "exit $s; last input and report:" \
			"$(grep '^replay: ' "$T/$t.err" | tail -n 1)" \
			"$(grep -v '^replay: ' "$T/$t.err" | head -n 20)"
	fi
	t_eq "fuzz replay $t: all $want inputs ran" "$(cat "$T/$t.out")" \
		"replay $t: $want inputs"
	t_ok "fuzz replay $t: has seeds" test "$want" -gt 0
done
t_ok "fuzz replay: 8 or more targets" test "$(ls "$EMB_TOP"/test/fuzz/fuzz_*.c | wc -l)" -ge 8

# the default mode (all targets, as documented) agrees
"$R" > "$T/all.out" 2> "$T/all.err"
t_eq "fuzz replay (all targets): exit 0" "$?" 0
t_eq "fuzz replay (all targets): every input ran" "$(tail -n 1 "$T/all.out")" \
	"replay: $total inputs, $(ls "$EMB_TOP"/test/fuzz/fuzz_*.c | wc -l | tr -d ' ') targets"
