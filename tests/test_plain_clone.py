"""A plain clone passes its tests: the shared contract beside the checkout (`../shared`)
is reached only through `checkout.SHARED`, which is None without it (the tests of the
contract itself carry `@requires_shared` and skip, saying why). A program a test needs is
copied into tests/programs/ and read from there (`checkout.read_program`)."""
from __future__ import annotations

import ast
import glob
import os

import pytest

from checkout import ROOT

TESTS = os.path.join(ROOT, "tests")


def _docstrings(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _names_shared(text: str) -> bool:
    parts = text.replace("\\", "/").split("/")
    return text == "shared" or "shared" in parts[:-1] or (len(parts) > 1 and parts[-1] == "shared")


def shared_paths(path: str) -> list:
    """(line, text) of each string in a test module's code (not its docstrings) that names
    the shared folder by itself."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    docs = _docstrings(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
            and _names_shared(n.value)]


# checkout.py finds the shared folder; this module names it in its own test of the search
MODULES = sorted(p for p in glob.glob(os.path.join(TESTS, "*.py"))
                 if os.path.basename(p) not in ("checkout.py", os.path.basename(__file__)))


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_no_test_reads_the_shared_folder_but_through_checkout(path):
    assert shared_paths(path) == [], (
        f"{os.path.basename(path)} names ../shared itself: copy the program into tests/programs/ "
        "(checkout.read_program), or use checkout.SHARED under @requires_shared")


def test_the_search_finds_a_path_to_the_shared_folder(tmp_path):
    f = tmp_path / "t.py"
    f.write_text('"""Reads ../shared/repro."""\nimport os\n'
                 'a = os.path.join(HERE, "..", "..", "shared", "repro", "x.ss")\n'
                 'b = open("../shared/repro/x.ss")\nc = "a shared table"\n', encoding="utf-8")
    assert shared_paths(str(f)) == [(3, "shared"), (4, "../shared/repro/x.ss")]
