"""ort-run.py - the ONNX Runtime peer of the benchmarks (scripts/bench,
bench-families, bench-real): forward + mean pool + normalize from token
ids, in process, warm session, the sentence-transformers loop
(bench/stloop.py: sorted by length, batches of 32 padded).

usage: ort-run.py [OPTIONS] MODEL.onnx THREADS IDS.jsonl REPS [OUT_EMB.jsonl]
       ort-run.py [OPTIONS] MODEL.onnx THREADS --lengths REPS B L1,L2,...

The session is made the way a user makes one: default SessionOptions
(graph optimization level ORT_ENABLE_ALL, inter-op threads and spinning
left to ONNX Runtime) with only intra_op_num_threads set to THREADS, CPU
execution provider.  Only the inputs the model has are fed
(token_type_ids, when there, all zero); the output is last_hidden_state
(else the first output).  Before the timing: one pass over the 64
longest sequences.  Prints one JSON line: {"peer", "threads", "texts",
"tokens", "times": [seconds of each repetition]} (--lengths:
"tokens_per_s" per length).

OPTIONS (to find out what a setting is worth; not what the benchmarks use):
  --legacy      what the benchmarks set up to 2026-12-01: also
                inter_op_num_threads 1, ORT_SEQUENTIAL, ORT_ENABLE_ALL
  --no-spin     session.intra_op.allow_spinning = 0
  --no-sort     batches in input order (no length sort)
  --no-warm     no warm-up pass
Needs onnxruntime and numpy (scripts/install-refs --full).
"""
import sys

import numpy as np
import onnxruntime as ort

import stloop


def session(path, threads, legacy=False, spin=True):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if legacy:
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def forward_of(sess):
    names = {i.name for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    out = "last_hidden_state" if "last_hidden_state" in outs else outs[0]

    def forward(ids, mask):
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        feed = {k: v for k, v in feed.items() if k in names}
        return stloop.mean_pool(sess.run([out], feed)[0], mask)
    return forward


def main(a):
    flags = set()
    while a and a[0] in ("--legacy", "--no-spin", "--no-sort", "--no-warm"):
        flags.add(a.pop(0))
    if len(a) < 4:
        sys.stderr.write(__doc__)
        return 2
    threads = int(a[1])
    sess = session(a[0], threads, "--legacy" in flags, "--no-spin" not in flags)
    stloop.run("onnxruntime-" + ort.__version__, threads, forward_of(sess), a[2:],
               warm=0 if "--no-warm" in flags else 64, sort="--no-sort" not in flags)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
