# 94-readme-layout.sh - README's Layout and Hacking sections name only
# paths that exist: in Layout's tree, every word that is a path (has a
# '/' or a file extension; globs too) under the folder of its entry (or
# from the top), in Hacking every `quoted` path from the top (or lib/:
# `tool/`); build outputs that .gitignore names are not required.  The paths
# are read out of README at test time; a README naming a file that is
# gone fails (checked on a copy with one added).
T=$(t_tmpdir 94-readme-layout)

# readme_paths README: one "FOLDER PATH" line per path named (FOLDER:
# the Layout entry the word sits under, "." for the top)
readme_paths() {
	awk '
	/^## / { sec = $0; sub(/^## /, "", sec); next }
	sec == "Layout" && /^    [^ ]/ {
		top = $1; sub(/:$/, "", top); ent = top; sub(/\/$/, "", ent)
		if (top !~ /\/$/) { print ". " top; ent = "." }
		words($0, 2); next }
	sec == "Layout" && /^      [^ ]/ {
		e = $1; sub(/\/$/, "", e); ent = top; sub(/\/$/, "", ent); ent = ent "/" e
		print ". " ent; words($0, 2); next }
	sec == "Layout" && /^        / { words($0, 1); next }
	sec == "Hacking" {
		s = $0
		while (match(s, /`[^`]*`/)) {
			q = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
			n = split(q, w, /[ ,;()]+/)
			for (i = 1; i <= n; i++)
				if (w[i] ~ /\// && w[i] ~ /^[A-Za-z0-9_.*\/-]+$/ && w[i] !~ /^\/+$/)
					print ". " w[i]
		}
	}
	function words(line, from,   n, w, i, t) {
		n = split(line, w, /[ ,;:()]+/)
		for (i = 1; i <= n; i++) {
			t = w[i]; if (t == "") continue
			if (from > 1 && i <= from) { if (i < from) continue; if (t == $1 || t == top) continue }
			if (t !~ /^[A-Za-z0-9_.*\/-]+$/ || t ~ /^[.]+$/) continue
			if (t ~ /\// || t ~ /\.(c|h|sh|py|md|yaml|txt|[1-9])$/ || t == "README") print ent " " t
		}
	}' "$1"
}

# check README: "missing" lines for the paths that are not there
check() {
	readme_paths "$1" > "$T/paths"
	n=0
	: > "$T/missing"
	while read -r ent p; do
		n=$((n + 1))
		p=${p%/}
		# a build output (.gitignore names it or a folder above it) need
		# not be there yet
		q=$p out=
		while :; do
			grep -q -x "/$q/\{0,1\}" "$EMB_TOP/.gitignore" 2>/dev/null && out=1
			case $q in */*) q=${q%/*} ;; *) break ;; esac
		done
		[ -n "$out" ] && continue
		ok=
		# under its entry, from the top, or a layer folder of lib/
		for base in "$EMB_TOP/$ent" "$EMB_TOP" "$EMB_TOP/lib"; do
			# a glob names at least one file
			for f in $base/$p; do [ -e "$f" ] && ok=1; break; done
			[ -n "$ok" ] && break
		done
		[ -n "$ok" ] || echo "$ent: $p" >> "$T/missing"
	done < "$T/paths"
	echo "$n"
}

n=$(check "$EMB_TOP/README.md")
t_ok "README Layout and Hacking name some paths ($n)" test "$n" -ge 40
t_eq "every path README's Layout and Hacking name exists" "$(cat "$T/missing")" ""
t_grep "... lib/st/search.c among them" '^lib/st search.c$' "$T/paths"
t_grep "... and Hacking's lib/kern/kernels.h" '^\. lib/kern/kernels.h$' "$T/paths"
# a README naming a file that is gone fails
sed 's|^      st/       Pooling|      st/       gone.c, Pooling|; s|`lib/kern/kernels.h`|`lib/kern/kernels.h` and `lib/kern/table.c`|' \
	"$EMB_TOP/README.md" > "$T/README.md"
check "$T/README.md" > /dev/null
t_grep "a Layout entry's file that is gone is found" '^lib/st: gone.c$' "$T/missing"
t_grep "a Hacking path that is gone is found" '^\.: lib/kern/table.c$' "$T/missing"
