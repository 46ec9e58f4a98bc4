"""Weights round-trip through the real hf writer: export from random weights, export
again from the written directory (read back through its `shapescript-weights.json`
mapping): the same tensors, byte for byte."""
from __future__ import annotations

import os

import pytest

from shapescript_core.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA = ["--dim", "V=256", "--dim", "D=128", "--dim", "H=4", "--dim", "Hkv=2", "--dim", "F=256", "--dim", "L=2"]
GPT2 = ["--dim", "V=256", "--dim", "D=64", "--dim", "H=4", "--dim", "L=2", "--dim", "P=64"]


@pytest.mark.parametrize("name, dims", [("llama", LLAMA), ("gpt2", GPT2)])
def test_export_again_from_the_written_directory(name, dims, tmp_path, capsys):
    src = os.path.join(ROOT, "examples", f"{name}.ss")
    first, second = tmp_path / "first", tmp_path / "second"
    code = main(["export", src, "--hf", "--random-weights", "--seed", "7", "-o", str(first), *dims])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    code = main(["export", src, "--hf", "--weights", str(first), "-o", str(second), *dims])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning" not in err and "random" not in err
    assert (first / "model.safetensors").read_bytes() == (second / "model.safetensors").read_bytes()
    assert (first / "shapescript-weights.json").read_text() == (second / "shapescript-weights.json").read_text()
