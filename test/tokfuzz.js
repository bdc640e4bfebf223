#!/usr/bin/env node
// tokfuzz.js - parity fuzzer: random strings through emb-tokenize and
// through Hugging Face tokenizers (the npm package, Rust inside); any
// difference in input_ids or token_type_ids fails, after shrinking the
// input to a minimal one that still differs.
//
// usage: node test/tokfuzz.js --tokenizers DIR --emb PATH [--n N]
//            [--seed S] [--pairs] MODEL_DIR...
//   DIR: the folder holding node_modules/tokenizers
//   PATH: the emb-tokenize binary
// Exit 0: all equal; 1: a mismatch (printed); 2: usage or setup error.
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');
const { spawnSync } = require('child_process');

function usage(msg) {
  if (msg) process.stderr.write('tokfuzz: ' + msg + '\n');
  process.stderr.write('usage: node test/tokfuzz.js --tokenizers DIR --emb PATH ' +
    '[--n N] [--seed S] MODEL_DIR...\n');
  process.exit(2);
}

const args = { n: 2000, seed: 1, models: [] };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const need = () => { if (i + 1 >= a.length) usage('missing argument'); return a[++i]; };
    if (a[i] === '--tokenizers') args.tokenizers = need();
    else if (a[i] === '--emb') args.emb = need();
    else if (a[i] === '--n') args.n = parseInt(need(), 10);
    else if (a[i] === '--seed') args.seed = parseInt(need(), 10);
    else if (a[i].startsWith('-')) usage('unknown option ' + a[i]);
    else args.models.push(a[i]);
  }
  if (!args.tokenizers || !args.emb || !args.models.length || !(args.n > 0)) usage();
}
const { Tokenizer } = require(path.resolve(args.tokenizers, 'node_modules', 'tokenizers'));

// xorshift128+ style PRNG on 32-bit halves: reproducible runs
function rng(seed) {
  let a = (seed ^ 0x9e3779b9) >>> 0, b = 0x243f6a88, c = 0xb7e15162, d = (seed * 2654435761) >>> 0;
  const next = () => {
    const t = (a ^ (a << 11)) >>> 0;
    a = b; b = c; c = d;
    d = (d ^ (d >>> 19) ^ t ^ (t >>> 8)) >>> 0;
    return d;
  };
  for (let i = 0; i < 16; i++) next();
  return {
    int: (n) => next() % n,
    pick(arr) { return arr[next() % arr.length]; },
  };
}

