#!/usr/bin/env python3
"""bench/family-recipes.py FIXTURES_DIR OUT_DIR [LAYERS...]

Write full-width synthetic recipes for the families benchmark from the
tiny fixtures' recipes: coderank-tiny scaled to the CodeRankEmbed /
nomic-embed shape (768 wide, inner 3072, 12 heads), modernbert-tiny to
ModernBERT-base (768, inner 1152, 12 heads, local attention over 128
tokens as the real model's, not the fixture's 16), qwen3-tiny to
Qwen3-Embedding-0.6B (1024, 16 heads of 128, 8 KV heads, inner 3072) and
gemma-embed-tiny to EmbeddingGemma-300m (768, 3 heads of 256, 1 KV head,
inner 1152, sliding window 512, Dense 768-3072-768).  The depth is cut
(nomic 4 layers, ModernBERT 6, Qwen3 4, Gemma 6: NAME=N arguments change
it); the vocabulary stays the tiny fixture's (its tokenizer is the one
the bench runs).  Tensor shapes are
rescaled by role (hidden, fused QKV, MLP), per-layer tensors are repeated
for the new depth, and weight scales shrink with the fan-in so the
activations stay finite; the values carry no meaning (see SYNTHETIC.md).
"""
import json, os, re, sys

SHAPES = {
    "coderank-tiny": ("nomic-768", {"n_embd": 768, "n_head": 12, "n_inner": 3072, "n_layer": 4},
                      "n_embd", "n_inner", "n_layer"),
    "modernbert-tiny": ("modernbert-base", {"hidden_size": 768, "num_attention_heads": 12,
                                            "intermediate_size": 1152, "num_hidden_layers": 6,
                                            "local_attention": 128},
                        "hidden_size", "intermediate_size", "num_hidden_layers"),
}

