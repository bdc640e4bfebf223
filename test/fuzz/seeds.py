#!/usr/bin/env python3
"""seeds.py - seed inputs for the fuzz targets, made from test/data.

    python3 test/fuzz/seeds.py OUTDIR [--small]

writes OUTDIR/<target>/<name> for every target.  --small: the few small
seeds committed as test/fuzz/corpus/ (a few hundred KB in all); without
it, the larger run-time set `make fuzz` starts from (written under
test/fuzz/build/, never committed).  Input layouts: see each
test/fuzz/fuzz_*.c.
"""
import base64, glob, hashlib, json, os, struct, sys

top = os.environ.get("EMB_TOP") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
D = os.path.join(top, "test", "data")
out = sys.argv[1]
small = "--small" in sys.argv[2:]


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def jl(path, n=None):
    res = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if n is not None and len(res) >= n:
                break
            res.append(line.rstrip("\n"))
    return res


# ---- safetensors ------------------------------------------------------
def st_file(tensors, meta=None, pad=0):
    hdr, blob = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape, raw in tensors:
        hdr[name] = {"dtype": dt, "shape": shape,
                     "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(hdr).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + blob


f32 = lambda v: struct.pack("<%df" % len(v), *v)
put("safetensors", "f32-2x3", st_file([("w", "F32", [2, 3], f32([1, -2, 3.5, 0, 1e-3, 7]))], {"format": "pt"}))
put("safetensors", "mixed-dtypes", st_file([
    ("a.f16", "F16", [4], struct.pack("<4H", 0x3c00, 0x7c00, 0xfc00, 0x0001)),
    ("b.bf16", "BF16", [2, 2], struct.pack("<4H", 0x3f80, 0x7fc0, 0x0000, 0x8000)),
    ("c.f64", "F64", [2], struct.pack("<2d", 1.5, -0.0)),
    ("d.i8", "I8", [3], b"\x01\x80\x7f"),
    ("d.i8_scale", "F32", [1], f32([0.5])),
    ("e.i64", "I64", [1], struct.pack("<q", -1)),
    ("f.bool", "BOOL", [2], b"\x00\x01"),
    ("g.scalar", "F32", [], f32([2])),
    ("h.empty", "F32", [0, 5], b""),
], {"emb.quantization": "int8"}, pad=5))
put("safetensors", "empty-header", st_file([]))
put("safetensors", "index", json.dumps({"metadata": {"total_size": 28},
    "weight_map": {"a.weight": "s1.safetensors", "b.bias": "s2.safetensors", "c": "s2.safetensors"}}))
put("safetensors", "truncated", st_file([("w", "F32", [4], f32([1, 2, 3, 4]))])[:-3])

# ---- config -----------------------------------------------------------
CFG = ["config.json", "modules.json", "1_Pooling/config.json", "2_Dense/config.json",
       "sentence_bert_config.json", "config_sentence_transformers.json", "tokenizer_config.json"]
seen = set()


def cfg_seed(i, text, tag):
    data = bytes([i]) + (text.encode() if isinstance(text, str) else text)
    h = hashlib.sha1(data).hexdigest()[:10]
    if h in seen:
        return
    seen.add(h)
    put("config", "%s-%s" % (tag, h), data)


for m in sorted(glob.glob(os.path.join(D, "models", "*"))):
    for i, f in enumerate(CFG):
        p = os.path.join(m, f)
        if os.path.exists(p) and (not small or i != 6 or os.path.getsize(p) < 4000):
            cfg_seed(i, open(p, "rb").read(), os.path.basename(m)[:24] + "-" + f.replace("/", "_"))
for r in sorted(glob.glob(os.path.join(D, "fixtures", "*", "recipe.json"))):
    rec = json.load(open(r))
    for f, body in rec.get("files", {}).items():
        f = f.replace("3_Dense", "2_Dense")
        if f in CFG:
            cfg_seed(CFG.index(f), json.dumps(body, indent=1),
                     os.path.basename(os.path.dirname(r)) + "-" + f.replace("/", "_"))
# the family configs, shrunk to the fuzz target's tiny BERT checkpoint
# (hidden 8, 1 layer, vocab 32): BERT-shaped ones then load all the way
TINY = {"hidden_size": 8, "intermediate_size": 16, "vocab_size": 32, "max_position_embeddings": 16,
        "num_attention_heads": 2, "num_hidden_layers": 1, "type_vocab_size": 2}
for r in sorted(glob.glob(os.path.join(D, "fixtures", "*", "recipe.json"))):
    c = json.load(open(r)).get("files", {}).get("config.json")
    if c:
        c = dict(c, **{k: v for k, v in TINY.items() if k in c or k in ("num_hidden_layers",)})
        cfg_seed(0, json.dumps(c), "tiny-" + os.path.basename(os.path.dirname(r)))
cfg_seed(2, '{"word_embedding_dimension": 8, "pooling_mode": "cls"}', "pool-new-form")
cfg_seed(2, '{"word_embedding_dimension": 8, "pooling_mode_cls_token": true, '
         '"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": true, '
         '"pooling_mode_mean_sqrt_len_tokens": true, "pooling_mode_weightedmean_tokens": true, '
         '"pooling_mode_lasttoken": true, "include_prompt": false}', "pool-all")
cfg_seed(0, '{"architectures": ["BertForSequenceClassification"], "hidden_size": 8, '
         '"intermediate_size": 16, "max_position_embeddings": 16, "num_attention_heads": 2, '
         '"num_hidden_layers": 1, "type_vocab_size": 2, "vocab_size": 32, '
         '"id2label": {"0": "neg", "1": "pos"}, "hidden_act": "gelu", "layer_norm_eps": 1e-12, '
         '"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}}',
         "bert-classifier")
cfg_seed(0, '{"architectures": ["BertForMaskedLM"], "hidden_size": 8, '
         '"intermediate_size": 16, "max_position_embeddings": 16, "num_attention_heads": 2, '
         '"num_hidden_layers": 1, "type_vocab_size": 2, "vocab_size": 32, "hidden_act": "gelu"}',
         "bert-mlm")

# ---- tokenizer.json ----------------------------------------------------
def build_charsmap(entries):
    """entries: {bytes key: str replacement} -> SentencePiece charsmap blob
    (u32 trie size, Darts double array, NUL-terminated replacements)."""
    norm = b""
    val = {}
    for k, r in sorted(entries.items()):
        val[k] = len(norm)
        norm += r.encode() + b"\0"
    # trie of keys: node = dict(children), leaf value
    root = {}
    for k in entries:
        n = root
        for c in k:
            n = n.setdefault(c, {})
        n[None] = val[k]
    units = {}
    used = set()

    def place(node, p):
        # find base such that base^c free for each child label and base (value slot) if leaf
        labels = [c for c in node if c is not None]
        need_leaf = None in node
        base = 1
        while True:
            slots = [base ^ c for c in labels] + ([base] if need_leaf else [])
            if all(s not in used and s != 0 for s in slots) and (p ^ base) < (1 << 21):
                break
            base += 1
        off = p ^ base
        units[p] = units.get(p, 0) | (off << 10) | ((1 << 8) if need_leaf else 0)
        for s in slots:
            used.add(s)
        if need_leaf:
            units[base] = 0x80000000 | node[None]
        for c in labels:
            units[base ^ c] = c
        for c in labels:
            place(node[c], base ^ c)
    used.add(0)
    units[0] = 0
    place(root, 0)
    n = max(units) + 1
    arr = [units.get(i, 0) for i in range(n)]
    # unused slots must not match any label: give them label 0xff... keep 0
    # but a 0 unit has label 0, never equal to a key byte (keys have no NUL)
    trie = struct.pack("<%dI" % n, *arr)
    return struct.pack("<I", len(trie)) + trie + norm

def lookup(blob, key):
    (ts,) = struct.unpack("<I", blob[:4])
    u = list(struct.unpack("<%dI" % (ts // 4), blob[4:4 + ts]))
    norm = blob[4 + ts:]
    OFF = lambda x: (x >> 10) << ((x & (1 << 9)) >> 6)
    pos = OFF(u[0])
    for c in key:
        pos ^= c
        if pos >= len(u): return None
        x = u[pos]
        if (x & (0x80000000 | 0xff)) != c: return None
        pos ^= OFF(x)
        if pos >= len(u): return None
        if (x >> 8) & 1:
            v = u[pos] & 0x7fffffff
            return norm[v:norm.index(b"\0", v)].decode()
    return None


# a small SentencePiece charsmap (the real ones are 237 KB): NFKC-like
# entries, a grapheme cluster, a deletion, a longer replacement
SMALL_CM = build_charsmap({
    "Ａ".encode(): "A", "ﬁ".encode(): "fi", "①".encode(): "1", "\u3000".encode(): " ",
    "e\u0301".encode(): "é", "½".encode(): "1⁄2", "\u200b".encode(): "", "ｶﾞ".encode(): "ガ",
    "\u00a0".encode(): " ", "™".encode(): "TM"})
CM_TEXT = "Ａbc ﬁ ① Å e\u0301 \u3000x\u200b ½ ㍿ ｶﾞ\u00a0™ ǅ".encode()
put("tokenizer_json", "charsmap-small", b"\0" + struct.pack("<I", len(SMALL_CM))[:3] + SMALL_CM + CM_TEXT)

def shrink(tj, nvocab):
    m = tj["model"]
    keep = set(t["content"] for t in tj.get("added_tokens") or [])
    if m["type"] in ("WordPiece", "BPE"):
        items = sorted(m["vocab"].items(), key=lambda kv: kv[1])
        items = [kv for i, kv in enumerate(items) if i < nvocab or kv[0] in keep]
        m["vocab"] = {k: i for i, (k, _) in enumerate(items)}
        if m["type"] == "BPE":
            ok = []
            for mg in m.get("merges", []):
                a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
                if a in m["vocab"] and b in m["vocab"] and a + b in m["vocab"]:
                    ok.append(mg)
            m["merges"] = ok
        remap = m["vocab"]
    else:
        m["vocab"] = [v for i, v in enumerate(m["vocab"]) if i < nvocab or v[0] in keep]
        remap = {v[0]: i for i, v in enumerate(m["vocab"])}
        if m.get("unk_id") is not None and m["unk_id"] >= len(m["vocab"]):
            m["unk_id"] = 0
    for t in tj.get("added_tokens") or []:
        if t["content"] in remap:
            t["id"] = remap[t["content"]]
    pp = tj.get("post_processor")

    def fix(p):
        if not p:
            return
        for st in (p.get("special_tokens") or {}).values():
            st["ids"] = [remap.get(x, 0) for x in st.get("tokens", [])]
        for k in ("sep", "cls"):
            if isinstance(p.get(k), list) and p[k][0] in remap:
                p[k][1] = remap[p[k][0]]
        for q in p.get("processors") or []:
            fix(q)
    fix(pp)
    return tj


def drop_charsmap(n):
    if not n:
        return n
    if n.get("type") == "Precompiled":
        return None
    if n.get("type") == "Sequence":
        n["normalizers"] = [x for x in n["normalizers"] if x.get("type") != "Precompiled"]
    return n


toks = sorted(glob.glob(os.path.join(D, "models", "*", "tokenizer.json")) +
              glob.glob(os.path.join(D, "tokenize-synth", "*", "tokenizer.json")))
for p in toks:
    tj = json.load(open(p, encoding="utf-8"))
    name = os.path.basename(os.path.dirname(p))
    tj = shrink(tj, 200 if small else 800)
    # the real charsmaps are 237 KB: the small one instead
    for n in [tj.get("normalizer")] + ((tj.get("normalizer") or {}).get("normalizers") or []):
        if n and n.get("type") == "Precompiled":
            n["precompiled_charsmap"] = base64.b64encode(SMALL_CM).decode()
    put("tokenizer_json", name, json.dumps(tj, ensure_ascii=False))

# ---- tokenize ---------------------------------------------------------
TOKS = {
    "tokenize_wordpiece": ["sentence-transformers--all-MiniLM-L6-v2", "sentence-transformers--all-mpnet-base-v2", "naver--splade_v2_distil"],
    "tokenize_bpe": ["sentence-transformers--all-distilroberta-v1", "answerdotai--ModernBERT-large", "bl-prefix",
                     "bpe-chars-fallback", "bpe-qwen-split", "bpe-splits", "empty-matches"],
    "tokenize_unigram": ["sentence-transformers--paraphrase-albert-small-v2", "Falconsai--text_summarization",
                         "uni-punct", "unigram-fallback"],
}
texts = []
for f in ["pairs64.jsonl", "full.jsonl"]:
    for line in jl(os.path.join(D, "tokenize", "answerdotai--ModernBERT-large", f)):
        r = json.loads(line)
        texts.append((r.get("text", ""), r.get("text_pair")))
for line in jl(os.path.join(D, "corpus", "texts.jsonl")):
    texts.append((json.loads(line).get("text", ""), None))
per = 12 if small else 400
for target, names in TOKS.items():
    k = 0
    for j, (a, b) in enumerate(texts[:per * len(names)]):
        idx = j % len(names)
        flags = idx | (0x10 if b is not None else 0) | (0x80 if j % 3 == 0 else 0) | (0x20 if j % 7 == 5 else 0)
        ab, bb = a.encode(), (b or "").encode()
        if b is not None:
            tot = len(ab) + len(bb)
            # split byte: nb = tot - tot * s / 256 ~ len(bb)
            s = 0 if tot == 0 else min(255, max(0, round((tot - len(bb)) * 256 / tot)))
        else:
            s = 0
        put(target, "%03d" % k, bytes([flags, 8 + j % 60, s]) + ab + bb)
        k += 1
    put(target, "invalid-utf8", bytes([0x80, 16, 0]) + b"ok \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82")

# ---- jsonl ------------------------------------------------------------
def jsonl_seed(name, lines, max_line=255, chunk=7):
    put("jsonl", name, bytes([max_line, chunk]) + "\n".join(lines).encode() + b"\n")


vec = [0.5, -1.25, 3.0e-7, 1e30]
b64 = base64.b64encode(struct.pack("<4f", *vec)).decode()
jsonl_seed("crafted", [
    '{"id": 1, "text": "a\\u00e9\\ud83d\\ude00\\n\\"", "input_ids": [101, -5, 2147483647], "embedding": [0.5, -1e-3, 1E+2]}',
    '{"id": 2, "embedding_b64": "%s", "token_embeddings": [[1,2],[3,4]], "prompt_length": 3}' % b64,
    '{"id": 3, "token_embeddings_b64": ["%s", "%s"], "scores": [1, 2.5]}' % (b64, b64),
    '{"id": 2, "input_ids": [99999999999999999999], "embedding": [1e999]}',
    '{"id": 4, "sparse": {"12": 0.5, "7": 1}, "tokens": ["a", "b"]}',
    '', '   ', 'not json', '{"a": {"b": [[[[]]]]}} ',
    '{"text": "crlf"}\r',
])
gold = sorted(glob.glob(os.path.join(D, "fixtures", "*", "golden*.jsonl")))
for g in gold if not small else gold[:2]:
    name = os.path.basename(os.path.dirname(g)) + "-" + os.path.basename(g)
    lines = jl(g, 2 if small else 5)
    jsonl_seed(name, lines, 255, 63 if small else 20)
for g in sorted(glob.glob(os.path.join(D, "tokenize", "*", "pairs64.jsonl")))[: 1 if small else 99]:
    jsonl_seed("tok-" + os.path.basename(os.path.dirname(g)), jl(g, 4 if small else 10), 200, 30)
jsonl_seed("corpus", jl(os.path.join(D, "corpus", "texts.jsonl"), 20 if small else 60), 40, 3)

# ---- manifest ---------------------------------------------------------
par = open(os.path.join(top, "test", "parity.yaml"), encoding="utf-8").read()
put("manifest", "parity.yaml", par)
put("manifest", "one-case.yaml", """cases:
  - name: a
    model: tmp
    input: data/corpus/texts.jsonl
    golden: data/fixtures/minilm-l6/golden.jsonl
    command: emb-tokenize | emb-encode -j 2 | emb-pool --normalize
    args: [--max-length, "16"]
    input_fields: [id, text]
    limit: 3
    atol: 1e-4
    min_cos: {embedding: 0.999}
    fields: [input_ids, embedding]
    tolerance: {embedding: 1e-5, token_embeddings: 1e-4}
    expect_exit: 1
    timeout: 30
    description: x
  - name: b
    model: tmp
    input: data/corpus/texts.jsonl
    golden_case: a
    command: emb-encode --pool
""")
