"""Peer side of scripts/bench-families: a plain PyTorch forward of each
family emb runs (BERT, nomic-bert, ModernBERT, Qwen3, Gemma 3 /
EmbeddingGemma), built from a checkpoint directory (config.json +
model.safetensors), written from the architectures' published
definitions; its ONNX export is what ONNX Runtime runs in the bench.

usage: family-peers.py export MODEL_DIR OUT.onnx
       family-peers.py embed  MODEL_DIR IDS.jsonl OUT.jsonl

export: torch.onnx.export on a 2 x 8 dummy batch, dynamic batch and
sequence axes; inputs input_ids and attention_mask (int64), output
last_hidden_state.  embed: the torch forward over IDS.jsonl (one
{"input_ids": [...]} per line), one sequence at a time, mean-pooled and
L2-normalized, one {"embedding": [...]} per line: the bench checks ONNX
Runtime's output and emb's against it on these real shapes (a second
shape, not the one exported).  Needs torch and numpy only.
"""
import json, math, os, struct, sys
import numpy as np
import torch

F = torch.nn.functional
from peers import load_safetensors  # bench/peers.py: F32/F16/BF16/I64/I32


def strip(w, prefixes):
    for p in prefixes:
        if any(k.startswith(p) for k in w):
            return {k[len(p):] if k.startswith(p) else k: v for k, v in w.items()}
    return w


def rope_tables(S, hd, theta):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    t = torch.arange(S, dtype=torch.float32)
    f = torch.outer(t, inv)
    e = torch.cat([f, f], dim=-1)
    return e.cos(), e.sin()


def rope(x, cos, sin):  # x (B, h, S, hd), rotate-half (GPT-NeoX) layout
    h = x.shape[-1] // 2
    r = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos + r * sin


def attend(q, k, v, scale, allow):
    # q (B,h,S,hd), k/v (B,hk,S,hd); allow (B,1,S,S) bool
    B, hk, S, hd = k.shape
    rep = q.shape[1] // hk
    if rep > 1:  # GQA: kv head j serves query heads j*rep .. j*rep+rep-1
        k = k.unsqueeze(2).expand(B, hk, rep, S, hd).reshape(B, hk * rep, S, hd)
        v = v.unsqueeze(2).expand(B, hk, rep, S, hd).reshape(B, hk * rep, S, hd)
    a = torch.matmul(q, k.transpose(-1, -2)) * scale
    a = a.masked_fill(~allow, torch.finfo(torch.float32).min)
    return torch.matmul(torch.softmax(a, dim=-1), v)


def rms(x, w, eps, plus1=False):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w if plus1 else w)


def band(S, half):  # |i - j| <= half, (S, S) bool
    i = torch.arange(S)
    return (i.unsqueeze(1) - i.unsqueeze(0)).abs() <= half


