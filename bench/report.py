"""Report of `make bench` (scripts/bench): reads WORK/raw.jsonl and the
embedding files there, prints a Markdown section, appends it to
bench/RESULTS.md (unless APPEND is "no") and draws the chart SVG.

usage: report.py WORK MODEL_DIR CMDLINE APPEND SVG LAT_LINES L1 L2 ...
LAT_LINES: how many short texts the emb latency run encoded.  A peer
that was not run (not installed) leaves its cells "-".
Standard library only.
"""
import json, math, os, platform, statistics, subprocess, sys, time
import machine  # bench/machine.py (this script's folder is on sys.path)

W, MDIR, CMDLINE, APPEND, SVG = sys.argv[1:6]
LAT_LINES = int(sys.argv[6])
LENGTHS = [int(v) for v in sys.argv[7:]]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "test/data/fixtures/minilm-l6")
raw = [json.loads(l) for l in open(os.path.join(W, "raw.jsonl")) if l.strip()]
cfg = json.load(open(os.path.join(MDIR, "config.json")))
H, I, NL = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]


def flops(n):
    """forward FLOPs of one sequence of n tokens (linears + attention)"""
    return NL * (2 * n * (4 * H * H + 2 * H * I) + 4 * n * n * H)


def lens(path):
    return [len(json.loads(l)["input_ids"]) for l in open(path) if l.strip()]


WL = {}
for wl in ("texts", "passages"):
    ls = lens(os.path.join(W, wl + ".ids.jsonl"))
    WL[wl] = {"n": len(ls), "tokens": sum(ls), "gflop": sum(flops(n) for n in ls) / 1e9}

peak = {r["peak"]["threads"]: r["peak"]["gflops"] for r in raw if r["engine"] == "fma-peak"}


def find(engine, wl=None, t=None, rep=None):
    return [r for r in raw if r["engine"] == engine and (wl is None or r["workload"] == wl)
            and (t is None or r["threads"] == t) and (rep is None or r["rep"] == rep)]


def seconds(engine, wl, t):
    """per-rep seconds of ENGINE on WL at T threads: {rep: s}"""
    out = {}
    for r in find(engine, wl, t):
        if engine in ("ort", "torch"):
            out[r["rep"]] = r["peer"]["times"][0]
        elif engine == "emb-fwd":
            st = find("emb-startup", wl, t, r["rep"])
            out[r["rep"]] = r["proc"]["wall"] - (st[0]["proc"]["wall"] if st else 0)
        else:
            out[r["rep"]] = r["proc"]["wall"]
    return out


ENGINES = [("emb-e2e", "emb-encode --pool, text in (everything)"),
           ("emb-fwd", "emb-encode --pool, ids in, minus start-up"),
           ("emb-w8", "emb-e2e --weights int8"),
           ("emb-w8a8", "emb-e2e --weights int8 --act int8"),
           ("emb-bf16", "emb-e2e --compute bf16"),
           ("ort", "ONNX Runtime (Python), forward + pool, in process, default session options but the thread count"),
           ("torch", "PyTorch eager, forward + pool, in process")]
threads = sorted({r["threads"] for r in raw if r["engine"] == "emb-e2e"})
peers = {}
for r in raw:
    if r["engine"] in ("ort", "torch"):
        peers[r["engine"]] = r["peer"]["peer"]

out = []
P = out.append
now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


P("\n## Inference speed, %s\n" % now)
P("Command: `%s` (`make bench`); emb %s; machine: %s, %s, Linux %s, load average %s.  "
  "Peers: %s, %s.  Model: synthetic minilm-l6 (all-MiniLM-L6-v2 shape, test/emb-synth).  "
  "Seconds: best of the repetitions (interleaved); `paired` is the median over repetitions of "
  "ORT's time / the engine's time in the same repetition (robust to a noisy machine).\n"
  % (CMDLINE.strip(), sh("git -C %s describe --always --dirty 2>/dev/null" % ROOT) or "?",
     machine.describe(), sh("cc --version | head -1"),
     platform.release(), sh("cut -d' ' -f1-3 /proc/loadavg"), peers.get("ort", "ONNX Runtime not run"),
     peers.get("torch", "PyTorch not run")))
P("FMA peak (fp32, measured now): " + ", ".join("%d thread(s) %.1f GFLOP/s" % (t, g) for t, g in sorted(peak.items())) + ".\n")

