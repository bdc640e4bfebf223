"""tok-bench.py - Hugging Face tokenizers (the Python binding of the Rust
library, from the reference venv) tokens/s on a JSONL file of {"text"}:
Tokenizer.from_file, no truncation, no padding, encode_batch in batches
of 1000, in process, no JSON output (the Rust side may use several
threads: RAYON_NUM_THREADS=1 for one).  Prints: "tokens N seconds S".

usage: $EMB_REFS/bin/python bench/tok-bench.py TOKENIZER_JSON IN.jsonl
       $EMB_REFS/bin/python bench/tok-bench.py --load TOKENIZER_JSON REPS
--load: the best seconds of REPS Tokenizer.from_file calls (start-up).
"""
import json
import sys
import time

from tokenizers import Tokenizer


def main(a):
    if len(a) == 3 and a[0] == "--load":
        best = min(timed_load(a[1]) for _ in range(int(a[2])))
        print("%.3f" % best)
        return 0
    if len(a) != 2:
        sys.stderr.write(__doc__)
        return 2
    tok = Tokenizer.from_file(a[0])
    tok.no_truncation()
    tok.no_padding()
    texts = [json.loads(l)["text"] for l in open(a[1], encoding="utf-8") if l.strip()]
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(texts), 1000):
        for e in tok.encode_batch(texts[i:i + 1000]):
            n += len(e.ids)
    print("tokens %d seconds %.3f" % (n, time.perf_counter() - t0))
    return 0


def timed_load(path):
    t0 = time.perf_counter()
    Tokenizer.from_file(path)
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
