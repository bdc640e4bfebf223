#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"
static int cat(uint32_t c, int lo, int hi) { int k = utf8proc_category(c); return k >= lo && k <= hi; }
static void hexs(char *b, const tk_str *s) { size_t i; b[0] = 0; for (i = 0; i < s->n; i++) sprintf(b + strlen(b), "%s%x", i ? "." : "", s->c[i]); }
/* unicode-cmp.c - compare bench/unicode-sweep.py output with lib/: prints
 * "PROPERTY CODEPOINT hf=..." for each difference (L, N and num are
 * compared with plain utf8proc categories, i.e. before hf_extra_*).
 * cc -Ilib bench/unicode-cmp.c lib/libemb.a $(LDLIBS) */
int main(int argc, char **argv)
{
	FILE *f = fopen(argc > 1 ? argv[1] : "hf.txt", "r");
	char line[512], want[4][128], got[128];
	unsigned cp; int num, L, N, W, k;
	tk_normalizer nz[4] = {{0}};
	const char *names[4] = {"nfd", "nfkd", "nfc", "nfkc"};
	nz[0].type = TK_NORM_NFD; nz[1].type = TK_NORM_NFKD; nz[2].type = TK_NORM_NFC; nz[3].type = TK_NORM_NFKC;
	tk_str s = {0}, t = {0};
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%x %d %d %d %d %127s %127s %127s %127s", &cp, &num, &L, &N, &W, want[0], want[1], want[2], want[3]) != 9) continue;
		int mn = cat(cp, UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NO);
		int mL = cat(cp, UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LO);
		if (num != mn) printf("num %x hf=%d\n", cp, num);
		if (L != mL) printf("L %x hf=%d\n", cp, L);
		if (N != mn) printf("N %x hf=%d\n", cp, N);
		if (W != tk_is_word(cp)) printf("W %x hf=%d\n", cp, W);
		for (k = 0; k < 4; k++) {
			s.n = 0; tk_str_push(&s, cp, 0, 1);
			tk_normalize(&nz[k], &s, &t);
			hexs(got, &s);
			if (strcmp(got, want[k])) printf("%s %x hf=%s mine=%s\n", names[k], cp, want[k], got);
		}
	}
	return 0;
}
