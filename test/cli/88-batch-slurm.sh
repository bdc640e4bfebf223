# 88-batch-slurm.sh - the Slurm job-array recipe of README.md and emb(7)
# on a one-node cluster of the test's own: munged with a throwaway key and
# its own socket, slurmctld and slurmd (one node, 2 CPUs, on 127.0.0.1)
# from a generated slurm.conf, all stopped by PID at the end.  Checked:
# the array job over 8 chunks, merged, is identical to one emb-encode
# --pool run; with one task made to fail (its output cannot be written),
# sbatch --wait fails, nothing is merged, and the rerun recipe runs that
# task alone, identical again.  Skips, saying so, when Slurm or munge is
# missing, when not root (slurmd launches the jobs), or when a daemon does
# not start.
. "$EMB_TOP/test/cli/batch-lib.sh"
T=$(t_tmpdir 88-batch-slurm)
b_setup
b_recipe slurm-file "$T/embed.sbatch"
b_recipe slurm "$T/slurm.sh"
b_recipe slurm-rerun "$T/slurm-rerun.sh"

why=
# a sanitizer build (make check-sanitize) runs the same emb-encode in
# 85/86; the daemons add a minute there and test nothing new
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null &&
	why="a sanitizer build (the recipes run in the plain make check)"
for c in munged munge unmunge slurmctld slurmd sbatch sinfo; do
	command -v "$c" > /dev/null 2>&1 && continue
	[ -x "/usr/sbin/$c" ] && continue
	why="$c not found (Debian slurm-wlm and munge; scripts/install-deps installs them)"
	break
done
[ -n "$why" ] || [ "$(id -u)" -eq 0 ] || why="not root (slurmd must run as root to launch jobs)"
PATH="$PATH:/usr/sbin"

S="$T/cluster"
munged_pid= ctld_pid= slurmd_pid=
stop_pid() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	stop_pid "$slurmd_pid"
	stop_pid "$ctld_pid"
	stop_pid "$munged_pid"
	slurmd_pid= ctld_pid= munged_pid=
	rm -rf "$S/munge/munge.key" "$S/state" "$S/spool"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

if [ -z "$why" ]; then
	mkdir -p "$S/munge" "$S/state" "$S/spool" && chmod 700 "$S/munge"
	dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 2>/dev/null &&
		chmod 600 "$S/munge/munge.key"
	sock="$S/munge/socket"
	munged -F -f --socket="$sock" --key-file="$S/munge/munge.key" \
		--log-file="$S/munged.log" --pid-file="$S/munge/munged.pid" \
		--seed-file="$S/munge/seed" --num-threads=2 2>> "$S/munged.log" &
	munged_pid=$!
	i=0
	until munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" > /dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge 100 ] || ! kill -0 "$munged_pid" 2>/dev/null; then
			why="munged did not start: $(tail -n 1 "$S/munged.log")"
			break
		fi
		sleep 0.1
	done
fi
if [ -z "$why" ]; then
	for try in 1 2 3; do
		p1=$(b_port $((10 + 2 * try))) p2=$(b_port $((11 + 2 * try)))
		cat > "$S/slurm.conf" <<EOC
ClusterName=embtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1,sched_min_interval=0
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
NodeName=embnode NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=emb Nodes=embnode Default=YES MaxTime=INFINITE State=UP
EOC
		export SLURM_CONF="$S/slurm.conf"
		slurmctld -D -i -f "$SLURM_CONF" > "$S/slurmctld.out" 2>&1 &
		ctld_pid=$!
		slurmd -D -N embnode -f "$SLURM_CONF" > "$S/slurmd.out" 2>&1 &
		slurmd_pid=$!
		i=0 st=
		while [ "$i" -lt 150 ]; do
			st=$(sinfo -h -n embnode -o %t 2>/dev/null)
			[ "$st" = idle ] && break
			kill -0 "$ctld_pid" 2>/dev/null && kill -0 "$slurmd_pid" 2>/dev/null || break
			sleep 0.2
			i=$((i + 1))
		done
		if [ "$st" = idle ]; then
			why=
			break
		fi
		why="slurmctld/slurmd did not start (node state '$st'): $(tail -n 1 "$S/slurmctld.log" "$S/slurmd.log" 2>&1 | tr '\n' ' ')"
		stop_pid "$slurmd_pid"; stop_pid "$ctld_pid"
		slurmd_pid= ctld_pid=
	done
fi

if [ -n "$why" ]; then
	b_skip "Slurm job-array recipe on a one-node cluster" "$why"
else
	t_pass "slurmctld and slurmd up: node embnode idle, 2 CPUs"
	W=$(b_work array)
	cp "$T/embed.sbatch" "$W/embed.sbatch"
	t0=$(date +%s%N)
	(cd "$W" && b_time "Slurm array, 8 tasks (sbatch --wait)" sh "$T/slurm.sh") > "$T/log1" 2>&1; s=$?
	t_eq "slurm recipe: exit 0" "$s" 0 || sed 's/^/#   /' "$T/log1" | head -n 20
	grep '^# time' "$T/log1"
	# sbatch --wait polls (after 2 s, then 8 s more): the work itself
	# ends when the last output is renamed into place
	last=$(for f in "$W"/vectors/part-*.jsonl; do stat -c %.3Y "$f"; done | sort -n | tail -n 1)
	[ -n "$last" ] && echo "# time Slurm array, last output written: $(( ${last%.*}${last#*.} - t0 / 1000000 )) ms after submission"
	b_same "Slurm array: vectors.jsonl identical to the single run" "$W/vectors.jsonl"
	t_eq "Slurm array: one log per task" "$(ls "$W/logs" | grep -c '^emb-encode-[0-9]*_[0-7]\.log$')" 8

	# task 3 fails: its output cannot be written
	W=$(b_work array-fail)
	cp "$T/embed.sbatch" "$W/embed.sbatch"
	mkdir -p "$W/vectors/part-00003.jsonl.tmp"
	(cd "$W" && sh "$T/slurm.sh") > "$T/log2" 2>&1; s=$?
	t_ok "slurm recipe, task 3 failing: exit non-zero ($s)" test "$s" -ne 0
	t_ok "slurm recipe, task 3 failing: no vectors.jsonl" test ! -e "$W/vectors.jsonl"
	t_eq "slurm recipe, task 3 failing: only task 3 missing" \
		"$(emb-merge --missing "$W/chunks" "$W/vectors")" 3
	log3=$(ls "$W"/logs/emb-encode-*_3.log 2>/dev/null | head -n 1)
	t_grep "slurm recipe, task 3 failing: its log says why" "part-00003.jsonl.tmp: Is a directory" "${log3:-/dev/null}"
	rmdir "$W/vectors/part-00003.jsonl.tmp"
	(cd "$W" && b_time "Slurm rerun of one task" sh "$T/slurm-rerun.sh") > "$T/log3" 2>&1; s=$?
	t_eq "slurm-rerun recipe: exit 0" "$s" 0 || sed 's/^/#   /' "$T/log3" | head -n 20
	job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/log3" | tail -n 1)
	t_eq "slurm-rerun recipe: job $job ran task 3 alone" \
		"$(ls "$W/logs" | grep "^emb-encode-${job:-none}_" | tr '\n' ' ')" "emb-encode-${job:-none}_3.log "
	b_same "slurm-rerun: vectors.jsonl identical to the single run" "$W/vectors.jsonl"
fi
cleanup
trap - EXIT
