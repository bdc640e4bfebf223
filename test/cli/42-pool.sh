# 42-pool.sh - emb-pool: every mode against a hand computation, their
# concatenation order, --normalize, --dim, the model's pooling config
# (-m), include_prompt false with prompt_length, and the b64 form
T=$(t_tmpdir 42-pool)

# rows (1,-2) (3,4) (2,1)
printf '{"id":"a","token_embeddings":[[1,-2],[3,4],[2,1]],"x":1}\n' > "$T/a.jsonl"
for mw in "cls:[1,-2]" "max:[3,4]" "mean:[2,1]" "lasttoken:[2,1]" \
	"weightedmean:[2.1666667,1.5]" "mean_sqrt_len:[3.4641018,1.7320509]" \
	"cls,mean:[1,-2,2,1]" "mean,cls:[1,-2,2,1]" "lasttoken,max:[3,4,2,1]" \
	"mean_tokens:[2,1]" "cls_token:[1,-2]"; do
	mode=${mw%%:*} want=${mw#*:}
	emb-pool --mode "$mode" "$T/a.jsonl" > "$T/out" 2> "$T/err"; s=$?
	t_eq "--mode $mode" "$s $(cat "$T/out")" "0 {\"id\":\"a\",\"x\":1,\"embedding\":$want}"
done
emb-pool "$T/a.jsonl" > "$T/out"
t_eq "default: mean, no normalize" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[2,1]}'
emb-pool --normalize "$T/a.jsonl" > "$T/out"
t_eq "--normalize" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[0.8944272,0.4472136]}'
emb-pool --mode max --dim 1 "$T/a.jsonl" > "$T/out"
t_eq "--dim 1 (then L2-normalized)" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[1]}'
emb-pool --mode cls,max --dim 3 "$T/a.jsonl" > "$T/out"
t_eq "--dim 3 of cls,max: (1,-2,3)/sqrt(14)" "$(cat "$T/out")" \
	'{"id":"a","x":1,"embedding":[0.26726124,-0.5345225,0.8017837]}'
emb-pool --dim 3 "$T/a.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "--dim larger than the embedding: bad record" "$s" 1
t_grep "--dim too large: message" "(at $T/a.jsonl:1): --dim 3 is larger than the embedding dimension 2" "$T/err"
emb-pool --b64 "$T/a.jsonl" > "$T/out"
t_eq "--b64: base64 of little-endian float32 2, 1" "$(cat "$T/out")" \
	'{"id":"a","x":1,"embedding_b64":"AAAAQAAAgD8="}'

# the b64 matrix form, one string per row: (1,-2) (3,4) (2,1)
printf '{"id":"b","token_embeddings_b64":["AACAPwAAAMA=","AABAQAAAgEA=","AAAAQAAAgD8="]}\n' > "$T/b.jsonl"
emb-pool --mode weightedmean "$T/b.jsonl" > "$T/out"
t_eq "b64 matrix input, dropped from the output" "$(cat "$T/out")" \
	'{"id":"b","embedding":[2.1666667,1.5]}'

# -m: the model's Pooling and Normalize
t_eq "-m all-MiniLM-L6-v2: mean + Normalize" \
	"$(emb-pool -m "$D/models/sentence-transformers--all-MiniLM-L6-v2" --no-progress < "$T/a.jsonl" 2>&1)" \
	"emb-pool: error (at <stdin>:1): token embeddings have 2 columns, the pooling config says 384"
mk() {  # mk DIR POOLING-JSON NORMALIZE(0|1)
	mkdir -p "$1/1_Pooling"
	printf '%s\n' "$2" > "$1/1_Pooling/config.json"
	if [ "$3" = 1 ]; then
		printf '[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]\n' > "$1/modules.json"
	else
		printf '[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]\n' > "$1/modules.json"
	fi
}
mk "$T/m1" '{"word_embedding_dimension":2,"pooling_mode_cls_token":true,"pooling_mode_max_tokens":true}' 0
emb-pool -m "$T/m1" "$T/a.jsonl" > "$T/out"
t_eq "-m: cls + max from 1_Pooling" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[1,-2,3,4]}'
emb-pool -m "$T/m1" --mode mean "$T/a.jsonl" > "$T/out"
t_eq "-m with --mode: the mode wins" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[2,1]}'
mk "$T/m2" '{"word_embedding_dimension":2,"pooling_mode_mean_tokens":true}' 1
emb-pool -m "$T/m2" "$T/a.jsonl" > "$T/out"
t_eq "-m: Normalize module" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[0.8944272,0.4472136]}'
emb-pool -m "$T/m2" --no-normalize "$T/a.jsonl" > "$T/out"
t_eq "-m --no-normalize" "$(cat "$T/out")" '{"id":"a","x":1,"embedding":[2,1]}'

# include_prompt false: the prompt_length leading rows are left out of
# mean/max/weighted pooling (cls and lasttoken unaffected)
mk "$T/m3" '{"word_embedding_dimension":2,"pooling_mode_mean_tokens":true,"include_prompt":false}' 0
printf '{"id":"p","prompt_length":1,"token_embeddings":[[1,-2],[3,4],[2,1]]}\n' > "$T/p.jsonl"
emb-pool -m "$T/m3" "$T/p.jsonl" > "$T/out"
t_eq "include_prompt false: mean of rows 2..3" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[2.5,2.5]}'
emb-pool -m "$T/m3" --mode max "$T/p.jsonl" > "$T/out"
t_eq "include_prompt false: max of rows 2..3" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[3,4]}'
emb-pool -m "$T/m3" --mode weightedmean "$T/p.jsonl" > "$T/out"
t_eq "include_prompt false: weights 2, 3 of rows 2..3" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[2.4,2.2]}'
emb-pool -m "$T/m3" --mode cls "$T/p.jsonl" > "$T/out"
t_eq "include_prompt false: cls is still row 1" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[1,-2]}'
emb-pool -m "$T/m1" --mode mean "$T/p.jsonl" > "$T/out"
t_eq "include_prompt true: prompt_length ignored" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[2,1]}'
emb-pool --mode mean "$T/p.jsonl" > "$T/out"
t_eq "without -m: prompt_length ignored" "$(cat "$T/out")" \
	'{"id":"p","prompt_length":1,"embedding":[2,1]}'
printf '{"prompt_length":"x","token_embeddings":[[1,2]]}\n' | emb-pool -m "$T/m3" > /dev/null 2> "$T/err"
t_grep "bad prompt_length" "field 'prompt_length' must be a non-negative integer" "$T/err"

# a flat vector is one row
printf '{"token_embeddings":[5,6]}\n' | emb-pool > "$T/out"
t_eq "a flat array is one token" "$(cat "$T/out")" '{"embedding":[5,6]}'
