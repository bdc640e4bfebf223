#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node, CPU execution provider) side of `make bench`.
// usage: ort-run.js ORT_DIR MODEL.onnx IDS.jsonl THREADS REPS [OUT_EMB.jsonl]
//        ort-run.js ORT_DIR MODEL.onnx --lengths THREADS REPS B L1,L2,...
// ORT_DIR holds node_modules/onnxruntime-node.  IDS.jsonl: {"input_ids": [...]}
// per line; only the inputs the model has are fed (token_type_ids is
// optional).  Loop: sort by length (longest first), batches of 32 padded,
// mean pool over the mask, L2 normalize (sentence-transformers' loop).  Prints one
// JSON line with the time of each repetition (after a warm-up on the two
// longest batches).
'use strict';
const path = require('path');
const fs = require('fs');
const [ortDir, model, idsPath, threads, repsArg, a6, a7] = process.argv.slice(2);
const ort = require(path.resolve(ortDir, 'node_modules/onnxruntime-node'));
const version = require(path.resolve(ortDir, 'node_modules/onnxruntime-node/package.json')).version;
const reps = +repsArg;

function feeds(sel) {
  const S = Math.max(...sel.map(r => r.length)), B = sel.length;
  const ids = new BigInt64Array(B * S), mask = new BigInt64Array(B * S), types = new BigInt64Array(B * S);
  sel.forEach((r, b) => { for (let j = 0; j < r.length; j++) { ids[b * S + j] = BigInt(r[j]); mask[b * S + j] = 1n; } });
  return {
    input_ids: new ort.Tensor('int64', ids, [B, S]),
    token_type_ids: new ort.Tensor('int64', types, [B, S]),
    attention_mask: new ort.Tensor('int64', mask, [B, S]),
  };
}

async function encode(sess, rows, keep) {
  const order = rows.map((r, i) => i).sort((a, b) => rows[b].length - rows[a].length);
  for (let s = 0; s < order.length; s += 32) {
    const idx = order.slice(s, s + 32), sel = idx.map(i => rows[i]);
    const f = feeds(sel);
    for (const k of Object.keys(f)) if (!sess.inputNames.includes(k)) delete f[k];  // e.g. no token_type_ids
    const out = await sess.run(f);
    const h = out.last_hidden_state.data, [B, S, D] = out.last_hidden_state.dims.map(Number);
    for (let b = 0; b < B; b++) {
      const v = new Float64Array(D), n = sel[b].length;
      for (let j = 0; j < n; j++) for (let d = 0; d < D; d++) v[d] += h[(b * S + j) * D + d];
      let ss = 0;
      for (let d = 0; d < D; d++) { v[d] /= n; ss += v[d] * v[d]; }
      const inv = 1 / Math.max(Math.sqrt(ss), 1e-12);
      if (keep) keep[idx[b]] = Array.from(v, x => x * inv);
    }
  }
}

(async () => {
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: +threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  const peer = 'onnxruntime-node-' + version;
  if (idsPath === '--lengths') {                 // tokens/s against sequence length
    const B = +a6, res = {};
    for (const L of a7.split(',').map(Number)) {
      const rows = Array.from({ length: B }, (_, b) => Array.from({ length: L }, (_, j) => 1000 + ((b * 31 + j * 7) % 20000)));
      await encode(sess, rows);
      let best = 1e9;
      for (let r = 0; r < reps; r++) {
        const t0 = process.hrtime.bigint(); await encode(sess, rows);
        best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
      }
      res[L] = +(B * L / best).toFixed(1);
    }
    console.log(JSON.stringify({ peer, threads: +threads, batch: B, tokens_per_s: res }));
    return;
  }
  const rows = fs.readFileSync(idsPath, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l).input_ids);
  let ntok = 0; rows.forEach(r => { ntok += r.length; });
  await encode(sess, rows.slice().sort((a, b) => b.length - a.length).slice(0, 64));  // warm-up: two longest batches
  const times = [];
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint(); await encode(sess, rows);
    times.push(+(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(4));
  }
  if (a6) {
    const keep = new Array(rows.length);
    await encode(sess, rows, keep);
    fs.writeFileSync(a6, keep.map(e => JSON.stringify({ embedding: e })).join('\n') + '\n');
  }
  console.log(JSON.stringify({ peer, threads: +threads, texts: rows.length, tokens: ntok, times }));
})().catch(e => { console.error('ort-run: ' + e.message); process.exit(1); });
