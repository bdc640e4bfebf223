# test/cli/lib.sh - assertions for CLI tests (sourced by test/run-checks)
# Every assertion prints "ok - DESC" or "not ok - DESC" and records the
# result.  Data: $EMB_TOP/test/data; scratch: $EMB_TMP (one dir per test).
D="$EMB_TOP/test/data"

t_pass() { echo "ok - $1"; }
t_fail() { echo "not ok - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

# t_skip DESC REASON: a check that cannot run here says so ("skip - ...",
# counted apart from passes and failures)
t_skip() { echo "skip - $1: $2"; }
# t_ok DESC CMD...: CMD must exit 0
t_ok() { d=$1; shift; if "$@"; then t_pass "$d"; else t_fail "$d" "exit $?: $*"; fi; }
# t_status DESC WANT CMD...: CMD must exit WANT
t_status() { d=$1; w=$2; shift 2; "$@"; s=$?; if [ "$s" -eq "$w" ]; then t_pass "$d"; else t_fail "$d" "exit $s, want $w: $*"; fi; }
# t_eq DESC GOT WANT
t_eq() { if [ "$2" = "$3" ]; then t_pass "$1"; else t_fail "$1" "got:  $2" "want: $3"; fi; }
# t_grep DESC PATTERN FILE: FILE has a line matching the basic regex
t_grep() {
	if [ ! -r "$3" ]; then t_fail "$1" "no file $3 to check for '$2'"; return; fi
	if grep -q -- "$2" "$3"; then t_pass "$1"; else t_fail "$1" "no '$2' in $3:" "$(head -c 600 "$3")"; fi
}
# t_nogrep DESC PATTERN FILE: FILE exists and has no line matching it
# (a missing or unreadable FILE, grep's exit 2, is a failure, not a pass)
t_nogrep() {
	if [ ! -f "$3" ] && [ ! -c "$3" ] || [ ! -r "$3" ]; then
		t_fail "$1" "no file $3 to check"; return
	fi
	grep -q -- "$2" "$3"
	case $? in
	0) t_fail "$1" "unexpected '$2' in $3" ;;
	1) t_pass "$1" ;;
	*) t_fail "$1" "grep could not check $3 for '$2'" ;;
	esac
}
# t_lines DESC N FILE: FILE has N lines
t_lines() {
	if [ ! -r "$3" ]; then t_fail "$1" "no file $3 to count"; return; fi
	n=$(wc -l < "$3" | tr -d ' '); t_eq "$1" "$n" "$2"
}
# t_same_at_j DESC STATUS LINES IN DIR PROG ARGS...: PROG -j 1 ARGS...
# and PROG -j 2 ARGS..., stdin IN, exit STATUS with the same LINES
# lines on stderr (left in DIR/err1, DIR/err2)
t_same_at_j() {
	d=$1 st=$2 nl=$3 in=$4 dir=$5 p=$6; shift 6
	"$p" -j 1 "$@" < "$in" > "$dir/out" 2> "$dir/err1"; s1=$?
	"$p" -j 2 "$@" < "$in" > "$dir/out" 2> "$dir/err2"; s2=$?
	t_eq "$d: exit $st with -j 1 and -j 2" "$s1 $s2" "$st $st"
	t_ok "$d: the same message at -j 1 and -j 2" cmp -s "$dir/err1" "$dir/err2"
	t_lines "$d: $nl line(s)" "$nl" "$dir/err2"
}
# a fresh scratch directory for the calling test: t_tmpdir NAME
t_tmpdir() { rm -rf "$EMB_TMP/$1"; mkdir -p "$EMB_TMP/$1"; echo "$EMB_TMP/$1"; }

# t_fixture NAME: materialize test/data/fixtures/NAME into $EMB_TMP/fixtures/NAME
# once per make check (cached by recipe checksum) and print the directory
t_fixture() {
	fd="$EMB_TMP/fixtures/$1"
	if [ ! -f "$fd/.done" ] || ! cmp -s "$fd/.done" "$D/fixtures/$1/recipe.json"; then
		rm -rf "$fd"; mkdir -p "$fd"
		emb-synth "$D/fixtures/$1/recipe.json" "$fd" --root "$D" >&2 || return 1
		cp "$D/fixtures/$1/recipe.json" "$fd/.done"
	fi
	echo "$fd"
}

# The reference environment (scripts/install-refs; $EMB_REFS, default
# build/refs of this tree): t_refs_python MODULE... prints its python
# when it imports every MODULE, else prints why not and returns 1
EMB_REFS=${EMB_REFS:-$EMB_TOP/build/refs}
t_refs_python() {
	if [ ! -x "$EMB_REFS/bin/python" ]; then
		echo "no reference environment in $EMB_REFS (run scripts/install-refs)"
		return 1
	fi
	for m in "$@"; do
		if ! "$EMB_REFS/bin/python" -c "import $m" 2>/dev/null; then
			echo "$EMB_REFS has no Python module '$m' (run scripts/install-refs)"
			return 1
		fi
	done
	echo "$EMB_REFS/bin/python"
}
# t_refs_check DESC PYTHON WHY SCRIPT ARG...: the reference SCRIPT run
# by PYTHON (from t_refs_python) passes DESC, with its last line; a
# failure shows its first lines; no PYTHON: DESC skipped for WHY
t_refs_check() {
	_d=$1 _py=$2 _why=$3
	shift 3
	if [ -z "$_py" ]; then
		t_skip "$_d" "$_why"
		return
	fi
	_o=$(mktemp "$EMB_TMP/refs-check.XXXXXX")
	if "$_py" "$@" > "$_o" 2>&1; then
		t_pass "$_d ($(tail -1 "$_o"))"
	else
		t_fail "$_d" "$(head -5 "$_o")"
	fi
	rm -f "$_o"
}
# t_static_fixture NAME DIR: a copy of test/data/static/NAME in DIR with
# its tokenizer.json (the base model's, named by its BASE files); prints
# the copy's path
t_static_fixture() {
	rm -rf "$2/$1"
	cp -R "$D/static/$1" "$2/$1"
	find "$2/$1" -name BASE | while read -r b; do
		cp "$EMB_TOP/$(cat "$b")" "$(dirname "$b")/tokenizer.json"
	done
	echo "$2/$1"
}
# t_real_model NAME: the folder of the real checkpoint NAME (scripts/real-model),
# else prints why not and returns 1
t_real_model() { EMB_REFS=$EMB_REFS sh "$EMB_TOP/scripts/real-model" "$1" 2>&1; }
