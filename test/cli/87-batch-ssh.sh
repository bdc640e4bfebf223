# 87-batch-ssh.sh - the GNU parallel --sshlogin recipes of README.md and
# emb(7) over two ssh "hosts" on the loopback: an sshd of our own on each
# of 127.0.0.2 and 127.0.0.3 (a throwaway host key, key-only login, our
# own sshd_config, a port away from 22; stopped by PID at the end), the
# client pointed at them with PARALLEL_SSH="ssh -F our-config".  The model
# is -m ORG/NAME in a Hugging Face cache found through HF_HOME, which only
# --env HF_HOME brings to the hosts.  Checked:
#   streaming (--pipe): identical to one emb-encode --pool run; with one
#     host unable to run emb-encode, it fails loudly and writes no
#     vectors.jsonl;
#   chunks (--retries, --joblog, --resume-failed), that host still
#     broken and one chunk failing everywhere: the broken host's chunks
#     are retried on the other, the failing one fails the run; after the
#     fix (host and chunk) the rerun does only that chunk, identical.
# Skips, saying so, when sshd, ssh or GNU parallel is missing or sshd
# cannot start.
. "$EMB_TOP/test/cli/batch-lib.sh"
T=$(t_tmpdir 87-batch-ssh)
b_setup
b_recipe ssh-pipe "$T/ssh-pipe.sh"
b_recipe ssh-chunks "$T/ssh-chunks.sh"

SSHD=
for p in /usr/sbin/sshd /usr/local/sbin/sshd; do
	[ -x "$p" ] && { SSHD=$p; break; }
done
why=
# a sanitizer build (make check-sanitize) runs the same emb-encode in
# 85/86; the daemons add a minute there and test nothing new
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null &&
	why="a sanitizer build (the recipes run in the plain make check)"
if [ -n "$why" ]; then
	:
elif [ -z "$SSHD" ]; then
	why="sshd not found (Debian openssh-server; scripts/install-deps installs it)"
elif ! command -v ssh > /dev/null 2>&1 || ! command -v ssh-keygen > /dev/null 2>&1; then
	why="ssh or ssh-keygen not found (Debian openssh-client)"
elif ! parallel --version 2>/dev/null | grep -q '^GNU parallel'; then
	why="GNU parallel is not installed"
fi

K="$T/keys"
sshd_pid2= sshd_pid3=
# stop_sshd PID: ours only, by PID
stop_sshd() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	stop_sshd "$sshd_pid2"
	stop_sshd "$sshd_pid3"
	sshd_pid2= sshd_pid3=
	rm -rf "$K"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

