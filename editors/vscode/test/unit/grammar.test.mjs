// The TextMate grammar, tokenized by vscode-textmate with Oniguruma (what VS Code runs):
// each kind of token gets its scope, and every example file tokenizes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, '..', '..');
const root = path.resolve(ext, '..', '..');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (s) => new oniguruma.OnigScanner(s),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) => {
      if (scope !== 'source.shapescript') {
        return null;
      }
      const file = path.join(ext, 'syntaxes', 'shapescript.tmLanguage.json');
      return vsctm.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  return registry.loadGrammar('source.shapescript');
}

/** [[text, innermost scope], …] for each line of `source`. */
function tokenize(grammar, source) {
  let state = vsctm.INITIAL;
  const out = [];
  for (const line of source.split('\n')) {
    const r = grammar.tokenizeLine(line, state);
    state = r.ruleStack;
    out.push(r.tokens.map((t) => [line.slice(t.startIndex, t.endIndex), t.scopes]));
  }
  return out;
}

/** The innermost scope of the first token `text` on line `n` (0-based), after `after`. */
function scopeOf(lines, n, text, nth = 0) {
  const hits = lines[n].filter(([t]) => t.trim() === text);
  assert.ok(hits.length > nth, `no token ${JSON.stringify(text)} on line ${n}: ${JSON.stringify(lines[n].map(([t]) => t))}`);
  const scopes = hits[nth][1];
  return scopes[scopes.length - 1];
}

const SOURCE = `import "layers.ss"
dim D = 64  # width
dim Dh = D / H
model Block:
    norm: [D] = ones
    w: [3*D D] bf16

@export(hf, vllm)
fn forward(m: Block, ids: [b n] Index[V], x: [b n D]) -> [b n D]:
    q, k, v = x @ m.w
        |> split(b n (3 H Dh) -> b H n Dh)
    att = einsum(q, k: b H n Dh, b H m Dh -> b H n m)
        |> masked_fill(!causal[n m], -inf)
        |> softmax(over=m)
    y = rearrange(x, b n D -> n b D)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> gelu
    for i, layer in m.layers:
        theta = 1e4 if i % 6 != 5 else 1e6
`;

