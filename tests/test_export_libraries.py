"""An environment with part of the exporter's libraries: `export` says, in its one line
and with exit status 2, every library of the `export` extra (and torch) that is missing,
never a traceback from deep in a writer. Nothing is uninstalled: the CLI runs in a
process where the libraries named are made unimportable (`sys.modules[name] = None`)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from types import SimpleNamespace

import pytest

from checkout import ROOT, cli_env, program
from shapescript_core.export import writers
from shapescript_core.export.run import run_export
from shapescript_core.export.writers import EXPORT_EXTRA, LIBRARIES

EXTRA = "pip install 'shapescript[export]'"


def _without(*modules: str) -> str:
    """A `python -c` program: the CLI with `modules` unimportable."""
    return (f"import sys; sys.modules.update(dict.fromkeys({list(modules)!r})); "
            "from shapescript_core.cli import main; sys.exit(main(sys.argv[1:]))")


def _export(tmp_path, target: str, *missing: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _without(*missing), "export", program("security_tiny.ss"),
                           f"--{target}", "--random-weights", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, env=cli_env(), timeout=120)


def test_the_table_is_the_export_extra_then_torch():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        extra = tomllib.load(fh)["project"]["optional-dependencies"]["export"]
    names = tuple(re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("-", "_") for r in extra)
    assert EXPORT_EXTRA == names
    assert LIBRARIES == EXPORT_EXTRA + ("torch",)


@pytest.mark.parametrize("target", ["hf", "gguf", "vllm"])
def test_a_partial_install_names_every_missing_library_in_one_line(tmp_path, target):
    pytest.importorskip("numpy")
    r = _export(tmp_path, target, "gguf", "rich")
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == (f"shapescript: the {target} export needs gguf and rich, which are not installed: "
                        f"{EXTRA}\n")
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_one_missing_library_and_torch(tmp_path):
    r = _export(tmp_path, "hf", "gguf")
    assert (r.returncode, r.stderr) == (2, f"shapescript: the hf export needs gguf, which is not installed: {EXTRA}\n")
    r = _export(tmp_path, "hf", "safetensors", "tokenizers", "torch")
    assert r.returncode == 2
    assert r.stderr == ("shapescript: the hf export needs safetensors, tokenizers and torch, which are not "
                        f"installed: install torch (the build you want), then {EXTRA}\n")
    assert not (tmp_path / "out").exists()


def test_the_server_s_export_gets_the_same_line(monkeypatch):
    """`run_export` (the editor's Export) asks the same check, before anything else."""
    monkeypatch.setattr(writers.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("accelerate", "transformers") else object())
    r = run_export(None, SimpleNamespace(target="litert"))
    assert (r.ok, r.status) == (False, 2)
    assert r.message == f"the litert export needs transformers and accelerate, which are not installed: {EXTRA}"
