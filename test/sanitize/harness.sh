# test/sanitize/harness.sh - the sanitizer report plumbing checks itself;
# test/run-checks runs this first in a sanitizer build (config.mk says
# EMB_SANITIZE = yes or EMB_TSAN = yes), with the *SAN_OPTIONS it exports.
#
# Small programs built with this tree's CC, CFLAGS and LDFLAGS leak, read
# out of bounds, overflow a signed int (ASan/UBSan build) or race (TSan
# build), each run the way a careless test would run it: status ignored,
# stderr thrown away.  The report must still land in $EMB_TMP/sanitizer/
# (where run-checks finds it and fails the test that caused it), with the
# runtime's exit status; the copies made here are removed afterwards so
# that they do not count as failures themselves.
T=$(t_tmpdir sanitizer-harness)
san="$EMB_TMP/sanitizer"
mk() { sed -n "s/^$1 = //p" "$EMB_TOP/config.mk"; }
cc=$(mk CC); cflags=$(mk CFLAGS); ldflags=$(mk LDFLAGS)

# harness_run NAME WANT-STATUS PATTERN ARG: run $T/prog ARG, stderr
# discarded; its exit status must be WANT-STATUS, and its report, a file
# $san/KIND.PID (asan, ubsan or tsan: with clang the last *SAN_OPTIONS
# read names it), must match PATTERN
harness_run() {
	"$T/prog" "$4" > /dev/null 2> "$T/stderr" &
	p=$!
	wait "$p"
	t_eq "$1: exit status $2" "$?" "$2"
	r=
	for f in "$san"/*."$p"; do [ -f "$f" ] && r=$f; done
	if [ -n "$r" ]; then
		t_grep "$1: report under \$EMB_TMP/sanitizer" "$3" "$r"
		rm -f "$san"/*."$p"
	else
		t_fail "$1: report under \$EMB_TMP/sanitizer" "none for pid $p: $(ls "$san")" \
			"stderr: $(head -c 300 "$T/stderr")" \
			"(gcc's UBSan next to ASan writes to stderr only: configure with CC=clang)"
	fi
}

if [ "$(mk EMB_TSAN)" = yes ]; then
	cat > "$T/prog.c" <<'X'
#include <pthread.h>
int x;
static void *f(void *a)
{
	(void)a;
	for (int i = 0; i < 100000; i++)
		x++;
	return 0;
}
int main(int argc, char **argv)
{
	pthread_t t;
	(void)argv;
	pthread_create(&t, 0, f, 0);
	for (int i = 0; i < 100000; i++)
		x += argc;
	pthread_join(t, 0);
	return 0;
}
X
	# shellcheck disable=SC2086
	t_ok "a racy program builds with this tree's flags" \
		$cc $cflags -o "$T/prog" "$T/prog.c" $ldflags
	harness_run "TSan: a data race" 86 "WARNING: ThreadSanitizer: data race" r
else
	cat > "$T/prog.c" <<'X'
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
char *volatile g;
int main(int argc, char **argv)
{
	volatile int big = INT_MAX;
	size_t n = 6 + (size_t)argc;    /* 8: not known to the compiler */
	char *p = calloc(n, 1);
	switch (argv[1][0]) {
	case 'l': g = p; p = 0; g = 0; return 0;
	case 'o': return p[n];
	case 'u': printf("%d\n", big + argc); break;
	}
	free(p);
	return 0;
}
X
	# shellcheck disable=SC2086
	t_ok "a faulty program builds with this tree's flags" \
		$cc $cflags -o "$T/prog" "$T/prog.c" $ldflags
	harness_run "LSan: a leak" 86 "ERROR: LeakSanitizer: detected memory leaks" l
	harness_run "ASan: a heap overflow" 86 "ERROR: AddressSanitizer: heap-buffer-overflow" o
	harness_run "UBSan: a signed overflow is fatal" 86 "runtime error: signed integer overflow" u
fi
