#!/usr/bin/env python3
# static-windows.py - emb-encode --chunk W --overlap K --pool on a
# Model2Vec folder against model2vec itself (test/cli/72-static-chunk.sh;
# the reference venv):
#
#     static-windows.py MODEL W K DOCS WINDOWS
#
# DOCS: JSONL "id", "text"; WINDOWS: emb's output on them.  Checks, one
# line per failure: each document's windows are its model2vec tokens
# (StaticModel.tokenize, the tokenizer without truncation) cut at
# stride W - K, W at most, the last one ending the document, with chunk
# and chunks right; each window's embedding is within 1e-5 of model2vec's
# own mean of those tokens (StaticModel._encode_batch, its weighting and
# normalization).  Exit 0 when all hold, 1 otherwise.
import json, sys
import numpy as np
from model2vec import StaticModel

model, w, k, docs, wins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
m = StaticModel.from_pretrained(model)
m.tokenizer.no_truncation()
bad = []
got = {}
for l in open(wins, encoding='utf-8'):
    r = json.loads(l)
    got.setdefault(r['id'], []).append(r)
want_ids, rows = [], []
for l in open(docs, encoding='utf-8'):
    d = json.loads(l)
    full = m.tokenize([d['text']])[0]
    ws = []
    s = 0
    while True:
        ws.append(full[s:s + w])
        if s + w >= len(full):
            break
        s += w - k
    g = got.get(d['id'], [])
    if len(g) != len(ws):
        bad.append('%s: %d windows, want %d' % (d['id'], len(g), len(ws)))
        continue
    for j, (r, ids) in enumerate(zip(g, ws)):
        if r.get('chunk') != j or r.get('chunks') != len(ws):
            bad.append('%s window %d: chunk %r of %r' % (d['id'], j, r.get('chunk'), r.get('chunks')))
        if r.get('input_ids') != ids:
            bad.append('%s window %d: input_ids differ from model2vec\'s tokens' % (d['id'], j))
        want_ids.append(ids)
        rows.append(np.array(r['embedding'], dtype=np.float64))
n = len(want_ids)
m.tokenize = lambda sentences: want_ids
want = m._encode_batch([''] * n, normalize=m.normalize)
diff = max([float(np.max(np.abs(g - x.astype(np.float64)))) for g, x in zip(rows, want)] or [0.0])
if diff > 1e-5:
    bad.append('max |emb - model2vec| %.3g > 1e-5' % diff)
for b in bad[:10]:
    print(b)
print('%d windows, max-diff %.3g' % (n, diff))
sys.exit(1 if bad else 0)
