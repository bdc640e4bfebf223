# 80-bad-input.sh - the bad-input matrix: every case of
# test/bad-input/cases (inputs made by test/bad-input/mkcase) gets its exact
# exit status and its one-line message naming file, line and field; stdout
# only ever holds whole lines of complete JSON; a record error leaves
# exactly the other records on stdout (and with --errors=emit one line per
# input line); a sample runs under valgrind (no leak, no invalid access).
# The cases and their fields are described at the top of the table.
T=$(t_tmpdir 80-bad-input)
F=$(t_fixture bert-tiny-cls-bf16)
R=$(t_fixture ce-minilm-l6)
MK="$EMB_TOP/test/bad-input/mkcase"
export EMB_TOP
# the interpreter itself, once (a version-manager shim costs a lot per call)
PY=$(python3 -c 'import sys; print(sys.executable)')

# whole JSON lines: every line of FILE ends in a newline and parses
# (python3's json, not ours) as one JSON object
wholejson() {
	"$PY" -c '
import json, sys
b = open(sys.argv[1], "rb").read()
if b and not b.endswith(b"\n"):
    sys.exit("partial last line")
for i, l in enumerate(b.split(b"\n")[:-1], 1):
    if not isinstance(json.loads(l), dict):
        sys.exit("line %d is not an object" % i)
' "$1"
}

# nlines FILE: its lines, a last one without a newline included (wc -l
# counts newlines; grep -c sees NUL bytes as line ends in a binary file)
nlines() {
	"$PY" -c '
import sys
b = open(sys.argv[1], "rb").read()
print(b.count(b"\n") + (1 if b and not b.endswith(b"\n") else 0))' "$1"
}
# errline FILE N: the "error" member of line N of FILE, decoded
errline() {
	"$PY" -c '
import json, sys
l = open(sys.argv[1], "rb").read().split(b"\n")[int(sys.argv[2]) - 1]
print(json.loads(l).get("error", "(no error member)"))' "$1" "$2"
}

# valgrind only on a plain build (a sanitizer runtime cannot run under it)
vg=
if command -v valgrind > /dev/null 2>&1 &&
	! nm "$(command -v emb-encode)" 2> /dev/null | grep -q '__[at]san_init'; then
	vg=valgrind
fi

ncase=0
while IFS= read -r line; do
	case $line in ''|'#'*) continue ;; esac
	# NAME | KIND | COMMAND | EXIT | MESSAGE [| vg]
	name=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $1}')
	kind=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $2}')
	cmd=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $3}')
	want=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $4}')
	msg=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $5}')
	flag=$(printf '%s\n' "$line" | awk -F ' [|] ' '{print $6}')
	# EMB_BAD_CASES=REGEX: only the cases whose name matches
	if [ -n "${EMB_BAD_CASES:-}" ] && ! printf '%s\n' "$name" | grep -q "$EMB_BAD_CASES"; then
		continue
	fi
	ncase=$((ncase + 1))
	C="$T/$name"
	if ! "$PY" "$MK" "$kind" "$C" "$F" "$D" 2> "$T/mkerr"; then
		t_fail "$name: mkcase $kind" "$(cat "$T/mkerr")"
		continue
	fi
	M="$C/m"
	[ -d "$M" ] || M=$F
	IN="$C/in.jsonl"
	# the program (after any "env VAR=..."), and how diagnostics name $IN
	prog=$(set -- $cmd; while [ "$1" = env ] || [ "${1#*=}" != "$1" ]; do shift; done; basename "$1")
	case $cmd in *'$IN'*) inname=$IN ;; *) inname='<stdin>' ;; esac
	# $M $F $C in MESSAGE are the paths (no other expansion)
	pat=$(printf '%s\n' "$msg" | sed "s|\\\$M|$M|g; s|\\\$F|$F|g; s|\\\$C|$C|g")

	eval "$cmd" < "$IN" > "$C/out" 2> "$C/err"; s=$?
	t_eq "$name: exit $want" "$s" "$want"
	t_ok "$name: stdout is whole JSON lines" wholejson "$C/out"
	if [ "$want" -ge 2 ]; then
		# a load or usage error: one line (a usage error of an emb
		# program: and the Try '... --help' hint), nothing on stdout
		grep -v "^Try '$prog --help' for more information\.\$" "$C/err" > "$C/err1"
		t_lines "$name: one line on stderr" 1 "$C/err1"
		t_lines "$name: nothing on stdout" 0 "$C/out"
		[ "$msg" = - ] || t_grep "$name: message" "^$prog: \(error: \)\{0,1\}$pat" "$C/err"
	elif [ "$msg" = - ]; then
		t_eq "$name: no diagnostic" "$(cat "$C/err")" ""
		t_eq "$name: one output line per input line" "$(nlines "$C/out")" "$(nlines "$IN")"
	else
		# record errors: one diagnostic per bad line, naming the line
		nbad=$(nlines "$C/bad")
		t_lines "$name: one diagnostic per bad line" "$nbad" "$C/err"
		t_grep "$name: message" "^$prog: error (at $inname:$(head -n 1 "$C/bad")): $pat" "$C/err"
		k=0
		for n in $(cat "$C/bad"); do
			k=$((k + 1))
			sed -n "${k}p" "$C/err" | grep -q "^$prog: error (at $inname:$n): " ||
				t_fail "$name: diagnostic $k names line $n" "$(sed -n "${k}p" "$C/err" | cut -c1-200)"
		done
		# stdout: exactly the records of the input without its bad lines
		IN="$C/good.jsonl"
		eval "$cmd" < "$IN" > "$C/good.out" 2> /dev/null
		t_ok "$name: stdout is exactly the other records" cmp -s "$C/out" "$C/good.out"
		# --errors=emit: one line per input line, the error ones in place
		# (not rerun for the big cases: the 50-65 MB inputs)
		IN="$C/in.jsonl"
		if [ "$flag" != big ]; then
			eval "$cmd --errors=emit" < "$IN" > "$C/emit" 2> /dev/null; s=$?
			t_eq "$name: --errors=emit: exit $want" "$s" "$want"
			t_eq "$name: --errors=emit: one line per input line" \
				"$(nlines "$C/emit")" "$(nlines "$IN")"
			t_ok "$name: --errors=emit: whole JSON lines" wholejson "$C/emit"
			errline "$C/emit" "$(head -n 1 "$C/bad")" > "$C/emit.bad" 2>&1
			t_grep "$name: --errors=emit: error record in place" "^$pat" "$C/emit.bad"
		fi
	fi
	if [ "$flag" = vg ]; then
		if [ -n "$vg" ]; then
			eval "valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 $cmd" \
				< "$IN" > /dev/null 2> "$C/vg"; s=$?
			t_eq "$name: valgrind: exit $want, no error or leak" "$s" "$want"
		else
			echo "# $name: valgrind unavailable (or a sanitizer build): not run"
		fi
	fi
	rm -rf "$C/m" "$C/in.jsonl" "$C/good.jsonl" "$C/out" "$C/good.out" "$C/emit"
done < "$EMB_TOP/test/bad-input/cases"
[ -n "${EMB_BAD_CASES:-}" ] ||
	t_ok "the matrix has at least 40 cases ($ncase)" test "$ncase" -ge 40