test('each kind of token has its scope', async () => {
  const g = await loadGrammar();
  const L = tokenize(g, SOURCE);
  assert.equal(scopeOf(L, 0, 'import'), 'keyword.control.import.shapescript');
  assert.equal(scopeOf(L, 0, '"'), 'punctuation.definition.string.begin.shapescript');
  assert.equal(scopeOf(L, 1, 'dim'), 'storage.type.dim.shapescript');
  assert.equal(scopeOf(L, 1, 'D'), 'variable.other.constant.dim.shapescript');
  assert.equal(scopeOf(L, 1, '64'), 'constant.numeric.shapescript');
  assert.equal(scopeOf(L, 1, 'width'), 'comment.line.number-sign.shapescript');
  assert.equal(scopeOf(L, 3, 'model'), 'storage.type.model.shapescript');
  assert.equal(scopeOf(L, 3, 'Block'), 'entity.name.type.model.shapescript');
  // axis names inside [...], with sizes and dtypes
  assert.equal(scopeOf(L, 4, 'D'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 4, 'ones'), 'support.function.initializer.shapescript');
  assert.equal(scopeOf(L, 5, '3'), 'constant.numeric.shapescript');
  assert.equal(scopeOf(L, 5, '*'), 'keyword.operator.arithmetic.shapescript');
  assert.equal(scopeOf(L, 5, 'bf16'), 'support.type.dtype.shapescript');
  // decorator and targets
  assert.equal(scopeOf(L, 7, 'export'), 'entity.name.function.decorator.shapescript');
  assert.equal(scopeOf(L, 7, 'vllm'), 'support.constant.target.shapescript');
  // fn signature: name, parameter types, the return arrow
  assert.equal(scopeOf(L, 8, 'fn'), 'storage.type.function.shapescript');
  assert.equal(scopeOf(L, 8, 'forward'), 'entity.name.function.shapescript');
  assert.equal(scopeOf(L, 8, 'b'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 8, 'Index'), 'support.type.index.shapescript');
  assert.equal(scopeOf(L, 8, '->'), 'keyword.operator.arrow.shapescript');
  assert.equal(scopeOf(L, 8, 'Block'), 'entity.name.type.model.shapescript');
  assert.equal(scopeOf(L, 8, 'n'), 'entity.name.type.axis.shapescript');
  // pipes and patterns
  assert.equal(scopeOf(L, 10, '|>'), 'keyword.operator.pipe.shapescript');
  assert.equal(scopeOf(L, 10, 'split'), 'support.function.builtin.shapescript');
  assert.equal(scopeOf(L, 10, 'Dh'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 10, '3'), 'constant.numeric.shapescript');
  assert.equal(scopeOf(L, 10, '->'), 'keyword.operator.arrow.shapescript');
  assert.equal(scopeOf(L, 11, 'einsum'), 'support.function.builtin.shapescript');
  assert.notEqual(scopeOf(L, 11, 'q'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 11, 'm'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 12, 'causal'), 'support.constant.mask.shapescript');
  assert.equal(scopeOf(L, 12, 'n'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 12, 'inf'), 'constant.language.infinity.shapescript');
  assert.equal(scopeOf(L, 13, 'softmax'), 'support.function.builtin.shapescript');
  assert.equal(scopeOf(L, 13, 'm'), 'entity.name.type.axis.shapescript');
  // rearrange(x, pattern): x is a value, the pattern's names are axes
  assert.notEqual(scopeOf(L, 14, 'x'), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 14, 'n', 0), 'entity.name.type.axis.shapescript');
  assert.equal(scopeOf(L, 15, 'return'), 'keyword.control.flow.shapescript');
  assert.equal(scopeOf(L, 15, 'eps'), 'variable.parameter.keyword.shapescript');
  assert.equal(scopeOf(L, 15, '1e-5'), 'constant.numeric.shapescript');
  assert.equal(scopeOf(L, 15, 'D'), 'entity.name.type.axis.shapescript');
  // v0.2: a loop with an index, and a conditional chosen at compile time
  assert.equal(scopeOf(L, 16, 'for'), 'keyword.control.flow.shapescript');
  assert.equal(scopeOf(L, 16, 'in'), 'keyword.control.flow.shapescript');
  assert.equal(scopeOf(L, 17, 'if'), 'keyword.control.flow.shapescript');
  assert.equal(scopeOf(L, 17, 'else'), 'keyword.control.flow.shapescript');
  assert.equal(scopeOf(L, 17, '%'), 'keyword.operator.arithmetic.shapescript');
  assert.equal(scopeOf(L, 17, '1e6'), 'constant.numeric.shapescript');
  // a local assigned is not a keyword argument
  assert.notEqual(scopeOf(L, 14, 'y'), 'variable.parameter.keyword.shapescript');
});

test('the examples tokenize, every line, with no stray state', async () => {
  const g = await loadGrammar();
  const dir = path.join(root, 'examples');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.ss'));
  assert.ok(files.length > 0);
  for (const f of files) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    const L = tokenize(g, text);
    // every `fn NAME` is a function name, every `dim NAME` a dim: the lines after a
    // pattern or a string are not swallowed by it
    text.split('\n').forEach((line, n) => {
      const m = /^\s*(fn|dim|model)\s+(\w+)/.exec(line);
      if (m) {
        const want = { fn: 'entity.name.function.shapescript', dim: 'variable.other.constant.dim.shapescript',
          model: 'entity.name.type.model.shapescript' }[m[1]];
        assert.equal(scopeOf(L, n, m[2]), want, `${f}:${n + 1}`);
      }
    });
  }
});
