# test/cli/90-man-examples.sh - the man pages: lint clean, the required
# sections present, options in sync with --help, and every EXAMPLES block
# runs.  Sourced by test/run-checks (cwd is the top of the tree).
#
# An EXAMPLES literal block (.Bd -literal ... .Ed) is a shell session:
# "$ CMD" starts a command, "> MORE" continues it, any other line is the
# output the command must print.  In expected output, "..." inside a line
# matches any text and a line that is just "..." matches any number of
# lines.  A command shown without output must still succeed.  Every block
# must print something.  Blocks run with sh in a scratch directory where
# the model names used by the examples resolve to the synthetic minilm-l6
# fixture, and texts.jsonl / golden.jsonl / parity.yaml exist.

mw=$(t_tmpdir man-examples)
pages=$(ls man/*.1 man/*.7)

# --- a page for every command -------------------------------------------
for b in cmd/emb-*; do
	case $b in *.c|*.o) continue ;; esac
	[ -x "$b" ] || continue
	if [ -f "man/$(basename "$b").1" ]; then
		t_pass "$b has a man page"
	else
		t_fail "$b has a man page" "no man/$(basename "$b").1"
	fi
done

# --- lint ---------------------------------------------------------------
for p in $pages; do
	if [ ! -f "$p" ]; then t_fail "$p exists"; continue; fi
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -Tlint -Wwarning "$p" > "$mw/lint" 2>&1
		s=$?
		lint="mandoc -Tlint"
	elif command -v groff >/dev/null 2>&1; then
		groff -mdoc -Tutf8 -ww -z "$p" > "$mw/lint" 2>&1
		s=$?
		lint="groff -ww"
	else
		t_fail "$p: lint" "neither mandoc nor groff installed (scripts/install-deps installs mandoc)"
		continue
	fi
	if [ "$s" -eq 0 ] && [ ! -s "$mw/lint" ]; then
		t_pass "$p: $lint clean"
	else
		t_fail "$p: $lint clean" "$(head -n 20 "$mw/lint")"
	fi
done

# --- required sections --------------------------------------------------
for p in $pages; do
	case $p in
	*.1) want="NAME|SYNOPSIS|DESCRIPTION|OPTIONS|EXIT STATUS|EXAMPLES|SEE ALSO" ;;
	*) want="NAME|DESCRIPTION|EXAMPLES|SEE ALSO" ;;
	esac
	got=$(sed -n 's/^\.Sh //p' "$p" | sed 's/^"\(.*\)"$/\1/' |
		grep -E -x "$want" | tr '\n' '|' | sed 's/|$//')
	t_eq "$p: sections" "$got" "$want"
done

# --- options in sync with --help ----------------------------------------
# long options (--name) and short ones (-x) named by `CMD --help` versus
# those the page names with Fl in SYNOPSIS and OPTIONS
for p in man/*.1; do
	cmd=$(basename "$p" .1)
	if ! "$cmd" --help > "$mw/help.$cmd" 2>"$mw/help.err"; then
		t_fail "$cmd --help exits 0" "$(head -c 400 "$mw/help.err")"
		continue
	fi
	grep -E -o -- '(^|[^[:alnum:]-])--?[[:alpha:]][[:alnum:]-]*' "$mw/help.$cmd" |
		sed 's/^[^-]*//; s/-$//' | grep -E -x -- '--[[:alnum:]-]+|-[[:alpha:]]' |
		sort -u > "$mw/opts.help"
	sed -n '/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p; /^\.Sh OPTIONS/,/^\.Sh EXIT/p' "$p" |
		grep -E -o 'Fl -?[[:alpha:]][[:alnum:]-]*|\| -[[:alnum:]-]+' |
		sed 's/^Fl /-/; s/^| /-/' | sort -u > "$mw/opts.page"
	if cmp -s "$mw/opts.help" "$mw/opts.page"; then
		t_pass "$p: options match $cmd --help ($(wc -l < "$mw/opts.page" | tr -d ' ') options)"
	else
		t_fail "$p: options match $cmd --help" \
			"only in --help: $(comm -23 "$mw/opts.help" "$mw/opts.page" | tr '\n' ' ')" \
			"only in the page: $(comm -13 "$mw/opts.help" "$mw/opts.page" | tr '\n' ' ')"
	fi
done

# --- the scratch directory the examples run in ---------------------------
fx=$(t_fixture minilm-l6)
if [ -z "$fx" ] || [ ! -d "$fx" ]; then
	t_fail "materialize the minilm-l6 fixture for the examples"
	return 0
fi
ln -s "$fx" "$mw/all-MiniLM-L6-v2"
ce=$(t_fixture ce-minilm-l6)
[ -n "$ce" ] && ln -s "$ce" "$mw/ms-marco-MiniLM-L-6-v2"
# the model id sentence-transformers/all-MiniLM-L6-v2 in a Hugging Face cache
snap="$mw/hf/hub/models--sentence-transformers--all-MiniLM-L6-v2"
mkdir -p "$snap/snapshots" "$snap/refs"
ln -s "$fx" "$snap/snapshots/1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
printf '1110a243fdf4706b3f48f1d95db1a4f5529b4d41' > "$snap/refs/main"
head -n 5 "$D/corpus/texts.jsonl" > "$mw/texts.jsonl"
head -n 5 "$D/fixtures/minilm-l6/golden.jsonl" > "$mw/golden.jsonl"
cat > "$mw/parity.yaml" <<'EOF'
cases:
  - name: minilm-pool
    model: all-MiniLM-L6-v2
    input: texts.jsonl
    golden: golden.jsonl
    command: emb-encode --pool
    args: ["-j", "2"]
    tolerance: {embedding: 1e-5}
EOF

# --- extract the examples -----------------------------------------------
# writes $mw/ex/PAGE.B.C.cmd (command C of block B) and .exp (its output,
# when the page shows one)
mkdir -p "$mw/ex"
for p in $pages; do
	awk -v dir="$mw/ex" -v page="$(basename "$p")" '
	# literal replacement of every FROM by TO in S
	function repl(s, from, to,   out, i) {
		out = ""
		while ((i = index(s, from)) > 0) {
			out = out substr(s, 1, i - 1) to
			s = substr(s, i + length(from))
		}
		return out s
	}
	function unesc(s) {
		s = repl(s, "\\(aq", "\047"); s = repl(s, "\\(dq", "\"")
		s = repl(s, "\\&", ""); s = repl(s, "\\-", "-")
		return repl(s, "\\e", "\\")
	}
	/^\.Sh / { inex = ($0 == ".Sh EXAMPLES"); next }
	!inex { next }
	/^\.Bd -literal/ { inb = 1; b++; c = 0; cont = 0; next }
	/^\.Ed/ { inb = 0; next }
	!inb { next }
	{
		line = unesc($0)
		if (substr(line, 1, 2) == "$ ") {
			c++; cont = 1
			f = dir "/" page "." b "." c
			print substr(line, 3) > (f ".cmd"); close(f ".cmd")
			next
		}
		if (cont && substr(line, 1, 2) == "> ") {
			print substr(line, 3) >> (f ".cmd"); close(f ".cmd")
			next
		}
		cont = 0
		if (c == 0) { print "orphan output line in " page ": " line > "/dev/stderr"; exit 1 }
		print line >> (f ".exp"); close(f ".exp")
	}' "$p" || t_fail "$p: EXAMPLES parse"
	n=$(ls "$mw/ex" | grep -c "^$(basename "$p")\..*\.cmd$")
	if [ "$n" -gt 0 ]; then t_pass "$p: $n example commands"; else t_fail "$p: has example commands"; fi
done

# expected-output matcher: exp lines against got lines ("..." wildcards)
cat > "$mw/match.awk" <<'EOF'
function linematch(e, g,   n, i, seg, k, pos) {
	n = split(e, seg, /\.\.\./)
	if (n == 1) return e == g
	if (substr(g, 1, length(seg[1])) != seg[1]) return 0
	pos = length(seg[1]) + 1
	for (i = 2; i < n; i++) {
		k = index(substr(g, pos), seg[i])
		if (k == 0) return 0
		pos += k - 1 + length(seg[i])
	}
	if (length(g) - pos + 1 < length(seg[n])) return 0
	return substr(g, length(g) - length(seg[n]) + 1) == seg[n]
}
FNR == NR { e[++m] = $0; next }
{ g[++n] = $0 }
END {
	M[0, 0] = 1
	for (j = 1; j <= n; j++) M[0, j] = 0
	for (i = 1; i <= m; i++) {
		star = (e[i] == "...")
		M[i, 0] = star && M[i - 1, 0]
		for (j = 1; j <= n; j++) {
			if (star) M[i, j] = M[i - 1, j] || M[i, j - 1]
			else M[i, j] = M[i - 1, j - 1] && linematch(e[i], g[j])
		}
	}
	exit !M[m, n]
}
EOF

# --- run them -----------------------------------------------------------
for p in $pages; do
	pg=$(basename "$p")
	b=1
	while ls "$mw/ex/$pg.$b.1.cmd" >/dev/null 2>&1; do
		: > "$mw/block.out"
		c=1
		while [ -f "$mw/ex/$pg.$b.$c.cmd" ]; do
			f="$mw/ex/$pg.$b.$c"
			desc="$pg example $b.$c: $(head -n 1 "$f.cmd" | tr -d '\\' | cut -c1-70)"
			(cd "$mw" && HF_HOME="$mw/hf" && export HF_HOME && unset HF_HUB_CACHE &&
				sh "$f.cmd" < /dev/null > "$f.out" 2> "$f.err")
			s=$?
			if [ "$s" -eq 0 ]; then
				t_pass "$desc: exit 0"
			else
				t_fail "$desc: exit 0" "exit $s" "$(head -c 600 "$f.err")"
			fi
			if [ -f "$f.exp" ]; then
				if awk -f "$mw/match.awk" "$f.exp" "$f.out"; then
					t_pass "$desc: output as documented"
				else
					t_fail "$desc: output as documented" \
						"got:  $(head -c 600 "$f.out")" "want: $(cat "$f.exp")"
				fi
			fi
			cat "$f.out" >> "$mw/block.out"
			c=$((c + 1))
		done
		if [ -s "$mw/block.out" ]; then
			t_pass "$pg example block $b prints something"
		else
			t_fail "$pg example block $b prints something"
		fi
		b=$((b + 1))
	done
done

# --- make install / uninstall into a staging directory ------------------
stage="$mw/stage"
if ${MAKE:-make} -s install DESTDIR="$stage" PREFIX=/usr/local > "$mw/install.log" 2>&1; then
	t_pass "make install DESTDIR=... exits 0"
else
	t_fail "make install DESTDIR=... exits 0" "$(tail -n 5 "$mw/install.log")"
fi
for f in $(for p in $pages; do
		case $p in
		*.1) echo "bin/$(basename "$p" .1) share/man/man1/$(basename "$p")" ;;
		*.7) echo "share/man/man7/$(basename "$p")" ;;
		esac
	done); do
	[ -f "$stage/usr/local/$f" ] && t_pass "installed $f" || t_fail "installed $f"
done
[ -x "$stage/usr/local/bin/emb-encode" ] && t_pass "installed binaries are executable" ||
	t_fail "installed binaries are executable"
${MAKE:-make} -s uninstall DESTDIR="$stage" PREFIX=/usr/local > "$mw/install.log" 2>&1
left=$(find "$stage" -type f | wc -l | tr -d ' ')
t_eq "make uninstall removes what install put there" "$left" 0
