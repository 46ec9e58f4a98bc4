// The extension's plain-Node modules (no `vscode` import), compiled from src/ by esbuild:
// where the server is looked for, and the export defaults read from shapescript.toml.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const esbuild = require('esbuild');
const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function load(name) {
  const out = esbuild.buildSync({
    entryPoints: [path.join(ext, 'src', `${name}.ts`)], bundle: true, platform: 'node', format: 'cjs',
    write: false, external: ['vscode'],
  });
  const m = { exports: {} };
  new Function('module', 'exports', 'require', out.outputFiles[0].text)(m, m.exports, require);
  return m.exports;
}

const { resolveServerCommand, resolveCli, searchedPlaces } = load('serverCommand');
const { readExportTable } = load('projectSettings');

const made = [];
test.after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function tmpdir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ss-vscode-'));
  made.push(dir);
  return dir;
}

function tree(files) {
  const dir = tmpdir();
  for (const [rel, mode] of Object.entries(files)) {
    const p = path.join(dir, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, '#!/bin/sh\n');
    fs.chmodSync(p, mode);
  }
  return dir;
}

test('the setting wins, with its arguments', () => {
  const ws = tree({ '.venv/bin/shapescript-lsp': 0o755 });
  assert.deepEqual(resolveServerCommand(['/opt/lsp', '--log-level', 'DEBUG'], [ws], ''),
    { command: '/opt/lsp', args: ['--log-level', 'DEBUG'], source: 'setting' });
});

test('an empty setting looks in the workspace .venv, then PATH', () => {
  const ws = tree({ '.venv/bin/shapescript-lsp': 0o755 });
  const bin = tree({ 'shapescript-lsp': 0o755 });
  assert.deepEqual(resolveServerCommand([], [ws], bin),
    { command: path.join(ws, '.venv', 'bin', 'shapescript-lsp'), args: [], source: 'workspace .venv' });
  const empty = tree({});
  assert.deepEqual(resolveServerCommand(undefined, [empty], `/nonexistent:${bin}`),
    { command: path.join(bin, 'shapescript-lsp'), args: [], source: 'PATH' });
});

test('a file that is not executable is not a server; none found is undefined', () => {
  const ws = tree({ '.venv/bin/shapescript-lsp': 0o644 });
  assert.equal(resolveServerCommand([], [ws], ''), undefined);
  assert.equal(resolveServerCommand([''], [ws], ''), undefined);
  assert.deepEqual(searchedPlaces([ws], 'linux'),
    ['the setting shapescript.server.command', path.join(ws, '.venv', 'bin'), 'PATH']);
});

test('the CLI is looked for next to the server first', () => {
  const bin = tree({ 'shapescript-lsp': 0o755, shapescript: 0o755 });
  const other = tree({ shapescript: 0o755 });
  const server = { command: path.join(bin, 'shapescript-lsp'), args: [], source: 'setting' };
  assert.equal(resolveCli(server, other), path.join(bin, 'shapescript'));
  assert.equal(resolveCli({ command: 'shapescript-lsp', args: [], source: 'setting' }, other), path.join(other, 'shapescript'));
  assert.equal(resolveCli(undefined, ''), undefined);
});

test("shapescript.toml's [export] table gives the dialog's defaults", () => {
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'shapescript.toml'), [
    'default_targets = ["hf"]',
    'output = "not this one"',
    '[dims]',
    'D = 64',
    '[export]',
    'output = "exported"   # a comment',
    "weights = 'w.safetensors'",
    'random_weights = true',
    'seed = 7',
    'dtype = "f16"',
    '[other]',
    'seed = 9',
  ].join('\n'));
  assert.deepEqual(readExportTable(dir),
    { output: 'exported', weights: 'w.safetensors', random_weights: true, seed: 7, dtype: 'f16' });
  assert.deepEqual(readExportTable(path.join(dir, 'missing')), {});
  assert.deepEqual(readExportTable(undefined), {});
});
