# 27-bounded-work.sh - what a hostile model directory can make one load
# or one record cost: linear in its input (input 4 times larger, time at
# most about 4 times: each check allows 10 times plus the start-up, a
# quadratic step gives 16, a cubic one 64) for shard names and
# __metadata__ keys (hash sets), a WordPiece word with a huge
# max_input_chars_per_word, thousands of added tokens sharing their
# start (Aho-Corasick); a normalizer that grows the text stops at its
# bound; a tool stopped by a signal while its reader has stalled exits at
# once with whole lines; a model file truncated under a running tool is
# one clear error, not a silent SIGBUS.  Ratios in the same run, best
# of 2, so a busy machine does not matter.
T=$(t_tmpdir 27-bounded-work)
F=$(t_fixture bert-tiny-cls-bf16)
export EMB_TOP
PY=$(python3 -c 'import sys; print(sys.executable)')

# ms CMD...: best of 2 wall times of CMD in ms (stdin from $T/in, output
# dropped); its status in $T/status
ms() {
	b=
	for i in 1 2; do
		s=$(date +%s%N)
		"$@" < "$T/in" > /dev/null 2> "$T/err"
		echo $? > "$T/status"
		e=$(( ($(date +%s%N) - s) / 1000000 ))
		if [ -z "$b" ] || [ "$e" -lt "$b" ]; then b=$e; fi
	done
	echo "$b"
}
# sanitizer builds (make check-sanitize, check-tsan): the timings are
# those of instrumented code, whose allocator is not the one users run;
# the ratios are checked in the normal build only
sanitized=
grep -q '^EMB_\(SANITIZE\|TSAN\) = yes' "$EMB_TOP/config.mk" 2>/dev/null && sanitized=1
# linear NAME SMALL_MS BIG_MS: 4x the input took at most 10x + 300 ms
linear() {
	if [ -n "$sanitized" ]; then
		t_skip "$1: 4x the input takes < 10x as long" "a sanitizer build times instrumented code"
		return
	fi
	t_ok "$1: 4x the input takes < 10x as long ($2 ms, $3 ms)" \
		test "$3" -lt $((10 * $2 + 300))
}

# ---- loads: hash sets, not scans ----------------------------------------
# (a sanitizer build skips these: minutes of instrumented JSON parsing
# that the normal build's run already covers)
if [ -n "$sanitized" ]; then
	t_skip "shard names and metadata keys at scale" "a sanitizer build times instrumented code"
else

# an index naming N distinct shards (none there: the load fails at the
# first, after reading all names; it used to take 9.9 s for 80k)
mkindex() {
	rm -rf "$T/idx"
	cp -r "$F" "$T/idx"
	rm "$T/idx/model.safetensors"
	"$PY" -c '
import json, sys
n = int(sys.argv[1])
json.dump({"metadata": {}, "weight_map": {"t%d" % i: "s%06d.safetensors" % i
           for i in range(n)}}, open(sys.argv[2], "w"))' "$1" "$T/idx/model.safetensors.index.json"
}
echo '{"text":"a"}' > "$T/in"
mkindex 20000
s=$(ms emb-encode -m "$T/idx" --pool)
t_eq "index of 20000 shards: exit 3 (a shard is missing)" "$(cat "$T/status")" 3
t_grep "index of 20000 shards: names the shard" 'shard s000000.safetensors' "$T/err"
mkindex 80000
l=$(ms emb-encode -m "$T/idx" --pool)
linear "shard names" "$s" "$l"

# model.safetensors with N __metadata__ keys (100k used to take 17 s)
mkmeta() {
	rm -rf "$T/meta"
	cp -r "$F" "$T/meta"
	"$PY" -c '
import json, struct, sys
p, n = sys.argv[1], int(sys.argv[2])
b = open(p, "rb").read()
k = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + k])
h["__metadata__"] = {"k%d" % i: "v" for i in range(n)}
s = json.dumps(h).encode()
s += b" " * (-len(s) % 8)
open(p, "wb").write(struct.pack("<Q", len(s)) + s + b[8 + k:])' "$T/meta/model.safetensors" "$1"
}
mkmeta 25000
s=$(ms emb-encode -m "$T/meta" --pool)
t_eq "25000 metadata keys: exit 0" "$(cat "$T/status")" 0
mkmeta 100000
l=$(ms emb-encode -m "$T/meta" --pool)
t_eq "100000 metadata keys: exit 0" "$(cat "$T/status")" 0
linear "metadata keys" "$s" "$l"
rm -rf "$T/idx" "$T/meta"
fi