def num(x, fmt="%.2f"):
    return "-" if x != x else fmt % x


summary = {}
for wl in ("texts", "passages"):
    d = WL[wl]
    P("### %s: %d texts, %d tokens (max 256), %.1f GFLOP per pass\n" % (wl, d["n"], d["tokens"], d["gflop"]))
    P("| engine | threads | s | texts/s | tokens/s | GFLOP/s | % peak | x ORT | x ORT paired |")
    P("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in threads:
        ort = seconds("ort", wl, t)
        for e, _ in ENGINES:
            s = seconds(e, wl, t)
            if not s:
                continue
            best = min(s.values())
            if best <= 0:   # emb-fwd on a tiny input (--smoke): start-up noise larger than the work
                P("| %s | %d | - | - | - | - | - | - | - |" % (e, t))
                continue
            pk = peak.get(t)
            ratio = min(ort.values()) / best if ort else float("nan")
            paired = statistics.median(ort[k] / s[k] for k in s if k in ort) if ort else float("nan")
            summary[(e, wl, t)] = (d["n"] / best, ratio, paired)
            P("| %s | %d | %.3f | %.1f | %.0f | %.1f | %s | %s | %s |" % (
                e, t, best, d["n"] / best, d["tokens"] / best, d["gflop"] / best,
                "%.0f%%" % (100 * d["gflop"] / best / pk) if pk else "?", num(ratio), num(paired)))
    P("")
P("Engines: " + "; ".join("%s = %s" % e for e in ENGINES) + ".\n")


def emb_rows(path, key="embedding"):
    return [json.loads(l)[key] for l in open(path) if l.strip()]


def maxdiff(a, b):
    return max(max(abs(x - y) for x, y in zip(u, v)) for u, v in zip(a, b))


def mincos(a, b):
    def cos(u, v):
        return sum(x * y for x, y in zip(u, v)) / (math.sqrt(sum(x * x for x in u) * sum(y * y for y in v)) or 1)
    return min(cos(u, v) for u, v in zip(a, b))


P("Agreement (embeddings, same input order):\n")
P("| workload | threads | emb fp32 vs ORT max abs | emb fp32 vs golden max abs | ORT vs golden max abs | W8 vs golden min cos | W8A8 vs golden min cos | bf16 vs golden min cos |")
P("| --- | --- | --- | --- | --- | --- | --- | --- |")
def load(*parts):
    try:
        return emb_rows(os.path.join(*parts))
    except (OSError, ValueError, KeyError):
        return None


def cell(f, a, b, fmt):
    return fmt % f(a, b) if a and b and len(a) == len(b) else "n/a"


for wl, gold in (("texts", "golden.jsonl"), ("passages", "golden.passages.jsonl")):
    g = load(FIX, gold)
    g = g[:WL[wl]["n"]] if g else g     # the goldens of the texts run (--smoke: the first ones)
    o = load(W, "ort.%s.jsonl" % wl)
    for t in threads:
        e = load(W, "emb.%s.%d.jsonl" % (wl, t))
        w8 = load(W, "w8.%s.%d.jsonl" % (wl, t))
        a8 = load(W, "w8a8.%s.%d.jsonl" % (wl, t))
        b16 = load(W, "bf16.%s.%d.jsonl" % (wl, t))
        P("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            wl, t, cell(maxdiff, e, o, "%.2e"), cell(maxdiff, e, g, "%.2e"), cell(maxdiff, o, g, "%.2e"),
            cell(mincos, w8, g, "%.5f"), cell(mincos, a8, g, "%.5f"), cell(mincos, b16, g, "%.5f")))
P("")

# latency, cold start, RSS
def wall(engine, wl=None, t=None):
    r = find(engine, wl, t)
    return r[0]["proc"]["wall"] if r else float("nan")


lt = max(threads)
emb_lat = (wall("emb-lat", "short", lt) - wall("emb-startup", "short", lt)) / LAT_LINES
lat = {"emb": emb_lat}
for e in ("ort", "torch"):
    r = find(e + "-lat")
    if r:
        tp = list(r[0]["peer"]["tokens_per_s"].items())[0]
        lat[e] = int(tp[0]) / tp[1]
