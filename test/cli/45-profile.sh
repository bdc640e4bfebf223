# 45-profile.sh - $EMB_PROFILE: emb-encode and emb-rerank say, on
# standard error when they end, how many rows and flops went through
# each linear layer shape and attention, and in how many thread-seconds
# and busy seconds (inside the threads' tasks);
# the rows and flops are the model's arithmetic (every layer sees every
# token: 6 layers of minilm-l6), whichever way the forward ran (row
# blocks in the threads, or the layers one by one: $EMB_NO_FUSE), and
# the output does not change.  Without the variable: no profile lines.
T=$(t_tmpdir 45-profile)
F=$(t_fixture minilm-l6)
head -100 "$D/corpus/texts.jsonl" > "$T/c100"
# the tokens of the 100 texts: rows through every layer (one forward
# pass, enough rows for the row blocks)
emb-tokenize -m "$F" "$T/c100" | sed 's/.*"input_ids":\[\([^]]*\)\].*/\1/' |
	tr ',' '\n' | grep -c . > "$T/ntok"
ntok=$(cat "$T/ntok")
t_ok "the texts have tokens" test "$ntok" -gt 1000

emb-encode -m "$F" --pool -j 2 "$T/c100" > "$T/plain" 2> "$T/plain.err"
t_eq "without EMB_PROFILE: nothing on standard error" "$(wc -c < "$T/plain.err")" 0

# every line: {"what","in","out","calls","rows","gflop",...}; the four
# linear shapes of minilm-l6 and attention, each over 6 x the tokens,
# gflop 2 rows in out (attention: 4 x allowed pairs x 32 x 12, at least
# 4 x tokens x 32 x 12); BLOCKS 1: the post-attention layers (out 384,
# up, down) ran in row blocks (more calls than layers), 0: one call a
# layer
check_profile() {   # NAME FILE BLOCKS
	grep '^emb-encode: profile: {"kernels":"[a-z0-9]*","threads":2}$' "$2" > /dev/null
	t_eq "$1: the kernels and threads line" "$?" 0
	awk -v ntok="$ntok" -v blocks="$3" '
		/^emb-encode: profile: \{"what"/ {
			line = $0; sub(/^[^{]*/, "", line); gsub(/[{}"]/, "", line)
			n = split(line, kv, ",")
			for (i = 1; i <= n; i++) { split(kv[i], p, ":"); f[p[1]] = p[2] }
			key = f["what"] " " f["in"] " " f["out"]; seen[key] = 1
			post = key == "fp32 384 384" || key == "fp32 384 1536" || key == "fp32 1536 384"
			if (f["rows"] != 6 * ntok) { print "rows " key; bad = 1 }
			if (blocks && post ? f["calls"] <= 6 : f["calls"] != 6) { print "calls " key; bad = 1 }
			if (f["what"] == "fp32") {
				want = 2 * f["rows"] * f["in"] * f["out"] / 1e9
				if (f["gflop"] - want > 1e-5 || want - f["gflop"] > 1e-5) { print "gflop " key; bad = 1 }
			} else if (f["what"] == "attention") {
				if (f["gflop"] < 4 * f["rows"] * 32 * 12 / 1e9) { print "attention gflop"; bad = 1 }
			} else { print "what " key; bad = 1 }
			if (!(f["thread_s"] > 0)) { print "time " key; bad = 1 }
			# busy: the time inside the tasks of the threads, never more
			# than the thread-seconds (waits are only in those)
			if (!(f["busy_s"] > 0) || f["busy_s"] > f["thread_s"] * 1.0001 + 1e-5) { print "busy " key; bad = 1 }
			if (f["gflops_per_busy"] + 0.15 < f["gflops_per_thread"]) { print "busy rate " key; bad = 1 }
		}
		END {
			split("fp32 384 1152,fp32 384 384,fp32 384 1536,fp32 1536 384,attention 32 12", need, ",")
			for (i in need) if (!(need[i] in seen)) { print "missing " need[i]; bad = 1 }
			exit bad
		}' "$2" > "$T/why"
	t_eq "$1: rows, calls and flops of every shape ($(tr '\n' ' ' < "$T/why"))" "$?" 0
}
EMB_PROFILE=1 emb-encode -m "$F" --pool -j 2 "$T/c100" > "$T/prof" 2> "$T/prof.err"
t_ok "EMB_PROFILE: the same vectors" cmp -s "$T/plain" "$T/prof"
check_profile "row blocks" "$T/prof.err" 1
EMB_NO_FUSE=1 EMB_PROFILE=1 emb-encode -m "$F" --pool -j 2 "$T/c100" > "$T/prof2" 2> "$T/prof2.err"
t_ok "EMB_NO_FUSE: the same vectors" cmp -s "$T/plain" "$T/prof2"
check_profile "layers one by one" "$T/prof2.err" 0

# emb-rerank: its own prefix, the classifier's layers among the lines
CE=$(t_fixture ce-minilm-l6)
printf '{"query":"a cat","documents":["cats sleep","dogs bark"]}\n' > "$T/q"
EMB_PROFILE=1 emb-rerank -m "$CE" -j 2 "$T/q" > /dev/null 2> "$T/rr.err"
t_grep "emb-rerank: the kernels line" '^emb-rerank: profile: {"kernels":' "$T/rr.err"
t_grep "emb-rerank: a linear shape" '^emb-rerank: profile: {"what":"fp32","in":384,"out":1152,' "$T/rr.err"
