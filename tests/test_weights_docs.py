"""The E3310-E3312 pages stay true: each erroneous example, exported as the page says,
raises its code at the line the page marks, with the page's wording."""
from __future__ import annotations

import os
import re

import pytest

np = pytest.importorskip("numpy")
save_file = pytest.importorskip("safetensors.numpy").save_file


from shapescript_core.export.request import make_request
from shapescript_core.export.run import run_export
from shapescript_core.weights.specs import find_function, resolve
from shapescript_core.workspace import Workspace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"```shapescript\n(.*?)```", re.S)


def _page(code):
    text = open(os.path.join(ROOT, "docs", "errors", f"{code}.md"), encoding="utf-8").read()
    example = FENCE.findall(text)[0]
    marked = [i for i, line in enumerate(example.splitlines()) if f"# error: {code}" in line]
    return text, example, marked


def _export(tmp_path, example, weights=None):
    src = tmp_path / "lm.ss"
    src.write_text(example)
    ws = Workspace()
    ws.set_text(str(src), example)
    req = make_request(str(src), "hf", output=str(tmp_path / "out"), weights=weights,
                       random_weights=weights is None)
    result = run_export(ws, req)
    assert not result.ok and result.status == 1 and not (tmp_path / "out").exists()
    lines = ws.file(str(src)).lines
    return result, [(d.code, lines.line_of(d.span.abs_start), d.message) for d in result.diagnostics]


def _weights(tmp_path, example, drop=(), change=None):
    ws = Workspace()
    ws.set_text(str(tmp_path / "spec.ss"), example)
    specs = resolve(ws.program, str(tmp_path / "spec.ss"), find_function(ws.program, str(tmp_path / "spec.ss"), None, "hf")).specs
    t = {s.path: np.zeros(s.shape, np.float32) for s in specs if not any(s.path.endswith(d) for d in drop)}
    t.update(change or {})
    p = str(tmp_path / "lm.safetensors")
    save_file(t, p)
    return p


def test_e3310_page(tmp_path):
    text, example, marked = _page("E3310")
    _, got = _export(tmp_path, example, _weights(tmp_path, example, drop=("attn.wq",)))
    assert [(c, line) for c, line, _ in got] == [("E3310", marked[0])] * 4
    assert [m for _, _, m in got] == [f"the weights have no `layers.{i}.attn.wq`" for i in range(4)]


def test_e3311_page(tmp_path):
    text, example, marked = _page("E3311")
    w = _weights(tmp_path, example, change={"emb": np.zeros((1000, 64), np.float32)})
    _, got = _export(tmp_path, example, w)
    assert got == [("E3311", marked[0], "`emb` is [1000 64] in the weights, but the model says [V D] = [1024 64]")]
    assert '"`emb` is [1000 64] in the weights, but the model says [V D] =\n[1024 64]"' in text


def test_e3312_page(tmp_path):
    text, example, marked = _page("E3312")
    _, got = _export(tmp_path, example)
    assert got == [("E3312", marked[0], "`V` has no value")]
