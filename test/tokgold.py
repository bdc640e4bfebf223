#!/usr/bin/env python3
"""tokgold.py - golden token ids and offsets from Hugging Face tokenizers
(the Python binding, from the reference environment) for a tokenizer.json
and a JSONL of {"id","text"}: every record once alone and, for every
fourth one, with the next text as text_pair.  No truncation.  Offsets
are character (code point) offsets.

usage: python3 test/tokgold.py TOKENIZER_JSON TEXTS.jsonl > golden.jsonl
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python3 test/tokgold.py TOKENIZER_JSON TEXTS.jsonl\n")
        return 2
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(argv[0])
    tok.no_truncation()
    tok.no_padding()
    with open(argv[1], encoding="utf-8") as f:
        recs = [json.loads(l) for l in f if l.strip()]
    out = []
    for i, r in enumerate(recs):
        pair = recs[i + 1]["text"] if i % 4 == 3 and i + 1 < len(recs) else None
        e = tok.encode(r["text"], pair)
        o = {"id": r["id"], "text": r["text"]}
        if pair is not None:
            o["text_pair"] = pair
        o["input_ids"] = list(e.ids)
        o["token_type_ids"] = list(e.type_ids)
        o["special_tokens_mask"] = list(e.special_tokens_mask)
        o["offsets"] = [list(x) for x in e.offsets]
        out.append(json.dumps(o, ensure_ascii=False, separators=(",", ":")))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
