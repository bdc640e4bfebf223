# 70-families.sh - the families beyond BERT besides the parity
# cases in test/parity.yaml: DistilBertForMaskedLM SPLADE vectors (tied
# vocab_projector); config values and tensors the forward cannot honour
# are load errors naming the field or tensor; nomic's dynamic NTK rotary
# scaling changes exactly the sequences past max_trained_positions;
# Dense modules (EmbeddingGemma) are checked at load
T=$(t_tmpdir 70-families)

# a copy of fixture $1 in $T/$2 whose config file $3 (default config.json)
# is edited by sed expression $4
variant() {
	src=$(t_fixture "$1") || return 1
	rm -rf "${T:?}/$2"; mkdir -p "$T/$2"
	# hard links (a symbolic link out of the model directory is refused:
	# emb(7) SECURITY); a copy where hard links cannot be made
	for f in "$src"/*; do
		if [ -d "$f" ]; then cp -R "$f" "$T/$2/"
		else ln "$f" "$T/$2/" 2> /dev/null || cp "$f" "$T/$2/"; fi
	done
	case $3 in */*) rm -rf "${T:?}/$2/${3%%/*}"; cp -r "$src/${3%%/*}" "$T/$2/";; esac
	rm "$T/$2/$3"
	sed "$4" "$src/$3" > "$T/$2/$3"
	echo "$T/$2"
}
# load_error NAME MODEL PATTERN: loading MODEL exits 3 with PATTERN in stderr
load_error() {
	emb-encode -m "$2" --pool < /dev/null > /dev/null 2> "$T/err"; s=$?
	t_eq "$1: exit 3" "$s" 3
	t_grep "$1: the message names it" "$3" "$T/err"
}

# --- SPLADE with DistilBertForMaskedLM
S=$(t_fixture splade-distil-tiny)
G="$D/fixtures/splade-distil-tiny/golden.jsonl"
emb-encode -m "$S" -j 2 --pool=splade "$G" > "$T/sp" 2> "$T/err"; s=$?
t_eq "distilbert splade: exit 0, quiet" "$s$(cat "$T/err")" 0
t_ok "distilbert splade: sparse values within 1e-4 of the goldens" \
	emb-validate --quiet --atol 1e-4 --field sparse "$G" "$T/sp"
sed 's/.*"sparse": {\([^}]*\)}.*/\1/; s/"\([0-9]*\)": [^,]*/\1/g; s/ //g' "$G" > "$T/want.idx"
sed 's/.*"indices":\[\([^]]*\)\].*/\1/' "$T/sp" > "$T/got.idx"
t_ok "distilbert splade: index sets equal the goldens'" cmp -s "$T/want.idx" "$T/got.idx"
sed 's/, "input_ids".*$/}/' "$G" | head -30 | emb-encode -m "$S" -j 1 --batch-tokens 1 --pool=splade > "$T/sp1"
head -30 "$T/sp" | sed 's/.*"sparse"//' > "$T/sp30"
sed 's/.*"sparse"//' "$T/sp1" > "$T/sp1s"
t_ok "distilbert splade: from text, one at a time: identical vectors" cmp -s "$T/sp30" "$T/sp1s"

