# 82-security.sh - the trust boundary of emb(7) SECURITY, tried as an
# attacker would: model directories with links out and FIFOs, files whose
# bytes must not reach a message, emb-quantize -o onto hostile places,
# manifests that try to write or delete outside their run directory, and
# the exit statuses of the files besides stdout.
T=$(t_tmpdir 82-security)
fd=$(t_fixture bert-tiny-cls-bf16)
echo '{"text":"hello world"}' > "$T/in.jsonl"
printf 'root:x:0:0:root:/root:/bin/bash\nSECRETLINE\n' > "$T/secret"
chmod 640 "$T/secret"

# a copy of the fixture (files, not links) in $T/NAME
mkmodel() {
	rm -rf "$T/$1"
	cp -R "$fd" "$T/$1" && rm -f "$T/$1/.done"
}
# CMD must exit 3 within 10 s (no hang) with a message matching RE
load_fails() { # DESC RE CMD...
	d=$1 re=$2
	shift 2
	timeout 10 "$@" < "$T/in.jsonl" > "$T/out" 2> "$T/err"
	s=$?
	t_eq "$d: exit 3 (not a hang)" "$s" 3
	t_grep "$d: says why" "$re" "$T/err"
	t_lines "$d: one line" 1 "$T/err"
	t_eq "$d: nothing on stdout" "$(wc -c < "$T/out" | tr -d ' ')" 0
}

# --- reads stay inside the model directory -----------------------------
for f in model.safetensors config.json tokenizer.json modules.json \
	1_Pooling/config.json; do
	mkmodel ln
	rm "$T/ln/$f" && ln -s "$T/secret" "$T/ln/$f"
	load_fails "$f -> a file outside" "$f: resolves to a file outside the model directory" \
		emb-encode -m "$T/ln" --pool
	t_nogrep "$f -> outside: no byte of it shown" "root\|SECRET\|[0-9]\{12,\}" "$T/err"
done
mkmodel ln
mkdir "$T/elsewhere" && mv "$T/ln/1_Pooling" "$T/elsewhere/" && ln -s "$T/elsewhere/1_Pooling" "$T/ln/1_Pooling"
load_fails "a module folder linked outside" "1_Pooling/config.json: resolves to a file outside" \
	emb-encode -m "$T/ln" --pool
mkmodel ln
mv "$T/ln/model.safetensors" "$T/ln/weights.bin" && ln -s weights.bin "$T/ln/model.safetensors"
echo '{"text":"hello world"}' | emb-encode -m "$T/ln" --pool > "$T/out" 2> "$T/err"
t_eq "a link inside the model directory is fine" "$?" 0
# sharded: an index naming a shard that links out
mkmodel sh
mv "$T/sh/model.safetensors" "$T/shard.safetensors"
ln -s "$T/shard.safetensors" "$T/sh/model-00001-of-00001.safetensors"
emb-synth --inspect "$T/shard.safetensors" | awk '{print $1}' > "$T/names"
awk 'BEGIN { printf "{\"weight_map\": {" } { printf "%s\"%s\": \"model-00001-of-00001.safetensors\"", (NR > 1 ? ", " : ""), $1 } END { print "}}" }' \
	"$T/names" > "$T/sh/model.safetensors.index.json"
load_fails "a shard linked outside" "model-00001-of-00001.safetensors: resolves to a file outside" \
	emb-encode -m "$T/sh" --pool

