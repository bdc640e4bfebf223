#!/usr/bin/env python3
"""tokfuzz.py - parity fuzzer: random strings through emb-tokenize and
through Hugging Face tokenizers (the Python binding of the Rust library,
from the reference environment, scripts/install-refs); any difference in
input_ids or token_type_ids fails, after shrinking the input to a minimal
one that still differs.

usage: python3 test/tokfuzz.py --emb PATH [--n N] [--seed S] MODEL_DIR...
  PATH: the emb-tokenize binary (or a program taking the same arguments)
  MODEL_DIR: a folder with tokenizer.json (a tokenizer.json.gz is
  unpacked into a temporary folder first), or with vocab.txt and
  tokenizer_config.json (the reference built from them as transformers
  converts a BERT vocabulary)
Exit 0: all equal; 1: a mismatch (printed); 2: usage or setup error.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile


def usage(msg=None):
    if msg:
        sys.stderr.write("tokfuzz: " + msg + "\n")
    sys.stderr.write("usage: python3 test/tokfuzz.py --emb PATH [--n N] "
                     "[--seed S] MODEL_DIR...\n")
    sys.exit(2)


def parse_args(argv):
    args = {"n": 2000, "seed": 1, "models": [], "emb": None}
    i = 0
    while i < len(argv):
        a = argv[i]

        def need():
            if i + 1 >= len(argv):
                usage("missing argument")
            return argv[i + 1]
        if a == "--emb":
            args["emb"] = need()
            i += 1
        elif a in ("--n", "--seed"):
            try:
                args[a[2:]] = int(need())
            except ValueError:
                usage("%s wants an integer" % a)
            i += 1
        elif a.startswith("-"):
            usage("unknown option " + a)
        else:
            args["models"].append(a)
        i += 1
    if not args["emb"] or not args["models"] or args["n"] <= 0:
        usage()
    return args


class Rng:
    """xorshift128 on 32-bit words: reproducible runs"""

    def __init__(self, seed):
        m = 0xffffffff
        self.s = [(seed ^ 0x9e3779b9) & m, 0x243f6a88, 0xb7e15162,
                  (seed * 2654435761) & m]
        for _ in range(16):
            self.next()

    def next(self):
        a, b, c, d = self.s
        t = (a ^ (a << 11)) & 0xffffffff
        nd = (d ^ (d >> 19) ^ t ^ (t >> 8)) & 0xffffffff
        self.s = [b, c, d, nd]
        return nd

    def int(self, n):
        return self.next() % n

    def pick(self, arr):
        return arr[self.next() % len(arr)]


def r(lo, hi):
    return (lo, hi)


# code point pools: scripts, marks, emoji, spaces, controls, odd ones
POOLS = {
    "ascii": [r(0x21, 0x7e)],
    # anything (assigned or not) but surrogates
    "any": [r(0xa0, 0xd7ff), r(0xe000, 0x3ffff), r(0xe0000, 0xe01ef),
            r(0xf0000, 0x10ffff)],
    "latin": [r(0xc0, 0x24f), r(0x1e00, 0x1eff)],
    "marks": [r(0x300, 0x36f), r(0x483, 0x489), r(0x591, 0x5c7),
              r(0x610, 0x61a), r(0x64b, 0x65f), r(0x93c, 0x94d),
              r(0xe31, 0xe3a), r(0x1ab0, 0x1abe), r(0x20d0, 0x20f0),
              r(0xfe20, 0xfe2f)],
    "scripts": [r(0x370, 0x3ff), r(0x400, 0x4ff), r(0x531, 0x58a),
                r(0x5d0, 0x5ea), r(0x620, 0x64a), r(0x900, 0x97f),
                r(0x980, 0x9ff), r(0xe01, 0xe5b), r(0x10a0, 0x10ff),
                r(0x1100, 0x11ff), r(0x3040, 0x30ff), r(0x4e00, 0x4fff),
                r(0xac00, 0xad00), r(0x0e80, 0x0edf), r(0x1780, 0x17ff)],
    "compat": [r(0xfb00, 0xfb06), r(0x2460, 0x24ff), r(0x3300, 0x33ff),
               r(0xff01, 0xff5e), r(0xff61, 0xffdc), r(0x2070, 0x209c),
               r(0x2150, 0x218b), r(0x1d400, 0x1d4ff), r(0xa8, 0xbf),
               r(0x2100, 0x214f), r(0x3131, 0x318e), r(0xf900, 0xf9ff),
               r(0x2000, 0x206f)],
    "emoji": [r(0x1f300, 0x1f5ff), r(0x1f600, 0x1f64f), r(0x1f680, 0x1f6ff),
              r(0x1f900, 0x1f9ff), r(0x2600, 0x27bf), r(0x1f1e6, 0x1f1ff),
              r(0x1f3fb, 0x1f3ff)],
    "space": [r(0x20, 0x20), r(0x20, 0x20), r(0x09, 0x0d), r(0xa0, 0xa0),
              r(0x85, 0x85), r(0x1680, 0x1680), r(0x2000, 0x200a),
              r(0x2028, 0x2029), r(0x202f, 0x202f), r(0x205f, 0x205f),
              r(0x3000, 0x3000)],
    "control": [r(0x01, 0x1f), r(0x7f, 0x9f), r(0x200b, 0x200f),
                r(0x202a, 0x202e), r(0x2060, 0x2064), r(0xfeff, 0xfeff),
                r(0xad, 0xad), r(0xfff9, 0xfffb)],
    "odd": [r(0xfffd, 0xfffd), r(0xfdd0, 0xfdef), r(0xfffe, 0xffff),
            r(0xe000, 0xe0ff), r(0xd7f0, 0xd7ff), r(0x10fff0, 0x10ffff),
            r(0xe0020, 0xe007f), r(0xfe00, 0xfe0f), r(0x1f000, 0x1f0ff),
            r(0x10000, 0x100ff), r(0x20000, 0x200ff), r(0x2f800, 0x2f8ff)],
}
WORDS = ["the", "Hello", "don't", "it's", "we'll", "I'M", "\ufb01le", "na\u00efve",
         "caf\u00e9", "Stra\u00dfe", "\u0130stanbul", "\u0391\u0398\u0397\u039d\u0391",
         "\u041c\u043e\u0441\u043a\u0432\u0430", "\u6771\u4eac",
         "\u0645\u062d\u0645\u062f", "12345", "3.14", "1,000", "``quoted''",
         "e\u0301", "A\u030a", "\u1100\u1161\u11a8",
         "\U0001f468\u200d\U0001f469\u200d\U0001f467",
         "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f44d\U0001f3fd",
         "http://x.org/a?b=c", "foo_bar", "x" * 120, "ab" * 40, "...", "!!!", "--"]
POOL_CHOICE = ["ascii", "ascii", "latin", "marks", "scripts", "scripts",
               "compat", "emoji", "space", "space", "control", "odd", "any"]


def cp(rng, pool):
    lo, hi = rng.pick(POOLS[pool])
    return lo + rng.int(hi - lo + 1)


def gen_text(rng, specials):
    parts = []
    for _ in range(rng.int(24)):
        k = rng.int(100)
        if k < 25:
            parts.append(rng.pick(WORDS))
        elif k < 30 and specials:
            parts.append(rng.pick(specials))
        elif k < 45:
            parts.append(" ")
        else:
            pool = rng.pick(POOL_CHOICE)
            parts.append("".join(chr(cp(rng, pool)) for _ in range(1 + rng.int(6))))
    return ("" if rng.int(3) else " ").join(parts)


def emb_run(emb, model, texts):
    lines = []
    for i, t in enumerate(texts):
        rec = {"id": i, "text": t[0], "text_pair": t[1]} if isinstance(t, tuple) \
            else {"id": i, "text": t}
        lines.append(json.dumps(rec, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    p = subprocess.run([emb, "-m", model, "--no-truncate", "--errors=emit"],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode not in (0, 1):
        sys.stderr.write("tokfuzz: emb-tokenize failed (status %d): %s\n"
                         % (p.returncode, p.stderr.decode("utf-8", "replace")))
        sys.exit(2)
    out = [json.loads(l) for l in p.stdout.decode("utf-8").split("\n") if l]
    if len(out) != len(texts):
        sys.stderr.write("tokfuzz: emb-tokenize wrote %d records for %d\n%s\n"
                         % (len(out), len(texts), p.stderr.decode("utf-8", "replace")))
        sys.exit(2)
    return [{"error": o["error"]} if "error" in o else
            {"ids": o["input_ids"], "types": o["token_type_ids"]} for o in out]


def ref_run(tok, texts):
    encs = tok.encode_batch([list(t) if isinstance(t, tuple) else t for t in texts])
    return [{"ids": list(e.ids), "types": list(e.type_ids)} for e in encs]


def same(a, b):
    return "error" not in a and a["ids"] == b["ids"] and a["types"] == b["types"]


def first_diff(emb, model, tok, texts):
    mine, ref = emb_run(emb, model, texts), ref_run(tok, texts)
    for i, (m, f) in enumerate(zip(mine, ref)):
        if not same(m, f):
            return i
    return -1


def shrink_with(emb, model, tok, text, wrap):
    """delta debugging on code points: drop chunks while a difference stays"""
    cur = list(text)
    chunk = max(1, len(cur) >> 1)
    while chunk >= 1:
        cands = [cur[:i] + cur[i + chunk:] for i in range(0, len(cur), chunk)]
        if not cands:
            break
        k = first_diff(emb, model, tok, [wrap("".join(c)) for c in cands])
        if k >= 0:
            cur = cands[k]
            chunk = min(chunk, max(1, len(cur) >> 1))
        else:
            chunk >>= 1
    return "".join(cur)


def shrink(emb, model, tok, text):
    if isinstance(text, tuple):
        a, b = text
        a = shrink_with(emb, model, tok, a, lambda x: (x, b))
        b = shrink_with(emb, model, tok, b, lambda x: (a, x))
        return (a, b)
    return shrink_with(emb, model, tok, text, lambda x: x)


def hexs(s):
    if isinstance(s, tuple):
        return hexs(s[0]) + " | " + hexs(s[1])
    return " ".join("U+%04X" % ord(c) for c in s)


def load(model, tmp):
    """(the folder to give emb-tokenize, the reference Tokenizer, its
    special strings) for MODEL: its tokenizer.json; a tokenizer.json.gz
    unpacked into tmp; or vocab.txt with tokenizer_config.json, built as
    transformers' BertTokenizerFast converts it.  None when it has none"""
    from tokenizers import Tokenizer
    tj = os.path.join(model, "tokenizer.json")
    if os.path.isfile(tj + ".gz") and not os.path.isfile(tj):
        d = os.path.join(tmp, os.path.basename(os.path.normpath(model)))
        os.makedirs(d, exist_ok=True)
        with gzip.open(tj + ".gz", "rb") as src, \
                open(os.path.join(d, "tokenizer.json"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        for f in os.listdir(model):
            if f.endswith(".json") and not os.path.exists(os.path.join(d, f)):
                shutil.copy(os.path.join(model, f), d)
        model, tj = d, os.path.join(d, "tokenizer.json")
    if os.path.isfile(tj):
        tok = Tokenizer.from_file(tj)
        with open(tj, encoding="utf-8") as f:
            specials = [a["content"] for a in json.load(f).get("added_tokens") or []]
    elif os.path.isfile(os.path.join(model, "vocab.txt")):
        from tokenizers.implementations import BertWordPieceTokenizer
        cfg = {}
        cp_ = os.path.join(model, "tokenizer_config.json")
        if os.path.isfile(cp_):
            with open(cp_, encoding="utf-8") as f:
                cfg = json.load(f)
        bw = BertWordPieceTokenizer(
            os.path.join(model, "vocab.txt"),
            clean_text=True,
            handle_chinese_chars=cfg.get("tokenize_chinese_chars", True),
            strip_accents=cfg.get("strip_accents"),
            lowercase=cfg.get("do_lower_case", True))
        tok = bw._tokenizer
        specials = ["[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"]
    else:
        return None, None, None
    tok.no_truncation()
    tok.no_padding()
    return model, tok, specials[:50]


def main(argv):
    args = parse_args(argv)
    try:
        import tokenizers  # noqa: F401
    except ImportError as e:
        sys.stderr.write("tokfuzz: cannot import tokenizers (%s): run "
                         "scripts/install-refs\n" % e)
        return 2
    failed = 0
    tmp = tempfile.mkdtemp(prefix="tokfuzz.")
    try:
        for model in args["models"]:
            name = os.path.basename(os.path.normpath(model))
            if name == "model":  # a model package's folder: name the package
                name = os.path.basename(os.path.dirname(os.path.normpath(model)))
            mdir, tok, specials = load(model, tmp)
            if tok is None:
                print("tokfuzz: %s: no tokenizer.json or vocab.txt, skipped" % model)
                continue
            rng = Rng(args["seed"])
            texts = []
            # one in eight is a (text, text_pair) pair
            for i in range(args["n"]):
                texts.append((gen_text(rng, specials), gen_text(rng, specials))
                             if i % 8 == 7 else gen_text(rng, specials))
            bad = -1
            for s in range(0, len(texts), 5000):
                k = first_diff(args["emb"], mdir, tok, texts[s:s + 5000])
                if k >= 0:
                    bad = s + k
                    break
            if bad < 0:
                print("tokfuzz: %s: %d strings, 0 mismatches" % (name, len(texts)))
                continue
            failed += 1
            m = shrink(args["emb"], mdir, tok, texts[bad])
            m1 = emb_run(args["emb"], mdir, [m])[0]
            r1 = ref_run(tok, [m])[0]
            print("tokfuzz: %s: MISMATCH on string %d of seed %d" % (name, bad, args["seed"]))
            print("  minimal input: " + json.dumps(m, ensure_ascii=False))
            print("  code points:   " + hexs(m))
            print("  tokenizers:    " + json.dumps(r1["ids"]))
            print("  emb-tokenize:  " + ("error: " + m1["error"] if "error" in m1
                                         else json.dumps(m1["ids"])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
