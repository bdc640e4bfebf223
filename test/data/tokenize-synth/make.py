#!/usr/bin/env python3
# make.py - writes the small synthetic tokenizer.json files of this folder
# from the real ones in ../models (cut-down vocabularies, other pipeline
# components), so that every supported component is exercised.  Their
# goldens (golden.jsonl) come from Hugging Face tokenizers 0.23.2 via
# test/tokgold.py.  Rerun: python3 make.py && build/refs/bin/python ../../tokgold.py ...
import json, os
M = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'models')

def load(name):
    return json.load(open(os.path.join(M, name, 'tokenizer.json')))

def save(name, j):
    os.makedirs(name, exist_ok=True)
    json.dump(j, open(os.path.join(name, 'tokenizer.json'), 'w'), ensure_ascii=False, indent=1)

# byte-level BPE cut to the first 3000 merges: Qwen-style Split regex,
# ByteLevel without regex, NFKC + Strip + Replace(regex) + Prepend,
# post-processor Sequence [ByteLevel, TemplateProcessing]
r = load('sentence-transformers--all-distilroberta-v1')
merges = r['model']['merges'][:3000]
keep = set()
bc = []
for b in range(256):
    if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255:
        bc.append(chr(b))
n = 0
for b in range(256):
    if not (33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255):
        bc.append(chr(256 + n)); n += 1
keep.update(bc)
for m in merges:
    a, b = m.split(' ')
    keep.update([a, b, a + b])
vocab = {}
for t in ['<s>', '<pad>', '</s>', '<unk>'] + sorted(keep):
    vocab.setdefault(t, len(vocab))
for a, b in [(x.split(' ')[0], x.split(' ')[1]) for x in merges]:
    assert a in vocab and b in vocab and a + b in vocab
qwen = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
j = {
 'version': '1.0', 'truncation': None, 'padding': None,
 'added_tokens': [
  {'id': vocab['<s>'], 'content': '<s>', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True},
  {'id': vocab['</s>'], 'content': '</s>', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True},
  {'id': len(vocab), 'content': '<mask>', 'single_word': False, 'lstrip': True, 'rstrip': False, 'normalized': False, 'special': True},
  {'id': len(vocab) + 1, 'content': 'hello world', 'single_word': True, 'lstrip': False, 'rstrip': True, 'normalized': True, 'special': False}],
 'normalizer': {'type': 'Sequence', 'normalizers': [
  {'type': 'NFKC'}, {'type': 'Strip', 'strip_left': True, 'strip_right': True},
  {'type': 'Replace', 'pattern': {'Regex': r' {2,}'}, 'content': ' '},
  {'type': 'Prepend', 'prepend': '>'}]},
 'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [
  {'type': 'Split', 'pattern': {'Regex': qwen}, 'behavior': 'Isolated', 'invert': False},
  {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False}]},
 'post_processor': {'type': 'Sequence', 'processors': [
  {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': False, 'use_regex': True},
  {'type': 'TemplateProcessing',
   'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}}, {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
   'pair': [{'Sequence': {'id': 'A', 'type_id': 0}}, {'SpecialToken': {'id': '</s>', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}}, {'SpecialToken': {'id': '</s>', 'type_id': 1}}],
   'special_tokens': {'<s>': {'id': '<s>', 'ids': [vocab['<s>']], 'tokens': ['<s>']}, '</s>': {'id': '</s>', 'ids': [vocab['</s>']], 'tokens': ['</s>']}}}]},
 'decoder': None,
 'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
  'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': True,
  'vocab': vocab, 'merges': [m.split(' ') for m in merges]}}
save('bpe-qwen-split', j)

# char-level BPE (no byte level): byte_fallback with <0xXX> tokens
# (Llama-style: no subword prefix or suffix; with them HF's offsets of
# byte tokens run past the word, a quirk we do not copy), unk fused;
# Whitespace, Digits (individual), Punctuation (contiguous)
# pre-tokenizers; NFD + StripAccents + Lowercase.  bpe-splits: the same
# vocabulary with continuing_subword_prefix and end_of_word_suffix.
letters = 'abcdefghijklmnopqrstuvwxyz'
v = {'<unk>': 0, '[CLS]': 1, '[SEP]': 2}
for k in range(256):
    v['<0x%02X>' % k] = len(v)
toks = []
for c in letters + '0123456789.,!?-\'':
    toks += [c, '##' + c, c + '</w>', '##' + c + '</w>']
for t in toks:
    v.setdefault(t, len(v))
mg = []
def add(a, b):
    m = a + (b[2:] if b.startswith('##') else b)
    v.setdefault(m, len(v)); mg.append([a, b])
for w in ['th', 'he', 'in', 'er', 'an', 're', 'on', 'at', 'en', 'nd']:
    add(w[0], '##' + w[1]); add(w[0], '##' + w[1] + '</w>')