# the Hugging Face cache layout: snapshot links into blobs/ are the one
# exception, a link anywhere else is not
hc="$T/hub/models--acme--tiny"
mkdir -p "$hc/blobs" "$hc/snapshots/c1/1_Pooling" "$hc/refs"
printf c1 > "$hc/refs/main"
for f in $(cd "$fd" && find . -type f ! -name .done | sed 's|^\./||'); do
	h=$(sha256sum < "$fd/$f" | cut -d ' ' -f 1)
	cp "$fd/$f" "$hc/blobs/$h"
	case $f in */*) up=../../../ ;; *) up=../../ ;; esac
	ln -s "${up}blobs/$h" "$hc/snapshots/c1/$f"
done
echo '{"text":"hello world"}' | HF_HUB_CACHE="$T/hub" emb-encode -m acme/tiny --pool > "$T/out" 2> "$T/err"
t_eq "HF cache snapshot linking into blobs/: exit 0" "$?" 0
echo '{"text":"hello world"}' | emb-encode -m "$fd" --pool > "$T/want"
t_ok "HF cache snapshot: the same vectors" cmp -s "$T/out" "$T/want"
rm "$hc/snapshots/c1/config.json" && ln -s ../../../../secret "$hc/snapshots/c1/config.json"
load_fails "HF cache snapshot linking outside blobs/" "config.json: resolves to a file outside" \
	env HF_HUB_CACHE="$T/hub" emb-encode -m acme/tiny --pool

# --- regular files only, never a hang ------------------------------------
for f in model.safetensors config.json tokenizer.json vocab.txt modules.json \
	1_Pooling/config.json sentence_bert_config.json tokenizer_config.json; do
	mkmodel ff
	rm -f "$T/ff/$f" && mkfifo "$T/ff/$f"
	load_fails "FIFO as $f" "$f: not a regular file (a FIFO)" emb-encode -m "$T/ff" --pool
done
mkmodel ff
rm "$T/ff/tokenizer.json" && mkfifo "$T/ff/tokenizer.json"
load_fails "FIFO as tokenizer.json (emb-tokenize)" "tokenizer.json: not a regular file (a FIFO)" \
	emb-tokenize -m "$T/ff"
mkmodel ff
rm "$T/ff/config.json" && ln -s /dev/zero "$T/ff/config.json"
load_fails "a device as config.json" "config.json: not a regular file (a character device)" \
	emb-encode -m "$T/ff" --pool
mkmodel ff
rm "$T/ff/config.json" && mkdir "$T/ff/config.json"
load_fails "a directory as config.json" "config.json: not a regular file (a directory)" \
	emb-encode -m "$T/ff" --pool
# a shard that is a FIFO
mkmodel sf
mv "$T/sf/model.safetensors" "$T/sf/real.safetensors"
awk 'BEGIN { printf "{\"weight_map\": {" } { printf "%s\"%s\": \"model-00001-of-00001.safetensors\"", (NR > 1 ? ", " : ""), $1 } END { print "}}" }' \
	"$T/names" > "$T/sf/model.safetensors.index.json"
mkfifo "$T/sf/model-00001-of-00001.safetensors"
load_fails "FIFO as a shard" "model-00001-of-00001.safetensors: not a regular file (a FIFO)" \
	emb-encode -m "$T/sf" --pool
mkfifo "$T/ranges.fifo"
timeout 10 emb-quantize --vectors int8 --ranges "$T/ranges.fifo" < "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "FIFO as --ranges: exit 5, an input file that cannot be read (not a hang)" "$s" 5
t_grep "FIFO as --ranges: says why" "ranges.fifo: not a regular file (a FIFO)" "$T/err"
t_lines "FIFO as --ranges: one line" 1 "$T/err"
t_eq "FIFO as --ranges: nothing on stdout" "$(wc -c < "$T/out" | tr -d ' ')" 0

# --- messages never quote file contents ----------------------------------
mkmodel q
cp "$T/secret" "$T/q/model.safetensors"
load_fails "text as model.safetensors" "model.safetensors: not a safetensors file" emb-encode -m "$T/q" --pool
t_nogrep "text as model.safetensors: no byte of it shown" "root\|SECRET\|[0-9]\{12,\}" "$T/err"
mkmodel q
cp "$T/secret" "$T/q/config.json"
load_fails "text as config.json" "config.json: invalid JSON at line 1 column [0-9]*: " emb-encode -m "$T/q" --pool
t_nogrep "text as config.json: no byte of it shown" "root\|SECRET\|near" "$T/err"
mkmodel q
cp "$T/secret" "$T/q/modules.json"
load_fails "text as modules.json" "modules.json: invalid JSON" emb-encode -m "$T/q" --pool
t_nogrep "text as modules.json: no byte of it shown" "root\|SECRET" "$T/err"
# tokenizer.json and the vocab.txt model's JSON files: bad bytes that are
# a secret (a bare word, an escape, a control character, the end of the
# file) are never echoed; the message says where (line, column)
nb=0
for bad in '{"model": TOPSECRETWORD}' '{"model": "\\uSECRETX"}' \
	'{"model": "SECRET\001WORD"}' '{"model":\n "SECRETWORD' '{"model": [SECRETWORD]}'; do
	nb=$((nb + 1))
	mkmodel q
	printf "$bad" > "$T/q/tokenizer.json"
	load_fails "tokenizer.json bad JSON $nb" "tokenizer.json: invalid JSON at line [0-9]* column [0-9]*: " \
		emb-tokenize -m "$T/q"
	t_nogrep "tokenizer.json bad JSON $nb: no byte of it shown" "SECRET\|near '" "$T/err"
done
for f in tokenizer_config.json special_tokens_map.json added_tokens.json; do
	mkmodel q
	rm -f "$T/q/tokenizer.json"
	printf '{"x": SECRETWORD}' > "$T/q/$f"
	load_fails "vocab.txt model, bad $f" "$f: invalid JSON at line 1 column [0-9]*: invalid token$" \
		emb-tokenize -m "$T/q"
	t_nogrep "vocab.txt model, bad $f: no byte of it shown" "SECRET" "$T/err"
done
mkmodel q
cp "$T/secret" "$T/q/tokenizer.json"
load_fails "text as tokenizer.json" "tokenizer.json: invalid JSON at line 1 column [0-9]*: " emb-tokenize -m "$T/q"
t_nogrep "text as tokenizer.json: no byte of it shown" "root\|SECRET\|near" "$T/err"
mkmodel q
printf '\357\273\277' > "$T/q/config.json" && cat "$fd/config.json" >> "$T/q/config.json"
load_fails "config.json with a UTF-8 BOM" "config.json: starts with a UTF-8 byte order mark" \
	emb-encode -m "$T/q" --pool
printf '\357\273\277{"text":"hi"}\n' | emb-tokenize -m "$fd" > "$T/out" 2> "$T/err"
t_eq "a record with a UTF-8 BOM: exit 1" "$?" 1
t_grep "a record with a UTF-8 BOM: its own message" "<stdin>:1): starts with a UTF-8 byte order mark" "$T/err"

# --- emb-quantize -o ------------------------------------------------------
mkmodel qm
ln -s /etc "$T/qm/docs"
ln -s . "$T/qm/loop1"
ln -s . "$T/qm/loop2"
echo junk > "$T/qm/README.md"
emb-quantize -m "$T/qm" -o "$T/qo" --weights int8 > "$T/out" 2> "$T/err"
t_eq "quantize a model with links to /etc and loops: exit 0" "$?" 0
t_ok "no docs/ (the link to /etc) in the output" test ! -e "$T/qo/docs"
t_ok "no loop copies in the output" test ! -e "$T/qo/loop1"
t_ok "only the files emb reads (no README.md)" test ! -e "$T/qo/README.md"
t_eq "one model.safetensors, whatever the links" "$(find "$T/qo" -name '*.safetensors' | wc -l | tr -d ' ')" 1
t_ok "the module folder is there" test -f "$T/qo/1_Pooling/config.json"
t_eq "no temporary directory left beside it" "$(ls -a "$T" | grep -c '^\.qo\.')" 0
echo '{"text":"hello world"}' | emb-encode -m "$T/qo" --pool > "$T/out" 2> "$T/err"
t_eq "the int8 checkpoint works" "$?" 0
# an existing non-empty -o: refused, then replaced with --force
echo '{"prompts": {"q": "stale: "}, "default_prompt_name": "q"}' > "$T/qo/config_sentence_transformers.json"
: > "$T/qo/stale-file"
emb-quantize -m "$T/qm" -o "$T/qo" --weights f16 > "$T/out" 2> "$T/err"
t_eq "non-empty -o without --force: exit 3" "$?" 3
t_grep "non-empty -o: says so" "qo: exists and is not empty (--force replaces it)" "$T/err"
t_ok "non-empty -o: left as it was" test -e "$T/qo/stale-file"
emb-quantize -m "$T/qm" -o "$T/qo" --weights f16 --force > "$T/out" 2> "$T/err"
t_eq "non-empty -o with --force: exit 0" "$?" 0
t_ok "--force: no stale file kept" test ! -e "$T/qo/stale-file"
t_ok "--force: no stale prompt config kept" cmp -s "$T/qo/config_sentence_transformers.json" "$T/qm/config_sentence_transformers.json"
t_eq "--force: nothing left beside it" "$(ls -a "$T" | grep -c '^\.qo\.')" 0
emb-quantize -m "$T/qm" -o "$T/qm/sub" --weights f16 > "$T/out" 2> "$T/err"
t_eq "-o inside the model: exit 3" "$?" 3
t_grep "-o inside the model: says so" "the output directory is inside the model directory" "$T/err"
t_ok "-o inside the model: nothing made" test ! -e "$T/qm/sub"
emb-quantize -m "$T/qm" -o "$T/qm" --weights f16 --force > "$T/out" 2> "$T/err"
t_eq "-o the model itself, even with --force: exit 3" "$?" 3
emb-quantize -m "$T/qm/1_Pooling/.." -o "$T" --weights f16 --force > "$T/out" 2> "$T/err"
t_eq "-o a directory holding the model, with --force: exit 3" "$?" 3
t_ok "the model is still there" test -f "$T/qm/model.safetensors"
ln -s "$T/elsewhere" "$T/qlink"
emb-quantize -m "$T/qm" -o "$T/qlink" --weights f16 > "$T/out" 2> "$T/err"
t_eq "-o a symbolic link: exit 3" "$?" 3

# --- a signal in the middle of emb-quantize: what it made goes, nothing else
# -o: the signal comes once the temporary directory beside OUT exists (a
# model large enough to take a while); a run that ended before the
# signal is tried again, and after five such runs the check is skipped
python3 - "$EMB_TOP/test/data/fixtures/bert-tiny-cls-bf16/recipe.json" "$T/big.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = {64: 512, 256: 2048}      # hidden 512, intermediate 2048: 44 MB
for t in r["tensors"]:
    t["shape"] = [m.get(d, d) for d in t["shape"]]
c = r["files"]["config.json"]
c["hidden_size"], c["intermediate_size"], c["num_attention_heads"] = 512, 2048, 8
json.dump(r, open(sys.argv[2], "w"))
PY
emb-synth "$T/big.json" "$T/bigm" --root "$D" > /dev/null 2>&1
sigstatus() { case $1 in INT) echo 130 ;; TERM) echo 143 ;; HUP) echo 129 ;; esac; }
mkdir -p "$T/qsig"
echo keep > "$T/qsig/.other.tmp-mine"      # not emb's: must stay
for sig in INT TERM HUP; do
	rm -rf "$T/qsig/out"
	r=$(python3 - "$sig" "$T/bigm" "$T/qsig" <<'PY'
import os, signal, subprocess, sys, time
sig = getattr(signal, "SIG" + sys.argv[1])
for attempt in range(5):
    p = subprocess.Popen(["emb-quantize", "-m", sys.argv[2], "-o",
                          sys.argv[3] + "/out", "--weights", "int8"],
                         stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in
                                             (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])
    seen = False
    while p.poll() is None:
        if any(n.startswith(".out.tmp-") for n in os.listdir(sys.argv[3])):
            seen = True
            p.send_signal(sig)
            break
        time.sleep(0.001)
    st = p.wait()
    if seen and st == -sig:
        left = sorted(n for n in os.listdir(sys.argv[3]))
        print("killed", 128 + sig, " ".join(left))
        sys.exit(0)
    # the run ended first: try again
    subprocess.call(["rm", "-rf", sys.argv[3] + "/out"])
print("raced")
PY
)
	case $r in
	raced) t_skip "emb-quantize -o, SIG$sig mid-write" "every run ended before the signal" ;;
	*)
		want=$(sigstatus $sig)
		t_eq "emb-quantize -o, SIG$sig mid-write: the signal's status" "${r%% *}" "killed"
		t_eq "emb-quantize -o, SIG$sig mid-write: exit $want, its temporary directory gone, no OUT, other files kept" \
			"$(echo "$r" | cut -d' ' -f2-)" "$want .other.tmp-mine"
		;;
	esac
done
# the stdin spool: a producer that stalls while emb-quantize spools it
# (emb-quantize starts with the signals at their defaults: under nohup
# they come ignored, the shell cannot undo that, and the tools keep it)
mkdir -p "$T/qtmp"
for sig in TERM HUP; do
	sh -c 'printf "{\"embedding\":[1,2]}\n"; echo $$ > "$1"; exec sleep 30' sh "$T/producer" |
		TMPDIR="$T/qtmp" python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' emb-quantize --vectors int8 > "$T/out" 2> "$T/err" &
	pid=$!
	n=0
	while [ $n -lt 200 ] && [ -z "$(ls "$T/qtmp")" ]; do sleep 0.05; n=$((n + 1)); done
	t_ok "emb-quantize, stalled stdin: the spool is there" test -n "$(ls "$T/qtmp")"
	kill -$sig $pid
	wait $pid; s=$?
	t_eq "emb-quantize, stalled stdin, SIG$sig: exit $(sigstatus $sig), the spool gone" \
		"$s $(ls "$T/qtmp")" "$(sigstatus $sig) "
	kill "$(cat "$T/producer")" 2> /dev/null
done

# --- exit statuses of the files besides stdout -----------------------------
printf '{"embedding":[1,2]}\n{"embedding":[3,4]}\n' > "$T/vec.jsonl"
TMPDIR="$T/no/such/dir" emb-quantize --vectors int8 < "$T/vec.jsonl" > "$T/out" 2> "$T/err"
t_eq "unusable TMPDIR: exit 3 (not 1)" "$?" 3
t_grep "unusable TMPDIR: says so" "cannot spool stdin.*TMPDIR" "$T/err"
emb-quantize --vectors int8 --save-ranges "$T/no/such/r.json" "$T/vec.jsonl" > "$T/out" 2> "$T/err"
t_eq "unwritable --save-ranges: exit 3 (not 4)" "$?" 3
emb-quantize --vectors int8 --force "$T/vec.jsonl" > "$T/out" 2> "$T/err"
t_eq "--force without -m: exit 2" "$?" 2
printf '{"id":1,"embedding":[1,2]}\nnot json\n' > "$T/badgolden.jsonl"
printf '{"id":1,"embedding":[1,2]}\n' > "$T/one.jsonl"
emb-validate "$T/badgolden.jsonl" "$T/one.jsonl" > "$T/out" 2> "$T/err"
t_eq "emb-validate, unreadable golden line: exit 3" "$?" 3
t_grep "unreadable golden: diagnostic on stderr" "badgolden.jsonl:2: unreadable golden line" "$T/err"
t_nogrep "unreadable golden: no diagnostic on stdout" "error" "$T/out"
printf '{"id":1,"embedding":[1,3]}\n' > "$T/other.jsonl"
emb-validate "$T/one.jsonl" "$T/other.jsonl" > "$T/out" 2> "$T/err"
t_eq "emb-validate, a difference: exit 1" "$?" 1
t_grep "per-record messages on stderr" "^id 1: embedding: max abs diff" "$T/err"
t_grep "the summary on stdout" "^embedding: 1 records.*FAIL" "$T/out"

# --- manifests --------------------------------------------------------------
MD="$T/mf"
mkdir -p "$MD/victim/.ssh"
echo "ssh-ed25519 AAAA me" > "$MD/victim/.ssh/authorized_keys"
tok=$(t_fixture bert-tiny-cls-bf16)
echo '{"text":"hi"}' | emb-tokenize -m "$tok" > "$MD/tok.jsonl"
cp "$MD/tok.jsonl" "$MD/golden.jsonl"
mf_bad() { # NAME RE: the manifest $MD/NAME.yaml is refused at load, exit 3
	emb-validate --manifest "$MD/$1.yaml" > "$T/out" 2> "$T/err"
	t_eq "manifest $1: exit 3" "$?" 3
	t_grep "manifest $1: names the line" "$1.yaml:[0-9]*: case 'a': $2" "$T/err"
	t_ok "manifest $1: authorized_keys untouched" grep -q "AAAA me" "$MD/victim/.ssh/authorized_keys"
	t_eq "manifest $1: nothing added to the victim" "$(ls -A "$MD/victim/.ssh" | grep -v '^.done$')" authorized_keys
}
case_head="cases:
  - name: a
    input: tok.jsonl
    golden: golden.jsonl"
printf '%s\n    model: %s\n    command: emb-tokenize | emb-quantize --weights f16 -o %s\n' \
	"$case_head" "$tok" "$MD/victim/.ssh" > "$MD/write-o.yaml"
mf_bad write-o "key 'command': 'emb-quantize': '--weights' writes files"
printf '%s\n    model: %s\n    command: emb-tokenize\n    args: [--output=%s]\n' \
	"$case_head" "$tok" "$MD/victim/.ssh" > "$MD/write-args.yaml"
mf_bad write-args "key 'args': '--output=.*' (given to emb-tokenize) writes files"
printf '%s\n    model: %s\n    command: emb-quantize --save-ranges %s/r --vectors int8\n' \
	"$case_head" "$tok" "$MD/victim/.ssh" > "$MD/write-ranges.yaml"
mf_bad write-ranges "key 'command': 'emb-quantize': '--save-ranges' writes files"
printf '%s\n    command: emb-validate --kee %s --manifest x.yaml\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/write-keep.yaml"
mf_bad write-keep "key 'command': 'emb-validate' is not a program a manifest may run"
# the allow-list: each program with the options it may be given; any
# other program or option is refused at load, naming the line
printf '%s\n    command: emb-search --build %s/authorized_keys\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/write-build.yaml"
mf_bad write-build "key 'command': 'emb-search': '--build' writes files"
printf '%s\n    command: emb-search --build=%s/new.index\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/write-build-eq.yaml"
mf_bad write-build-eq "key 'command': 'emb-search': '--build=.*' writes files"
printf '%s\n    command: emb-search\n    args: [--build, %s/authorized_keys]\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/write-build-args.yaml"
mf_bad write-build-args "key 'args': '--build' (given to emb-search) writes files"
printf '%s\n    command: emb-quantize --vectors int8 -o%s\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/write-o-joined.yaml"
mf_bad write-o-joined "key 'command': 'emb-quantize': '-o.*' writes files"
printf '%s\n    command: emb-fetch acme/tiny\n' "$case_head" > "$MD/net-fetch.yaml"
mf_bad net-fetch "key 'command': 'emb-fetch' is not a program a manifest may run (.*emb-fetch goes to the network)"
printf '%s\n    command: emb-nonesuch\n' "$case_head" > "$MD/unknown-prog.yaml"
mf_bad unknown-prog "key 'command': 'emb-nonesuch' is not a program a manifest may run"
printf '%s\n    command: emb-pool --not-an-option\n' "$case_head" > "$MD/unknown-opt.yaml"
mf_bad unknown-opt "key 'command': 'emb-pool': '--not-an-option' is not an option a manifest may give: refused unless emb-validate --trusted (a manifest gives emb-pool only"
printf '%s\n    command: emb-tokenize --pool\n' "$case_head" > "$MD/other-prog-opt.yaml"
mf_bad other-prog-opt "key 'command': 'emb-tokenize': '--pool' is not an option a manifest may give: .* gives emb-tokenize only"
printf '%s\n    command: emb-pool | emb-search --index x\n    args: [--save-ranges=%s/r]\n' \
	"$case_head" "$MD/victim/.ssh" > "$MD/args-all-stages.yaml"
mf_bad args-all-stages "key 'args': '--save-ranges=.*' (given to emb-pool) writes files"
# a value is a value: "--prompt -o" gives the prompt "-o", writes nothing
printf '%s\n    model: %s\n    command: emb-tokenize --prompt -o\n    expect_exit: 0\n' \
	"$case_head" "$tok" > "$MD/value-o.yaml"
emb-validate --manifest "$MD/value-o.yaml" > "$T/out" 2> "$T/err"
t_nogrep "an option's value that looks like -o is not refused" "refused" "$T/err"
# model: + synth: a directory holding a .done is not deleted any more
: > "$MD/victim/.ssh/.done"
printf '%s\n    model: %s\n    synth: %s\n    synth_root: %s\n    command: emb-tokenize\n' \
	"$case_head" "$MD/victim/.ssh" "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$D" > "$MD/synth-abs.yaml"
mf_bad synth-abs "key 'model': with 'synth', the name of the checkpoint built inside the run directory"
printf '%s\n    model: ../mf/victim/.ssh\n    synth: %s\n    synth_root: %s\n    command: emb-tokenize\n' \
	"$case_head" "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$D" > "$MD/synth-up.yaml"
mf_bad synth-up "key 'model': with 'synth'"
printf '%s\n    model: victim/.ssh\n    synth: %s\n    synth_root: %s\n    command: emb-tokenize\n' \
	"$case_head" "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$D" > "$MD/synth-rel.yaml"
emb-validate --manifest "$MD/synth-rel.yaml" > "$T/out" 2> "$T/err"
t_eq "synth into a name that exists beside the manifest: exit 0" "$?" 0
t_ok "that directory is untouched (not removed, not written)" grep -q "AAAA me" "$MD/victim/.ssh/authorized_keys"
t_eq "nothing added to it" "$(ls -A "$MD/victim/.ssh" | tr '\n' ' ')" ".done authorized_keys "
printf '%s\n    model: brand/new\n    synth: %s\n    synth_root: %s\n    command: emb-tokenize\n' \
	"$case_head" "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$D" > "$MD/synth-new.yaml"
mkdir -p "$T/mtmp"
TMPDIR="$T/mtmp" emb-validate --manifest "$MD/synth-new.yaml" > "$T/out" 2> "$T/err"
t_eq "synth into a new name: exit 0" "$?" 0
t_ok "no new path beside the manifest" test ! -e "$MD/brand"
t_eq "the temporary run directory is removed" "$(ls "$T/mtmp" 2>/dev/null | wc -l | tr -d ' ')" 0
# a program in the current directory is not found through an empty PATH entry
mkdir -p "$MD/cwd"
printf '#!/bin/sh\ntouch "%s/ran"\n' "$MD" > "$MD/cwd/emb-evil" && chmod +x "$MD/cwd/emb-evil"
printf '%s\n    command: emb-evil\n' "$case_head" > "$MD/cwd.yaml"
(cd "$MD/cwd" && PATH="$PATH:" emb-validate --manifest "$MD/cwd.yaml" > "$T/out" 2> "$T/err")
t_eq "a program in the current directory, not on the allow-list: exit 3" "$?" 3
t_ok "a program in the current directory: not run at load" test ! -e "$MD/ran"
(cd "$MD/cwd" && PATH="$PATH:" emb-validate --trusted --manifest "$MD/cwd.yaml" > "$T/out" 2> "$T/err")
t_eq "a program in the current directory, --trusted: exit 1" "$?" 1
t_grep "a program in the current directory: not found" "emb-evil: command not found" "$T/out"
t_ok "a program in the current directory: not run" test ! -e "$MD/ran"
# --trusted lets a command write where it says
cp "$T/vec.jsonl" "$MD/vec.jsonl"
emb-quantize --vectors int8 "$MD/vec.jsonl" > "$MD/vec.golden.jsonl"
printf 'cases:\n  - name: a\n    input: vec.jsonl\n    golden: vec.golden.jsonl\n    command: emb-quantize --vectors int8 --save-ranges %s/ranges.json\n' \
	"$MD" > "$MD/trusted.yaml"
emb-validate --manifest "$MD/trusted.yaml" > "$T/out" 2> "$T/err"
t_eq "without --trusted: exit 3" "$?" 3
t_ok "without --trusted: nothing written" test ! -e "$MD/ranges.json"
emb-validate --trusted --manifest "$MD/trusted.yaml" > "$T/out" 2> "$T/err"
t_eq "--trusted: the manifest runs" "$?" 0
t_ok "--trusted: the command wrote where it said" test -f "$MD/ranges.json"
emb-validate --trusted "$MD/golden.jsonl" "$MD/tok.jsonl" > "$T/out" 2> "$T/err"
t_eq "--trusted without --manifest: exit 2" "$?" 2

# --- F64 tensors: accepted, converted to float32 (emb(7) Models) ---------
if command -v python3 > /dev/null 2>&1; then
	cat > "$T/tof64.py" <<'PY'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
out = {}; chunks = []; off = 0
for k, v in h.items():
    if k == "__metadata__":
        out[k] = v; continue
    raw = data[v["data_offsets"][0]:v["data_offsets"][1]]
    if v["dtype"] in ("BF16", "F32"):
        if v["dtype"] == "BF16":
            vals = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
        else:
            vals = struct.unpack("<%df" % (len(raw) // 4), raw)
        raw = struct.pack("<%dd" % len(vals), *vals); v = dict(v, dtype="F64")
    out[k] = dict(v, data_offsets=[off, off + len(raw)]); chunks.append(raw); off += len(raw)
hj = json.dumps(out).encode(); hj += b" " * (-len(hj) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hj)) + hj + b"".join(chunks))
PY
	mkmodel f64
	python3 "$T/tof64.py" "$fd/model.safetensors" "$T/f64/model.safetensors"
	t_grep "F64 model made" "F64" "$T/f64/model.safetensors"
	echo '{"text":"hello world"}' | emb-encode -m "$T/f64" --pool > "$T/out" 2> "$T/err"
	t_eq "F64 tensors: exit 0" "$?" 0
	t_ok "F64 tensors: the vectors of the same weights in BF16" cmp -s "$T/out" "$T/want"
else
	t_skip "F64 tensors" "python3 not found"
fi

# --- manifests that would cost more than linear time ----------------------
# 1 MB of nested flow sequences: libyaml alone takes minutes on it; the
# nesting cap refuses it as soon as the parser is 17 levels deep
{ printf 'cases: '; head -c 500000 /dev/zero | tr '\0' '['; head -c 500000 /dev/zero | tr '\0' ']'; echo; } > "$T/deep.yaml"
timeout 10 emb-validate --manifest "$T/deep.yaml" > "$T/out" 2> "$T/err"; s=$?
t_eq "1 MB of nested YAML: refused (exit 3), within 10 s" "$s" 3
t_grep "nested YAML: names file and line" "deep.yaml:1: nested deeper than 16 levels" "$T/err"
{ printf 'cases:\n'; i=0; while [ $i -lt 20 ]; do printf '%*s- \n' $((i * 2)) ''; i=$((i + 1)); done; } > "$T/deep-block.yaml"
timeout 10 emb-validate --manifest "$T/deep-block.yaml" > "$T/out" 2> "$T/err"; s=$?
t_eq "nested block sequences: exit 3" "$s" 3
t_grep "nested block sequences: names the line" "deep-block.yaml:[0-9]*: nested deeper than 16 levels" "$T/err"
printf 'x: &a [1, 2]\ncases: *a\n' > "$T/alias.yaml"
emb-validate --manifest "$T/alias.yaml" > "$T/out" 2> "$T/err"; s=$?
t_eq "a YAML alias: exit 3" "$s" 3
t_grep "a YAML alias: named, with its line" "alias.yaml:2: an alias" "$T/err"
{ printf 'cases: []\n# '; head -c 4300000 /dev/zero | tr '\0' 'x'; echo; } > "$T/big.yaml"
timeout 10 emb-validate --manifest "$T/big.yaml" > "$T/out" 2> "$T/err"; s=$?
t_eq "a manifest over 4 MiB: exit 3" "$s" 3
t_grep "a manifest over 4 MiB: says so" "big.yaml: larger than 4 MiB" "$T/err"
mkfifo "$T/fifo.yaml"
timeout 10 emb-validate --manifest "$T/fifo.yaml" > "$T/out" 2> "$T/err"; s=$?
t_eq "a FIFO as the manifest: exit 3, no wait" "$s" 3
t_grep "a FIFO as the manifest: named" "fifo.yaml: not a regular file (a FIFO)" "$T/err"

# --- emb-search --index: the one opener of every file a tool reads --------
printf '{"embedding":[1,0]}\n' > "$T/q.jsonl"
rm -f "$T/ix.fifo" && mkfifo "$T/ix.fifo"
ln -sf /dev/zero "$T/ix.zero"
for ix in "$T/ix.fifo" /dev/zero "$T/ix.zero"; do
	timeout 10 emb-search --index "$ix" "$T/q.jsonl" > "$T/out" 2> "$T/err"; s=$?
	t_eq "--index ${ix##*/}: refused (exit 5, an input file that cannot be read), no wait" "$s" 5
	t_grep "--index ${ix##*/}: not a regular file" "^emb-search: error: $ix: not a regular file (a" "$T/err"
	t_lines "--index ${ix##*/}: nothing on stdout" 0 "$T/out"
