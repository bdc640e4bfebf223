# 40-tokenize.sh - emb-tokenize options: default max length per model,
# --max-length, --no-truncate, pairs, prompts, --tokens, --raw
T=$(t_tmpdir 40-tokenize)
MINI="$D/models/sentence-transformers--all-MiniLM-L6-v2"

# default max length: max_seq_length, else tokenizer model_max_length,
# capped by max_position_embeddings (minus padding_idx + 1 for MPNet)
awk 'BEGIN { printf "{\"id\":1,\"text\":\""; for (i = 0; i < 600; i++) printf "word "; printf "\"}\n" }' > "$T/long.jsonl"
for mt in sentence-transformers--all-MiniLM-L6-v2:256 \
	sentence-transformers--all-mpnet-base-v2:384 \
	BAAI--bge-small-en-v1.5:512 intfloat--e5-small-v2:512 \
	naver--splade_v2_distil:512; do
	m=${mt%:*} want=${mt#*:}
	emb-tokenize -m "$D/models/$m" "$T/long.jsonl" > "$T/out"
	n=$(grep -o '"input_ids":\[[^]]*\]' "$T/out" | tr ',' '\n' | wc -l | tr -d ' ')
	t_eq "$m: default max length $want" "$n" "$want"
	t_grep "$m: truncated = 602 - $want" "\"truncated\":$((602 - want))}" "$T/out"
done
emb-tokenize -m "$MINI" --max-length 10 "$T/long.jsonl" > "$T/out"
t_grep "--max-length 10" '"input_ids":\[101,2773,2773,2773,2773,2773,2773,2773,2773,102\],.*"truncated":592}$' "$T/out"
emb-tokenize -m "$MINI" --no-truncate "$T/long.jsonl" > "$T/out"
t_nogrep "--no-truncate: no truncated field" '"truncated"' "$T/out"
t_eq "--no-truncate: all 602 tokens" \
	"$(grep -o '"input_ids":\[[^]]*\]' "$T/out" | tr ',' '\n' | wc -l | tr -d ' ')" 602
printf '{"text":"short"}\n' | emb-tokenize -m "$MINI" > "$T/out"
t_nogrep "no truncation: no truncated field" '"truncated"' "$T/out"

# the reference tokenizations, through the command line
G="$D/tokenize/sentence-transformers--all-MiniLM-L6-v2"
if command -v emb-validate > /dev/null; then
	emb-tokenize -m "$MINI" --max-length 16 < "$G/full.jsonl" > "$T/t16"
	t_ok "--max-length 16 matches trunc16.jsonl" emb-validate --quiet --field input_ids "$G/trunc16.jsonl" "$T/t16"
	emb-tokenize -m "$MINI" --max-length 64 < "$G/pairs64.jsonl" > "$T/p64"
	t_ok "text_pair with --max-length 64 matches pairs64.jsonl" \
		emb-validate --quiet --field input_ids --field token_type_ids "$G/pairs64.jsonl" "$T/p64"
	emb-tokenize -m "$MINI" --no-truncate --tokens < "$G/full.jsonl" > "$T/full"
	t_ok "--no-truncate matches full.jsonl" emb-validate --quiet --field input_ids "$G/full.jsonl" "$T/full"
fi
printf '{"text":"a b","text_pair":"c"}\n' | emb-tokenize -m "$MINI" > "$T/out"
t_grep "pair: token_type_ids" '"input_ids":\[101,1037,1038,102,1039,102\],"token_type_ids":\[0,0,0,0,1,102\]\|"token_type_ids":\[0,0,0,0,1,1\]' "$T/out"
printf '{"text":"a","text_pair":7}\n' | emb-tokenize -m "$MINI" 2> "$T/err" > /dev/null
t_grep "text_pair not a string" "field 'text_pair' is not a string" "$T/err"

# --tokens
printf '{"text":"Hello, world!"}\n' | emb-tokenize -m "$MINI" --tokens > "$T/out"
t_grep "--tokens" '"tokens":\["\[CLS\]","hello",",","world","!","\[SEP\]"\]' "$T/out"

# prompts: a copy of the tokenizer files with prompts and a default
P="$T/prompted"
mkdir -p "$P"
cp "$MINI"/tokenizer.json "$MINI"/tokenizer_config.json "$MINI"/vocab.txt \
	"$MINI"/special_tokens_map.json "$MINI"/sentence_bert_config.json "$MINI"/config.json "$P"/
cat > "$P/config_sentence_transformers.json" <<'J'
{"prompts": {"query": "query: ", "passage": "passage: ", "empty": ""},
 "default_prompt_name": "passage"}
J
printf '{"text":"hello"}\n' > "$T/h.jsonl"
emb-tokenize -m "$P" --prompt-name query --tokens "$T/h.jsonl" > "$T/out"
t_eq "--prompt-name query: prompt_length counts [CLS] and the prompt" "$(cat "$T/out")" \
	'{"text":"hello","input_ids":[101,23032,1024,7592,102],"token_type_ids":[0,0,0,0,0],"tokens":["[CLS]","query",":","hello","[SEP]"],"prompt_length":3}'
emb-tokenize -m "$P" "$T/h.jsonl" > "$T/out"
t_grep "default_prompt_name applied" '"input_ids":\[101,6019,1024,7592,102\],.*"prompt_length":3}' "$T/out"
emb-tokenize -m "$P" --no-prompt "$T/h.jsonl" > "$T/out"
t_eq "--no-prompt" "$(cat "$T/out")" '{"text":"hello","input_ids":[101,7592,102],"token_type_ids":[0,0,0]}'
emb-tokenize -m "$P" --prompt-name empty "$T/h.jsonl" > "$T/out"
t_nogrep "empty prompt: no prompt_length" "prompt_length" "$T/out"
emb-tokenize -m "$P" --prompt "a b c: " "$T/h.jsonl" > "$T/out"
t_grep "--prompt STR" '"input_ids":\[101,1037,1038,1039,1024,7592,102\],.*"prompt_length":5}' "$T/out"
emb-tokenize -m "$P" --prompt-name nope "$T/h.jsonl" > "$T/out" 2> "$T/err"; s=$?
t_eq "unknown --prompt-name: exit 2" "$s" 2
t_grep "unknown --prompt-name: lists the known ones" "unknown prompt name 'nope' (known: .*query" "$T/err"
t_grep "unknown --prompt-name: lists passage" "passage" "$T/err"
emb-tokenize -m "$MINI" --prompt-name query "$T/h.jsonl" > /dev/null 2> "$T/err"; s=$?
t_eq "--prompt-name on a model without that prompt: exit 2" "$s" 2

# --raw reads plain lines; CRLF and a missing final newline are fine;
# each record's id is its line number
printf 'one\r\ntwo' | emb-tokenize -m "$MINI" --raw > "$T/out"
t_eq "--raw: two lines" "$(cat "$T/out")" '{"id":1,"text":"one","input_ids":[101,2028,102],"token_type_ids":[0,0,0]}
{"id":2,"text":"two","input_ids":[101,2048,102],"token_type_ids":[0,0,0]}'
printf '\n' | emb-tokenize -m "$MINI" --raw > "$T/out"; s=$?
t_eq "--raw: an empty line is the empty text" "$s$(cat "$T/out")" '0{"id":1,"text":"","input_ids":[101,102],"token_type_ids":[0,0]}'
# the line numbers run on over the operands (as through cat), bad lines
# counted too; the ids go through emb-encode and emb-pool, and an
# --errors=emit line has its line's id
printf 'a\nb \377\n' > "$T/r1.txt"
printf 'c\n\nd\n' > "$T/r2.txt"
emb-tokenize -m "$MINI" --raw --errors=emit "$T/r1.txt" "$T/r2.txt" 2> /dev/null |
	sed 's/^{"id":\([0-9]*\),.*/\1/' | tr '\n' ' ' > "$T/ids"
t_eq "--raw over two files: ids 1 to 5, the bad line's too" "$(cat "$T/ids")" "1 2 3 4 5 "
cat "$T/r1.txt" "$T/r2.txt" | emb-tokenize -m "$MINI" --raw --errors=emit 2> /dev/null > "$T/cat.out"
emb-tokenize -m "$MINI" --raw --errors=emit "$T/r1.txt" "$T/r2.txt" 2> /dev/null > "$T/ops.out"
t_ok "--raw over two files: the output of their concatenation" cmp -s "$T/cat.out" "$T/ops.out"
M6=$(t_fixture minilm-l6)
emb-tokenize -m "$M6" --raw "$T/r2.txt" | emb-encode -m "$M6" | emb-pool -m "$M6" |
	sed 's/^{"id":\([0-9]*\),.*"embedding":.*/\1/' | tr '\n' ' ' > "$T/ids"
t_eq "--raw ids through emb-encode and emb-pool" "$(cat "$T/ids")" "1 2 3 "
emb-encode -m "$M6" --raw --pool "$T/r1.txt" "$T/r2.txt" 2> /dev/null |
	sed 's/^{"id":\([0-9]*\),.*"embedding":.*/\1/' | tr '\n' ' ' > "$T/ids"
t_eq "emb-encode --raw: the good lines' ids" "$(cat "$T/ids")" "1 3 4 5 "
emb-encode -m "$M6" --raw --pool --chunk 4 --overlap 1 "$T/r1.txt" "$T/r2.txt" 2> /dev/null |
	sed 's/^{"id":\([0-9]*\),.*/\1/' | tr '\n' ' ' > "$T/ids"
t_eq "emb-encode --raw --chunk: each window its line's id" "$(cat "$T/ids")" "1 3 4 5 "

# sentence_bert_config.json do_lower_case: the text, text_pair and prompt
# are lowercased (Python str.lower) before a cased tokenizer sees them,
# and prompt_length counts the lowercased prompt's tokens
R="$D/models/sentence-transformers--all-distilroberta-v1"
L="$T/lower"
mkdir -p "$L"
cp "$R"/tokenizer.json "$R"/tokenizer_config.json "$R"/special_tokens_map.json "$R"/config.json "$L"/
printf '{"max_seq_length": 512, "do_lower_case": true}\n' > "$L/sentence_bert_config.json"
printf '{"text":"Hello World","text_pair":"\303\200B \304\260"}\n' > "$T/cased.jsonl"
printf '{"text":"hello world","text_pair":"\303\240b i\314\207"}\n' > "$T/lowered.jsonl"
emb-tokenize -m "$L" "$T/cased.jsonl" | sed 's/.*"input_ids"/"input_ids"/' > "$T/lc1"
emb-tokenize -m "$R" "$T/lowered.jsonl" | sed 's/.*"input_ids"/"input_ids"/' > "$T/lc2"
emb-tokenize -m "$R" "$T/cased.jsonl" | sed 's/.*"input_ids"/"input_ids"/' > "$T/lc3"
t_ok "do_lower_case: cased input == lowercased input without it" cmp -s "$T/lc1" "$T/lc2"
t_ok "do_lower_case false: case kept (a cased tokenizer)" test "$(cat "$T/lc1")" != "$(cat "$T/lc3")"
printf '{"text":"Hello"}\n' | emb-tokenize -m "$L" --prompt "QUERY: " > "$T/lc4"
printf '{"text":"hello"}\n' | emb-tokenize -m "$R" --prompt "query: " > "$T/lc5"
t_eq "do_lower_case: the prompt is lowercased too, prompt_length of the lowered prompt" \
	"$(sed 's/.*"input_ids"/"input_ids"/' "$T/lc4")" "$(sed 's/.*"input_ids"/"input_ids"/' "$T/lc5")"

# --max-length above the model's positions: the same usage error on
# every tool that reads text (emb-tokenize reads them from config.json
# without loading the model)
MX=$(t_fixture minilm-l6)
CX=$(t_fixture ce-minilm-l6)
for p in "emb-tokenize -m $MX" "emb-encode -m $MX" "emb-rerank -m $CX"; do
	n=${p%% *}
	echo '{"text":"hi"}' | $p --max-length 100000 > /dev/null 2> "$T/err"; s=$?
	t_eq "$n --max-length 100000: exit 2" "$s" 2
	t_eq "$n --max-length 100000: one line naming the limit, then Try" \
		"$(sed -n 1p "$T/err" | sed 's/.*\(above the model.s limit of 512 tokens\).*/\1/')|$(sed -n 2p "$T/err")" \
		"above the model's limit of 512 tokens|Try '$n --help' for more information."
	echo '{"text":"hi"}' | $p --max-length 512 > /dev/null 2>&1; s=$?
	t_eq "$n --max-length 512 (the limit): accepted" "$s" 0
done

# --prompt-name on a model without that prompt: the file that holds the
# prompts is named
echo '{"text":"hi"}' | emb-tokenize -m "$MX" --prompt-name query > /dev/null 2> "$T/err"; s=$?
t_eq "--prompt-name query on minilm-l6: usage error" "$s" 2
t_grep "--prompt-name query: names config_sentence_transformers.json" "unknown prompt name 'query' (known: .*; the prompts of .*/config_sentence_transformers.json)" "$T/err"
