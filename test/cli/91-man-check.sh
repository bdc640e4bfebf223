# 91-man-check.sh - the man pages against the code they document:
# every option a page's OPTIONS section names is accepted by its program
# (never "unknown option"); every architecture emb(7) lists is in the
# family table of lib/nn/ and every base architecture there is
# listed; the sentence-transformers modules emb(7) names are those
# lib/io/stconfig.c runs; the emb(7) field table fits 80 columns; the
# emb-validate(1) manifest example runs.
T=$(t_tmpdir 91-man-check)
top=$EMB_TOP

# --- options ------------------------------------------------------------
for p in "$top"/man/*.1; do
	cmd=$(basename "$p" .1)
	sed -n '/^\.Sh OPTIONS/,/^\.Sh /p' "$p" |
		grep -E -o 'Fl -?[[:alpha:]][[:alnum:]-]*' | sed 's/^Fl /-/' |
		sort -u > "$T/opts"
	n=0 bad=
	while read -r o; do
		n=$((n + 1))
		# an option that needs an argument says so; none is unknown
		(cd "$T" && timeout 20 "$cmd" "$o" < /dev/null > /dev/null 2> "$T/err")
		if grep -q "unknown option" "$T/err"; then
			bad="$bad $o"
		fi
	done < "$T/opts"
	if [ "$n" -gt 0 ] && [ -z "$bad" ]; then
		t_pass "$cmd accepts every option of its page's OPTIONS ($n)"
	else
		t_fail "$cmd accepts every option of its page's OPTIONS" "unknown:$bad (of $n)"
	fi
done

# --- architectures --------------------------------------------------------
# each family file registers its architectures: .archs = EMB_LIST("A",
# "B", ...), possibly over several lines
awk '/\.archs = EMB_LIST\(/ { on = 1 }
	on { s = $0; while (match(s, /"[A-Za-z0-9]+"/)) {
		print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } }
	on && /\)/ { on = 0 }' "$top"/lib/nn/arch_*.c | sort -u > "$T/table"
t_ok "the family table is read from lib/nn/arch_*.c" test -s "$T/table"
sed -n '/^Supported architectures/,/^Other architectures/p' "$top/man/emb.7" |
	grep -E -o '\b[A-Z][A-Za-z0-9]*(Model|ForSequenceClassification|ForMaskedLM)\b' |
	sort -u > "$T/doc"
t_ok "emb(7) lists architectures" test -s "$T/doc"
missing=$(comm -23 "$T/doc" "$T/table" | tr '\n' ' ')
t_eq "every architecture emb(7) names is in the family table" "$missing" ""
grep 'Model$' "$T/table" | grep -v 'LMHeadModel$' > "$T/base"
undoc=$(comm -23 "$T/base" "$T/doc" | tr '\n' ' ')
t_eq "every base architecture of the table is in emb(7)" "$undoc" ""
for suffix in ForSequenceClassification ForMaskedLM; do
	if grep -q "$suffix\$" "$T/table"; then
		t_grep "emb(7) names the $suffix heads" "$suffix" "$top/man/emb.7"
	fi
done

# --- modules --------------------------------------------------------------
sed -n 's/.*!strcmp(type, "\([A-Za-z]*\)").*/\1/p' "$top/lib/io/stconfig.c" | sort -u > "$T/mods"
sed -n '/^The sentence-transformers modules run are/,/^is a load error/p' "$top/man/emb.7" |
	grep -E -o '\b(Transformer|Pooling|Dense|Normalize|[A-Z][A-Za-z]+)\b' |
	grep -x -F -f "$T/mods" | sort -u > "$T/mods.doc"
t_eq "emb(7) names the modules lib/io/stconfig.c runs" "$(tr '\n' ' ' < "$T/mods.doc")" "$(tr '\n' ' ' < "$T/mods")"
for p in emb-encode emb-tokenize emb-pool; do
	if sed -n '/^\.Sh DESCRIPTION/,/^\.Sh SEE ALSO/p' "$top/man/$p.1" | grep -q "models\.Dense' (entry [0-9]*) is not supported\|(such as Dense)"; then
		t_fail "$p(1) does not call Dense unsupported"
	else
		t_pass "$p(1) does not call Dense unsupported"
	fi
done
t_grep "emb-pool(1): Dense weights from 2_Dense/model.safetensors" "2_Dense/model.safetensors" "$top/man/emb-pool.1"

# --- the emb(7) field table fits 80 columns -----------------------------
if command -v man > /dev/null 2>&1 && MANWIDTH=80 man -l "$top/man/emb.7" > "$T/emb.7.txt" 2> /dev/null; then
	sed 's/.\x08//g' "$T/emb.7.txt" | awk '/^ *field +written by +read by/ { on = 1 } on && /^$/ { exit } on' > "$T/table.txt"
	t_ok "the field table is in man -l output" test -s "$T/table.txt"
	w=$(python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$T/table.txt" 2>/dev/null ||
		awk '{ if (length > m) m = length } END { print m + 0 }' "$T/table.txt")
	if [ "$w" -le 80 ]; then
		t_pass "the emb(7) field table is $w <= 80 columns wide"
	else
		t_fail "the emb(7) field table fits 80 columns" "widest line: $w"
	fi
	t_nogrep "no cell runs into the next" "quantizeemb-" "$T/table.txt"
else
	t_skip "the emb(7) field table fits 80 columns" "man(1) not found"
fi

# --- the emb-validate(1) manifest example runs ----------------------------
mkdir -p "$T/m/test"
ln -s "$top/test/data" "$T/m/test/data"
mkdir -p "$T/m/test/tmp"
awk '/^\.Ss Manifests/ { on = 1 } on && /^\.Bd -literal/ { inb = 1; next } inb && /^\.Ed/ { exit } inb' \
	"$top/man/emb-validate.1" > "$T/m/parity.yaml"
t_grep "the manifest example is extracted" "^cases:" "$T/m/parity.yaml"
emb-validate --manifest "$T/m/parity.yaml" > "$T/m/out" 2>&1; s=$?
t_eq "the emb-validate(1) manifest example runs and passes" "$s" 0
t_grep "... one case, none failed" "parity.yaml: 1 cases, 0 failed" "$T/m/out"