# decoder families: shapes by tensor role, not by matching sizes (the
# tiny fixtures' head, KV and hidden widths coincide)
DECODERS = {
    "qwen3-tiny": ("qwen3-0.6b", {"hidden_size": 1024, "num_attention_heads": 16,
                                  "num_key_value_heads": 8, "head_dim": 128,
                                  "intermediate_size": 3072, "num_hidden_layers": 4}),
    "gemma-embed-tiny": ("gemma-300m", {"hidden_size": 768, "num_attention_heads": 3,
                                        "num_key_value_heads": 1, "head_dim": 256,
                                        "query_pre_attn_scalar": 256, "sliding_window": 512,
                                        "intermediate_size": 1152, "num_hidden_layers": 6,
                                        "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}),
}


def decoder_shape(name, shape, c, dense):
    H, nh, nk = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, I = c["head_dim"], c["intermediate_size"]
    for key, s in (("q_proj", [nh * hd, H]), ("k_proj", [nk * hd, H]), ("v_proj", [nk * hd, H]),
                   ("o_proj", [H, nh * hd]), ("q_norm", [hd]), ("k_norm", [hd]),
                   ("gate_proj", [I, H]), ("up_proj", [I, H]), ("down_proj", [H, I]),
                   ("embed_tokens", [shape[0], H])):
        if key in name:
            return s
    if dense is not None:
        return dense
    return [H] if len(shape) == 1 else shape


def decoders(src, dst, depth):
    for tiny, (name, cfg) in DECODERS.items():
        r = json.load(open(os.path.join(src, tiny, "recipe.json")))
        c = r["files"]["config.json"]
        cfg = dict(cfg, num_hidden_layers=depth.get(name, cfg["num_hidden_layers"]))
        if "layer_types" in cfg:
            cfg["layer_types"] = (cfg["layer_types"] * cfg["num_hidden_layers"])[:cfg["num_hidden_layers"]]
        c.update(cfg)
        H = cfg["hidden_size"]
        dense = {}
        for f, d in sorted(r["files"].items()):
            if f.endswith("_Dense/config.json"):
                d["in_features"], d["out_features"] = (H, 4 * H) if not dense else (4 * H, H)
                dense[f.split("/")[0]] = [d["out_features"], d["in_features"]]
            elif f == "1_Pooling/config.json":
                d["word_embedding_dimension"] = H
        layer = re.compile(r"^(layers\.)(\d+)(\..*)$")
        tensors, per_layer = [], {}
        for t in r["tensors"]:
            m = layer.match(t["name"])
            if m:
                per_layer.setdefault(int(m.group(2)), []).append((m.group(3), t))
        def add(t, nm):
            d = dense.get(t.get("file", "").split("/")[0])
            t2 = dict(t, name=nm, shape=decoder_shape(nm, t["shape"], cfg, d))
            if len(t2["shape"]) == 2 and len(t["shape"]) == 2:
                t2["scale"] = t["scale"] * (t["shape"][1] / t2["shape"][1]) ** 0.5
            tensors.append(t2)
        for t in r["tensors"]:
            if not layer.match(t["name"]) and not t.get("file"):
                add(t, t["name"])
        for l in range(cfg["num_hidden_layers"]):
            for post, t in per_layer[min(l, len(per_layer) - 1)]:
                add(t, "layers.%d%s" % (l, post))
        for t in r["tensors"]:
            if t.get("file"):
                add(t, t["name"])
        r["tensors"] = tensors
        os.makedirs(os.path.join(dst, name), exist_ok=True)
        with open(os.path.join(dst, name, "recipe.json"), "w") as f:
            json.dump(r, f, indent=1)
        print(os.path.join(dst, name, "recipe.json"))

def rescale(name, shape, h, H, i, I):
    out = []
    for d in shape:
        if "Wqkv" in name and d == 3 * h:
            out.append(3 * H)
        elif ("mlp.Wi" in name) and d == 2 * i:
            out.append(2 * I)
        elif d == h:
            out.append(H)
        elif d == i:
            out.append(I)
        else:
            out.append(d)
    return out

def main():
    src, dst = sys.argv[1], sys.argv[2]
    depth = dict((a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[3:])
    for tiny, (name, cfg, hk, ik, lk) in SHAPES.items():
        r = json.load(open(os.path.join(src, tiny, "recipe.json")))
        c = r["files"]["config.json"]
        cfg = dict(cfg, **{lk: depth.get(name, cfg[lk])})
        h, i, L = c[hk], c[ik], c[lk]
        H, I, NL = cfg[hk], cfg[ik], cfg[lk]
        c.update(cfg)
        pool = r["files"].get("1_Pooling/config.json")
        if pool:
            for k in ("word_embedding_dimension", "embedding_dimension"):
                if k in pool:
                    pool[k] = H
        layer = re.compile(r"^(.*?layers?\.)(\d+)(\..*)$")
        head, per_layer, tail = [], {}, []
        for t in r["tensors"]:
            m = layer.match(t["name"])
            if m:
                per_layer.setdefault(int(m.group(2)), []).append((m.group(1), m.group(3), t))
            elif per_layer:
                tail.append(t)
            else:
                head.append(t)
        tensors = []
        def add(t, nm):
            t2 = dict(t, name=nm, shape=rescale(nm, t["shape"], h, H, i, I))
            if len(t2["shape"]) == 2 and "offset" not in t2:
                t2["scale"] = t["scale"] * (t["shape"][1] / t2["shape"][1]) ** 0.5
            tensors.append(t2)
        for t in head:
            add(t, t["name"])
        for l in range(NL):
            # layer 0 may differ (ModernBERT has no attn_norm there)
            src_l = 0 if l == 0 else min(1, L - 1)
            for pre, post, t in per_layer[src_l]:
                add(t, "%s%d%s" % (pre, l, post))
        for t in tail:
            add(t, t["name"])
        r["tensors"] = tensors
        r["base"] = r["base"]
        os.makedirs(os.path.join(dst, name), exist_ok=True)
        with open(os.path.join(dst, name, "recipe.json"), "w") as f:
            json.dump(r, f, indent=1)
        print(os.path.join(dst, name, "recipe.json"))
    decoders(src, dst, depth)

main()
