# 60-rerank.sh - emb-rerank: cross-encoder logits match the PyTorch
# goldens (from input_ids and from text), query/documents ranking equals
# the pair scores sorted, --top-k, --return-documents, activations from
# the model's sentence-transformers config, bad records and usage
T=$(t_tmpdir 60-rerank)
CE=$(t_fixture ce-minilm-l6)
F=$(t_fixture minilm-l6)
G="$D/fixtures/ce-minilm-l6/golden.jsonl"

emb-rerank -m "$CE" -j 2 --logits --activation none "$G" > "$T/ids.out" 2> "$T/err"; s=$?
t_eq "golden pairs: exit 0, quiet" "$s$(cat "$T/err")" 0
t_lines "one record per pair" "$(wc -l < "$G" | tr -d ' ')" "$T/ids.out"
t_ok "logits within 1e-4 of every golden (input_ids)" \
	emb-validate --quiet --atol 1e-4 --field logits "$G" "$T/ids.out"
sed 's/.*"logits":\(\[[^]]*\]\),"scores":\(\[[^]]*\]\)}$/\1 \2/' "$T/ids.out" | awk '{if (NF != 2 || $1 != $2) bad = 1} END {exit bad}'
t_eq "scores == logits with --activation none" "$?" 0
# the same pairs from text: the tokenizer's pair template
sed 's/, "input_ids".*$/}/' "$G" > "$T/text.jsonl"
t_nogrep "text input has no input_ids" input_ids "$T/text.jsonl"
emb-rerank -m "$CE" -j 2 --logits --batch-tokens 300 "$T/text.jsonl" > "$T/text.out"
t_ok "logits within 1e-4 of every golden (text, pair template)" \
	emb-validate --quiet --atol 1e-4 --field logits --field input_ids \
	--field token_type_ids "$G" "$T/text.out"

# ranking: results are the pair scores, best first
cat > "$T/q.jsonl" <<'X'
{"id":"a","query":"how do I get a refund","documents":["Refunds are issued within 30 days.","The cat sat on the mat.","Contact support for a refund of your order.","","Permission is hereby granted, free of charge"]}
{"id":"b","query":"empty","documents":[]}
X
emb-rerank -m "$CE" -j 2 "$T/q.jsonl" > "$T/rank.out"; s=$?
t_eq "query/documents: exit 0" "$s" 0
t_grep "empty documents: empty results" '"id":"b".*"results":\[\]' "$T/rank.out"
i=0
for doc in "Refunds are issued within 30 days." "The cat sat on the mat." \
	"Contact support for a refund of your order." "" \
	"Permission is hereby granted, free of charge"; do
	printf '{"i":%d,"text":"how do I get a refund","text_pair":"%s"}\n' "$i" "$doc"
	i=$((i + 1))
done > "$T/pairs.jsonl"
emb-rerank -m "$CE" -j 2 "$T/pairs.jsonl" > "$T/pairs.out"
want=$(sed 's/.*"i":\([0-9]*\).*"scores":\[\([^]]*\)\].*/\2 \1/' "$T/pairs.out" | sort -k1,1gr -k2,2n | awk '{printf "%s{\"index\":%s,\"score\":%s}", (NR > 1 ? "," : ""), $2, $1}')
got=$(sed -n 1p "$T/rank.out" | sed 's/.*"results":\[\(.*\)\]}$/\1/')
t_eq "results == pair scores sorted best first" "$got" "$want"
emb-rerank -m "$CE" -j 2 --top-k 2 --return-documents "$T/q.jsonl" > "$T/top2.out"
n=$(sed -n 1p "$T/top2.out" | grep -o '"index"' | wc -l | tr -d ' ')
t_eq "--top-k 2 keeps two" "$n" 2
t_grep "--return-documents: the text" '"document":"' "$T/top2.out"
first=$(echo "$want" | sed 's/}.*//; s/.*"index"://; s/,.*//')
t_grep "--top-k keeps the best" "\"results\":\[{\"index\":$first," "$T/top2.out"
t_grep "fields pass through" '"id":"a","query"' "$T/top2.out"