done
timeout 10 emb-search --index "$T" "$T/q.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--index a directory: exit 5" "$s" 5
t_grep "--index a directory: named" "$T: not a regular file (a directory)" "$T/err"
# a reader error on a vectors JSONL index: one clean message (it used to
# be formatted into itself: "l.jsonl:2: l.jsonl:2: es)")
printf '{"id":1,"embedding":[1,2]}\n{"id":2,"embedding":[1,2]}\000\n' > "$T/l.jsonl"
emb-search --index "$T/l.jsonl" "$T/q.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "NUL in a JSONL index: exit 3" "$s" 3
t_eq "NUL in a JSONL index: one clean line" "$(cat "$T/err")" "emb-search: error: $T/l.jsonl:2: NUL byte in line"
printf '{"id":1,"embedding":[1,2]}\n{"id":2,"embedding":[1,2]}\n' > "$T/l2.jsonl"
emb-search --max-line 10 --index "$T/l2.jsonl" "$T/q.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "a long line in a JSONL index: one clean line" "$(cat "$T/err")" "emb-search: error: $T/l2.jsonl:1: line too long (more than 10 bytes)"
# record inputs: a FIFO is a stream (read), a device is refused
timeout 10 emb-search --index "$T/l2.jsonl" /dev/zero > "$T/out" 2> "$T/err"; s=$?
t_grep "a device as the input: refused, named" "/dev/zero: not a regular file (a character device)" "$T/err"
rm -f "$T/in.fifo" && mkfifo "$T/in.fifo"
( printf '{"embedding":[1,0]}\n' > "$T/in.fifo" ) &
timeout 10 emb-search --index "$T/l2.jsonl" "$T/in.fifo" > "$T/out" 2> "$T/err"; s=$?
wait
t_eq "a FIFO as the input: read as a stream" "$s$(wc -l < "$T/out" | tr -d ' ')" 01

