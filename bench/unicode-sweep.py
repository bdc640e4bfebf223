"""unicode-sweep.py - measures the Unicode tables of Hugging Face
tokenizers (the Python binding, from the reference venv): for every code
point U+00A0..U+3FFFF, whether Digits, the ByteLevel regex (\\p{L},
\\p{N}) and Whitespace (\\w) treat it as numeric, letter, number, word,
and its NFD, NFKD, NFC, NFKC.  bench/unicode-cmp.c compares that with
ours and lists the differences, from which the hf_extra_* tables
(lib/tok/pretok.c) and hf_nfkd_keep / hf_comp_excl
(lib/tok/normalizer.c) were written.

usage: $EMB_REFS/bin/python bench/unicode-sweep.py OUT.txt [LAST]
LAST: the last code point, hex (default 3ffff).
"""
import sys

from tokenizers import normalizers, pre_tokenizers


def main(a):
    if len(a) not in (1, 2):
        sys.stderr.write(__doc__)
        return 2
    last = int(a[1], 16) if len(a) > 1 else 0x3FFFF
    dig = pre_tokenizers.Digits(individual_digits=True)
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    ws = pre_tokenizers.Whitespace()
    nf = [normalizers.NFD(), normalizers.NFKD(), normalizers.NFC(), normalizers.NFKC()]

    def hexs(s):
        return ".".join("%x" % ord(ch) for ch in s)

    with open(a[0], "w") as out:
        for cp in range(0xA0, last + 1):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            c = chr(cp)
            num = int(len(dig.pre_tokenize_str("a" + c + "a")) == 3)
            L = int(len(bl.pre_tokenize_str("x" + c)) == 1)
            N = int(len(bl.pre_tokenize_str("1" + c)) == 1)
            w = ws.pre_tokenize_str("x" + c)
            W = int(len(w) == 1 and len(w[0][0]) > 1)
            out.write(" ".join(["%x" % cp, str(num), str(L), str(N), str(W)] +
                               [hexs(n.normalize_str(c)) for n in nf]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
