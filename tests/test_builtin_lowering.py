"""Each builtin's lowering lives in its row of the builtin table, and codegen dispatches
through the row (check/builtin_lowering.py): no `b_<name>` method found by name."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from shapescript_core.check import builtin_lowering
from shapescript_core.check.builtins import BUILTINS
from shapescript_core.compile import codegen
from shapescript_core.compile.codegen import MethodGen
from shapescript_core.export.hf.build import build
from shapescript_core.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent

SRC = """
dim D = 4

model M:
    w: [D D]

@export
fn forward(m: M, x: [b n D]) -> [b n D]:
    return exp(linear(x, m.w))
"""


def test_every_builtin_row_has_a_lowering():
    missing = [name for name, b in BUILTINS.items() if not callable(b.lower)]
    assert missing == []
    # each lowering is a function of builtin_lowering.py (or made by one of its factories)
    assert {b.lower.__module__ for b in BUILTINS.values()} == {builtin_lowering.__name__}


def test_codegen_has_no_builtin_methods_found_by_name():
    assert [m for m in dir(MethodGen) if m.startswith("b_")] == []
    tree = ast.parse(Path(inspect.getsourcefile(codegen)).read_text())
    lookups = [node.lineno for node in ast.walk(tree)
               if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr"]
    assert lookups == []


def test_lowering_imports_nothing_above_check():
    tree = ast.parse((ROOT / "shapescript_core/check/builtin_lowering.py").read_text())
    froms = [(n.level, n.module) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    # only the standard library and check/ itself (`from .types import …`)
    assert [(level, module) for level, module in froms
            if level > 1 or (level == 0 and module.startswith("shapescript"))] == []
    assert (1, "types") in froms


def _modeling(path) -> str:
    ws = Workspace()
    ws.set_text(path, SRC)
    return build(ws, path, "forward").modeling


def test_codegen_dispatches_through_the_row(monkeypatch, tmp_path):
    path = str(tmp_path / "m.ss")
    assert "torch.exp(self.w(x))" in _modeling(path)
    monkeypatch.setattr(BUILTINS["exp"], "lower", lambda e, n: f"torch.special.expm1({e.ex(e.arg(n, 'x'))})")
    code = _modeling(path)
    assert "torch.special.expm1(self.w(x))" in code and "torch.exp(" not in code
