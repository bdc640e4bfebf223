"""Peer side of `make bench`: a plain PyTorch BERT encoder built from an emb
checkpoint directory (config.json + model.safetensors), ONNX export of it,
and the sentence-transformers timing loop in PyTorch eager.

usage: peers.py export MODEL_DIR OUT.onnx
       peers.py torch  MODEL_DIR THREADS IDS.jsonl REPS [OUT_EMB.jsonl]
       peers.py torch  MODEL_DIR THREADS --lengths REPS B L1,L2,...

Run with the reference venv's python ($EMB_REFS/bin/python, made by
scripts/install-refs --full); needs only torch and numpy (the safetensors
file is parsed here).  IDS.jsonl holds one {"input_ids": [...]} per line
(already truncated).  The loop is bench/stloop.py's (sentence-transformers'):
sort by length (longest first), batches of 32 padded to the batch's
longest, mean pool over the attention mask, L2 normalize; a warm-up on the
64 longest first.  Prints one JSON line.
"""
import json, math, os, struct, sys, time
import numpy as np
import torch

import stloop

DT = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        blob = f.read()
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        if v["dtype"] == "BF16":
            u = np.frombuffer(blob[a:b], dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(blob[a:b], dtype=DT[v["dtype"]]).astype(np.float32)
        out[k] = torch.from_numpy(arr.reshape(v["shape"]).copy())
    return out


class Bert(torch.nn.Module):
    """BERT encoder (post-LN, GELU erf) returning last_hidden_state."""

    def __init__(self, w, cfg):
        super().__init__()
        pre = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        g = lambda k: torch.nn.Parameter(w[pre + k], requires_grad=False)
        self.H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.word = g("embeddings.word_embeddings.weight")
        self.pos = g("embeddings.position_embeddings.weight")
        self.typ = g("embeddings.token_type_embeddings.weight")
        self.eln = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self.params = torch.nn.ParameterList([self.eln[0], self.eln[1]])
        self.layers = []
        for i in range(cfg["num_hidden_layers"]):
            p = "encoder.layer.%d." % i
            names = ["attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense"]
            L = {}
            for nm in names:
                L[nm] = (g(p + nm + ".weight"), g(p + nm + ".bias"))
            L["ln1"] = (g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"))
            L["ln2"] = (g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"))
            for t in L.values():
                self.params.extend(list(t))
            self.layers.append(L)

    def forward(self, ids, types, mask):
        F = torch.nn.functional
        B, S = ids.shape
        H, nh = self.H, self.nh
        hd = H // nh
        pos = torch.arange(S, dtype=torch.long).unsqueeze(0)
        x = F.embedding(ids, self.word) + F.embedding(types, self.typ) + F.embedding(pos, self.pos)
        x = F.layer_norm(x, (H,), self.eln[0], self.eln[1], self.eps)
        bias = (1.0 - mask.to(torch.float32)).unsqueeze(1).unsqueeze(2) * torch.finfo(torch.float32).min
        for L in self.layers:
            q = F.linear(x, *L["attention.self.query"]).view(B, S, nh, hd).transpose(1, 2)
            k = F.linear(x, *L["attention.self.key"]).view(B, S, nh, hd).transpose(1, 2)
            v = F.linear(x, *L["attention.self.value"]).view(B, S, nh, hd).transpose(1, 2)
            a = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + bias
            a = torch.softmax(a, dim=-1)
            c = torch.matmul(a, v).transpose(1, 2).reshape(B, S, H)
            x = F.layer_norm(F.linear(c, *L["attention.output.dense"]) + x, (H,), L["ln1"][0], L["ln1"][1], self.eps)
            h = F.gelu(F.linear(x, *L["intermediate.dense"]))
            x = F.layer_norm(F.linear(h, *L["output.dense"]) + x, (H,), L["ln2"][0], L["ln2"][1], self.eps)
        return x


def build(mdir):
    cfg = json.load(open(os.path.join(mdir, "config.json")))
    w = load_safetensors(os.path.join(mdir, "model.safetensors"))
    return Bert(w, cfg).eval()


def main():
    cmd = sys.argv[1]
    model = build(sys.argv[2])
    if cmd == "export":
        ids = torch.ones(2, 8, dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(model, (ids, torch.zeros_like(ids), torch.ones_like(ids)), sys.argv[3],
                              input_names=["input_ids", "token_type_ids", "attention_mask"],
                              output_names=["last_hidden_state"], opset_version=14, dynamo=False,
                              dynamic_axes={n: {0: "b", 1: "s"} for n in
                                            ["input_ids", "token_type_ids", "attention_mask", "last_hidden_state"]})
        return
    threads = int(sys.argv[3])
    torch.set_num_threads(threads)

    def forward(ids, mask):
        ids, mask = torch.from_numpy(ids), torch.from_numpy(mask)
        return stloop.mean_pool(model(ids, torch.zeros_like(ids), mask).numpy(), mask.numpy())
    with torch.no_grad():
        stloop.run("pytorch-" + torch.__version__.split("+")[0], threads, forward, sys.argv[4:])


if __name__ == "__main__":
    main()