class Family(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = {}
        self.plist = torch.nn.ParameterList()
        for k, v in w.items():
            p = torch.nn.Parameter(v, requires_grad=False)
            self.plist.append(p)
            self.w[k] = p

    def g(self, k):
        return self.w[k]

    def lin(self, x, k, bias=True):
        b = self.w.get(k + ".bias") if bias else None
        return F.linear(x, self.w[k + ".weight"], b)


class Bert(Family):
    """BERT / MiniLM: post-LN, absolute positions, GELU (erf)."""

    def __init__(self, w, c):
        super().__init__(strip(w, ["bert."]))
        self.c = c

    def forward(self, ids, mask):
        c, g = self.c, self.g
        B, S = ids.shape
        H, nh = c["hidden_size"], c["num_attention_heads"]
        hd, eps = H // nh, c.get("layer_norm_eps", 1e-12)
        pos = torch.arange(S).unsqueeze(0)
        x = F.embedding(ids, g("embeddings.word_embeddings.weight")) + \
            F.embedding(pos, g("embeddings.position_embeddings.weight")) + \
            g("embeddings.token_type_embeddings.weight")[0]
        x = F.layer_norm(x, (H,), g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
        allow = mask.bool().unsqueeze(1).unsqueeze(2).expand(B, 1, S, S)
        for i in range(c["num_hidden_layers"]):
            p = "encoder.layer.%d." % i
            sp = lambda t: t.view(B, S, nh, hd).transpose(1, 2)
            q, k, v = (sp(self.lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
            a = attend(q, k, v, 1 / math.sqrt(hd), allow).transpose(1, 2).reshape(B, S, H)
            x = F.layer_norm(self.lin(a, p + "attention.output.dense") + x, (H,),
                             g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"), eps)
            h = F.gelu(self.lin(x, p + "intermediate.dense"))
            x = F.layer_norm(self.lin(h, p + "output.dense") + x, (H,),
                             g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
        return x


class Nomic(Family):
    """nomic-bert: post-LN, rotary (non-interleaved), SwiGLU fc2(fc11 * silu(fc12))."""

    def __init__(self, w, c):
        super().__init__(strip(w, ["bert."]))
        self.c = c

    def forward(self, ids, mask):
        c, g = self.c, self.g
        B, S = ids.shape
        H, nh = c["n_embd"], c["n_head"]
        hd, eps = H // nh, c.get("layer_norm_epsilon", 1e-12)
        x = F.embedding(ids, g("embeddings.word_embeddings.weight"))
        if "embeddings.token_type_embeddings.weight" in self.w:
            x = x + g("embeddings.token_type_embeddings.weight")[0]
        x = F.layer_norm(x, (H,), g("emb_ln.weight"), g("emb_ln.bias"), eps)
        rd = int(hd * c.get("rotary_emb_fraction", 1.0))
        cos, sin = rope_tables(S, rd, c.get("rotary_emb_base", 10000))
        allow = mask.bool().unsqueeze(1).unsqueeze(2).expand(B, 1, S, S)
        for i in range(c["n_layer"]):
            p = "encoder.layers.%d." % i
            qkv = self.lin(x, p + "attn.Wqkv").view(B, S, 3, nh, hd)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
            q = torch.cat([rope(q[..., :rd], cos, sin), q[..., rd:]], -1)
            k = torch.cat([rope(k[..., :rd], cos, sin), k[..., rd:]], -1)
            a = attend(q, k, v, 1 / math.sqrt(hd), allow).transpose(1, 2).reshape(B, S, H)
            x = F.layer_norm(x + self.lin(a, p + "attn.out_proj"), (H,), g(p + "norm1.weight"), g(p + "norm1.bias"), eps)
            h = self.lin(x, p + "mlp.fc11") * F.silu(self.lin(x, p + "mlp.fc12"))
            x = F.layer_norm(x + self.lin(h, p + "mlp.fc2"), (H,), g(p + "norm2.weight"), g(p + "norm2.bias"), eps)
        return x


class ModernBert(Family):
    """ModernBERT: pre-LN without biases, RoPE (global / local theta),
    local layers see |i - j| <= local_attention / 2, GeGLU Wo(act(in) * gate)."""

    def __init__(self, w, c):
        super().__init__(strip(w, ["model."]))
        self.c = c

    def ln(self, x, k):
        w = self.g(k + ".weight")
        return F.layer_norm(x, (int(w.shape[0]),), w, self.w.get(k + ".bias"),
                            self.c.get("norm_eps", 1e-5))

    def forward(self, ids, mask):
        c = self.c
        B, S = ids.shape
        H, nh = c["hidden_size"], c["num_attention_heads"]
        hd, every = H // nh, c.get("global_attn_every_n_layers", 3)
        act = F.gelu if c.get("hidden_activation", "gelu") == "gelu" else \
            (lambda t: F.gelu(t, approximate="tanh"))
        x = self.ln(F.embedding(ids, self.g("embeddings.tok_embeddings.weight")), "embeddings.norm")
        gcs = rope_tables(S, hd, c.get("global_rope_theta", 160000.0))
        lcs = rope_tables(S, hd, c.get("local_rope_theta", c.get("global_rope_theta", 160000.0)))
        pad = mask.bool().unsqueeze(1).unsqueeze(2).expand(B, 1, S, S)
        local = pad & band(S, c["local_attention"] // 2)
        for i in range(c["num_hidden_layers"]):
            p = "layers.%d." % i
            glob = i % every == 0
            cos, sin = gcs if glob else lcs
            hin = self.ln(x, p + "attn_norm") if (p + "attn_norm.weight") in self.w else x
            qkv = self.lin(hin, p + "attn.Wqkv").view(B, S, 3, nh, hd)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
            a = attend(rope(q, cos, sin), rope(k, cos, sin), v, 1 / math.sqrt(hd), pad if glob else local)
            x = x + self.lin(a.transpose(1, 2).reshape(B, S, H), p + "attn.Wo")
            wi = self.lin(self.ln(x, p + "mlp_norm"), p + "mlp.Wi")
            I = c["intermediate_size"]
            inp, gate = wi[..., :I], wi[..., I:]
            x = x + self.lin(act(inp) * gate, p + "mlp.Wo")
        return self.ln(x, "final_norm")


class Decoder(Family):
    """Qwen3 (causal, SiLU gate) and Gemma 3 / EmbeddingGemma (embedding
    scale sqrt(H), RMSNorm x (1 + w), sandwich norms, GELU-tanh gate,
    query_pre_attn_scalar, sliding / full layers, bidirectional)."""

    def __init__(self, w, c):
        super().__init__(strip(w, ["model."]))
        self.c = c
        self.gemma = c["model_type"].startswith("gemma")

    def norm(self, x, k):
        return rms(x, self.g(k + ".weight"), self.c.get("rms_norm_eps", 1e-6), self.gemma)

    def forward(self, ids, mask):
        c, gm = self.c, self.gemma
        B, S = ids.shape
        H, nh = c["hidden_size"], c["num_attention_heads"]
        nk = c.get("num_key_value_heads", nh)
        hd = c.get("head_dim", H // nh)
        x = F.embedding(ids, self.g("embed_tokens.weight"))
        if gm:
            x = x * torch.tensor(math.sqrt(H), dtype=torch.float32)
            act = lambda t: F.gelu(t, approximate="tanh")
            scale = c.get("query_pre_attn_scalar", hd) ** -0.5
            types = c.get("layer_types") or [
                "full_attention" if (i + 1) % c.get("sliding_window_pattern", 6) == 0 else "sliding_attention"
                for i in range(c["num_hidden_layers"])]
        else:
            act = F.silu
            scale = 1 / math.sqrt(hd)
            types = ["full_attention"] * c["num_hidden_layers"]
        gcs = rope_tables(S, hd, c.get("rope_theta", 10000.0))
        lcs = rope_tables(S, hd, c.get("rope_local_base_freq", 10000.0)) if gm else gcs
        pad = mask.bool().unsqueeze(1).unsqueeze(2).expand(B, 1, S, S)
        if gm and c.get("use_bidirectional_attention", False):
            full = pad
        else:
            i = torch.arange(S)
            full = pad & (i.unsqueeze(1) >= i.unsqueeze(0))
        slide = full & band(S, c.get("sliding_window", 4096) // 2) if gm else full
        for l in range(c["num_hidden_layers"]):
            p = "layers.%d." % l
            sl = types[l] == "sliding_attention"
            cos, sin = lcs if sl else gcs
            h = self.norm(x, p + "input_layernorm")
            q = self.lin(h, p + "self_attn.q_proj").view(B, S, nh, hd).transpose(1, 2)
            k = self.lin(h, p + "self_attn.k_proj").view(B, S, nk, hd).transpose(1, 2)
            v = self.lin(h, p + "self_attn.v_proj").view(B, S, nk, hd).transpose(1, 2)
            q = rope(self.norm(q, p + "self_attn.q_norm"), cos, sin)
            k = rope(self.norm(k, p + "self_attn.k_norm"), cos, sin)
            a = attend(q, k, v, scale, slide if sl else full).transpose(1, 2).reshape(B, S, nh * hd)
            a = self.lin(a, p + "self_attn.o_proj")
            if gm:
                a = self.norm(a, p + "post_attention_layernorm")
                x = x + a
                h = self.norm(x, p + "pre_feedforward_layernorm")
            else:
                x = x + a
                h = self.norm(x, p + "post_attention_layernorm")
            h = self.lin(act(self.lin(h, p + "mlp.gate_proj")) * self.lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
            if gm:
                h = self.norm(h, p + "post_feedforward_layernorm")
            x = x + h
        return self.norm(x, "norm")


FAMILIES = {"bert": Bert, "nomic_bert": Nomic, "modernbert": ModernBert,
            "qwen3": Decoder, "gemma3_text": Decoder, "gemma3": Decoder}


def build(mdir):
    c = json.load(open(os.path.join(mdir, "config.json")))
    w = load_safetensors(os.path.join(mdir, "model.safetensors"))
    return FAMILIES[c["model_type"]](w, c).eval()


def main():
    cmd, mdir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    model = build(mdir)
    with torch.no_grad():
        if cmd == "export":
            ids = torch.ones(2, 8, dtype=torch.long)
            torch.onnx.export(model, (ids, torch.ones_like(ids)), sys.argv[3], dynamo=False,
                              input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state"], opset_version=14,
                              dynamic_axes={n: {0: "b", 1: "s"} for n in
                                            ["input_ids", "attention_mask", "last_hidden_state"]})
            return
        with open(sys.argv[4], "w") as out:
            for line in open(sys.argv[3]):
                if not line.strip():
                    continue
                ids = torch.tensor([json.loads(line)["input_ids"]], dtype=torch.long)
                x = model(ids, torch.ones_like(ids))[0].mean(0)
                out.write(json.dumps({"embedding": F.normalize(x, dim=0).tolist()}) + "\n")


main()
