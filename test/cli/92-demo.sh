# 92-demo.sh - `make demo` (scripts/demo) runs offline: with the real
# all-MiniLM-L6-v2 installed (scripts/install-refs) on it, and says so,
# with similarities that mean something (the two cat sentences closer to
# each other than to the bank one, the two money sentences likewise);
# with EMB_DEMO_SYNTHETIC=1, or without the real model, on a synthetic
# checkpoint, saying its weights carry no meaning.  Both ways agree, and
# the table is a symmetric 5x5 with ones on the diagonal.
T=$(t_tmpdir 92-demo)

# demo_table DESC OUT: a 5x5 table, symmetric, unit diagonal, in [-1, 1]
demo_table() {
	awk '$1 ~ /^s[1-5]$/ && NF == 6 { for (j = 2; j <= 6; j++) m[$1, j - 1] = $j; n++ }
	END {
		if (n != 5) { print "rows " n; exit 1 }
		for (i = 1; i <= 5; i++) {
			if (m["s" i, i] != "1.0000") { print "diag " i; exit 1 }
			for (j = 1; j <= 5; j++)
				if (m["s" i, j] != m["s" j, i] || m["s" i, j] + 0 > 1 || m["s" i, j] + 0 < -1) {
					print "cell " i " " j; exit 1 }
		}
	}' "$2" > "$T/check"
	t_eq "$1: 5x5 table, symmetric, unit diagonal, in [-1, 1]" "$?$(cat "$T/check")" 0
}

mkdir -p "$T/syn"
EMB_DEMO_SYNTHETIC=1 EMB_DEMO_DIR="$T/syn" sh "$EMB_TOP/scripts/demo" > "$T/syn.out" 2> "$T/err"; s=$?
t_eq "demo (synthetic): exit 0" "$s$(head -c 300 "$T/err")" 0
t_grep "demo (synthetic): says which model ran" "^demo: a synthetic checkpoint" "$T/syn.out"
t_grep "demo (synthetic): says synthetic weights carry no meaning" "carry no meaning" "$T/syn.out"
t_grep "demo (synthetic): pipeline == one process (emb-validate)" "^embedding: 5 records, .*: ok\$" "$T/syn.out"
t_lines "demo (synthetic): 5 vectors" 5 "$T/syn/vectors.jsonl"
demo_table "demo (synthetic)" "$T/syn.out"

if ! why=$(t_real_model all-MiniLM-L6-v2); then
	t_skip "demo on the real all-MiniLM-L6-v2" "$why"
	EMB_DEMO_DIR="$T" sh "$EMB_TOP/scripts/demo" > "$T/out" 2> "$T/err"
	t_grep "demo without the real model: falls back, saying why" \
		"^demo: a synthetic checkpoint: the real all-MiniLM-L6-v2 is not installed" "$T/out"
	return 0
fi
EMB_DEMO_DIR="$T" sh "$EMB_TOP/scripts/demo" > "$T/out" 2> "$T/err"; s=$?
t_eq "demo (real): exit 0" "$s$(head -c 300 "$T/err")" 0
t_grep "demo (real): says it ran the real all-MiniLM-L6-v2" "^demo: the real all-MiniLM-L6-v2 " "$T/out"
t_nogrep "demo (real): no synthetic warning" "carry no meaning" "$T/out"
t_grep "demo (real): pipeline == one process (emb-validate)" "^embedding: 5 records, .*: ok\$" "$T/out"
t_lines "demo (real): 5 vectors" 5 "$T/vectors.jsonl"
demo_table "demo (real)" "$T/out"
# s1, s2: cats; s3, s4: money; s5: code
awk '$1 ~ /^s[1-5]$/ && NF == 6 { for (j = 2; j <= 6; j++) m[$1, j - 1] = $j + 0 }
	END {
		ok = m["s1", 2] > m["s1", 3] + 0.2 && m["s1", 2] > m["s1", 4] + 0.2 &&
		     m["s3", 4] > m["s3", 1] + 0.2 && m["s3", 4] > m["s3", 5] + 0.2 &&
		     m["s2", 5] < m["s1", 2] && m["s4", 5] < m["s3", 4]
		print ok ? "yes" : "no: " m["s1", 2] " " m["s1", 3] " " m["s3", 4] " " m["s3", 5]
	}' "$T/out" > "$T/meaning"
t_eq "demo (real): related sentences are the closest pairs" "$(cat "$T/meaning")" yes
