# 84-batch-shard.sh - scripts/emb-shard and scripts/emb-merge: chunk
# sizes and names, re-runs that leave identical chunks alone, stale parts
# removed, stdin with -l; merge refusing (and writing nothing) when an
# output is missing, short, long or cut mid-line; --missing; --check;
# usage errors
. "$EMB_TOP/test/cli/batch-lib.sh"
T=$(t_tmpdir 84-batch-shard)
cd "$T" || exit 1

seq 10 | sed 's/.*/{"n":&}/' > in.jsonl
t_eq "emb-shard -n 4: prints the number of chunks" "$(emb-shard -n 4 in.jsonl c)" 4
t_eq "emb-shard -n 4: names" "$(ls c | tr '\n' ' ')" \
	"part-00000.jsonl part-00001.jsonl part-00002.jsonl part-00003.jsonl "
t_eq "emb-shard -n 4: sizes within one line" "$(wc -l c/* | sed '$d' | awk '{ printf "%s ", $1 }')" "3 2 3 2 "
t_ok "emb-shard: the chunks in order are the input" sh -c 'cat c/part-* | cmp -s - in.jsonl'
touch -d '2001-01-01' c/part-00001.jsonl
emb-shard -n 4 in.jsonl c > /dev/null
t_eq "emb-shard again: an identical chunk keeps its time" \
	"$(date -r c/part-00001.jsonl +%Y)" 2001
emb-shard -n 2 in.jsonl c > /dev/null
t_eq "emb-shard -n 2 after -n 4: the stale parts removed" "$(ls c | tr '\n' ' ')" \
	"part-00000.jsonl part-00001.jsonl "
t_eq "emb-shard -n 2: the new chunks" "$(wc -l < c/part-00001.jsonl | tr -d ' ')" 5
t_eq "emb-shard -n 20 on 10 lines: 10 chunks" "$(emb-shard -n 20 in.jsonl c20)" 10
t_eq "emb-shard -n 20 on 10 lines: numbered 0..9" "$(ls c20 | tail -n 1)" part-00009.jsonl
printf '{"a":1}\n{"a":2}\n{"a":3}' | emb-shard -l 2 - cl > out; s=$?
t_eq "emb-shard -l 2 -: exit 0, 2 chunks" "$s $(cat out)" "0 2"
t_eq "emb-shard: a last line without newline gets one" "$(od -An -c cl/part-00001.jsonl | tr -s ' ')" ' { " a " : 3 } \n'
: > empty.jsonl
t_eq "emb-shard -n 3 on an empty file: no chunks" "$(emb-shard -n 3 empty.jsonl ce)" 0
t_eq "emb-shard: no temporary directory left" "$(ls -A c ce | grep -c emb-shard)" 0
for bad in "-n 0 in.jsonl x" "-n x in.jsonl x" "-n 2 in.jsonl" "-l 2" "in.jsonl x" "-n 2 - x"; do
	emb-shard $bad > /dev/null 2> err; s=$?
	t_eq "emb-shard $bad: usage error" "$s" 2
done
emb-shard -n 2 missing.jsonl x > /dev/null 2> err; s=$?
t_eq "emb-shard on a missing file: exit 5, an input that cannot be read" "$s" 5
t_grep "emb-shard on a missing file: message" "^emb-shard: error: cannot read 'missing.jsonl'" err

# merge
emb-shard -n 4 in.jsonl c > /dev/null
mkdir -p v
cp c/part-00000.jsonl c/part-00002.jsonl v/
head -n 1 c/part-00001.jsonl > v/part-00001.jsonl
emb-merge -o all.jsonl c v 2> err; s=$?
t_eq "emb-merge, outputs missing and short: exit 1" "$s" 1
t_ok "emb-merge, outputs missing and short: nothing written" test ! -e all.jsonl -a ! -e all.jsonl.tmp
t_grep "emb-merge: names the short output" "v/part-00001.jsonl: 1 lines, c/part-00001.jsonl has 2" err
t_grep "emb-merge: names the missing output" "v/part-00003.jsonl: missing" err
t_grep "emb-merge: the summary" "2 of 4 outputs missing or short (chunks 1,3); nothing written" err
t_eq "emb-merge --missing" "$(emb-merge --missing c v)" "1,3"
emb-merge c v > stdout 2> /dev/null
t_ok "emb-merge to stdout, outputs missing: nothing on stdout" test ! -s stdout
cp c/part-00001.jsonl c/part-00003.jsonl v/
t_eq "emb-merge --missing when complete: nothing" "$(emb-merge --missing c v)" ""
t_ok "emb-merge -o: exit 0" emb-merge -o all.jsonl c v
t_ok "emb-merge -o: the outputs in chunk order" cmp -s all.jsonl in.jsonl
t_ok "emb-merge to stdout" sh -c 'emb-merge c v | cmp -s - in.jsonl'
printf '{"n":4' >> v/part-00003.jsonl
emb-merge c v > /dev/null 2> err; s=$?
t_eq "emb-merge, an output longer than its chunk: exit 1" "$s" 1
head -c -1 c/part-00003.jsonl > v/part-00003.jsonl
emb-merge c v > /dev/null 2> err; s=$?
t_eq "emb-merge, the last line cut (no newline): exit 1" "$s" 1
t_grep "emb-merge, the last line cut: says so" "v/part-00003.jsonl: the last line is cut short" err
t_ok "emb-merge --check IN OUT: same count" emb-merge --check in.jsonl all.jsonl
head -n 9 in.jsonl > short.jsonl
t_status "emb-merge --check: one line short" 1 emb-merge --check in.jsonl short.jsonl
t_status "emb-merge --check: output missing" 1 emb-merge --check in.jsonl nothere.jsonl
emb-merge -o x.jsonl empty-dir-does-not-exist v 2> err; s=$?
t_eq "emb-merge without a chunks directory: exit 5, an input that cannot be read" "$s" 5
for bad in "" "c" "-x c v" "--check in.jsonl" "c v w"; do
	emb-merge $bad > /dev/null 2>&1; s=$?
	t_eq "emb-merge $bad: usage error" "$s" 2
done
emb-shard --help > help
t_grep "emb-shard --help: usage on stdout" "^usage: emb-shard" help
emb-merge --help > help
t_grep "emb-merge --help: usage on stdout" "^usage: emb-merge" help
# a usage error: one line, then where to look
for p in emb-shard emb-merge; do
	$p -x > /dev/null 2> err
	t_eq "$p -x: one line naming the problem, then Try" \
		"$(wc -l < err | tr -d ' ')|$(sed -n 2p err)" "2|Try '$p --help' for more information."
	$p --help > help
	t_grep "$p --help: says what it does and its exit status" '^Exit: 0 ok, 1 ' help
done
cd "$EMB_TOP" || exit 1