ntok = lens(os.path.join(W, "short.ids.jsonl"))[0]
P("Single short text (%d tokens, batch 1, %d thread(s)): " % (ntok, lt) +
  ", ".join("%s %.2f ms" % (k, v * 1e3) for k, v in lat.items()) +
  " (emb: %d lines through one emb-encode --pool --batch-tokens 1, start-up subtracted, tokenization and JSON included; peers: forward + pool of a ready batch).\n" % LAT_LINES)
P("Cold start (whole process, one short text, 1 thread): emb %s s, ORT (python + import + session) %s s, PyTorch (python + import) %s s.\n"
  % (num(wall("emb-cold")), num(wall("ort-cold")), num(wall("torch-cold"))))
rss = []
for e, _ in ENGINES:
    r = find(e, "passages")
    if r:
        rss.append("%s %.0f MiB" % (e, max(x["proc"]["maxrss_kb"] for x in r) / 1024))
P("Peak RSS (passages, whole process): " + ", ".join(rss) + ".\n")

# tokens/s against sequence length
series = {}
for t in threads:
    st = wall("emb-startup", "seqlen", t)
    series["emb %dT" % t] = {L: 32 * L / (wall("emb-len%d" % L, "seqlen", t) - st) for L in LENGTHS
                             if find("emb-len%d" % L, "seqlen", t)}
    for e, nm in (("ort", "ORT"), ("torch", "PyTorch")):
        r = find(e + "-len", "seqlen", t)
        if r:
            series["%s %dT" % (nm, t)] = {int(k): v for k, v in r[0]["peer"]["tokens_per_s"].items()}
P("Tokens/s against sequence length (32 sequences of L tokens; emb: ids in, start-up subtracted); chart: bench/seqlen.svg\n")
P("| engine | " + " | ".join(str(L) for L in LENGTHS) + " |")
P("| --- |" + " --- |" * len(LENGTHS))
for k, v in series.items():
    P("| %s | " % k + " | ".join("%.0f" % v[L] if L in v else "-" for L in LENGTHS) + " |")
P("")

# the GEMM kernel alone (bench/gemm-bench.c), when the run measured it
gemm = []
try:
    gemm = [json.loads(l) for l in open(os.path.join(W, "gemm.jsonl")) if l.strip()]
except OSError:
    pass
if gemm and peak.get(1):
    P("GEMM kernel alone (%s, 1 thread, best of 40, m x n x k): " % gemm[0]["isa"] + ", ".join(
        "%dx%dx%d %.0f GFLOP/s (%.0f%% of peak)" % (g["m"], g["n"], g["k"], g["gflops"], 100 * g["gflops"] / peak[1])
        for g in gemm) + ".\n")

# the W8A8 int8 GEMM alone (bench/gemm-i8-bench.c), when the run measured it
gi8 = []
try:
    gi8 = [json.loads(l) for l in open(os.path.join(W, "gemm-i8.jsonl")) if l.strip()]
except OSError:
    pass
if gi8:
    P("int8 GEMM (%s, 1 thread, best of 40; 2 m n k ops/s, activation quantization included; "
      "x fp32 kernel in the same run), in cache: " % gi8[0]["i8"] + ", ".join(
        "%dx%dx%d %.0f GOP/s (%.2fx)" % (g["m"], g["n"], g["k"], g["gops_i8_quant"], g["speedup"])
        for g in gi8 if "m" in g) + "; in 96-row blocks, out of cache: " + ", ".join(
        "%dx%dx%d %.0f GOP/s (%.2fx)" % (g["blocked"], g["n"], g["k"], g["gops_i8_quant"], g["speedup"])
        for g in gi8 if "blocked" in g) + ".\n")
    if "gflops_bf16" in gi8[0]:
        P("bf16 GEMM (%s, activations rounded inside; x fp32 kernel), in cache: " % gi8[0]["bf16"] + ", ".join(
            "%dx%dx%d %.0f GFLOP/s (%.2fx)" % (g["m"], g["n"], g["k"], g["gflops_bf16"], g["speedup_bf16"])
            for g in gi8 if "m" in g) + ".\n")