const range = (lo, hi) => ({ lo, hi });
// code point pools: scripts, marks, emoji, spaces, controls, odd ones
const POOLS = {
  ascii: [range(0x21, 0x7e)],
  // anything (assigned or not, new in Unicode 16 or not) but surrogates
  any: [range(0xa0, 0xd7ff), range(0xe000, 0x3ffff), range(0xe0000, 0xe01ef),
    range(0xf0000, 0x10ffff)],
  latin: [range(0xc0, 0x24f), range(0x1e00, 0x1eff)],
  marks: [range(0x300, 0x36f), range(0x483, 0x489), range(0x591, 0x5c7),
    range(0x610, 0x61a), range(0x64b, 0x65f), range(0x93c, 0x94d), range(0xe31, 0xe3a),
    range(0x1ab0, 0x1abe), range(0x20d0, 0x20f0), range(0xfe20, 0xfe2f)],
  scripts: [range(0x370, 0x3ff), range(0x400, 0x4ff), range(0x531, 0x58a),
    range(0x5d0, 0x5ea), range(0x620, 0x64a), range(0x900, 0x97f), range(0x980, 0x9ff),
    range(0xe01, 0xe5b), range(0x10a0, 0x10ff), range(0x1100, 0x11ff), range(0x3040, 0x30ff),
    range(0x4e00, 0x4fff), range(0xac00, 0xad00), range(0x0e80, 0x0edf), range(0x1780, 0x17ff)],
  compat: [range(0xfb00, 0xfb06), range(0x2460, 0x24ff), range(0x3300, 0x33ff),
    range(0xff01, 0xff5e), range(0xff61, 0xffdc), range(0x2070, 0x209c), range(0x2150, 0x218b),
    range(0x1d400, 0x1d4ff), range(0xa8, 0xbf), range(0x2100, 0x214f), range(0x3131, 0x318e),
    range(0xf900, 0xf9ff), range(0x2000, 0x206f)],
  emoji: [range(0x1f300, 0x1f5ff), range(0x1f600, 0x1f64f), range(0x1f680, 0x1f6ff),
    range(0x1f900, 0x1f9ff), range(0x2600, 0x27bf), range(0x1f1e6, 0x1f1ff),
    range(0x1f3fb, 0x1f3ff)],
  space: [range(0x20, 0x20), range(0x20, 0x20), range(0x09, 0x0d), range(0xa0, 0xa0),
    range(0x85, 0x85), range(0x1680, 0x1680), range(0x2000, 0x200a), range(0x2028, 0x2029),
    range(0x202f, 0x202f), range(0x205f, 0x205f), range(0x3000, 0x3000)],
  control: [range(0x01, 0x1f), range(0x7f, 0x9f), range(0x200b, 0x200f), range(0x202a, 0x202e),
    range(0x2060, 0x2064), range(0xfeff, 0xfeff), range(0xad, 0xad), range(0xfff9, 0xfffb)],
  odd: [range(0xfffd, 0xfffd), range(0xfdd0, 0xfdef), range(0xfffe, 0xffff),
    range(0xe000, 0xe0ff), range(0xd7f0, 0xd7ff), range(0x10fff0, 0x10ffff),
    range(0xe0020, 0xe007f), range(0xfe00, 0xfe0f), range(0x1f000, 0x1f0ff),
    range(0x10000, 0x100ff), range(0x20000, 0x200ff), range(0x2f800, 0x2f8ff)],
};
const WORDS = ['the', 'Hello', "don't", "it's", "we'll", "I'M", 'ﬁle', 'naïve', 'café',
  'Straße', 'İstanbul', 'ΑΘΗΝΑ', 'Москва', '東京', 'محمد', '12345', '3.14', '1,000',
  '``quoted\'\'', 'e\u0301', 'A\u030a', '\u1100\u1161\u11a8', '👨‍👩‍👧', '🏳️‍🌈', '👍🏽',
  'http://x.org/a?b=c', 'foo_bar', 'x'.repeat(120), 'ab'.repeat(40), '...', '!!!', '--'];

function cp(r, pool) {
  const g = r.pick(POOLS[pool]);
  return g.lo + r.int(g.hi - g.lo + 1);
}

function genText(r, specials) {
  const parts = [];
  const n = r.int(24);
  for (let i = 0; i < n; i++) {
    const k = r.int(100);
    if (k < 25) parts.push(r.pick(WORDS));
    else if (k < 30 && specials.length) parts.push(r.pick(specials));
    else if (k < 45) parts.push(' ');
    else {
      const pool = r.pick(['ascii', 'ascii', 'latin', 'marks', 'scripts', 'scripts',
        'compat', 'emoji', 'space', 'space', 'control', 'odd', 'any']);
      const len = 1 + r.int(6);
      let s = '';
      for (let j = 0; j < len; j++) s += String.fromCodePoint(cp(r, pool));
      parts.push(s);
    }
  }
  return parts.join(r.int(3) ? '' : ' ');
}

