"""real-peers.py - the peers of scripts/bench-real on a real checkpoint
(a sentence-transformers model folder), run with the reference venv's
python ($EMB_REFS/bin/python; scripts/install-refs --full).

usage: real-peers.py export MODEL_DIR OUT.onnx
       real-peers.py quantize IN.onnx OUT.onnx
       real-peers.py torch [--bf16] MODEL_DIR THREADS IDS.jsonl REPS [OUT_EMB.jsonl]
       real-peers.py st MODEL_DIR THREADS TEXTS.jsonl REPS OUT_EMB.jsonl
       real-peers.py compare REF.jsonl OUT.jsonl...

export: the model's transformers module (AutoModel, fp32, eval) through
torch.onnx.export (the TorchScript exporter, opset 17), inputs
input_ids, attention_mask, token_type_ids (int64, dynamic batch and
sequence), output last_hidden_state.  quantize: onnxruntime's
quantize_dynamic with its defaults (int8 weights, per tensor; uint8
activations quantized at run time).  torch: the same module in PyTorch
eager, the sentence-transformers loop of bench/stloop.py from the token
ids (--bf16: under torch.autocast("cpu", dtype=torch.bfloat16)).  st:
SentenceTransformer(MODEL_DIR).encode(texts, batch_size=32) from the
texts, tokenizer included (what a user runs; its embeddings are the
reference).  Timed lines as bench/stloop.py prints them.  compare: min
cosine and max abs difference of each OUT against REF, one JSON line
each ({"file", "n", "min_cos", "max_abs"}).
"""
import json
import sys

import numpy as np

import stloop


def export(mdir, out):
    import torch
    from transformers import AutoModel
    bert = AutoModel.from_pretrained(mdir, torch_dtype=torch.float32).eval()

    class Wrap(torch.nn.Module):     # keyword call: forward's positions vary by version
        def __init__(self):
            super().__init__()
            self.m = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state
    ids = torch.ones(2, 8, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad():
        torch.onnx.export(Wrap().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), out,
                          input_names=names, output_names=["last_hidden_state"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "b", 1: "s"} for n in names + ["last_hidden_state"]})


def quantize(src, out):
    from onnxruntime.quantization import quantize_dynamic
    quantize_dynamic(src, out)


def torch_peer(a):
    import torch
    from transformers import AutoModel
    bf16 = a[0] == "--bf16"
    if bf16:
        a = a[1:]
    threads = int(a[1])
    torch.set_num_threads(threads)
    m = AutoModel.from_pretrained(a[0], torch_dtype=torch.float32).eval()

    def forward(ids, mask):
        ids, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            h = m(input_ids=ids, attention_mask=mask_t, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        return stloop.mean_pool(h.float().numpy(), mask)
    with torch.inference_mode():
        stloop.run("pytorch-%s%s" % (torch.__version__.split("+")[0], "-bf16" if bf16 else ""),
                   threads, forward, a[2:])


def st_peer(a):
    import torch
    import sentence_transformers
    from sentence_transformers import SentenceTransformer
    threads = int(a[1])
    torch.set_num_threads(threads)
    m = SentenceTransformer(a[0], device="cpu")
    texts = [json.loads(l)["text"] for l in open(a[2], encoding="utf-8") if l.strip()]
    m.encode(sorted(texts, key=len)[-64:], batch_size=32)
    e = None

    def once():
        nonlocal e
        e = m.encode(texts, batch_size=32, convert_to_numpy=True)
    times = stloop.timed(once, int(a[3]))
    stloop.write_embeddings(a[4], dict(enumerate(e)), len(texts))
    print(json.dumps({"peer": "sentence-transformers-" + sentence_transformers.__version__,
                      "threads": threads, "texts": len(texts), "times": times}))


def compare(ref, outs):
    r = np.array([json.loads(l)["embedding"] for l in open(ref) if l.strip()], dtype=np.float64)
    for p in outs:
        try:
            x = np.array([json.loads(l)["embedding"] for l in open(p) if l.strip()], dtype=np.float64)
        except OSError:
            continue
        if x.shape != r.shape:
            print(json.dumps({"file": p, "n": len(x), "error": "shape %s, want %s" % (x.shape, r.shape)}))
            continue
        cos = (x * r).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(r, axis=1)
        print(json.dumps({"file": p, "n": len(x), "min_cos": float(cos.min()),
                          "max_abs": float(np.abs(x - r).max())}))


def main(a):
    if len(a) == 3 and a[0] == "export":
        export(a[1], a[2])
    elif len(a) == 3 and a[0] == "quantize":
        quantize(a[1], a[2])
    elif len(a) >= 5 and a[0] == "torch":
        torch_peer(a[1:])
    elif len(a) == 6 and a[0] == "st":
        st_peer(a[1:])
    elif len(a) >= 3 and a[0] == "compare":
        compare(a[1], a[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
