"""real-report.py - the report of scripts/bench-real: reads WORK/raw.jsonl,
WORK/acc.jsonl and WORK/peak.jsonl, prints a Markdown section and appends
it to bench/RESULTS.md unless APPEND is "no".

usage: real-report.py WORK CMDLINE APPEND LOAD_BEFORE LOAD_AFTER MODEL_DIR WORKLOAD...
Standard library only.
"""
import json
import os
import statistics
import subprocess
import sys
import time
import machine  # bench/machine.py (this script's folder is on sys.path)

W, CMDLINE, APPEND, LOAD0, LOAD1, MDIR = sys.argv[1:7]
WLS = sys.argv[7:]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def jl(name):
    try:
        return [json.loads(l) for l in open(os.path.join(W, name)) if l.strip()]
    except OSError:
        return []


raw, acc, peak = jl("raw.jsonl"), jl("acc.jsonl"), jl("peak.jsonl")
peak_bf16 = jl("peak-bf16.jsonl")
peak_vnni = jl("peak-vnni.jsonl")
ENGINES = [
    ("emb-fp32", "emb-encode --pool, text in, whole process"),
    ("emb-fwd", "emb-encode --pool, ids in, start-up and model load taken off"),
    ("emb-bf16", "emb-fp32 with --compute bf16"),
    ("emb-w8a8", "emb-fp32 with --weights int8 --act int8"),
    ("ort-fp32", "ONNX Runtime, export of BertModel, default session options but the threads"),
    ("ort-int8", "ONNX Runtime, quantize_dynamic of that export"),
    ("torch-fp32", "PyTorch eager, BertModel"),
    ("torch-bf16", "PyTorch eager under torch.autocast(cpu, bfloat16)"),
    ("st", "SentenceTransformer.encode(texts, batch_size=32), text in"),
    ("ort-legacy", "ort-fp32 with inter_op_num_threads 1, ORT_SEQUENTIAL (the earlier options)"),
    ("ort-nosort", "ort-fp32, batches in input order"),
    ("ort-nowarm", "ort-fp32, no warm-up pass"),
    ("ort-handexp", "ort-fp32 on the hand-written BERT export of bench/peers.py"),
    ("ort-famexp", "ort-fp32 on the hand-written BERT export of bench/family-peers.py"),
]


def seconds(e, wl, t):
    """{rep: seconds} of engine E"""
    out = {}
    for r in raw:
        if r["engine"] != e or r["workload"] != wl or r["threads"] != t:
            continue
        if "peer" in r:
            out[r["rep"]] = r["peer"]["times"][0]
        elif e == "emb-fwd":
            st = [x for x in raw if x["engine"] == "emb-startup" and x["workload"] == wl
                  and x["threads"] == t and x["rep"] == r["rep"]]
            out[r["rep"]] = r["proc"]["wall"] - (st[0]["proc"]["wall"] if st else 0)
        else:
            out[r["rep"]] = r["proc"]["wall"]
    return out


def lens(path):
    return [len(json.loads(l)["input_ids"]) for l in open(path) if l.strip()]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


threads = sorted({r["threads"] for r in raw})
peers = {}
for r in raw:
    if "peer" in r:
        peers.setdefault(r["peer"]["peer"].rsplit("-bf16", 1)[0], 1)
flags = sh("lscpu | sed -n 's/^Flags: *//p'")
P = []
P.append("")
P.append("## Real all-MiniLM-L6-v2, %s UTC" % time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
P.append("")
P.append("Command: `%s`; emb %s; model: the real all-MiniLM-L6-v2 (`scripts/real-model all-MiniLM-L6-v2`); "
         "peers: %s.  Machine: %s; %s." % (
             CMDLINE.strip(), sh("git -C %s describe --always --dirty 2>/dev/null" % ROOT) or "?",
             ", ".join(sorted(peers)) or "none", machine.describe(),
             sh("cc --version | head -1")))
P.append("")
P.append("lscpu flags: `%s`" % flags)
P.append("")
P.append("FMA peak (fp32, bench/fma-peak.c, this run): " + ", ".join(
    "%d thread(s) %.1f GFLOP/s (%s)" % (p["threads"], p["gflops"], p["isa"]) for p in peak) + ".")
P.append("bf16 dot product ceiling (vdpbf16ps, bench/fma-peak.c --bf16, this run): " + (", ".join(
    "%d thread(s) %.1f GFLOP/s" % (p["threads"], p["gflops"]) for p in peak_bf16) + "."
    if peak_bf16 else "none (no AVX-512 BF16 on this CPU)."))
P.append("int8 dot product ceiling (vpdpbusd, bench/fma-peak.c --vnni, this run): " + (", ".join(
    "%d thread(s) %.1f GOP/s" % (p["threads"], p["gflops"]) for p in peak_vnni) + "."
    if peak_vnni else "none (no AVX-512 VNNI on this CPU)."))
P.append("Load (uptime) before the timings: `%s`; after: `%s`." % (LOAD0.strip(), LOAD1.strip()))
P.append("")
for wl in WLS:
    ls = lens(os.path.join(W, wl + ".ids.jsonl"))
    n, ntok = len(ls), sum(ls)
    P.append("### %s: %d texts, %d tokens (max %d)" % (wl, n, ntok, max(ls)))
    P.append("")
    P.append("| engine | threads | s (best) | texts/s | tokens/s | x ORT fp32 | x ORT fp32 paired | min cos vs ST fp32 | max abs vs ST fp32 |")
    P.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in threads:
        ort = seconds("ort-fp32", wl, t)
        for e, _ in ENGINES:
            s = seconds(e, wl, t)
            if not s:
                continue
            best = min(s.values())
            if best <= 0:   # emb-fwd on a tiny input: the start-up's noise is larger than the work
                P.append("| %s | %d | - | - | - | - | - | - | - |" % (e, t))
                continue
            x = "%.2f" % (min(ort.values()) / best) if ort else "-"
            pr = [ort[k] / s[k] for k in s if k in ort]
            px = "%.2f" % statistics.median(pr) if pr else "-"
            a = [c for c in acc if c["engine"] == e and c["workload"] == wl and "min_cos" in c]
            P.append("| %s | %d | %.3f | %.1f | %.0f | %s | %s | %s | %s |" % (
                e, t, best, n / best, ntok / best, x, px,
                "%.6f" % a[0]["min_cos"] if a else "-", "%.2e" % a[0]["max_abs"] if a else "-"))
    P.append("")
P.append("Engines: " + "; ".join("%s = %s" % e for e in ENGINES if any(r["engine"] == e[0] for r in raw)) + ".")
P.append("Seconds: best of the repetitions; paired: the median over repetitions of ORT fp32's time / the "
         "engine's in the same repetition.  The peers time the forward, the mean pool and the normalization "
         "of ready batches in a warm process; emb-fp32, -bf16 and -w8a8 are whole processes from text.  "
         "Accuracy: the embeddings of the first thread count's first repetition against "
         "sentence-transformers' own (fp32, from text).")
P.append("")
text = "\n".join(P) + "\n"
sys.stdout.write(text)
if APPEND != "no":
    with open(os.path.join(ROOT, "bench/RESULTS.md"), "a") as f:
        f.write(text)