# --- scores are numbers ----------------------------------------------------
# stored norms are checked against the vectors: 0, NaN, negative, wrong
printf '{"id":"a","embedding":[1,0,0,0]}\n{"id":"b","embedding":[0,1,0,0]}\n' > "$T/n.jsonl"
emb-search --build "$T/n.index" "$T/n.jsonl"
printf '{"embedding":[1,1,0,0]}\n' > "$T/q4.jsonl"
if command -v python3 > /dev/null 2>&1; then
	for v in 0 nan -1 1e-20; do
		python3 - "$T/n.index" "$T/bad.index" "$v" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
hl = struct.unpack('<Q', b[:8])[0]
o0, o1 = json.loads(b[8:8 + hl])['norms.f32']['data_offsets']
for i in range(8 + hl + o0, 8 + hl + o1, 4):
    b[i:i + 4] = struct.pack('<f', float(sys.argv[3]))
open(sys.argv[2], 'wb').write(b)
PY
		emb-search --index "$T/bad.index" "$T/q4.jsonl" > "$T/out" 2> "$T/err"; s=$?
		t_eq "stored norms $v: exit 3" "$s" 3
		t_grep "stored norms $v: named" "bad.index: tensor 'norms.f32': document 0's norm .* is not its vector's (1)" "$T/err"
		t_lines "stored norms $v: nothing on stdout" 0 "$T/out"
	done
