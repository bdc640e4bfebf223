# 10-synth.sh - emb-synth: materialize synthetic checkpoints (SYNTHETIC.md)
T=$(t_tmpdir 10-synth)

emb-synth --help > "$T/help"; s=$?
t_eq "emb-synth --help: exit 0" "$s" 0
t_grep "help shows usage" "usage: emb-synth RECIPE OUTDIR" "$T/help"
t_status "no operands: usage, exit 2" 2 emb-synth 2> "$T/err"
t_grep "usage on stderr" "^usage: emb-synth" "$T/err"
t_status "one operand: usage, exit 2" 2 emb-synth "$D/fixtures/minilm-l6/recipe.json" 2> /dev/null
t_status "unknown option: exit 2" 2 emb-synth --bogus a b 2> "$T/err"
t_grep "unknown option named" "unknown option '--bogus'" "$T/err"
t_status "--root without argument: exit 2" 2 emb-synth a b --root 2> /dev/null
emb-synth --version > "$T/version"
t_grep "--version" "^emb-synth 0.1.0$" "$T/version"

# t_fixture (used by the other tests) yields a loadable model directory
fd=$(t_fixture bert-tiny-cls-bf16)
t_ok "t_fixture bert-tiny-cls-bf16" test -d "$fd"
for f in model.safetensors config.json tokenizer.json vocab.txt modules.json \
	1_Pooling/config.json sentence_bert_config.json; do
	t_ok "fixture has $f" test -f "$fd/$f"
done
t_status "PROVENANCE.md not copied" 1 test -e "$fd/PROVENANCE.md"
emb-synth --inspect "$fd" > "$T/tensors"; s=$?
t_eq "inspect fixture: exit 0" "$s" 0
ntensors=$(grep -c '"scale":' "$D/fixtures/bert-tiny-cls-bf16/recipe.json")
t_lines "every recipe tensor is in model.safetensors" "$ntensors" "$T/tensors"
t_eq "first tensor, dtype and shape" "$(head -1 "$T/tensors")" \
	"embeddings.word_embeddings.weight F16 [30522,64]"
t_grep "BF16 layers" "^encoder.layer.1.output.dense.weight BF16 \[64,256\]$" "$T/tensors"
t_grep "config.json from the recipe" '"hidden_size": 64' "$fd/config.json"

# the default root is two levels above the recipe's folder: same bytes
t_ok "default --root" emb-synth "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$T/m2"
t_ok "same model.safetensors with and without --root" \
	cmp -s "$fd/model.safetensors" "$T/m2/model.safetensors"
t_ok "same config.json" cmp -s "$fd/config.json" "$T/m2/config.json"
# deterministic: a second run over an existing directory writes the same
t_ok "rerun into the same directory" emb-synth "$D/fixtures/bert-tiny-cls-bf16/recipe.json" "$T/m2"
t_ok "rerun is identical" cmp -s "$fd/model.safetensors" "$T/m2/model.safetensors"

# minilm-l6 (~23M elements); its speed is not a test (scripts/bench)
t_ok "minilm-l6" emb-synth "$D/fixtures/minilm-l6/recipe.json" "$T/minilm" --root "$D"
size=$(wc -c < "$T/minilm/model.safetensors" | tr -d ' ')
t_ok "minilm-l6 weights are ~90 MB ($size)" test "$size" -gt 90000000

# bad recipes: one clear line, non-zero exit
printf '{"format": "emb-synth-1", "seed": 1, "tensors": [' > "$T/bad.json"
emb-synth "$T/bad.json" "$T/out" 2> "$T/err"; s=$?
t_eq "invalid JSON recipe: exit 1" "$s" 1
t_grep "invalid JSON names the file" "^emb-synth: error: .*bad.json: invalid JSON at line 1" "$T/err"
t_lines "one line of diagnostics" 1 "$T/err"
printf '{"format": "emb-synth-1", "seed": 1, "base": "models/nope", "tensors": []}' > "$T/nobase.json"
t_status "missing base: exit 1" 1 emb-synth "$T/nobase.json" "$T/out" --root "$D" 2> "$T/err"
t_grep "missing base named" "field 'base': .*models/nope is not a directory" "$T/err"
printf '{"format": "emb-synth-1", "seed": 1, "tensors": [{"name": "a", "shape": [2], "scale": 1, "dtype": "Q8"}]}' > "$T/dtype.json"
t_status "bad dtype: exit 1" 1 emb-synth "$T/dtype.json" "$T/out" 2> "$T/err"
t_grep "bad dtype named" "field 'tensors\[0\].dtype'" "$T/err"
t_status "missing recipe: exit 1" 1 emb-synth "$T/none.json" "$T/out" 2> "$T/err"
t_grep "missing recipe named" "none.json" "$T/err"
t_status "unwritable output: exit 1" 1 emb-synth "$D/fixtures/bert-tiny-cls-bf16/recipe.json" /proc/emb-synth-out 2> "$T/err"
t_grep "unwritable output named" "/proc/emb-synth-out" "$T/err"

# --inspect on a broken file
printf '\010\000\000\000\000\000\000\000{"a":1} ' > "$T/broken.safetensors"
t_status "--inspect broken file: exit 3" 3 emb-synth --inspect "$T/broken.safetensors" 2> "$T/err"
t_grep "--inspect error names tensor" "broken.safetensors: tensor 'a'" "$T/err"