# targets
def tgt(name, e, wl, need):
    got = [(t, summary[(e, wl, t)][1], summary[(e, wl, t)][2]) for t in threads if (e, wl, t) in summary]
    ok = got and all(min(r, p) >= need for _, r, p in got)
    if not got or any(r != r for _, r, _ in got):
        return "- %s: need >= %.2fx ORT; n/a (no ONNX Runtime run)" % (name, need)
    return "- %s: need >= %.2fx ORT; got %s -> %s" % (
        name, need, ", ".join("%dT %.2fx (paired %.2fx)" % g for g in got), "MET" if ok else "not met")


P("Targets (ratio to ONNX Runtime, this run):\n")
P(tgt("emb-encode --pool end to end, texts", "emb-e2e", "texts", 1.5))
P(tgt("emb-encode --pool end to end, passages", "emb-e2e", "passages", 1.25))
P(tgt("W8A8, texts", "emb-w8a8", "texts", 3.0))
P(tgt("W8A8, passages", "emb-w8a8", "passages", 2.5))


# precision modes against emb's own fp32 (same run): best seconds ratio
def vs_fp32(name, e, wl, need):
    got = []
    for t in threads:
        a, b = seconds("emb-e2e", wl, t), seconds(e, wl, t)
        if a and b:
            got.append((t, min(a.values()) / min(b.values())))
    ok = got and all(r >= need for _, r in got)
    return "- %s: need >= %.2fx emb fp32; got %s -> %s" % (
        name, need, ", ".join("%dT %.2fx" % g for g in got) or "n/a", "MET" if ok else "not met")


P(vs_fp32("bf16, passages", "emb-bf16", "passages", 1.7))
P(vs_fp32("W8A8, passages", "emb-w8a8", "passages", 3.2))
P(vs_fp32("W8A8, texts", "emb-w8a8", "texts", 3.0))
if gemm and peak.get(1):
    lo = min(g["gflops"] for g in gemm) / peak[1]
    P("- big GEMMs >= 75%% of measured peak: kernel alone (1 thread) %.0f%%..%.0f%% -> %s" % (
        100 * lo, 100 * max(g["gflops"] for g in gemm) / peak[1], "MET" if lo >= 0.75 else "not met"))
P("- single short text latency below ORT's: emb %.2f ms vs ORT %s ms -> %s" % (
    lat["emb"] * 1e3, num(lat.get("ort", float("nan")) * 1e3),
    ("MET" if lat["emb"] < lat["ort"] else "not met") if "ort" in lat else "n/a"))
P("")

text = "\n".join(out) + "\n"
sys.stdout.write(text)
if APPEND != "no":
    with open(os.path.join(ROOT, "bench/RESULTS.md"), "a") as f:
        f.write(text)

# chart: plain SVG, log2 x axis
Wd, Ht, ml, mr, mt, mb = 720, 420, 70, 150, 30, 50
ymax = max((v for s in series.values() for v in s.values()), default=1) * 1.1
xs = {L: ml + (Wd - ml - mr) * (math.log2(L) - math.log2(LENGTHS[0])) /
      max(1e-9, math.log2(LENGTHS[-1]) - math.log2(LENGTHS[0])) for L in LENGTHS}
yv = lambda v: mt + (Ht - mt - mb) * (1 - v / ymax)
colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (Wd, Ht),
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="%d" y="18" font-size="14">tokens/s against sequence length (32 sequences, minilm-l6), %s</text>' % (ml, now)]
for i in range(6):
    v = ymax * i / 5
    svg.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (ml, Wd - mr, yv(v), yv(v)))
    svg.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (ml - 6, yv(v) + 4, v))
for L in LENGTHS:
    svg.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xs[L], Ht - mb + 18, L))
svg.append('<text x="%d" y="%d" text-anchor="middle">sequence length (tokens)</text>' % ((ml + Wd - mr) // 2, Ht - 10))
for i, (k, s) in enumerate(series.items()):
    c = colors[i % len(colors)]
    pts = " ".join("%.1f,%.1f" % (xs[L], yv(s[L])) for L in LENGTHS if L in s)
    dash = ' stroke-dasharray="5,3"' if k.endswith("1T") else ""
    svg.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (pts, c, dash))
    svg.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
        Wd - mr + 10, Wd - mr + 30, mt + 10 + 18 * i, mt + 10 + 18 * i, c, dash))
    svg.append('<text x="%d" y="%d">%s</text>' % (Wd - mr + 35, mt + 14 + 18 * i, k))
svg.append("</svg>")
with open(SVG, "w") as f:
    f.write("\n".join(svg) + "\n")