add('th', '##e</w>'); add('th', '##e'); add('an', '##d</w>'); add('in', '##g</w>')
j2 = {
 'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': [
  {'id': 1, 'content': '[CLS]', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True},
  {'id': 2, 'content': '[SEP]', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True}],
 'normalizer': {'type': 'Sequence', 'normalizers': [{'type': 'NFD'}, {'type': 'StripAccents'}, {'type': 'Lowercase'}]},
 'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [
  {'type': 'Whitespace'}, {'type': 'Digits', 'individual_digits': True},
  {'type': 'Punctuation', 'behavior': 'Contiguous'}]},
 'post_processor': {'type': 'BertProcessing', 'sep': ['[SEP]', 2], 'cls': ['[CLS]', 1]},
 'decoder': None,
 'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': '##',
  'end_of_word_suffix': '</w>', 'fuse_unk': True, 'byte_fallback': True, 'ignore_merges': False,
  'vocab': v, 'merges': [' '.join(m) for m in mg]}}
j2b = json.loads(json.dumps(j2))
j2b['model']['byte_fallback'] = False
mg2 = []
for w in ['th', 'he', 'in', 'er', 'an', 're', 'on', 'at', 'en', 'nd']:
    v.setdefault(w, len(v)); mg2.append(w[0] + ' ' + w[1])
for a_, b_ in [('th', 'e'), ('an', 'd'), ('in', 'g'), ('e', 'r')]:
    v.setdefault(a_ + b_, len(v)); mg2.append(a_ + ' ' + b_)
j2['model']['vocab'] = v
j2['model']['merges'] = mg2
j2['model']['continuing_subword_prefix'] = None
j2['model']['end_of_word_suffix'] = None
save('bpe-chars-fallback', j2)
j2b['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [
  {'type': 'WhitespaceSplit'}, {'type': 'Digits', 'individual_digits': False},
  {'type': 'Split', 'pattern': {'String': 'in'}, 'behavior': 'MergedWithPrevious', 'invert': False},
  {'type': 'Split', 'pattern': {'String': 'e'}, 'behavior': 'MergedWithNext', 'invert': False},
  {'type': 'Split', 'pattern': {'Regex': '[aeiou]+'}, 'behavior': 'Contiguous', 'invert': True},
  {'type': 'Punctuation', 'behavior': 'Removed'}]}
j2b['normalizer'] = {'type': 'Sequence', 'normalizers': [{'type': 'NFKD'}, {'type': 'Lowercase'},
  {'type': 'Replace', 'pattern': {'String': 'ß'}, 'content': 'ss'}]}
save('bpe-splits', j2b)

# Unigram with byte_fallback, Metaspace prepend_scheme first without
# split, NFC; Strip right only
a = load('sentence-transformers--paraphrase-albert-small-v2')
uv = a['model']['vocab'][:6000]
low = min(s for _, s in uv) - 1
for k in range(256):
    uv.append(['<0x%02X>' % k, low])
j3 = {
 'version': '1.0', 'truncation': None, 'padding': None,
 'added_tokens': a['added_tokens'],
 'normalizer': {'type': 'Sequence', 'normalizers': [{'type': 'NFC'}, {'type': 'Strip', 'strip_left': False, 'strip_right': True}]},
 'pre_tokenizer': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': False},
 'post_processor': a['post_processor'], 'decoder': None,
 'model': {'type': 'Unigram', 'unk_id': 1, 'vocab': uv, 'byte_fallback': True}}
save('unigram-fallback', j3)

# variants of the above (their vocabularies re-used)
r = json.load(open('bpe-qwen-split/tokenizer.json'))
r['normalizer'] = None
r['pre_tokenizer'] = {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True}
r['post_processor'] = {'type': 'RobertaProcessing', 'sep': ['</s>', r['model']['vocab']['</s>']],
  'cls': ['<s>', r['model']['vocab']['<s>']], 'trim_offsets': True, 'add_prefix_space': True}
save('bl-prefix', r)
u = json.load(open('unigram-fallback/tokenizer.json'))
u['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [
  {'type': 'Punctuation', 'behavior': 'MergedWithNext'}, {'type': 'Digits', 'individual_digits': False},
  {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'never', 'split': True}]}
u['normalizer'] = {'type': 'Sequence', 'normalizers': [{'type': 'NFKC'}, {'type': 'Lowercase'},
  {'type': 'Prepend', 'prepend': '\u2581'}]}
save('uni-punct', u)
# regexes with empty matches, a look-ahead, \w \s \S \W (Oniguruma meaning)
b = json.load(open('bpe-splits/tokenizer.json'))
b['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [
  {'type': 'Split', 'pattern': {'Regex': 'x*'}, 'behavior': 'Isolated', 'invert': False},
  {'type': 'Split', 'pattern': {'Regex': '\\s*'}, 'behavior': 'MergedWithNext', 'invert': False},
  {'type': 'Split', 'pattern': {'Regex': '(?=e)'}, 'behavior': 'Removed', 'invert': False}]}
b['normalizer'] = {'type': 'Sequence', 'normalizers': [{'type': 'Lowercase'},
  {'type': 'Replace', 'pattern': {'Regex': 'a*'}, 'content': '-'},
  {'type': 'Replace', 'pattern': {'Regex': '\\w\\s\\S\\W'}, 'content': 'Z'}]}
save('empty-matches', b)
