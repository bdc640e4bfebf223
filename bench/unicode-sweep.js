// unicode-sweep.js - measures the Unicode tables of Hugging Face tokenizers
// (npm): for every code point U+00A0..U+3FFFF, whether Digits, the
// ByteLevel regex (\p{L}, \p{N}) and Whitespace (\w) treat it as numeric,
// letter, number, word, and its NFD, NFKD, NFC, NFKC.  bench/unicode-cmp.c
// compares that with ours and lists the differences, from which the
// hf_extra_* tables (lib/tok/pretok.c) and hf_nfkd_keep / hf_comp_excl
// (lib/tok/normalizer.c) were written.
// usage: node bench/unicode-sweep.js TOKENIZERS_DIR OUT.txt
const tk = require(require('path').resolve(process.argv[2], 'node_modules', 'tokenizers'));
const dig = tk.digitsPreTokenizer(true), bl = tk.byteLevelPreTokenizer(false, true), ws = tk.whitespacePreTokenizer();
const nf = { d: tk.nfdNormalizer(), kd: tk.nfkdNormalizer(), c: tk.nfcNormalizer(), kc: tk.nfkcNormalizer() };
const out = [];
const hex = (s) => Array.from(s).map((c) => c.codePointAt(0).toString(16)).join('.');
for (let cp = 0xa0; cp <= 0x3ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  const num = dig.preTokenizeString('a' + c + 'a').length === 3 ? 1 : 0;
  const L = bl.preTokenizeString('x' + c).length === 1 ? 1 : 0;
  const N = bl.preTokenizeString('1' + c).length === 1 ? 1 : 0;
  const W = ws.preTokenizeString('x' + c).length === 1 && ws.preTokenizeString('x' + c)[0][0].length > 1 ? 1 : 0;
  out.push([cp.toString(16), num, L, N, W, hex(nf.d.normalizeString(c)), hex(nf.kd.normalizeString(c)), hex(nf.c.normalizeString(c)), hex(nf.kc.normalizeString(c))].join(' '));
}
require('fs').writeFileSync(process.argv[3], out.join('\n') + '\n');