# ---- records: crafted tokenizers -------------------------------------------
# tok DIR KIND: a small WordPiece tokenizer.json (vocab [UNK] a ##a b ##b)
tok() {
	mkdir -p "$1"
	"$PY" - "$1/tokenizer.json" "$2" <<'EOF'
import json, sys
path, kind = sys.argv[1:3]
def add(c):
    return {"id": 0, "content": c, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": False}
added, maxc = [], 100
if kind == "wp-huge":
    maxc = 100000000
elif kind == "nested":       # a^k b for k = 1..3000: one first character
    added = [add("a" * k + "b") for k in range(1, 3001)]
elif kind == "unused":       # 6000 <unusedN>, as Gemma's
    added = [add("<unused%d>" % k) for k in range(6000)]
json.dump({"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "WhitespaceSplit"},
           "post_processor": None, "decoder": None,
           "model": {"type": "WordPiece", "unk_token": "[UNK]",
                     "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": maxc,
                     "vocab": {"[UNK]": 0, "a": 1, "##a": 2, "b": 3, "##b": 4}}},
          open(path, "w"))
EOF
}
# text N UNIT: one record whose text is UNIT repeated to N characters
text() {
	"$PY" -c '
import json, sys
u = sys.argv[2]
print(json.dumps({"text": (u * (int(sys.argv[1]) // len(u) + 1))[:int(sys.argv[1])]}))
' "$1" "$2" > "$T/in"
}

# WordPiece, max_input_chars_per_word 10^8: one word of N characters
# (10,000 used to take over 120 s: every end tried for every start)
tok "$T/wp" wp-huge
text 5000 a
s=$(ms emb-tokenize -m "$T/wp" --no-truncate)
text 20000 a
l=$(ms emb-tokenize -m "$T/wp" --no-truncate)
linear "WordPiece word, max_input_chars_per_word 1e8" "$s" "$l"
t_eq "WordPiece word of 20000 a: a then 19999 ##a" \
	"$(emb-tokenize -m "$T/wp" --no-truncate < "$T/in" | "$PY" -c '
import json, sys
ids = json.loads(sys.stdin.read())["input_ids"]
print(ids[0], len(ids), set(ids[1:]))')" "1 20000 {2}"

# 3000 added tokens a^k b sharing their first character, a text of a's
# (20 KB used to take 48 s: every token tried at every position)
tok "$T/nested" nested
text 5000 a
s=$(ms emb-tokenize -m "$T/nested" --no-truncate)
text 20000 a
l=$(ms emb-tokenize -m "$T/nested" --no-truncate)
linear "3000 nested added tokens" "$s" "$l"
# leftmost-longest, as HF: ids in order after the vocabulary (5 = "ab")
echo '{"text":"aab aaab b ab aaaab"}' > "$T/in"
t_eq "nested added tokens: leftmost longest" \
	"$(emb-tokenize -m "$T/nested" < "$T/in" | "$PY" -c '
import json, sys
print(json.loads(sys.stdin.read())["input_ids"])')" "[6, 7, 3, 5, 8]"
"$PY" -c '
import json
print(json.dumps({"text": "a" * 2999 + "b"}))' > "$T/in"
t_eq "nested added tokens: the longest (a^2999 b) in one piece" \
	"$(emb-tokenize -m "$T/nested" < "$T/in" | "$PY" -c '
import json, sys
print(json.loads(sys.stdin.read())["input_ids"])')" "[3003]"

# 6000 <unusedN> tokens (Gemma): 5 s/MB before
tok "$T/unused" unused
text 100000 "<unused17> x <unused5999>b "
s=$(ms emb-tokenize -m "$T/unused" --no-truncate)
text 400000 "<unused17> x <unused5999>b "
l=$(ms emb-tokenize -m "$T/unused" --no-truncate)
linear "6000 added <unusedN> tokens" "$s" "$l"

# normalizer growth: the bound, before the memory goes (the bad-input
# matrix has the messages); 30 x Replace a -> aa on 1 MB used to run out
# of memory
mkdir -p "$T/dbl"
"$PY" -c '
import json
json.dump({"version": "1.0", "added_tokens": [], "pre_tokenizer": {"type": "WhitespaceSplit"},
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 30},
           "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1, "##a": 2}}},
          open("'"$T/dbl/tokenizer.json"'", "w"))'
text 1000000 "a "
set -- $("$PY" -c '
import resource, subprocess, sys
r = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r)' emb-tokenize -m "$T/dbl" < "$T/in")
t_eq "30 x Replace a -> aa on 1 MB: the record fails (exit 1)" "$2" 1
# the bound: 16 times 1M code points at 12 bytes each, not 2^30 times
t_ok "30 x Replace a -> aa on 1 MB: peak RSS under 512 MiB ($1 KiB)" test "$1" -lt 524288
rm -rf "$T/dbl" "$T/in"

# ---- signals while the reader has stopped reading -----------------------------
# blocked SIG CMD...: CMD reads an endless stream and writes into a pipe
# whose reader takes 1000 bytes and stops; 2 s later SIG: "STATUS
# SECONDS whole|cut" (everything written ends at a line and parses).
# CMD starts with the signals at their defaults: under nohup (or a
# background job) they come ignored, and the tools keep them so
blocked() {
	"$PY" - "$@" <<'EOF'
import json, os, signal, subprocess, sys, time
sig = getattr(signal, "SIG" + sys.argv[1])
top = os.environ["EMB_TOP"]
src = subprocess.Popen([sys.executable, top + "/test/bad-input/stream", "text", "100000000000"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
r, w = os.pipe()
p = subprocess.Popen(sys.argv[2:], stdin=src.stdout, stdout=w, stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in
                                         (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])
os.close(w)
src.stdout.close()
got = os.read(r, 1000)
time.sleep(2)
t0 = time.time()
p.send_signal(sig)
try:
    st = p.wait(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    st = p.wait()
dt = time.time() - t0
src.kill()
while True:
    b = os.read(r, 1 << 20)
    if not b:
        break
    got += b
whole = got.endswith(b"\n")
try:
    for l in got.split(b"\n")[:-1]:
        json.loads(l)
except ValueError:
    whole = False
print(128 - st if st < 0 else st, "fast" if dt < 1.5 else "slow(%.1fs)" % dt,
      "whole" if whole else "cut")
EOF
}
for c in "TERM:143:emb-tokenize -m $F" "INT:130:emb-tokenize -m $F" \
         "HUP:129:emb-tokenize -m $F" "TERM:143:emb-encode -j 2 -m $F --pool"; do
	sig=${c%%:*}
	rest=${c#*:}
	want=${rest%%:*}
	cmd=${rest#*:}
	t_eq "${cmd%% *}, SIG$sig while stdout is blocked: exit $want within 1.5 s, whole lines" \
		"$(blocked $sig $cmd)" "$want fast whole"
done

# ---- a model file truncated under a running tool ------------------------------
# (cp new.safetensors model.safetensors over a running job does this)
D32=$(t_fixture distilbert-tiny)
rm -rf "$T/trunc"
cp -r "$D32" "$T/trunc"
"$PY" -c '
import sys, time
for i in range(200):
    sys.stdout.write("{\"id\":%d,\"text\":\"record number %d\"}\n" % (i, i))
    sys.stdout.flush()
    time.sleep(0.05)' 2> /dev/null | emb-encode -m "$T/trunc" --pool > "$T/bus.out" 2> "$T/bus.err" &
pid=$!
n=0
while [ $n -lt 300 ] && [ ! -s "$T/bus.out" ]; do sleep 0.1; n=$((n + 1)); done
"$PY" -c 'import os, sys; os.truncate(sys.argv[1], 4096)' "$T/trunc/model.safetensors"
wait $pid; s=$?
t_eq "model.safetensors truncated while emb-encode runs: exit 3" "$s" 3
t_grep "model.safetensors truncated: one clear line" \
	'^emb-encode: error: a memory-mapped model file changed while in use (truncated or rewritten in place; replace a model by renaming a new copy over it)$' "$T/bus.err"
t_lines "model.safetensors truncated: nothing else on stderr" 1 "$T/bus.err"
t_ok "model.safetensors truncated: the records before it were written" test -s "$T/bus.out"
rm -rf "$T/trunc"
