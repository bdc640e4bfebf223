"""A stand-in for sentence_transformers, for test/cli/55-st-golden.sh only.

sentence-transformers is not installed where emb's tests run, so this
module takes its place on PYTHONPATH to test scripts/st-golden's output
format (not sentence-transformers' numbers): encode() and predict() look
each text up in the JSON Lines file $EMB_STANDIN_VECTORS (records with
"text" [+ "text_pair"] and "embedding" or "scores", e.g. emb's own
output) and return those vectors as plain lists (no numpy here); every
call is appended to $EMB_STANDIN_LOG as one JSON line.
"""
import json
import os


def _log(what, **kw):
    path = os.environ.get("EMB_STANDIN_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(kw, call=what), sort_keys=True) + "\n")


def _table(field):
    t = {}
    with open(os.environ["EMB_STANDIN_VECTORS"], encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            t[(r["text"], r.get("text_pair"))] = r[field]
    return t


class _Vec(list):
    """a list with numpy's tolist(), as encode returns arrays"""
    def tolist(self):
        return list(self)


class SentenceTransformer:
    def __init__(self, model, device=None, trust_remote_code=False):
        _log("SentenceTransformer", model=model, device=device,
             trust_remote_code=trust_remote_code)

    def encode(self, texts, prompt_name=None, prompt=None, batch_size=32,
               convert_to_numpy=True, show_progress_bar=None):
        _log("encode", n=len(texts), prompt_name=prompt_name, prompt=prompt,
             batch_size=batch_size)
        t = _table("embedding")
        return [_Vec(t[(x, None)]) for x in texts]


class CrossEncoder:
    def __init__(self, model, device=None, trust_remote_code=False):
        _log("CrossEncoder", model=model, device=device,
             trust_remote_code=trust_remote_code)

    def predict(self, pairs, batch_size=32, show_progress_bar=None,
                activation_fn=None):
        _log("predict", n=len(pairs), batch_size=batch_size)
        t = _table("scores")
        out = [t[(a, b)] for a, b in pairs]
        # one label: a flat array, as CrossEncoder returns it
        return [v[0] if len(v) == 1 else v for v in out]
