#!/usr/bin/env python3
"""bench/family-recipes.py FIXTURES_DIR OUT_DIR [LAYERS]

Write full-size synthetic recipes for the families benchmark from the
tiny fixtures' recipes: coderank-tiny scaled to the CodeRankEmbed /
nomic-embed shape (12 x 768, inner 3072) and modernbert-tiny scaled to
ModernBERT-base (22 x 768, inner 1152, 12 heads).  Tensor shapes are
rescaled by role (hidden, fused QKV, MLP), per-layer tensors are repeated
for the new depth, and weight scales shrink with the fan-in so the
activations stay finite; the values carry no meaning (see SYNTHETIC.md).
"""
import json, os, re, sys

SHAPES = {
    "coderank-tiny": ("nomic-768", {"n_embd": 768, "n_head": 12, "n_inner": 3072, "n_layer": 12},
                      "n_embd", "n_inner", "n_layer"),
    "modernbert-tiny": ("modernbert-base", {"hidden_size": 768, "num_attention_heads": 12,
                                            "intermediate_size": 1152, "num_hidden_layers": 22},
                        "hidden_size", "intermediate_size", "num_hidden_layers"),
}

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
    for tiny, (name, cfg, hk, ik, lk) in SHAPES.items():
        r = json.load(open(os.path.join(src, tiny, "recipe.json")))
        c = r["files"]["config.json"]
        h, i, L = c[hk], c[ik], c[lk]
        H, I, NL = cfg[hk], cfg[ik], cfg[lk]
        if len(sys.argv) > 3:
            NL = int(sys.argv[3])
        c.update(cfg)
        c[lk] = NL
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

main()
