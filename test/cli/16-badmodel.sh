# 16-badmodel.sh - broken checkpoints through `emb-encode -m DIR`: each is
# one line naming the file (and tensor), exit 3, nothing on stdout
T=$(t_tmpdir 16-badmodel)
fd=$(t_fixture bert-tiny-cls-bf16)
echo '{"id":1,"text":"hello"}' > "$T/in.jsonl"

# le8 N: N as 8 little-endian bytes
le8() {
	n=$1; i=0
	while [ $i -lt 8 ]; do
		printf "\\$(printf '%03o' $((n % 256)))"
		n=$((n / 256)); i=$((i + 1))
	done
}
# mkst FILE HEADER NBYTES: a safetensors file with NBYTES of zero data
mkst() {
	{ le8 ${#2}; printf '%s' "$2"; head -c "$3" /dev/zero; } > "$1"
}
# model DIR: the fixture's configs and tokenizer without weights
model() {
	rm -rf "$1"; mkdir -p "$1"
	cp -R "$fd/." "$1/"
	rm -f "$1/model.safetensors"
}
# bad WHAT DIR MESSAGE: emb-encode -m DIR exits 3 with "emb-encode: error: MESSAGE"
bad() {
	emb-encode -j 2 -m "$2" < "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
	t_eq "$1: exit 3" "$s" 3
	t_grep "$1: message" "^emb-encode: error: $3" "$T/err"
	t_lines "$1: one line on stderr" 1 "$T/err"
	t_lines "$1: nothing on stdout" 0 "$T/out"
}

# the intact fixture works (so the failures below are the damage's)
emb-encode -j 2 -m "$fd" --pool < "$T/in.jsonl" > "$T/out"; s=$?
t_eq "intact fixture: exit 0" "$s" 0
t_grep "intact fixture: an embedding" '"embedding":\[' "$T/out"

# the same checkpoint in 3 shards (model.safetensors.index.json): the
# same vectors; a missing or damaged shard is a load error naming it
model "$T/shards"
cp "$fd/model.safetensors" "$T/shards/"
emb-synth --split "$T/shards" 3; s=$?
t_eq "emb-synth --split: exit 0" "$s" 0
t_ok "3 shards and an index, no model.safetensors" test -f "$T/shards/model-00003-of-00003.safetensors" -a \
	-f "$T/shards/model.safetensors.index.json" -a ! -e "$T/shards/model.safetensors"
emb-synth --inspect "$fd" | sort > "$T/t1"
emb-synth --inspect "$T/shards" | sort > "$T/t2"
t_ok "sharded: the same tensors" cmp -s "$T/t1" "$T/t2"
head -20 "$D/corpus/texts.jsonl" > "$T/in20.jsonl"
emb-encode -j 2 -m "$fd" --pool "$T/in20.jsonl" > "$T/one" 2>&1
emb-encode -j 2 -m "$T/shards" --pool "$T/in20.jsonl" > "$T/sharded" 2>&1; s=$?
t_eq "sharded checkpoint: exit 0" "$s" 0
t_ok "sharded checkpoint: identical embeddings" cmp -s "$T/one" "$T/sharded"
rm "$T/shards/model-00002-of-00003.safetensors"
bad "missing shard" "$T/shards" "$T/shards/model.safetensors.index.json: shard model-00002-of-00003.safetensors: No such file or directory"
: > "$T/shards/model-00002-of-00003.safetensors"
bad "empty shard" "$T/shards" "$T/shards/model-00002-of-00003.safetensors: file is truncated"

# truncated safetensors (cut inside the data)
model "$T/trunc"
size=$(wc -c < "$fd/model.safetensors" | tr -d ' ')
head -c 100000 "$fd/model.safetensors" > "$T/trunc/model.safetensors"
bad "truncated safetensors" "$T/trunc" \
	"$T/trunc/model.safetensors: file is truncated (header says $size bytes, file has 100000)"
# ... and cut inside the header
head -c 64 "$fd/model.safetensors" > "$T/trunc/model.safetensors"
bad "truncated header" "$T/trunc" "$T/trunc/model.safetensors: file is truncated or not a safetensors file (its header length field exceeds the file.s 64 bytes)"
: > "$T/trunc/model.safetensors"
bad "empty safetensors" "$T/trunc" "$T/trunc/model.safetensors: file is truncated"

# out-of-range offsets
model "$T/range"
mkst "$T/range/model.safetensors" \
	'{"embeddings.word_embeddings.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,999999]}}' 4096
bad "out-of-range offsets" "$T/range" "$T/range/model.safetensors: tensor 'embeddings.word_embeddings.weight': data_offsets \[0, 999999\] outside the data section (4096 bytes)"

# unknown dtype
model "$T/dtype"
mkst "$T/dtype/model.safetensors" \
	'{"embeddings.word_embeddings.weight":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}}' 4
bad "unknown dtype" "$T/dtype" "$T/dtype/model.safetensors: tensor 'embeddings.word_embeddings.weight': unknown dtype 'F8_E4M3'"

# an integer dtype where weights belong: a valid file, a wrong model
model "$T/intdt"
mkst "$T/intdt/model.safetensors" \
	'{"embeddings.word_embeddings.weight":{"dtype":"I32","shape":[30522,64],"data_offsets":[0,7813632]}}' 7813632
emb-encode -j 2 -m "$T/intdt" < "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "integer weights: exit 3" "$s" 3
t_grep "integer weights: names the tensor" "embeddings.word_embeddings.weight" "$T/err"

# header that is not JSON / overlapping tensors / size mismatch
model "$T/hdr"
mkst "$T/hdr/model.safetensors" '{"a": {"dtype": ' 0
bad "header not JSON" "$T/hdr" "$T/hdr/model.safetensors: header is not valid JSON"
mkst "$T/hdr/model.safetensors" \
	'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}' 24
bad "overlapping tensors" "$T/hdr" "$T/hdr/model.safetensors: tensor 'b': data_offsets \[8, 24\] overlap tensor 'a'"
mkst "$T/hdr/model.safetensors" \
	'{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}}' 16
bad "size mismatch" "$T/hdr" "$T/hdr/model.safetensors: tensor 'a': data_offsets \[0, 16\] hold 16 bytes, but BF16 \[4\] needs 8"

# no weights at all
model "$T/none"
bad "no weights" "$T/none" "$T/none: no model.safetensors or model.safetensors.index.json"

# shape mismatch with config.json
model "$T/shape"
cp "$fd/model.safetensors" "$T/shape/"
sed 's/"intermediate_size": 256/"intermediate_size": 128/' "$fd/config.json" > "$T/shape/config.json"
bad "shape mismatch with config" "$T/shape" "$T/shape/model.safetensors: tensor 'encoder.layer.0.intermediate.dense.weight' has shape \[256,64\], config.json says \[128,64\]"

# unknown architecture
model "$T/arch"
cp "$fd/model.safetensors" "$T/arch/"
sed 's/"BertModel"/"FooModel"/; s/"model_type": "bert"/"model_type": "foo"/' "$fd/config.json" > "$T/arch/config.json"
bad "unknown architecture" "$T/arch" ".*config.json: architecture 'FooModel' is not supported"

# an unsupported sentence-transformers module is named
model "$T/lstm"
cp "$fd/model.safetensors" "$T/lstm/"
sed 's|"type": "sentence_transformers.models.Pooling"|&}, {"idx": 2, "name": "2", "path": "2_LSTM", "type": "sentence_transformers.models.LSTM"|' \
	"$fd/modules.json" > "$T/lstm/modules.json"
emb-encode -j 2 -m "$T/lstm" --pool < "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "LSTM module: exit 3" "$s" 3
t_grep "LSTM module: named" "modules.json: module 'sentence_transformers.models.LSTM' (entry 2) is not supported" "$T/err"
echo '{"text":"hello"}' | emb-tokenize -m "$T/lstm" > "$T/out" 2> "$T/err"; s=$?
t_eq "LSTM module: emb-tokenize needs no modules, exit 0" "$s$(cat "$T/err")" 0
t_grep "LSTM module: emb-tokenize output" '"input_ids":\[101,7592,102\]' "$T/out"

# a NaN in layer weights (not the embedding table, checked at first
# use): a load error naming the tensor and the element; the check runs
# on every thread, and with two bad tensors -j 1 and -j 2 name the same
# one, the first in the file's order
# nan DIR N: NaN at element 5 of the first N encoder weights of DIR's file
nan() {
	python3 - "$1/model.safetensors" "$2" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
names = [k for k in h if "encoder" in k and k.endswith(".weight")][:int(sys.argv[2])]
for k in names:
    w = {"F32": 4, "BF16": 2, "F16": 2}[h[k]["dtype"]]
    nan = {"F32": b"\x00\x00\xc0\x7f", "BF16": b"\xc0\x7f", "F16": b"\x00\x7e"}[h[k]["dtype"]]
    o = 8 + n + h[k]["data_offsets"][0] + 5 * w
    b[o:o + w] = nan
open(sys.argv[1], "wb").write(b)
print(" ".join(names))
PY
}
rm -rf "$T/nan1"; cp -R "$fd" "$T/nan1"
one=$(nan "$T/nan1" 1)
t_ok "NaN in a layer weight: the fixture has one to spoil" test -n "$one"
bad "NaN in a layer weight" "$T/nan1" \
	"$T/nan1/model.safetensors: tensor '$one': element 5 is NaN (weights must be finite)\$"
rm -rf "$T/nan2"; cp -R "$fd" "$T/nan2"
two=$(nan "$T/nan2" 2)
t_same_at_j "two bad tensors" 3 1 "$T/in.jsonl" "$T" emb-encode -m "$T/nan2"
t_grep "two bad tensors: one of them named" \
	"tensor '\\(${two% *}\\|${two#* }\\)': element 5 is NaN" "$T/err2"

# with more than one thread the model loads while the tokenizer is
# read: the errors are still the one-thread load's, the model's first
printf '{"model":' > "$T/nan2/tokenizer.json"
t_same_at_j "bad weights and tokenizer" 3 1 "$T/in.jsonl" "$T" emb-encode -m "$T/nan2"
t_grep "bad weights and tokenizer: the weights named" "element 5 is NaN" "$T/err2"
rm -rf "$T/badtok"; cp -R "$fd" "$T/badtok"
printf '{"model":' > "$T/badtok/tokenizer.json"
t_same_at_j "bad tokenizer.json" 3 1 "$T/in.jsonl" "$T" emb-encode -m "$T/badtok"
t_grep "bad tokenizer.json: named" "tokenizer.json" "$T/err2"

# tokenizing needs no weights: the broken directories still tokenize
echo '{"text":"hello"}' | emb-tokenize -m "$T/range" > "$T/out"; s=$?
t_eq "emb-tokenize ignores the broken weights" "$s" 0
t_grep "emb-tokenize output" '"input_ids":\[101,7592,102\]' "$T/out"

# a model id that is nowhere
HF_HUB_CACHE="$T/nocache" emb-encode -m nobody/nothing < "$T/in.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "unknown model id: exit 3" "$s" 3
t_grep "unknown model id: says where it looked" "$T/nocache/models--nobody--nothing" "$T/err"
