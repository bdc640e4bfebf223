# 15-fetch-model.sh - scripts/fetch-model against a fake Hub on 127.0.0.1
# (python3's http.server serving a tree made here), then -m ORG/NAME
# resolution of what it wrote (emb-synth --resolve uses emb_model_resolve).
if ! command -v python3 >/dev/null 2>&1; then
	t_skip 15-fetch-model "python3 not found (needed for the local HTTP server)"
	return 0 2>/dev/null || exit 0
fi
T=$(t_tmpdir 15-fetch-model)
FM="$EMB_TOP/scripts/fetch-model"
srv="$T/srv"
C1=0123456789abcdef0123456789abcdef01234567
C2=fedcba9876543210fedcba9876543210fedcba98
C3=1111111111111111111111111111111111111111

# a model: the synthetic bert-tiny checkpoint plus files emb must not fetch
fd=$(t_fixture bert-tiny-cls-bf16)
mk_repo() { # ID COMMIT
	r="$srv/$1/resolve/$2"
	mkdir -p "$r/onnx" "$r/2_Dense" "$r/1_Pooling"
	for f in config.json tokenizer.json tokenizer_config.json vocab.txt \
		special_tokens_map.json modules.json sentence_bert_config.json \
		config_sentence_transformers.json 1_Pooling/config.json model.safetensors; do
		cp "$fd/$f" "$r/$f"
	done
	echo junk > "$r/pytorch_model.bin"
	echo junk > "$r/onnx/model.onnx"
	echo '{}' > "$r/onnx/config.json"
	echo junk > "$r/README.md"
	echo junk > "$r/.gitattributes"
	echo junk > "$r/2_Dense/pytorch_model.bin"
	echo '{"in_features": 64}' > "$r/2_Dense/config.json"
	mkdir -p "$r/checkpoint-100"
	echo junk > "$r/checkpoint-100/model.safetensors"
}
api_json() { # COMMIT: the answer of /api/models/ID/revision/REV, pretty-printed
	printf '{\n  "_id": "x",\n  "id": "acme/tiny",\n  "sha": "%s",\n  "siblings": [\n' "$1"
	for f in .gitattributes 1_Pooling/config.json 2_Dense/pytorch_model.bin README.md \
		2_Dense/config.json checkpoint-100/model.safetensors \
		config.json config_sentence_transformers.json model.safetensors modules.json \
		onnx/config.json onnx/model.onnx pytorch_model.bin sentence_bert_config.json \
		special_tokens_map.json tokenizer.json tokenizer_config.json; do
		printf '    {\n      "rfilename": "%s"\n    },\n' "$f"
	done
	printf '    {"rfilename":"vocab.txt", "size": 5}\n  ],\n  "lastModified": "2024"\n}\n'
}
mk_repo acme/tiny $C1
mk_repo acme/tiny $C2
mk_repo private/m $C3
mkdir -p "$srv/api/models/acme/tiny/revision" "$srv/api/models/private/m/revision" \
	"$srv/api/models/acme/tiny/revision/refs%2Fpr"
api_json $C1 > "$srv/api/models/acme/tiny/revision/main"
api_json $C2 > "$srv/api/models/acme/tiny/revision/v1.0"
api_json $C3 > "$srv/api/models/private/m/revision/main"
# the revision of one file differs, to tell the snapshots apart
echo '{"v": 2}' > "$srv/acme/tiny/resolve/$C2/config_sentence_transformers.json"

# http.server on a free port: SERVER.PY ROOT PORTFILE HOST LOG [REDIRECT]
# On 127.0.0.1 (the Hub) paths under /private/ need the token, and with
# REDIRECT the files of /private/ models are redirected there (as the Hub
# sends downloads to its CDN); 127.0.0.2 (the CDN) serves them to anyone.
# /api/models/stall/... never answers.  Each request is logged with its
# Authorization header.
cat > "$T/server.py" <<'PY'
import http.server, sys, os, time
root, portfile, host, log = sys.argv[1:5]
redirect = sys.argv[5] if len(sys.argv) > 5 else None
class H(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path):
        # keep %2F inside a path component (revision refs/pr/1)
        return os.path.join(root, *[p for p in path.split("?")[0].split("/") if p])
    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + " " + str(self.headers.get("Authorization")) + "\n")
        if self.path.startswith("/api/models/stall/"):
            time.sleep(60)
            return
        if host == "127.0.0.1" and "/private/" in self.path:
            if self.headers.get("Authorization") != "Bearer sekret":
                self.send_error(401)
                return
            if redirect and "/resolve/" in self.path:
                self.send_response(302)
                self.send_header("Location", redirect + self.path)
                self.end_headers()
                return
        super().do_GET()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer((host, 0), H)
