# 85-batch-make.sh - the make recipe of README.md and emb(7), run as
# written over 3192 records: byte-identical to one emb-encode --pool run;
# a second run does nothing; a run killed mid-way (SIGTERM to make and
# its jobs: a background job ignores SIGINT) leaves no output that looks done, and the rerun
# embeds only what is missing and is identical again
. "$EMB_TOP/test/cli/batch-lib.sh"
T=$(t_tmpdir 85-batch-make)
b_setup
b_recipe make-file "$T/Makefile"
b_recipe make "$T/make.sh"
MAKE_CMD=${MAKE:-make}

W=$(b_work run)
cp "$T/Makefile" "$W/Makefile"
(cd "$W" && b_time "make -j2 recipe" sh "$T/make.sh") > "$T/log1" 2>&1; s=$?
t_eq "make recipe: exit 0" "$s" 0
grep '^# time' "$T/log1"
b_same "make -j2: vectors.jsonl identical to the single run" "$W/vectors.jsonl"
t_eq "make recipe: 8 jobs" "$(grep -c '^emb-encode ' "$T/log1")" 8

# the second run: emb-shard leaves the chunks alone, make has nothing to do
before=$(ls -l --time-style=full-iso "$W/vectors.jsonl")
(cd "$W" && sh "$T/make.sh") > "$T/log2" 2>&1; s=$?
t_eq "make recipe again: exit 0" "$s" 0
t_nogrep "make recipe again: nothing embedded" '^emb-encode ' "$T/log2"
t_nogrep "make recipe again: nothing merged" '^emb-merge ' "$T/log2"
t_eq "make recipe again: vectors.jsonl untouched" \
	"$(ls -l --time-style=full-iso "$W/vectors.jsonl")" "$before"
(cd "$W" && $MAKE_CMD -q); t_eq "make -q: up to date" "$?" 0

# interrupted: 32 smaller chunks, killed once two outputs are done
W=$(b_work interrupt)
cp "$T/Makefile" "$W/Makefile"
(cd "$W" && emb-shard -n 32 texts.jsonl chunks > /dev/null)
if ! command -v setsid > /dev/null 2>&1; then
	b_skip "make interrupted mid-way" "setsid (util-linux) not installed"
else
	(cd "$W" && exec setsid $MAKE_CMD -j 2) > "$T/log3" 2>&1 &
	mk=$!
	i=0
	while [ "$i" -lt 600 ]; do
		n=$(ls "$W/vectors" 2>/dev/null | grep -c '\.jsonl$')
		[ "$n" -ge 2 ] && break
		kill -0 "$mk" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	pg=$(ps -o pgid= -p "$mk" 2>/dev/null | tr -d ' ')
	if [ "$pg" = "$mk" ]; then
		kill -TERM "-$mk"
	else
		kill -TERM "$mk" 2>/dev/null
	fi
	wait "$mk"; s=$?
	if [ "$s" -eq 0 ] && [ -f "$W/vectors.jsonl" ]; then
		b_skip "make interrupted mid-way" "make finished before it could be interrupted"
	else
		t_ok "interrupted make: exit non-zero ($s)" test "$s" -ne 0
		t_ok "interrupted make: no vectors.jsonl" test ! -e "$W/vectors.jsonl"
		missing=$(emb-merge --missing "$W/chunks" "$W/vectors")
		t_ok "interrupted make: some chunks left to do ($missing)" test -n "$missing"
		# every output make would trust is whole
		half=
		for f in "$W"/vectors/part-*.jsonl; do
			[ -f "$f" ] || continue
			emb-merge --check "$W/chunks/${f##*/}" "$f" 2>> "$T/half" || half="$half ${f##*/}"
		done
		t_eq "interrupted make: no half output under a final name" "$half" ""
		nmiss=$(echo "$missing" | tr ',' '\n' | grep -c .)
		(cd "$W" && $MAKE_CMD -j 2) > "$T/log4" 2>&1; s=$?
		t_eq "make after the interruption: exit 0" "$s" 0
		t_eq "make after the interruption: embeds only the $nmiss missing chunks" \
			"$(grep -c '^emb-encode ' "$T/log4")" "$nmiss"
		b_same "make after the interruption: identical to the single run" "$W/vectors.jsonl"
	fi
fi

# a failed job fails the run and nothing is merged
W=$(b_work fail)
cp "$T/Makefile" "$W/Makefile"
sed '1000s/"text": "[^"]*"/"text": 7/' "$B_IN" > "$W/texts.jsonl"
(cd "$W" && sh "$T/make.sh") > "$T/log5" 2>&1; s=$?
t_ok "make recipe with a bad record: exit non-zero ($s)" test "$s" -ne 0
t_grep "make recipe with a bad record: the record named" "error (at chunks/part-[0-9]*.jsonl:[0-9]*): field 'text' is not a string" "$T/log5"
t_ok "make recipe with a bad record: no vectors.jsonl" test ! -e "$W/vectors.jsonl"
