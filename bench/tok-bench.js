#!/usr/bin/env node
// tok-bench.js - Hugging Face tokenizers (npm) tokens/s on a JSONL file of
// {"text"}: Tokenizer.fromFile, no truncation, no padding, encodeBatch in
// batches of 1000 (the Rust side may use several threads: set
// RAYON_NUM_THREADS=1 for one).  Prints: "tokens N seconds S".
// usage: node bench/tok-bench.js TOKENIZERS_DIR TOKENIZER_JSON IN.jsonl
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, tj, inp] = process.argv.slice(2);
const { Tokenizer } = require(path.resolve(dir, 'node_modules', 'tokenizers'));
(async () => {
  const tok = Tokenizer.fromFile(tj);
  tok.disableTruncation();
  tok.disablePadding();
  const texts = fs.readFileSync(inp, 'utf8').split('\n').filter((l) => l)
    .map((l) => JSON.parse(l).text);
  const t0 = process.hrtime.bigint();
  let n = 0;
  for (let i = 0; i < texts.length; i += 1000) {
    const encs = await tok.encodeBatch(texts.slice(i, i + 1000));
    for (const e of encs) n += e.getIds().length;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log('tokens ' + n + ' seconds ' + s.toFixed(3));
})();