else
	t_skip "stored norms checked against the vectors" "python3 not found"
fi
# finite documents and queries whose float products overflow
printf '{"id":"big","embedding":[3e38,3e38,3e38,3e38]}\n{"id":"par","embedding":[1,1,1,1]}\n{"id":"a","embedding":[1,0,0,0]}\n' > "$T/big.jsonl"
printf '{"embedding":[1,1,1,1]}\n{"embedding":[3e38,3e38,3e38,3e38]}\n' > "$T/qb.jsonl"
emb-search --index "$T/big.jsonl" -k 3 "$T/qb.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "3e38 values, cosine: exit 0" "$s" 0
t_eq "3e38 values, cosine: both parallel documents first, score 1, none lost" \
	"$(grep -c -x '{"results":\[{"id":"big","score":1},{"id":"par","score":1},{"id":"a","score":0.5}\]}' "$T/out")" 2
t_nogrep "3e38 values, cosine: no null score" "null" "$T/out"
t_grep "a 3e38 query scores its documents, not 0" '"id":"a","score":0.5' "$T/out"
emb-search --index "$T/big.jsonl" --score dot -k 3 "$T/qb.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "3e38 values, dot: the overflowing queries fail (exit 1)" "$s" 1
t_grep "3e38 values, dot: said, naming the query line" "^emb-search: error (at .*qb.jsonl:1): a dot product with a document of .* is past float32's range" "$T/err"
t_lines "3e38 values, dot: no result written for them" 0 "$T/out"
t_nogrep "3e38 values, dot: no null score" "null" "$T/out"