# --- load errors naming the field
M=$(variant coderank-tiny prenorm config.json 's/"prenorm": false/"prenorm": true/')
load_error "nomic prenorm" "$M" "field 'prenorm'"
M=$(variant coderank-tiny inter config.json 's/"rotary_emb_interleaved": false/"rotary_emb_interleaved": true/')
load_error "nomic interleaved rotary" "$M" "field 'rotary_emb_interleaved'"
M=$(variant coderank-tiny frac config.json 's/"rotary_emb_fraction": 1.0/"rotary_emb_fraction": 0.5/')
load_error "nomic partial rotary" "$M" "field 'rotary_emb_fraction'"
M=$(variant coderank-tiny act config.json 's/"swiglu"/"gelu"/')
load_error "nomic activation" "$M" "field 'activation_function'"
M=$(variant coderank-tiny bias config.json 's/"qkv_proj_bias": false/"qkv_proj_bias": true/')
load_error "nomic qkv bias absent from the checkpoint" "$M" "missing tensor 'encoder.layers.0.attn.Wqkv.bias'"
M=$(variant coderank-tiny shape config.json 's/"n_inner": 512/"n_inner": 256/')
load_error "nomic wrong shape" "$M" "tensor 'encoder.layers.0.mlp.fc2.weight' has shape \[128,512\], config.json says \[128,256\]"
M=$(variant qwen3-tiny rs config.json 's/"rope_theta"/"rope_scaling": {"type": "yarn"}, "rope_theta"/')
load_error "qwen3 rope_scaling" "$M" "field 'rope_scaling'"
M=$(variant qwen3-tiny sw config.json 's/"use_sliding_window": false/"use_sliding_window": true/')
load_error "qwen3 sliding window" "$M" "field 'use_sliding_window'"
M=$(variant gemma-embed-tiny causal config.json 's/"use_bidirectional_attention": true/"use_bidirectional_attention": false/')
load_error "gemma causal" "$M" "field 'use_bidirectional_attention'"
M=$(variant gemma-embed-tiny lt config.json 's/"full_attention"/"chunked_attention"/')
load_error "gemma layer_types" "$M" "field 'layer_types'"
M=$(variant modernbert-tiny mbias config.json 's/"mlp_bias": false/"mlp_bias": true/')
load_error "modernbert mlp_bias absent from the checkpoint" "$M" "missing tensor 'layers.0.mlp.Wi.bias'"
M=$(variant mpnet-tiny buckets config.json 's/"relative_attention_num_buckets": 32/"relative_attention_num_buckets": 16/')
load_error "mpnet buckets" "$M" "tensor 'encoder.relative_attention_bias.weight' has shape \[32,4\]"
M=$(variant distilbert-tiny dim config.json 's/"n_heads": 4/"n_heads": 5/')
load_error "distilbert heads" "$M" "field 'dim'"

# --- Dense modules
M=$(variant gemma-embed-tiny dact 2_Dense/config.json 's/torch.nn.modules.linear.Identity/torch.nn.modules.activation.ReLU/')
load_error "Dense activation" "$M" "field 'activation_function' value 'torch.nn.modules.activation.ReLU'"
M=$(variant gemma-embed-tiny dbias 2_Dense/config.json 's/"bias": false/"bias": true/')
load_error "Dense bias absent" "$M" "missing tensor 'linear.bias'"
M=$(variant gemma-embed-tiny dshape 3_Dense/config.json 's/"out_features": 128/"out_features": 64/')
load_error "Dense shape" "$M" "tensor 'linear.weight' does not have shape \[64,512\]"
M=$(variant gemma-embed-tiny dtanh 3_Dense/config.json 's/torch.nn.modules.linear.Identity/torch.nn.modules.activation.Tanh/')
G="$D/fixtures/gemma-embed-tiny/golden.jsonl"
head -20 "$G" | emb-encode -m "$M" --pool > "$T/tanh" 2> "$T/err"; s=$?
t_eq "Dense Tanh: exit 0" "$s" 0
head -20 "$G" > "$T/g20"
emb-validate --quiet --atol 1e-5 --field embedding "$T/g20" "$T/tanh" > /dev/null 2>&1; s=$?
t_eq "Dense Tanh: changes the embeddings" "$s" 1
head -20 "$G" | emb-encode -m "$M" --no-normalize --pool > "$T/tanh.raw" 2> /dev/null
awk -F'"embedding":' '{e = $2; sub(/\].*/, "", e); sub(/^ *\[/, "", e); n = split(e, a, ","); if (n != 128) bad = 1; for (i = 1; i <= n; i++) if (a[i] + 0 > 1 || a[i] + 0 < -1) bad = 1} END {exit bad}' "$T/tanh.raw"
t_eq "Dense Tanh: values within [-1, 1] before Normalize" "$?" 0
# the Dense modules run as one GEMM over a batch's pooled vectors (256
# at a time, on the threads): each vector has the bits emb-pool gives it
# alone, with and without the Tanh
vecs() { sed 's/.*"embedding":\(\[[^]]*\]\).*/\1/' "$1"; }
for m in "$(t_fixture gemma-embed-tiny)" "$M"; do
	emb-encode -m "$m" --pool -j 2 "$G" > "$T/dpool" 2> "$T/err"; s=$?
	t_eq "Dense in batches ($(basename "$m")): exit 0" "$s" 0
	t_lines "Dense in batches ($(basename "$m")): one vector a record" 532 "$T/dpool"
	emb-encode -m "$m" -j 1 "$G" | emb-pool -m "$m" > "$T/dalone"
	vecs "$T/dpool" > "$T/dpool.v"
	vecs "$T/dalone" > "$T/dalone.v"
	t_ok "Dense in batches ($(basename "$m")): the bits of emb-pool's one at a time" \
		cmp -s "$T/dpool.v" "$T/dalone.v"
