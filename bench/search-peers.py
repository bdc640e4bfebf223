"""search-peers.py - the peers and the data of scripts/bench-search, run
with the reference venv's python ($EMB_REFS/bin/python: numpy, faiss-cpu;
scripts/install-refs --full).

  gen DIR N Q DIM SEED
      N document and Q query vectors, standard normal then L2-normalized
      (float32, numpy's default_rng(SEED)): DIR/docs.f32 and DIR/queries.f32
      (raw little-endian rows) and DIR/docs.jsonl, DIR/queries.jsonl
      ({"id": i, "embedding_b64": ...}) for emb-search.
  fixture DIR DOCS.jsonl QUERIES.jsonl
      the "embedding" arrays of two JSONL files as DIR/docs.f32 and
      DIR/queries.f32 (and the same JSONL with id = row number).
  run DIR DIM K REPS ENGINE
      time ENGINE (faiss: IndexFlatIP.search; numpy: queries @ docs.T,
      then argpartition + argsort of each row's top K) over the whole
      query set, best of REPS; thread count from OMP_NUM_THREADS /
      OPENBLAS_NUM_THREADS (set by the caller).  Prints one JSON line
      {"engine", "threads", "s", "blas"} and writes the ids of the first
      repetition to DIR/ENGINE.ids (Q lines of K ids).
  exact DIR DIM K
      exact top-K ids by float64 scores, ties to the lower index:
      DIR/exact.ids.
  compare DIR RESULTS.jsonl K [REF]
      emb-search output against DIR/REF (default exact.ids): prints
      {"recall": r, "identical": n, "queries": q}; identical counts
      queries whose K ids are the same in the same order.
"""
import json
import os
import sys
import time


def load(d, name, dim):
    import numpy as np
    a = np.fromfile(os.path.join(d, name), dtype="<f4")
    return a.reshape(-1, dim)


def write_jsonl(path, x):
    import base64
    with open(path, "w") as f:
        for i in range(x.shape[0]):
            f.write('{"id":%d,"embedding_b64":"%s"}\n' %
                    (i, base64.b64encode(x[i].astype("<f4").tobytes()).decode()))


def gen(d, n, q, dim, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    os.makedirs(d, exist_ok=True)
    for name, rows in (("docs", n), ("queries", q)):
        x = rng.standard_normal((rows, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        x.astype("<f4").tofile(os.path.join(d, name + ".f32"))
        write_jsonl(os.path.join(d, name + ".jsonl"), x)


def fixture(d, docs, queries):
    import numpy as np
    os.makedirs(d, exist_ok=True)
    for name, path in (("docs", docs), ("queries", queries)):
        rows = [json.loads(l)["embedding"] for l in open(path)]
        x = np.array(rows, dtype=np.float32)
        x.tofile(os.path.join(d, name + ".f32"))
        write_jsonl(os.path.join(d, name + ".jsonl"), x)
    print(x.shape[1])


def blas_name():
    """numpy's BLAS (a PyPI wheel carries its own OpenBLAS), and faiss's version"""
    import numpy as np
    try:
        b = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = "%s %s" % (b.get("name", "?"), b.get("version", ""))
    except Exception:
        name = "?"
    return name.strip()


def run(d, dim, k, reps, engine):
    import numpy as np
    xb = load(d, "docs.f32", dim)
    xq = load(d, "queries.f32", dim)
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if engine == "faiss":
        import faiss
        if threads:
            faiss.omp_set_num_threads(threads)
        index = faiss.IndexFlatIP(dim)
        index.add(xb)

        def once():
            return index.search(xq, k)[1]
    else:
        def once():
            s = xq @ xb.T
            part = np.argpartition(-s, k, axis=1)[:, :k]
            rows = np.arange(s.shape[0])[:, None]
            order = np.argsort(-s[rows, part], axis=1, kind="stable")
            return part[rows, order]
    best = None
    ids = None
    for r in range(reps):
        t0 = time.perf_counter()
        got = once()
        dt = time.perf_counter() - t0
        if ids is None:
            ids = got
        best = dt if best is None else min(best, dt)
    with open(os.path.join(d, engine + ".ids"), "w") as f:
        for row in ids:
            f.write(" ".join(str(int(i)) for i in row) + "\n")
    out = {"engine": engine, "threads": threads, "s": best, "blas": blas_name()}
    if engine == "faiss":
        out["version"] = faiss.__version__
    print(json.dumps(out))


def exact(d, dim, k):
    import numpy as np
    xb = load(d, "docs.f32", dim).astype(np.float64)
    xq = load(d, "queries.f32", dim).astype(np.float64)
    with open(os.path.join(d, "exact.ids"), "w") as f:
        for i in range(0, xq.shape[0], 256):
            s = xq[i:i + 256] @ xb.T
            for row in s:
                # lexsort: last key primary; -score, then index
                order = np.lexsort((np.arange(row.shape[0]), -row))[:k]
                f.write(" ".join(str(int(j)) for j in order) + "\n")


def compare(d, results, k, ref="exact.ids"):
    want = [l.split() for l in open(os.path.join(d, ref))]
    hit = tot = same = nq = 0
    for line, w in zip(open(results), want):
        got = [str(r["id"]) for r in json.loads(line)["results"]][:k]
        w = w[:k]
        hit += len(set(got) & set(w))
        tot += len(w)
        same += got == w
        nq += 1
    print(json.dumps({"recall": hit / tot if tot else 0.0, "identical": same,
                      "queries": nq}))


def main(a):
    if len(a) >= 6 and a[0] == "gen":
        gen(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]))
    elif len(a) == 4 and a[0] == "fixture":
        fixture(a[1], a[2], a[3])
    elif len(a) == 6 and a[0] == "run":
        run(a[1], int(a[2]), int(a[3]), int(a[4]), a[5])
    elif len(a) == 4 and a[0] == "exact":
        exact(a[1], int(a[2]), int(a[3]))
    elif len(a) in (4, 5) and a[0] == "compare":
        compare(a[1], a[2], int(a[3]), *a[4:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