# activations: --activation, and the model's declared activation_fn
emb-rerank -m "$CE" -j 2 --activation sigmoid "$T/pairs.jsonl" > "$T/sig.out"
awk -F'"scores":\\[' '{split($2,a,"]"); x=a[1]+0; if (!(x > 0 && x < 1)) bad=1} END {exit bad}' "$T/sig.out"
t_eq "sigmoid scores in (0, 1)" "$?" 0
cp -r "$CE" "$T/ce-sig"
printf '{"activation_fn": "torch.nn.modules.activation.Sigmoid"}\n' > "$T/ce-sig/config_sentence_transformers.json"
emb-rerank -m "$T/ce-sig" -j 2 "$T/pairs.jsonl" > "$T/sig2.out"
t_ok "activation_fn in config_sentence_transformers.json is the default" cmp -s "$T/sig.out" "$T/sig2.out"
emb-rerank -m "$T/ce-sig" -j 2 --activation none "$T/pairs.jsonl" > "$T/none.out"
emb-rerank -m "$CE" -j 2 --activation none "$T/pairs.jsonl" > "$T/pairs-none.out"
t_ok "--activation none overrides it" cmp -s "$T/none.out" "$T/pairs-none.out"
t_ok "one label, nothing declared: sigmoid (as CrossEncoder)" cmp -s "$T/sig.out" "$T/pairs.out"
rm "$T/ce-sig/config_sentence_transformers.json"
sed 's/^{/{"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}, /' "$CE/config.json" > "$T/ce-sig/config.json"
emb-rerank -m "$T/ce-sig" -j 2 "$T/pairs.jsonl" > "$T/sig3.out"
t_ok "config.json sentence_transformers.activation_fn too" cmp -s "$T/sig.out" "$T/sig3.out"
printf '{"activation_fn": "torch.nn.modules.activation.Mish"}\n' > "$T/ce-sig/config_sentence_transformers.json"
emb-rerank -m "$T/ce-sig" "$T/pairs.jsonl" > /dev/null 2> "$T/err"; s=$?
t_eq "unknown activation_fn: exit 3" "$s" 3
t_grep "... names the file" "config_sentence_transformers.json.*Mish" "$T/err"

# every case of test/data/ce-activation (README there): the model's
# config files as the case says, scores == activation(logits)
# (1 label: ce-minilm-l6; 3 labels: the NLI variant built below)
ce_cases() {
	for cd in "$D"/ce-activation/*/; do
		c=$(basename "$cd")
		[ "$(cat "$cd/labels")" = "$1" ] || continue
		m="$T/case-$c"
		rm -rf "$m"; mkdir -p "$m"
		for f in "$2"/*; do
			case ${f##*/} in config.json|config_sentence_transformers.json) ;;
			*) # hard links: a symbolic link out of the model
			   # directory is refused (emb(7) SECURITY)
			   if [ -d "$f" ]; then cp -R "$f" "$m/"
			   else ln "$f" "$m/" 2> /dev/null || cp "$f" "$m/"; fi ;;
			esac
		done
		if [ -f "$cd/config.members" ]; then
			sed "1s/^{/{$(sed 's/[\/&]/\\&/g' "$cd/config.members"), /" "$2/config.json" > "$m/config.json"
		else
			cp "$2/config.json" "$m/config.json"
		fi
		[ -f "$cd/config_sentence_transformers.json" ] &&
			cp "$cd/config_sentence_transformers.json" "$m/"
		want=$(cat "$cd/expect")
		emb-rerank -m "$m" -j 2 --logits "$T/pairs.jsonl" > "$T/case.out" 2> "$T/case.err"; s=$?
		if [ "$want" = error ]; then
			t_eq "activation case $c: exit 3" "$s" 3
			t_grep "activation case $c: names the field" "config.json.*activation_fn" "$T/case.err"
			continue
		fi
		t_eq "activation case $c: exit 0" "$s$(cat "$T/case.err")" 0
		sed 's/.*"logits":\[\([^]]*\)\],"scores":\[\([^]]*\)\].*/\1 \2/' "$T/case.out" |
		awk -v act="$want" '{
			n = split($1, l, ","); m = split($2, sc, ",")
			if (n != m || n == 0) { bad = 1; next }
			mx = l[1]; for (i = 2; i <= n; i++) if (l[i] > mx) mx = l[i]
			z = 0; for (i = 1; i <= n; i++) z += exp(l[i] - mx)
			for (i = 1; i <= n; i++) {
				w = act == "sigmoid" ? 1 / (1 + exp(-l[i])) : act == "softmax" ? exp(l[i] - mx) / z : l[i]
				d = w - sc[i]; if (d < 0) d = -d
				if (d > 1e-6) bad = 1
			}
		} END { exit bad + (NR == 0) }'
		t_eq "activation case $c: scores are $want(logits)" "$?" 0
	done
}
ce_cases 1 "$CE"