function embRun(model, texts) {
  const input = texts.map((t, i) => JSON.stringify(Array.isArray(t) ?
    { id: i, text: t[0], text_pair: t[1] } : { id: i, text: t })).join('\n') + '\n';
  const res = spawnSync(args.emb, ['-m', model, '--no-truncate', '--errors=emit'],
    { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  if (res.status !== 0 && res.status !== 1) {
    process.stderr.write('tokfuzz: emb-tokenize failed (status ' + res.status + '): ' +
      res.stderr + '\n');
    process.exit(2);
  }
  const out = res.stdout.split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
  if (out.length !== texts.length) {
    process.stderr.write('tokfuzz: emb-tokenize wrote ' + out.length + ' records for ' +
      texts.length + '\n' + res.stderr + '\n');
    process.exit(2);
  }
  return out.map((o) => (o.error ? { error: o.error } :
    { ids: o.input_ids, types: o.token_type_ids }));
}

// singles in one batch; pairs one by one (encodeBatch takes no pairs)
async function refRun(tok, texts) {
  const singles = texts.filter((t) => !Array.isArray(t));
  const encs = await tok.encodeBatch(singles);
  const res = [];
  let k = 0;
  for (const t of texts) {
    const e = Array.isArray(t) ? await tok.encode(t[0], t[1]) : encs[k++];
    res.push({ ids: Array.from(e.getIds()), types: Array.from(e.getTypeIds()) });
  }
  return res;
}

const same = (a, b) => !a.error && JSON.stringify(a.ids) === JSON.stringify(b.ids) &&
  JSON.stringify(a.types) === JSON.stringify(b.types);

// delta debugging on code points: drop chunks while a difference stays
async function shrink(model, tok, text) {
  if (Array.isArray(text)) {
    // shrink each side in turn, the other held fixed
    let [a, b] = text;
    a = await shrinkWith(model, tok, a, (x) => [x, b]);
    b = await shrinkWith(model, tok, b, (x) => [a, x]);
    return [a, b];
  }
  return shrinkWith(model, tok, text, (x) => x);
}

async function shrinkWith(model, tok, text, wrap) {
  let cur = Array.from(text);
  let chunk = Math.max(1, cur.length >> 1);
  while (chunk >= 1) {
    const cands = [];
    for (let i = 0; i < cur.length; i += chunk)
      cands.push(cur.slice(0, i).concat(cur.slice(i + chunk)));
    if (!cands.length) break;
    const strs = cands.map((c) => wrap(c.join('')));
    const mine = embRun(model, strs), ref = await refRun(tok, strs);
    const k = mine.findIndex((m, i) => !same(m, ref[i]));
    if (k >= 0) {
      cur = cands[k];
      chunk = Math.min(chunk, Math.max(1, cur.length >> 1));
    } else {
      chunk >>= 1;
    }
  }
  return cur.join('');
}

const hex = (s) => Array.isArray(s) ? hex(s[0]) + ' | ' + hex(s[1]) : Array.from(s).map((c) => 'U+' +
  c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')).join(' ');

(async () => {
  let failed = 0;
  for (const model of args.models) {
    const tjson = path.join(model, 'tokenizer.json');
    if (!fs.existsSync(tjson)) {
      console.log('tokfuzz: ' + model + ': no tokenizer.json, skipped');
      continue;
    }
    const tok = Tokenizer.fromFile(tjson);
    tok.disableTruncation();
    tok.disablePadding();
    const specials = (JSON.parse(fs.readFileSync(tjson, 'utf8')).added_tokens || [])
      .map((a) => a.content).slice(0, 50);
    const r = rng(args.seed);
    const texts = [];
    // one in eight is a (text, text_pair) pair
    for (let i = 0; i < args.n; i++)
      texts.push(i % 8 === 7 ? [genText(r, specials), genText(r, specials)] : genText(r, specials));
    const BATCH = 5000;
    let bad = -1, mine, ref;
    for (let s = 0; s < texts.length && bad < 0; s += BATCH) {
      const part = texts.slice(s, s + BATCH);
      mine = embRun(model, part);
      ref = await refRun(tok, part);
      const k = mine.findIndex((m, i) => !same(m, ref[i]));
      if (k >= 0) bad = s + k;
    }
    const name = path.basename(model);
    if (bad < 0) {
      console.log('tokfuzz: ' + name + ': ' + texts.length + ' strings, 0 mismatches');
      continue;
    }
    failed++;
    const min = await shrink(model, tok, texts[bad]);
    const m1 = embRun(model, [min])[0], r1 = (await refRun(tok, [min]))[0];
    console.log('tokfuzz: ' + name + ': MISMATCH on string ' + bad + ' of seed ' + args.seed);
    console.log('  minimal input: ' + JSON.stringify(min));
    console.log('  code points:   ' + hex(min));
    console.log('  tokenizers:    ' + JSON.stringify(r1.ids));
    console.log('  emb-tokenize:  ' + (m1.error ? 'error: ' + m1.error : JSON.stringify(m1.ids)));
  }
  process.exit(failed ? 1 : 0);
})().catch((e) => { process.stderr.write('tokfuzz: ' + e.stack + '\n'); process.exit(2); });
