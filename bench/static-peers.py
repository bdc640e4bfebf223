#!/usr/bin/env python3
# static-peers.py - model2vec's StaticModel.encode on a JSON Lines file,
# in process, for scripts/bench-static (reference venv).
#   static-peers.py MODEL FILE REPS
# prints {"s": best seconds of encode over every text, "texts": n,
# "threads": what joblib may use, "version": model2vec's}
import json, os, sys, time
from model2vec import StaticModel
import model2vec

model, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
texts = [json.loads(l)["text"] for l in open(path, encoding="utf-8")]
m = StaticModel.from_pretrained(model)
m.encode(texts[:100])
best = None
for _ in range(reps):
    t0 = time.perf_counter()
    m.encode(texts)
    s = time.perf_counter() - t0
    best = s if best is None or s < best else best
print(json.dumps({"s": best, "texts": len(texts), "threads": os.cpu_count(),
                  "version": model2vec.__version__}))