s.daemon_threads = True
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
wait_port() { # FILE
	i=0
	while [ ! -s "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	cat "$1" 2>/dev/null
}
server2_pid=
if python3 -c 'import socket; socket.socket().bind(("127.0.0.2", 0))' 2>/dev/null; then
	python3 "$T/server.py" "$srv" "$T/port2" 127.0.0.2 "$T/requests2.log" &
	server2_pid=$!
	port2=$(wait_port "$T/port2")
	python3 "$T/server.py" "$srv" "$T/port" 127.0.0.1 "$T/requests.log" \
		"http://127.0.0.2:$port2" &
else
	python3 "$T/server.py" "$srv" "$T/port" 127.0.0.1 "$T/requests.log" &
fi
server_pid=$!
trap 'kill "$server_pid" $server2_pid 2>/dev/null' EXIT
port=$(wait_port "$T/port")
t_ok "local HTTP server started (port $port)" test -n "$port"
export HF_ENDPOINT="http://127.0.0.1:$port"
unset HF_TOKEN HF_HOME HUGGINGFACE_HUB_CACHE
export HF_HUB_CACHE="$T/cache"
repo="$T/cache/models--acme--tiny"

"$FM" acme/tiny > "$T/out" 2> "$T/err"; s=$?
t_eq "fetch acme/tiny: exit 0" "$s" 0
t_eq "prints the snapshot directory" "$(cat "$T/out")" "$repo/snapshots/$C1"
t_eq "refs/main holds the commit" "$(cat "$repo/refs/main")" "$C1"
snap="$repo/snapshots/$C1"
for f in config.json tokenizer.json tokenizer_config.json vocab.txt modules.json \
	sentence_bert_config.json config_sentence_transformers.json \
	1_Pooling/config.json model.safetensors special_tokens_map.json; do
	t_ok "snapshot has $f, same bytes" cmp -s "$snap/$f" "$srv/acme/tiny/resolve/$C1/$f"
done
t_ok "snapshot has 2_Dense/config.json" cmp -s "$snap/2_Dense/config.json" "$srv/acme/tiny/resolve/$C1/2_Dense/config.json"
for f in pytorch_model.bin onnx README.md .gitattributes 2_Dense/pytorch_model.bin checkpoint-100; do
	t_status "snapshot lacks $f" 1 test -e "$snap/$f"
done
t_ok "snapshot files link into blobs/" test -L "$snap/model.safetensors"
t_ok "subfolder links resolve" test -f "$snap/1_Pooling/config.json"
h=$(sha256sum < "$snap/model.safetensors" | cut -d ' ' -f 1)
t_ok "blob named by its sha256" cmp -s "$repo/blobs/$h" "$fd/model.safetensors"
t_nogrep "no token sent when HF_TOKEN is unset" "Bearer" "$T/requests.log"

# emb_model_resolve finds it by id, from any directory
got=$(cd / && emb-synth --resolve acme/tiny)
t_eq "-m acme/tiny resolves to the snapshot" "$got" "$snap"
emb-synth --inspect "$(emb-synth --resolve acme/tiny)" > "$T/tensors"
t_eq "fetched weights load" "$(head -1 "$T/tensors")" "embeddings.word_embeddings.weight F16 [30522,64]"
echo '{"text":"hello world"}' | emb-tokenize -m acme/tiny > "$T/tok"; s=$?
t_eq "emb-tokenize -m acme/tiny: exit 0" "$s" 0
t_grep "emb-tokenize -m acme/tiny tokenizes" '"input_ids":\[101,7592,2088,102\]' "$T/tok"

# again: nothing to download, same answer
: > "$T/requests.log"
"$FM" acme/tiny > "$T/out2" 2> "$T/err"; s=$?
t_eq "second fetch: exit 0" "$s" 0
t_eq "second fetch: same snapshot" "$(cat "$T/out2")" "$snap"
t_lines "second fetch only asks the API" 1 "$T/requests.log"

# a revision
"$FM" acme/tiny v1.0 > "$T/out" 2> "$T/err"; s=$?
t_eq "fetch acme/tiny v1.0: exit 0" "$s" 0
t_eq "refs/v1.0 holds its commit" "$(cat "$repo/refs/v1.0")" "$C2"
t_eq "refs/main unchanged" "$(cat "$repo/refs/main")" "$C1"
t_eq "-m acme/tiny@v1.0" "$(emb-synth --resolve acme/tiny@v1.0)" "$repo/snapshots/$C2"
t_grep "v1.0 has its own file" '"v": 2' "$repo/snapshots/$C2/config_sentence_transformers.json"
t_eq "-m acme/tiny@COMMIT" "$(emb-synth --resolve "acme/tiny@$C2")" "$repo/snapshots/$C2"
t_eq "-m acme/tiny still main" "$(emb-synth --resolve acme/tiny)" "$snap"

# a revision with a slash is encoded in the API URL
cp "$srv/api/models/acme/tiny/revision/main" "$srv/api/models/acme/tiny/revision/refs%2Fpr%2F1"
"$FM" acme/tiny refs/pr/1 > "$T/out" 2> "$T/err"; s=$?
t_eq "fetch refs/pr/1: exit 0" "$s" 0
t_eq "refs/refs/pr/1 written" "$(cat "$repo/refs/refs/pr/1")" "$C1"
t_eq "-m acme/tiny@refs/pr/1" "$(emb-synth --resolve acme/tiny@refs/pr/1)" "$snap"

# HF_HOME/hub when HF_HUB_CACHE is unset
(unset HF_HUB_CACHE; HF_HOME="$T/home" "$FM" acme/tiny > "$T/out" 2> "$T/err"); s=$?
t_eq "HF_HOME: exit 0" "$s" 0
t_ok "HF_HOME/hub used" test -f "$T/home/hub/models--acme--tiny/snapshots/$C1/model.safetensors"
got=$(unset HF_HUB_CACHE; HF_HOME="$T/home" emb-synth --resolve acme/tiny)
t_eq "-m resolves under HF_HOME/hub" "$got" "$T/home/hub/models--acme--tiny/snapshots/$C1"

# HF_TOKEN
"$FM" private/m > "$T/out" 2> "$T/err"; s=$?
t_eq "private model without HF_TOKEN: exit 1" "$s" 1
t_grep "says HF_TOKEN may be needed" "HF_TOKEN" "$T/err"
t_lines "one line of diagnostics" 1 "$T/err"
: > "$T/requests.log"
HF_TOKEN=sekret "$FM" private/m > "$T/out" 2> "$T/err"; s=$?
t_eq "private model with HF_TOKEN: exit 0" "$s" 0
t_ok "private model fetched" test -f "$T/cache/models--private--m/snapshots/$C3/model.safetensors"
t_grep "token sent as a Bearer header" "Bearer sekret" "$T/requests.log"
t_nogrep "token never in a URL" "sekret.*Bearer\|^[^ ]*sekret" "$T/requests.log"
if [ -n "$server2_pid" ]; then
	t_grep "private files redirected to another host" "/private/m/resolve/$C3/model.safetensors None" "$T/requests2.log"
	t_nogrep "the token never reaches the host a redirect leads to" "sekret\|Bearer" "$T/requests2.log"
else
	t_skip "the token never reaches the host a redirect leads to" "127.0.0.2 cannot be bound here"
fi

# the token file is the owner's only, from its creation (a umask after
# the redirection would leave it 0644 until then): watch the curl config
# while a request hangs
rm -rf "$T/tmpd" && mkdir "$T/tmpd"
(umask 022; HF_TOKEN=sekret TMPDIR="$T/tmpd" FETCH_MODEL_STALL=5 "$FM" stall/x > /dev/null 2>&1) &
fm_pid=$!
i=0
while [ -z "$(ls "$T"/tmpd/*/curlrc 2>/dev/null)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
t_eq "curl config holding the token is mode 600" \
	"$(ls -l "$T"/tmpd/*/curlrc 2>/dev/null | cut -c1-10)" "-rw-------"
# SIGTERM stops it at once, curl included (not after the stall limit)
sleep 0.3
t0=$(date +%s)
kill -TERM "$fm_pid"
wait "$fm_pid"; s=$?
t1=$(date +%s)
t_eq "SIGTERM while curl waits: exit 143" "$s" 143
t_ok "SIGTERM: gone within 2 s" test $((t1 - t0)) -le 2
sleep 0.2
t_eq "SIGTERM: curl was stopped too" "$(ps -eo args | grep -c "[c]url -K $T/tmpd")" 0
t_ok "SIGTERM: its temporary directory removed" test -z "$(ls "$T/tmpd")"

# a server that stops sending: a timeout, named as such
t0=$(date +%s)
FETCH_MODEL_STALL=1 FETCH_MODEL_TIMEOUT=2 "$FM" stall/x > "$T/out" 2> "$T/err"; s=$?
t1=$(date +%s)
t_eq "stalled server: exit 1" "$s" 1
t_grep "stalled server: says it timed out" "timed out (no data for 1 s, or more than 2 s" "$T/err"
t_ok "stalled server: gives up within 15 s (3 tries)" test $((t1 - t0)) -le 15
t_status "bad FETCH_MODEL_TIMEOUT: exit 1" 1 env FETCH_MODEL_TIMEOUT=soon "$FM" acme/tiny 2> /dev/null

# errors
"$FM" acme/nope > "$T/out" 2> "$T/err"; s=$?
t_eq "unknown model: exit 1" "$s" 1
t_grep "unknown model named" "acme/nope@main" "$T/err"
t_grep "a 404 says not found" "not found (HTTP 404" "$T/err"
t_nogrep "a 404 does not blame HF_TOKEN" "HF_TOKEN" "$T/err"
HF_TOKEN=wrong "$FM" private/m > "$T/out" 2> "$T/err"; s=$?
t_eq "a refused token: exit 1" "$s" 1
t_grep "a refused token: says HF_TOKEN was refused" "refused HF_TOKEN" "$T/err"
t_status "unknown model leaves no snapshot" 1 test -e "$T/cache/models--acme--nope/snapshots"
t_status "bad id: exit 2" 2 "$FM" ../etc 2> "$T/err"
t_grep "bad id named" "bad model id '../etc'" "$T/err"
t_status "bad id with three parts: exit 2" 2 "$FM" a/b/c 2> /dev/null
t_status "bad revision: exit 2" 2 "$FM" acme/tiny ../../x 2> /dev/null
# whole strings: a second line does not smuggle anything past the check,
# and nothing is asked of the server
nl='
'
: > "$T/requests.log"
t_status "id with a newline (a valid first line): exit 2" 2 "$FM" "acme/tiny$nl../../etc" 2> "$T/err"
t_grep "id with a newline: named as a bad id" "bad model id 'acme/tiny" "$T/err"
t_status "id with a newline (a valid second line): exit 2" 2 "$FM" "../x${nl}acme/tiny" 2> /dev/null
t_status "revision with a newline: exit 2" 2 "$FM" acme/tiny "main$nl../../x" 2> "$T/err"
t_grep "revision with a newline: named as a bad revision" "bad revision 'main" "$T/err"
t_status "id with a blank: exit 2" 2 "$FM" "acme/ti ny" 2> /dev/null
t_status "revision with a '.' part: exit 2" 2 "$FM" acme/tiny "refs/.x" 2> /dev/null
t_eq "bad ids and revisions: no request reached the server" "$(wc -c < "$T/requests.log" | tr -d ' ')" 0
t_status "no operand: exit 2" 2 "$FM" 2> /dev/null
"$FM" --help > "$T/help"; s=$?
t_eq "--help: exit 0" "$s" 0
t_grep "--help usage" "^usage: fetch-model ORG/NAME \[REVISION\]" "$T/help"
t_ok "emb-synth --resolve of an id not in the cache fails" \
	sh -c '! emb-synth --resolve acme/nope 2> "$1"' sh "$T/err"
t_grep "and says where it looked" "$T/cache/models--acme--nope" "$T/err"

kill "$server_pid" $server2_pid 2>/dev/null
wait "$server_pid" $server2_pid 2>/dev/null || :
trap - EXIT