GOOD_PATH="$EMB_TOP/cmd:$EMB_TOP/scripts:/usr/local/bin:/usr/bin:/bin"
BAD_PATH="/usr/bin:/bin"
# start_sshd N PATH: sshd on 127.0.0.N:$PORT whose sessions get PATH;
# sets sshd_pidN; false when it does not answer within 10 s
start_sshd() {
	cat > "$K/sshd$1.conf" <<EOC
ListenAddress 127.0.0.$1:$PORT
HostKey $K/host_ed25519
PidFile $K/sshd$1.pid
AuthorizedKeysFile $K/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitRootLogin prohibit-password
AllowUsers $(id -un)
StrictModes no
UsePAM no
PermitUserEnvironment no
AllowTcpForwarding no
X11Forwarding no
MaxStartups 50:30:100
SetEnv PATH=$2
EOC
	"$SSHD" -D -e -f "$K/sshd$1.conf" 2>> "$T/sshd$1.log" &
	eval "sshd_pid$1=\$!"
	host=host$(( $1 - 1 ))
	i=0
	while [ "$i" -lt 100 ]; do
		ssh -F "$K/ssh_config" "$host" true 2>/dev/null && return 0
		eval "kill -0 \$sshd_pid$1" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

if [ -z "$why" ]; then
	mkdir -p "$K" && chmod 700 "$K"
	ssh-keygen -q -t ed25519 -N '' -C emb-test-host -f "$K/host_ed25519" &&
		ssh-keygen -q -t ed25519 -N '' -C emb-test-user -f "$K/user_ed25519" ||
		why="ssh-keygen failed"
	cp "$K/user_ed25519.pub" "$K/authorized_keys"
	# the privilege separation directory sshd wants when run as root
	[ "$(id -u)" -ne 0 ] || [ -d /run/sshd ] || mkdir -p -m 755 /run/sshd
fi
if [ -z "$why" ]; then
	for try in 1 2 3; do
		PORT=$(b_port "$try")
		hk=$(cut -d' ' -f1,2 "$K/host_ed25519.pub")
		printf '[127.0.0.2]:%s %s\n[127.0.0.3]:%s %s\n' "$PORT" "$hk" "$PORT" "$hk" > "$K/known_hosts"
		cat > "$K/ssh_config" <<EOC
Host host1
	HostName 127.0.0.2
Host host2
	HostName 127.0.0.3
Host *
	Port $PORT
	User $(id -un)
	IdentityFile $K/user_ed25519
	IdentitiesOnly yes
	UserKnownHostsFile $K/known_hosts
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	BatchMode yes
	ControlMaster no
	ConnectTimeout 10
EOC
		: > "$T/sshd2.log"; : > "$T/sshd3.log"
		if start_sshd 2 "$GOOD_PATH" && start_sshd 3 "$GOOD_PATH"; then
			why=
			break
		fi
		why="sshd did not start on 127.0.0.2/127.0.0.3 port $PORT: $(tail -n 1 "$T/sshd2.log" "$T/sshd3.log" | tr '\n' ' ')"
		stop_sshd "$sshd_pid2"; stop_sshd "$sshd_pid3"
		sshd_pid2= sshd_pid3=
	done
fi

if [ -n "$why" ]; then
	b_skip "parallel --sshlogin recipes over two loopback hosts" "$why"
else
	export PARALLEL_SSH="ssh -F $K/ssh_config"
	# the model as ORG/NAME in a Hugging Face cache under HF_HOME
	unset HF_HUB_CACHE HUGGINGFACE_HUB_CACHE
	export HF_HOME="$T/hf"
	rev=0123456789abcdef0123456789abcdef01234567
	snap="$HF_HOME/hub/models--emb-test--tiny/snapshots/$rev"
	mkdir -p "$snap" "$HF_HOME/hub/models--emb-test--tiny/refs"
	echo "$rev" > "$HF_HOME/hub/models--emb-test--tiny/refs/main"
	cp -R "$MODEL"/. "$snap"/
	MODEL=emb-test/tiny
	# (the sshd passes no environment: HF_HOME there is the host's own,
	# if its shell start-up files set one)
	echo "# HF_HOME on host1 without --env: $(ssh -F "$K/ssh_config" host1 'echo "${HF_HOME-unset}"')"
	t_ok "host1 runs emb-encode -m ORG/NAME with HF_HOME passed" \
		ssh -F "$K/ssh_config" host1 "echo '{\"text\":\"x\"}' | HF_HOME='$HF_HOME' emb-encode -m $MODEL --pool > /dev/null"

	W=$(b_work pipe)
	(cd "$W" && b_time "parallel --pipe over 2 ssh hosts" sh "$T/ssh-pipe.sh") > "$T/log1" 2>&1; s=$?
	t_eq "ssh-pipe recipe: exit 0" "$s" 0 || sed 's/^/#   /' "$T/log1" | head -n 20
	grep '^# time' "$T/log1"
	b_same "ssh-pipe over host1 and host2: identical to the single run" "$W/vectors.jsonl"
	t_grep "host1 took jobs" "Accepted publickey" "$T/sshd2.log"
	t_grep "host2 took jobs" "Accepted publickey" "$T/sshd3.log"

	# host2 cannot run emb-encode (not on its non-interactive PATH)
	stop_sshd "$sshd_pid3"; sshd_pid3=
	start_sshd 3 "$BAD_PATH" || t_fail "sshd on 127.0.0.3 restarted"
	if ssh -F "$K/ssh_config" host2 'command -v emb-encode' > /dev/null 2>&1; then
		b_skip "a host without emb-encode" "emb-encode is installed in $BAD_PATH"
	else
		W=$(b_work pipe-broken)
		(cd "$W" && sh "$T/ssh-pipe.sh") > "$T/log2" 2>&1; s=$?
		t_ok "ssh-pipe, host2 without emb-encode: exit non-zero ($s)" test "$s" -ne 0
		t_grep "ssh-pipe, host2 without emb-encode: parallel says so" "This job failed" "$T/log2"
		t_ok "ssh-pipe, host2 without emb-encode: no vectors.jsonl" test ! -e "$W/vectors.jsonl"

		# chunks, host2 still broken, and chunk 5 failing on every host
		# (its output cannot be written): host2's other chunks are
		# retried on host1 (--retries), chunk 5 fails the run
		W=$(b_work chunks)
		a0=$(grep -c "Accepted publickey" "$T/sshd3.log")
		mkdir -p "$W/vectors/part-00005.jsonl.tmp"
		(cd "$W" && b_time "parallel chunks over 2 ssh hosts, one broken" sh "$T/ssh-chunks.sh") > "$T/log4" 2>&1; s=$?
		grep '^# time' "$T/log4"
		t_ok "ssh-chunks, chunk 5 failing everywhere: exit non-zero ($s)" test "$s" -ne 0
		t_ok "ssh-chunks, chunk 5 failing everywhere: no vectors.jsonl" test ! -e "$W/vectors.jsonl"
		t_eq "ssh-chunks: host2's chunks done on host1, only chunk 5 left" \
			"$(emb-merge --missing "$W/chunks" "$W/vectors")" 5
		t_ok "ssh-chunks: host2 was given jobs" \
			test "$(grep -c "Accepted publickey" "$T/sshd3.log")" -gt "$a0"
		# fix both: host2 gets emb-encode, chunk 5 its directory back
		rmdir "$W/vectors/part-00005.jsonl.tmp"
		stop_sshd "$sshd_pid3"; sshd_pid3=
		start_sshd 3 "$GOOD_PATH" || t_fail "sshd on 127.0.0.3 restarted"
		n0=$(wc -l < "$W/jobs.log")
		(cd "$W" && sh "$T/ssh-chunks.sh") > "$T/log5" 2>&1; s=$?
		t_eq "ssh-chunks rerun (--resume-failed): exit 0" "$s" 0
		t_eq "ssh-chunks rerun: one job, the failed chunk" \
			"$(tail -n +$((n0 + 1)) "$W/jobs.log" | awk -F '\t' '{ print $NF }' | grep -o 'chunks/part-[0-9]*' | tr '\n' ' ')" \
			"chunks/part-00005 "
		b_same "ssh-chunks rerun: identical to the single run" "$W/vectors.jsonl"
	fi
fi
cleanup
trap - EXIT
