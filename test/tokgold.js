#!/usr/bin/env node
// tokgold.js - golden token ids and offsets from Hugging Face tokenizers
// (the npm package) for a tokenizer.json and a JSONL of {"id","text"}:
// every record once alone and, for every fourth one, with the next text
// as text_pair.  No truncation.  Offsets are character offsets.
// usage: node test/tokgold.js TOKENIZERS_DIR TOKENIZER_JSON TEXTS.jsonl > golden.jsonl
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, tj, texts] = process.argv.slice(2);
if (!texts) {
  process.stderr.write('usage: node test/tokgold.js TOKENIZERS_DIR TOKENIZER_JSON TEXTS.jsonl\n');
  process.exit(2);
}
const { Tokenizer } = require(path.resolve(dir, 'node_modules', 'tokenizers'));
(async () => {
  const tok = Tokenizer.fromFile(tj);
  tok.disableTruncation();
  tok.disablePadding();
  const recs = fs.readFileSync(texts, 'utf8').split('\n').filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  const out = [];
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i];
    const pair = i % 4 === 3 && i + 1 < recs.length ? recs[i + 1].text : null;
    const e = await tok.encode(r.text, pair);
    const o = { id: r.id, text: r.text };
    if (pair !== null) o.text_pair = pair;
    o.input_ids = Array.from(e.getIds());
    o.token_type_ids = Array.from(e.getTypeIds());
    o.special_tokens_mask = Array.from(e.getSpecialTokensMask());
    o.offsets = e.getOffsets();
    out.push(JSON.stringify(o));
  }
  process.stdout.write(out.join('\n') + '\n');
})();
