# 06-harness.sh - the assertions of test/cli/lib.sh can fail: each helper
# is run on a planted case that must give "not ok" (and on a good one that
# must give "ok"), in a subshell whose output is kept out of this test's
# own counts; a skip is "skip - ...", never "ok".
T=$(t_tmpdir 06-harness)
printf 'one\ntwo\nthree\n' > "$T/three"

# plant NAME HELPER ARGS...: the helper's one line of output, as a word
plant() {
	n=$1; shift
	( "$@" ) > "$T/$n.out" 2> "$T/$n.err"
	case $(head -n 1 "$T/$n.out") in
	"not ok - "*) echo fails ;;
	"ok - "*) echo passes ;;
	"skip - "*) echo skips ;;
	*) echo "says '$(head -c 80 "$T/$n.out")'" ;;
	esac
}

t_eq "t_ok: a command exiting 1 fails" "$(plant ok1 t_ok d false)" fails
t_eq "t_ok: a command exiting 0 passes" "$(plant ok2 t_ok d true)" passes
t_eq "t_eq: different strings fail" "$(plant eq1 t_eq d a b)" fails
t_eq "t_eq: an empty string against a value fails" "$(plant eq2 t_eq d '' 0)" fails
t_eq "t_status: exit 2 where 3 is wanted fails" "$(plant st1 t_status d 3 sh -c 'exit 2')" fails
t_eq "t_status: exit 0 where 1 is wanted fails" "$(plant st2 t_status d 1 true)" fails
t_eq "t_status: the wanted exit passes" "$(plant st3 t_status d 3 sh -c 'exit 3')" passes
t_eq "t_grep: a pattern not in the file fails" "$(plant gr1 t_grep d four "$T/three")" fails
t_eq "t_grep: a missing file fails" "$(plant gr2 t_grep d one "$T/none")" fails
t_eq "t_grep: a pattern in the file passes" "$(plant gr3 t_grep d '^two$' "$T/three")" passes
t_eq "t_nogrep: a pattern in the file fails" "$(plant ng1 t_nogrep d two "$T/three")" fails
t_eq "t_nogrep: a missing file fails" "$(plant ng2 t_nogrep d four "$T/none")" fails
t_eq "t_nogrep: a directory fails" "$(plant ng3 t_nogrep d four "$T")" fails
t_eq "t_nogrep: a pattern not in the file passes" "$(plant ng4 t_nogrep d four "$T/three")" passes
t_eq "t_lines: a wrong count fails" "$(plant li1 t_lines d 2 "$T/three")" fails
t_eq "t_lines: a missing file fails" "$(plant li2 t_lines d 0 "$T/none")" fails
t_eq "t_lines: the right count passes" "$(plant li3 t_lines d 3 "$T/three")" passes
t_eq "t_skip: says skip, not ok" "$(plant sk1 t_skip d 'no tool here')" skips
t_grep "t_skip: gives the reason" "^skip - d: no tool here$" "$T/sk1.out"
t_grep "a failure says what it got" "got:  a" "$T/eq1.out"

# run-checks counts: a skip, hand-written or not, is no pass
printf 'ok - a\nok - b # skip no tool\nskip - c: no tool\nnot ok - d\n' > "$T/log"
t_eq "run-checks: passes counted without skips" \
	"$(grep '^ok ' "$T/log" | grep -c -v '#[[:space:]]*[Ss][Kk][Ii][Pp]')" 1
t_eq "run-checks: both kinds of skip counted as skips" \
	"$(grep -c '^skip \|^ok .*#[[:space:]]*[Ss][Kk][Ii][Pp]' "$T/log")" 2
t_ok "run-checks counts with those expressions" \
	grep -q "grep '^ok ' \"\$log\" | grep -c -v '#\[\[:space:\]\]\*\[Ss\]\[Kk\]\[Ii\]\[Pp\]'" "$EMB_TOP/test/run-checks"
# no test writes a skip by hand
grep -n 'echo "ok - .*# *skip' "$EMB_TOP"/test/cli/[0-9]*.sh > "$T/hand" || :
t_lines "no hand-written TAP skip lines in test/cli" 0 "$T/hand"
