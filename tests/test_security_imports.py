"""Reproductions 02, 03 and 08 of ../shared/repro/security, at the checker: an import
names a ShapeScript file inside the project (E0213 otherwise), and a refused import is
never read; the E0213 page's examples."""
from __future__ import annotations

import os
import re

import pytest

from shapescript_core.diagnostics import Severity
from shapescript_core.workspace import Workspace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _errors(path) -> list:
    ws = Workspace()
    return [(d.code, d.message) for d in ws.diagnostics(str(path)) if d.severity == Severity.ERROR], ws


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("target, why", [
    ("../outside/secret.txt", "imports name ShapeScript files"),
    ("../outside/lib.ss", "it leads out of the project"),
    ("/proc/self/environ", "imports are relative paths inside the project"),
    ("{tmp}/outside/lib.ss", "imports are relative paths inside the project"),
    ("modeling_llama.py", "imports name ShapeScript files"),
    ("link.ss", "a link there leads out of the project"),
    ("~/lib.ss", "imports are relative paths inside the project"),
])
def test_an_import_outside_the_project_is_e0213_and_not_read(tmp_path, target, why):
    _write(tmp_path / "outside" / "secret.txt", "dim SECRET = 1\n")
    _write(tmp_path / "outside" / "lib.ss", "dim SECRET = 1\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "link.ss").symlink_to(tmp_path / "outside" / "lib.ss")
    _write(tmp_path / "proj" / "modeling_llama.py", "dim SECRET = 1\n")
    target = target.format(tmp=tmp_path)
    main = _write(tmp_path / "proj" / "main.ss", f'import "{target}"\n\nfn f(x: [n D]) -> [n D]:\n    return x\n')
    got, ws = _errors(main)
    codes = [c for c, _ in got]
    assert codes[0] == "E0213" and "E0213" not in codes[1:], got
    assert got[0][1] == f"`{target}` is not a ShapeScript file inside the project"
    assert ws.import_closure(str(main)) == []  # never read, never exported
    assert "SECRET" not in ws.analyze(str(main)).env.dim_names()


def test_imports_inside_the_project_and_the_settings_root(tmp_path):
    _write(tmp_path / "app" / "sub" / "lib.ss", "dim D = 4\n")
    main = _write(tmp_path / "app" / "main.ss", 'import "sub/lib.ss"\n\nfn f(x: [n D]) -> [n D]:\n    return x\n')
    assert _errors(main)[0] == []
    # across folders: allowed once a shapescript.toml makes the folder above the project
    _write(tmp_path / "lib" / "layers.ss", "dim D = 4\n")
    other = _write(tmp_path / "app" / "other.ss", 'import "../lib/layers.ss"\n\nfn f(x: [n D]) -> [n D]:\n    return x\n')
    assert [c for c, _ in _errors(other)[0]][:1] == ["E0213"]
    (tmp_path / "shapescript.toml").write_text("")
    assert _errors(other)[0] == []
    # the editor's folder is a project too
    os.remove(tmp_path / "shapescript.toml")
    ws = Workspace()
    ws.set_roots([str(tmp_path)])
    assert [d.code for d in ws.diagnostics(str(other)) if d.severity == Severity.ERROR] == []


def test_the_e0213_page_examples(tmp_path):
    text = open(os.path.join(ROOT, "docs", "errors", "E0213.md"), encoding="utf-8").read()
    bad, good = re.findall(r"```shapescript\n(.*?)```", text, re.S)
    _write(tmp_path / "lib" / "layers.ss", "dim Z = 4\n")
    assert "E0213" in [c for c, _ in _errors(_write(tmp_path / "app" / "model.ss", bad))[0]]
    _write(tmp_path / "app" / "lib" / "layers.ss", "dim Z = 4\n")
    assert _errors(_write(tmp_path / "app" / "model.ss", good))[0] == []


def test_the_e0214_page_example_a_fifo_in_the_project(tmp_path):
    text = open(os.path.join(ROOT, "docs", "errors", "E0214.md"), encoding="utf-8").read()
    bad, good = re.findall(r"```shapescript\n(.*?)```", text, re.S)
    os.mkfifo(tmp_path / "pipe.ss")
    assert [c for c, _ in _errors(_write(tmp_path / "model.ss", bad))[0]] == ["E0214"]
    assert _errors(_write(tmp_path / "model.ss", good))[0] == []
