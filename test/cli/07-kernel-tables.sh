# 07-kernel-tables.sh - the tables of constants in the kernels are the
# fits their scripts print: the AVX-512 GELU's pieces (scripts/fit-gelu
# --check fits them again, runs the formula in float32 and compares the
# table in lib/kern/kernels_avx512.c number for number)
if command -v python3 > /dev/null; then
	t_ok "the AVX-512 GELU table is scripts/fit-gelu's, within 4e-7 of the GELU" \
		sh -c 'python3 "$1" --check > /dev/null 2>&1' sh "$EMB_TOP/scripts/fit-gelu"
else
	t_skip "the AVX-512 GELU table is scripts/fit-gelu's" "no python3"
fi