# errors
printf '{"id":1,"query":"q","documents":"not a list"}\n{"id":2,"text":"a","text_pair":"b"}\n{"id":3,"query":"q"}\n' > "$T/bad.jsonl"
emb-rerank -m "$CE" -j 2 "$T/bad.jsonl" > "$T/bad.out" 2> "$T/err"; s=$?
t_eq "bad records: exit 1" "$s" 1
t_lines "the good record is written" 1 "$T/bad.out"
t_grep "documents not a list" "bad.jsonl:1.*'documents'" "$T/err"
t_grep "missing documents" "bad.jsonl:3.*missing field 'documents'" "$T/err"
emb-rerank -m "$F" "$T/pairs.jsonl" > /dev/null 2> "$T/err"; s=$?
t_eq "an embedding model is not a cross-encoder: exit 3" "$s" 3
t_grep "... says so" "not a cross-encoder" "$T/err"
emb-rerank -m "$CE" --activation relu < /dev/null > /dev/null 2>&1; s=$?
t_eq "unknown --activation: exit 2" "$s" 2
emb-rerank -m "$CE" --label 1 < /dev/null > /dev/null 2> "$T/err"; s=$?
t_eq "--label beyond num_labels: exit 2" "$s" 2
emb-rerank < /dev/null > /dev/null 2>&1; s=$?
t_eq "no -m: exit 2" "$s" 2

# a 3-label classifier (NLI-style), derived from the ce-minilm-l6 recipe:
# scores has one value per label; softmax sums to 1; the first label ranks
mkdir -p "$T/nli/fixtures/nli"
awk '
/"LABEL_0": 0/ { print "    \"contradiction\": 0, \"entailment\": 1, \"neutral\": 2"; next }
/"0": "LABEL_0"/ { print "    \"0\": \"contradiction\", \"1\": \"entailment\", \"2\": \"neutral\""; next }
/"name": "classifier\.(weight|bias)"/ { cls = 1 }
cls && /^    1,?$/ { sub(/1/, "3"); cls = 0 }
{ print }' "$D/fixtures/ce-minilm-l6/recipe.json" > "$T/nli/recipe.json"
emb-synth "$T/nli/recipe.json" "$T/nli/model" --root "$D" 2> "$T/err"; s=$?
t_eq "3-label recipe materializes" "$s$(cat "$T/err")" 0
emb-rerank -m "$T/nli/model" -j 2 --activation softmax "$T/pairs.jsonl" > "$T/nli.out"; s=$?
t_eq "3 labels: exit 0" "$s" 0
t_grep "scores: three values" '"scores":\[[0-9.e-]*,[0-9.e-]*,[0-9.e-]*\]}$' "$T/nli.out"
sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/nli.out" | awk -F, '{s = $1 + $2 + $3; if (s < 0.99999 || s > 1.00001 || NF != 3) bad = 1} END {exit bad}'
t_eq "softmax over the labels sums to 1" "$?" 0
emb-rerank -m "$T/nli/model" -j 2 --label 2 "$T/q.jsonl" > "$T/nli-rank.out"; s=$?
t_eq "--label 2 of 3: exit 0" "$s" 0
emb-rerank -m "$T/nli/model" -j 2 --label 3 "$T/q.jsonl" > /dev/null 2>&1; s=$?
t_eq "--label 3 of 3: exit 2" "$s" 2
emb-rerank -m "$T/nli/model" -j 2 "$T/pairs.jsonl" > "$T/nli-raw.out"
best=$(sed 's/.*"scores":\[\([^]]*\)\]}$/\1/' "$T/nli-raw.out" | cut -d, -f3 | sort -gr | head -1)
t_grep "--label 2 ranks by the third label" "\"results\":\[{\"index\":[0-9]*,\"score\":$best}" "$T/nli-rank.out"
ce_cases 3 "$T/nli/model"

# with more than one thread the model loads while the tokenizer is
# read: the errors are still the one-thread load's, in its order (the
# model's checks before the tokenizer's)
rm -rf "$T/cebad" "$T/bibad"; cp -R "$CE" "$T/cebad"; cp -R "$F" "$T/bibad"
printf '{"model":' > "$T/cebad/tokenizer.json"
printf '{"model":' > "$T/bibad/tokenizer.json"
t_same_at_j "cross-encoder, bad tokenizer.json" 3 1 "$T/q.jsonl" "$T" emb-rerank -m "$T/cebad"
t_grep "cross-encoder, bad tokenizer.json: named" "tokenizer.json" "$T/err2"
t_same_at_j "bi-encoder, bad tokenizer.json" 3 1 "$T/q.jsonl" "$T" emb-rerank -m "$T/bibad"
t_grep "bi-encoder, bad tokenizer.json: not a cross-encoder first" \
	"is not a cross-encoder" "$T/err2"
t_same_at_j "--label past the labels, bad tokenizer.json" 2 2 "$T/q.jsonl" "$T" \
	emb-rerank -m "$T/cebad" --label 1
t_grep "--label past the labels: named, with the usage line" \
	"label 1: the model has 1 label" "$T/err2"
