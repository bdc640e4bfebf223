#!/usr/bin/env python3
# static-quant.py - emb-quantize's static model folder against model2vec's
# own quantization (test/cli/71-static-quantize.sh; the reference venv):
#
#     static-quant.py ORIG OUT TYPE VECTORS TEXTS
#
# ORIG: the model folder emb-quantize read; OUT: the one it wrote with
# --weights TYPE (f16, int8); VECTORS: emb-encode -m OUT --pool over
# TEXTS (JSONL, "id" and "text").  Checks, printing one line per failure:
#   - OUT's table equals StaticModel.from_pretrained(ORIG,
#     quantize_to=TYPE)'s bit for bit, and its weights and mapping equal
#     ORIG's;
#   - config.json's embedding_dtype (and vocabulary_quantization) as
#     model2vec's save_pretrained writes them;
#   - model2vec loads OUT, and its encode (SentenceTransformer.encode for
#     a StaticEmbedding folder) is within 1e-5 of VECTORS.
# Exit 0 when all hold, 1 otherwise.
import json, os, sys
import numpy as np
from safetensors.numpy import load_file
from model2vec import StaticModel

orig, out, kind, vecs, texts = sys.argv[1:6]
dtype = {'f16': 'float16', 'int8': 'int8'}[kind]
bad = []
st_form = os.path.exists(os.path.join(out, 'modules.json')) and \
    not os.path.exists(os.path.join(out, 'config.json'))

if st_form:
    w_out = load_file(os.path.join(out, '0_StaticEmbedding', 'model.safetensors'))
    w_orig = load_file(os.path.join(orig, '0_StaticEmbedding', 'model.safetensors'))
    name = 'embedding.weight'
    ref = w_orig[name].astype(np.float16)
else:
    w_out = load_file(os.path.join(out, 'model.safetensors'))
    w_orig = load_file(os.path.join(orig, 'model.safetensors'))
    name = 'embeddings'
    ref = StaticModel.from_pretrained(orig, quantize_to=dtype).embedding
    cfg = json.load(open(os.path.join(out, 'config.json')))
    if cfg.get('embedding_dtype') != dtype:
        bad.append('config.json embedding_dtype %r, want %r'
                   % (cfg.get('embedding_dtype'), dtype))
    vq = int(ref.shape[0]) if 'mapping' in w_orig else None
    if cfg.get('vocabulary_quantization') != vq:
        bad.append('config.json vocabulary_quantization %r, want %r'
                   % (cfg.get('vocabulary_quantization'), vq))
t = w_out[name]
if t.dtype != ref.dtype or t.shape != ref.shape:
    bad.append('table %s %s, model2vec %s %s' % (t.dtype, t.shape, ref.dtype, ref.shape))
elif not np.array_equal(t.view(np.uint8), np.ascontiguousarray(ref).view(np.uint8)):
    n = int(np.sum(t != ref))
    bad.append('table: %d of %d elements differ from model2vec\'s' % (n, t.size))
for k in w_orig:
    if k != name and not np.array_equal(w_orig[k], w_out.get(k)):
        bad.append('tensor %s changed' % k)

recs = [json.loads(l) for l in open(texts, encoding='utf-8')]
got = {}
for l in open(vecs, encoding='utf-8'):
    r = json.loads(l)
    got[r['id']] = np.array(r['embedding'], dtype=np.float64)
if st_form:
    from sentence_transformers import SentenceTransformer
    want = SentenceTransformer(out, device='cpu').encode([r['text'] for r in recs])
else:
    want = StaticModel.from_pretrained(out).encode([r['text'] for r in recs])
diff = 0.0
for r, w in zip(recs, want):
    g = got.get(r['id'])
    if g is None or g.shape != w.shape:
        bad.append('record %s: no vector or a wrong width' % r['id'])
        break
    diff = max(diff, float(np.max(np.abs(g - w.astype(np.float64)))))
if diff > 1e-5:
    bad.append('max |emb - reference| %.3g > 1e-5' % diff)
for b in bad:
    print(b)
print('max-diff %.3g' % diff)
sys.exit(1 if bad else 0)
