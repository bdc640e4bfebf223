# test/cli/batch-lib.sh - shared by the batch-job tests (85-88-batch-*.sh):
# the input, the single-run reference, and the recipes taken from the
# docs.  Sourced by a test after lib.sh; not a test itself.
#
# The recipes are run as the README shows them: b_recipe NAME extracts
# the block after "<!-- recipe: NAME -->" in README.md and asserts that
# emb(7) shows the same text after '.\" recipe: NAME'.

export PATH="$EMB_TOP/scripts:$PATH"
# the recipes run as from a shell: not with the make flags of the make
# check around them (-s, -n, a jobserver)
unset MAKEFLAGS MFLAGS MAKELEVEL
B_MODEL_FIXTURE=bert-tiny-cls-bf16

# b_recipe NAME FILE: write recipe NAME to FILE; assert README and emb(7)
# agree
b_recipe() {
	awk -v want="<!-- recipe: $1 -->" '
		$0 == want { on = 1; getline; next }
		on && /^```$/ { exit }
		on { print }' "$EMB_TOP/README.md" > "$2"
	awk -v want=".\\\\\" recipe: $1" '
		$0 == want { on = 1; getline; next }
		on && /^\.Ed$/ { exit }
		on { print }' "$EMB_TOP/man/emb.7" |
		sed 's/\\e/\\/g; s/^\\&//' > "$2.man"
	if [ ! -s "$2" ]; then
		t_fail "recipe $1 is in README.md"
	elif cmp -s "$2" "$2.man"; then
		t_pass "recipe $1: README.md and emb(7) show the same text"
	else
		t_fail "recipe $1: README.md and emb(7) show the same text" \
			"$(diff "$2" "$2.man" | head -n 10)"
	fi
}

# b_setup: $B_IN (texts.jsonl: 3192 records, the corpus six times, or
# EMB_BATCH_COPIES times, with a line number in front) and $B_REF (one
# emb-encode --pool run over it), made once per make check (again when
# the fixture or cmd/emb-encode is newer than it); MODEL and JOBS
# exported as the recipes want
b_setup() {
	MODEL=$(t_fixture "$B_MODEL_FIXTURE") || return 1
	JOBS=2
	export MODEL JOBS
	bd="$EMB_TMP/batch-ref"
	B_IN="$bd/texts.jsonl"
	B_REF="$bd/vectors.jsonl"
	copies=${EMB_BATCH_COPIES:-6}
	case $copies in ''|*[!0-9]*|0) copies=6 ;; esac
	if [ ! -s "$B_REF" ] || [ "$MODEL/.done" -nt "$B_REF" ] ||
	    [ "$EMB_TOP/cmd/emb-encode" -nt "$B_REF" ] ||
	    [ "$(cat "$bd/copies" 2>/dev/null)" != "$copies" ]; then
		rm -rf "$bd" && mkdir -p "$bd" || return 1
		i=0
		while [ "$i" -lt "$copies" ]; do
			cat "$D/corpus/texts.jsonl"
			i=$((i + 1))
		done | awk '{ sub(/^\{/, "{\"n\":" NR ","); print }' > "$B_IN"
		b_time "the single run (emb-encode --pool -j 1, $(wc -l < "$B_IN") records)" \
			emb-encode -m "$MODEL" --pool -j 1 "$B_IN" > "$B_REF.tmp" || return 1
		mv "$B_REF.tmp" "$B_REF"
		echo "$copies" > "$bd/copies"
	fi
	t_eq "the single run: one line per record" "$(wc -l < "$B_REF")" "$(wc -l < "$B_IN")"
}

# b_same DESC FILE: FILE is byte for byte the single run's output
b_same() {
	if [ -f "$2" ] && cmp -s "$2" "$B_REF"; then
		t_pass "$1"
	else
		t_fail "$1" "$(wc -l < "$2" 2>&1) lines, want $(wc -l < "$B_REF")"
	fi
}

# b_time NAME CMD...: run CMD, print its wall time in ms as a comment (on
# standard error: standard output may be the data)
b_time() {
	bt_name=$1; shift
	bt0=$(date +%s%N)
	"$@"
	bt_s=$?
	echo "# time $bt_name: $(( ($(date +%s%N) - bt0) / 1000000 )) ms" >&2
	return $bt_s
}

# b_port OFFSET: a port for this test run's daemons (from the shell's PID,
# so that two checks on one machine seldom meet)
b_port() { echo $(( 20000 + ($$ * 7 + $1) % 30000 )); }

# b_skip DESC REASON: a check that could not run, said plainly
b_skip() { t_skip "$1" "$2"; }

# b_work NAME: a fresh directory holding texts.jsonl, for one recipe run
b_work() {
	bw="$T/$1"
	rm -rf "$bw" && mkdir -p "$bw" && cp "$B_IN" "$bw/texts.jsonl" && echo "$bw"
}
