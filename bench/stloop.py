"""stloop.py - what the benchmark peers share (bench/ort-run.py,
bench/peers.py, bench/real-peers.py): the token ids they read, the
sentence-transformers encode loop they run, and how they report.

The loop is SentenceTransformer.encode's: the texts sorted by length,
longest first (sentence-transformers sorts by the text's length in
characters; here the token count, which is what the cost follows),
batches of BATCH (32) padded to the batch's longest, then mean pooling
over the attention mask and L2 normalization; the embeddings come back
in the input order.  Needs numpy only.
"""
import json
import time

import numpy as np

BATCH = 32


def read_ids(path):
    """the "input_ids" of every record of a JSONL file"""
    return [json.loads(l)["input_ids"] for l in open(path) if l.strip()]


def synth_rows(b, n):
    """B made-up sequences of N ids (the tokens/s against length sweep)"""
    return [[1000 + (i * 31 + j * 7) % 20000 for j in range(n)] for i in range(b)]


def batches(rows, bs=BATCH, sort=True):
    """(indexes, ids (B, S) int64, mask (B, S) int64) per batch"""
    order = list(range(len(rows)))
    if sort:
        order.sort(key=lambda i: -len(rows[i]))
    for s in range(0, len(order), bs):
        idx = order[s:s + bs]
        S = max(len(rows[i]) for i in idx)
        ids = np.zeros((len(idx), S), dtype=np.int64)
        mask = np.zeros((len(idx), S), dtype=np.int64)
        for b, i in enumerate(idx):
            ids[b, :len(rows[i])] = rows[i]
            mask[b, :len(rows[i])] = 1
        yield idx, ids, mask


def mean_pool(h, mask):
    """h (B, S, D) float, mask (B, S) -> (B, D) mean over the mask, L2-normalized"""
    m = mask[:, :, None].astype(h.dtype)
    e = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def encode(forward, rows, keep=None, sort=True):
    """run FORWARD (ids, mask) -> pooled (B, D) over ROWS in the loop;
    KEEP (a dict): index -> embedding"""
    for idx, ids, mask in batches(rows, sort=sort):
        e = forward(ids, mask)
        if keep is not None:
            for b, i in enumerate(idx):
                keep[i] = e[b]


def timed(fn, reps):
    """seconds of each of REPS calls of FN"""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(round(time.perf_counter() - t0, 4))
    return out


def write_embeddings(path, keep, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"embedding": [float(x) for x in keep[i]]}) + "\n")


def run(peer, threads, forward, argv, warm=64, sort=True):
    """the command line every peer takes after its model and thread count:
      IDS.jsonl REPS [OUT_EMB.jsonl]    the loop over IDS, REPS times after a
                                        warm-up on the WARM longest sequences
      --lengths REPS B L1,L2,...        tokens/s on B sequences of each length
    prints one JSON line"""
    if argv[0] == "--lengths":
        reps, b, res = int(argv[1]), int(argv[2]), {}
        for n in [int(v) for v in argv[3].split(",")]:
            rows = synth_rows(b, n)
            encode(forward, rows)
            res[str(n)] = round(b * n / min(timed(lambda: encode(forward, rows), reps)), 1)
        print(json.dumps({"peer": peer, "threads": threads, "batch": b, "tokens_per_s": res}))
        return
    rows = read_ids(argv[0])
    reps = int(argv[1])
    if warm:
        encode(forward, sorted(rows, key=len)[-warm:])
    times = timed(lambda: encode(forward, rows, sort=sort), reps)
    if len(argv) > 2:
        keep = {}
        encode(forward, rows, keep)
        write_embeddings(argv[2], keep, len(rows))
    print(json.dumps({"peer": peer, "threads": threads, "texts": len(rows),
                      "tokens": sum(len(r) for r in rows), "times": times}))
