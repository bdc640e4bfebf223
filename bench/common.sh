# bench/common.sh - sourced by scripts/bench* (POSIX sh): the reference
# venv the peers run in, the benchmark programs, and the loud skip of a
# peer that is not installed.  The caller sets ROOT (the top of the tree)
# and defines say().
#
#   REFS, RPY   the venv (${EMB_REFS:-$ROOT/build/refs}, made by
#               scripts/install-refs --full) and its python
#   BIN         the benchmark programs (bench/*.c, built by make)
#   peer NAME MODULE...   0 when RPY imports every MODULE; else one line
#               "skip NAME: ..." saying what is missing and what to run
#   smoke_note  the line a --smoke run prints first
REFS=${EMB_REFS:-$ROOT/build/refs}
RPY=$REFS/bin/python
BIN=$ROOT/bench/work/bin

peer() {
	_pn=$1
	shift
	if [ ! -x "$RPY" ]; then
		say "skip $_pn: no reference venv at $REFS (run scripts/install-refs --full)"
		return 1
	fi
	_pm=$("$RPY" -c '
import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@" 2>&1) ||
		_pm="$* (the venv python fails: $_pm)"
	if [ -n "$_pm" ]; then
		say "skip $_pn: python module(s) $_pm missing from $REFS (run scripts/install-refs --full)"
		return 1
	fi
	return 0
}

# build BUILD-TARGET...: the library, the programs and bench/work/bin
build() {
	[ -f "$ROOT/config.mk" ] || (cd "$ROOT" && ./configure >/dev/null)
	make -s -C "$ROOT" all bench-progs "$@" >&2
}

smoke_note() {
	say "smoke run: tiny sizes, one repetition, nothing appended to bench/RESULTS.md; its figures are no measurement"
}
