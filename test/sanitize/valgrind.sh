# test/sanitize/valgrind.sh - valgrind memcheck over the commands of
# test/sanitize/valgrind.list (make check-valgrind; sourced by
# test/run-checks like a test/cli test, on the normal build).
#
# Each command runs under memcheck with --leak-check=full and every leak
# kind (definite, indirect, possible) counted as an error, and
# --error-exitcode=99: it must exit with the status the list gives, and
# its valgrind log must say "ERROR SUMMARY: 0 errors".  Commands that
# succeed must write something (stdout, or DIR/model.safetensors for
# -o DIR); failing ones must say why on stderr.
# valgrind does not implement AVX-512: EMB_ISA=avx2 (the AVX2 kernels)
# with the portable int8 GEMM (no VNNI) for every command.
# First a self-check: a program with a leak and one with an invalid read
# must each fail under the same options (when a C compiler is there).
T=$(t_tmpdir valgrind)
list="$EMB_TOP/test/sanitize/valgrind.list"
vgopts="--tool=memcheck --error-exitcode=99 --leak-check=full \
--show-leak-kinds=definite,indirect,possible \
--errors-for-leak-kinds=definite,indirect,possible --num-callers=30"

if ! command -v valgrind > /dev/null 2>&1; then
	t_fail "valgrind is installed (scripts/install-deps installs it)"
else
	export EMB_ISA=avx2

	# the harness catches a leak and a bad read
	cc=$(sed -n 's/^CC = //p' "$EMB_TOP/config.mk")
	if command -v "${cc:-cc}" > /dev/null 2>&1; then
		cat > "$T/leak.c" <<'X'
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	char *p = malloc(16);
	(void)argv;
	if (argc > 1) { strcpy(p, "x"); return p[17] == 1; }
	p[0] = 0;
	return p[0];
}
X
		"${cc:-cc}" -g -O0 -o "$T/leak" "$T/leak.c"
		# shellcheck disable=SC2086
		valgrind $vgopts --log-file="$T/leak.vg" "$T/leak" > /dev/null 2>&1
		t_eq "self-check: a leak fails under these options" "$?" 99
		# shellcheck disable=SC2086
		valgrind $vgopts --log-file="$T/read.vg" "$T/leak" x > /dev/null 2>&1
		t_eq "self-check: an invalid read fails under these options" "$?" 99
	fi

	# inputs, made without valgrind
	TINY=$(t_fixture bert-tiny-cls-bf16)
	MINI=$(t_fixture minilm-l6)
	ROB=$(t_fixture roberta-tiny)
	MOD=$(t_fixture modernbert-tiny)
	QW=$(t_fixture qwen3-tiny)
	SPL=$(t_fixture splade-tiny)
	CE=$(t_fixture ce-minilm-l6)
	ALB="$D/models/sentence-transformers--paraphrase-albert-small-v2"
	head -4 "$D/corpus/texts.jsonl" > "$T/in.jsonl"
	cat > "$T/pairs.jsonl" <<'X'
{"id":1,"text":"how do I get a refund","text_pair":"Refunds are issued within 30 days."}
{"id":2,"text":"how do I get a refund","text_pair":"The cat sat on the mat."}
{"id":3,"text":"héllo wörld","text_pair":""}
X
	emb-tokenize -m "$TINY" "$T/in.jsonl" > "$T/tok.jsonl"
	emb-encode -m "$TINY" -j 2 "$T/in.jsonl" > "$T/enc.jsonl"
	emb-encode -m "$TINY" -j 2 --pool "$T/in.jsonl" > "$T/emb.jsonl"
	printf '%s\n' 'not json' '{"text": 5}' '{"id": "x"}' \
		'{"text": "fine", "token_embeddings": [[1, 2], [3]]}' \
		'{"text": "ok"}' > "$T/bad.jsonl"
	printf '%s\n' '{"input_ids": [101, 99999999, 102]}' \
		'{"input_ids": "x"}' '{"input_ids": [101, 102]}' > "$T/badids.jsonl"
	cp -R "$TINY" "$T/trunc"
	st="$T/trunc/model.safetensors"
	head -c $(( $(wc -c < "$st") / 2 )) "$st" > "$st.half" && mv "$st.half" "$st"
	cp -R "$TINY" "$T/badcfg"
	sed 's/"hidden_size": *[0-9]*/"hidden_size": -64/' "$TINY/config.json" > "$T/badcfg/config.json"
	cp -R "$TINY" "$T/badtok"
	head -c 3000 "$TINY/tokenizer.json" > "$T/badtok/tokenizer.json"
	t_ok "inputs for the valgrind commands" test -s "$T/enc.jsonl" -a -s "$T/emb.jsonl" \
		-a -s "$T/tok.jsonl"

	n=0
	while read -r want name cmd; do
		case "$want" in ''|'#'*) continue ;; esac
		n=$((n + 1))
		# shellcheck disable=SC2086
		eval "valgrind $vgopts --log-file=\"\$T/$name.vg\" $cmd" \
			> "$T/$name.out" 2> "$T/$name.err" < /dev/null
		s=$?
		if [ "$s" -eq 99 ]; then
			t_fail "$name: valgrind clean (exit $want)" "valgrind found errors: $cmd" \
				"$(grep -v '^==[0-9]*== *$' "$T/$name.vg" | head -n 60)"
		else
			t_eq "$name: exit $want under valgrind" "$s" "$want"
		fi
		t_grep "$name: ERROR SUMMARY: 0 errors" 'ERROR SUMMARY: 0 errors' "$T/$name.vg"
		if [ "$want" -eq 0 ]; then
			# stdout, or the checkpoint of a command with -o DIR
			o=$(printf '%s\n' "$cmd" | sed -n 's/.* -o \([^ ]*\).*/\1/p')
			if [ -n "$o" ]; then
				eval "o=$o"
				t_ok "$name: wrote its output" test -s "$o/model.safetensors"
			else
				t_ok "$name: wrote its output" test -s "$T/$name.out"
			fi
		else
			t_ok "$name: said why on stderr" test -s "$T/$name.err"
		fi
	done < "$list"
	t_ok "ran every command of valgrind.list ($n)" test "$n" -ge 20
fi