done
head -3 "$G" | emb-encode -m "$(t_fixture gemma-embed-tiny)" --pool --dim 512 > /dev/null 2>&1; s=$?
t_eq "--dim past the last Dense's out_features: exit 2" "$s" 2

# --- nomic dynamic NTK: only sequences past max_trained_positions change
G="$D/fixtures/coderank-tiny/golden.jsonl"
M=$(variant coderank-tiny ntk config.json 's/"max_trained_positions": 2048/"max_trained_positions": 6/; s/"rotary_scaling_factor": null/"rotary_scaling_factor": 2.0/')
emb-encode -m "$M" -j 2 --pool "$G" > "$T/ntk.out" 2> "$T/err"; s=$?
t_eq "ntk: exit 0" "$s" 0
emb-encode -m "$(t_fixture coderank-tiny)" -j 2 --pool "$G" > "$T/base"
awk '{n = split($0, a, "\"input_ids\": \\["); split(a[2], b, "]"); print (split(b[1], c, ",") <= 6) ? "short" : "long"}' "$G" > "$T/len"
paste -d' ' "$T/len" "$T/ntk.out" | grep '^short' | cut -d' ' -f2- > "$T/ntk.short"
paste -d' ' "$T/len" "$T/base" | grep '^short' | cut -d' ' -f2- > "$T/base.short"
paste -d' ' "$T/len" "$T/ntk.out" | grep '^long' | cut -d' ' -f2- | head -50 > "$T/ntk.long"
paste -d' ' "$T/len" "$T/base" | grep '^long' | cut -d' ' -f2- | head -50 > "$T/base.long"
t_ok "ntk: some sequences are short" test -s "$T/ntk.short"
t_ok "ntk: short sequences identical" cmp -s "$T/ntk.short" "$T/base.short"
emb-validate --quiet --atol 1e-3 --field embedding "$T/base.long" "$T/ntk.long" > /dev/null 2>&1; s=$?
t_eq "ntk: long sequences differ" "$s" 1

# --- nomic's Matryoshka recipe: emb-pool --layer-norm --dim N is
# layer_norm (eps 1e-5), keep N, L2-normalize (reference in awk)
C=$(t_fixture coderank-tiny)
head -40 "$D/fixtures/coderank-tiny/golden.jsonl" | emb-encode -m "$C" -j 2 > "$T/tok"
emb-pool -m "$C" --no-normalize < "$T/tok" > "$T/raw"
emb-pool -m "$C" --layer-norm --dim 16 < "$T/tok" > "$T/mat" 2> "$T/err"; s=$?
t_eq "--layer-norm --dim 16: exit 0, quiet" "$s$(cat "$T/err")" 0
awk '{
	id = $0; sub(/^\{"id": */, "", id); sub(/[,}].*/, "", id)
	e = $0; sub(/.*"embedding":\[/, "", e); sub(/\].*/, "", e)
	n = split(e, v, ",")
	m = 0; for (i = 1; i <= n; i++) m += v[i]; m /= n
	q = 0; for (i = 1; i <= n; i++) q += (v[i] - m) ^ 2
	r = 1 / sqrt(q / n + 1e-5)
	s = 0; for (i = 1; i <= 16; i++) { w[i] = (v[i] - m) * r; s += w[i] ^ 2 }
	printf "{\"id\": %s, \"embedding\": [", id
	for (i = 1; i <= 16; i++) printf "%s%.9g", (i > 1 ? ", " : ""), w[i] / sqrt(s)
	print "]}"
}' "$T/raw" > "$T/mat.want"
t_lines "reference: 40 records" 40 "$T/mat.want"
t_ok "--layer-norm --dim 16 matches the reference within 1e-5" \
	emb-validate --quiet --atol 1e-5 --field embedding "$T/mat.want" "$T/mat"
