# 92-demo.sh - `make demo` (scripts/demo) runs offline on a synthetic
# checkpoint: both ways agree, and it prints a symmetric 5x5 cosine table
# with ones on the diagonal and says the weights carry no meaning
T=$(t_tmpdir 92-demo)
EMB_DEMO_DIR="$T" sh "$EMB_TOP/scripts/demo" > "$T/out" 2> "$T/err"; s=$?
t_eq "scripts/demo: exit 0" "$s" 0
t_grep "demo: says synthetic weights carry no meaning" "carry no meaning" "$T/out"
t_grep "demo: pipeline == one process (emb-validate)" "^embedding: 5 records, .*: ok\$" "$T/out"
t_lines "demo: 5 vectors" 5 "$T/vectors.jsonl"
awk '$1 ~ /^s[1-5]$/ && NF == 6 { for (j = 2; j <= 6; j++) m[$1, j - 1] = $j; n++ }
	END {
		if (n != 5) { print "rows " n; exit 1 }
		for (i = 1; i <= 5; i++) {
			if (m["s" i, i] != "1.0000") { print "diag " i; exit 1 }
			for (j = 1; j <= 5; j++)
				if (m["s" i, j] != m["s" j, i] || m["s" i, j] + 0 > 1 || m["s" i, j] + 0 < -1) {
					print "cell " i " " j; exit 1 }
		}
	}' "$T/out" > "$T/check"
t_eq "demo: 5x5 table, symmetric, unit diagonal, in [-1, 1]" "$?$(cat "$T/check")" 0
