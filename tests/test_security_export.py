"""Reproductions 01, 02, 04–08 of ../shared/repro/security as tests: names, file names,
comments and numbers from a source reach the generated files as data; an export holds
the program's ShapeScript sources only, under their relative paths, never over a
generated file. Every export here is loaded by transformers with trust_remote_code=True
(one child process for all), and none may run code from the source."""
from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from security_support import TINY, cli, load_all, max_diff  # noqa: E402
from shapescript_core.cli import main  # noqa: E402

INJECT = 'x""";open(__import__("os").environ["SSR_MARK"],"w");"""y.ss'
KEYWORD_NAMES = ["class", "self", "kwargs", "super", "__dict__", "__name__", "ShapeScriptLlamaConfig",
                 "_MASK_PARAMETERS", "use_return_dict", "training", "config", "sum"]
LOOP_FLAT = TINY.replace("    for layer in m.layers:\n", "    for layer in (m\n).layers:\n")
NESTED = TINY.replace("    layers: [L] Block\n", "    layers: [L] Block\n    else: [L] Block\n")
LOOP_NESTED_ONE_LINE = NESTED.replace(
    "        x = block(layer, x, pos)\n",
    "        x = block(layer, x, pos)\n    for inner in (m.else):\n        x = block(inner, x, pos)\n")
LOOP_NESTED_LINES = LOOP_NESTED_ONE_LINE.replace("for inner in (m.else):", "for inner in (m.\n    else):")


def _rename_dim(src: str, name: str) -> str:
    return re.sub(r"\bF\b", name, src)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Every case exported (--hf, random weights seed 0), then all loaded at once."""
    tmp = tmp_path_factory.mktemp("security")
    cases = {"tiny": ("tiny.ss", TINY), "inject": (INJECT, TINY), "backslash": ("x\\N.ss", TINY),
             "loop_flat": ("flat.ss", LOOP_FLAT), "nested_one_line": ("nested1.ss", LOOP_NESTED_ONE_LINE),
             "nested_lines": ("nested2.ss", LOOP_NESTED_LINES)}
    for i, n in enumerate(KEYWORD_NAMES):
        cases[f"dim_{n}"] = (f"dim{i}.ss", _rename_dim(TINY, n))
    results = {}
    for case, (name, text) in cases.items():
        folder = tmp / case
        folder.mkdir()
        (folder / name).write_text(text, encoding="utf-8")
        code = main(["export", str(folder / name), "--hf", "--random-weights", "-o", str(tmp / f"out_{case}")])
        assert code == 0, case
        results[case] = tmp / f"out_{case}"
    marker = tmp / "marker"
    loaded = load_all(list(results.values()), env={"SSR_MARK": str(marker)})
    assert not marker.exists(), "loading an export ran code from its source"
    return {case: loaded[out] for case, out in results.items()}, results


def test_the_file_name_is_data_in_the_generated_files(exports):
    loaded, outs = exports
    for case in ("inject", "backslash"):
        assert loaded[case]["ok"], loaded[case]
        assert max_diff(loaded[case]["logits"], loaded["tiny"]["logits"]) == 0.0
    modeling = (outs["inject"] / "modeling_llama.py").read_text(encoding="utf-8")
    tree = ast.parse(modeling)
    assert INJECT in ast.get_docstring(tree)  # the name, shown as it is, inside the docstring
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "open"]
    assert calls == []
    assert (outs["inject"] / INJECT).read_text(encoding="utf-8") == TINY  # the source, under its name


def test_a_loop_header_across_lines_is_one_comment_and_the_checked_program(exports):
    loaded, outs = exports
    assert loaded["loop_flat"]["ok"] and max_diff(loaded["loop_flat"]["logits"], loaded["tiny"]["logits"]) == 0.0
    assert loaded["nested_lines"]["ok"] and loaded["nested_one_line"]["ok"]
    assert max_diff(loaded["nested_lines"]["logits"], loaded["nested_one_line"]["logits"]) == 0.0
    modeling = (outs["nested_lines"] / "modeling_llama.py").read_text(encoding="utf-8")
    line = LOOP_NESTED_LINES.split("\n").index("    for inner in (m.") + 1
    assert f"# line {line}: for inner in (m. else" in modeling  # one comment line, the break a space
    assert not any(isinstance(n, (ast.For,)) and n.orelse for n in ast.walk(ast.parse(modeling)))


@pytest.mark.parametrize("name", KEYWORD_NAMES)
def test_a_dim_named_like_python_or_transformers_exports_the_same_model(exports, name):
    loaded, outs = exports
    got = loaded[f"dim_{name}"]
    assert got["ok"], got
    assert max_diff(got["logits"], loaded["tiny"]["logits"]) == 0.0
    cfg = json.loads((outs[f"dim_{name}"] / "config.json").read_text())
    assert cfg["shapescript"]["dims"][name] == 64  # the user's own name, in config.json


def test_a_dim_named_num_labels_is_not_a_label_count(tmp_path):
    (tmp_path / "nl.ss").write_text(TINY + "dim num_labels = 20000000\n")
    p = cli("export", tmp_path / "nl.ss", "--hf", "--random-weights", "-o", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    cfg = json.loads((tmp_path / "out" / "config.json").read_text())
    assert cfg["dim_num_labels"] == 20000000 and "num_labels" not in cfg
    assert cfg["shapescript"]["dims"]["num_labels"] == 20000000
    code = ("import sys, transformers; c = transformers.AutoConfig.from_pretrained(sys.argv[1], "
            "trust_remote_code=True); print(c.num_labels, c.dim_num_labels)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0 and r.stdout.split() == ["2", "20000000"], r.stderr[-2000:]


@pytest.mark.parametrize("change", [("eps=1e-5)", "eps=1e999)"), ("theta=500000.0", "theta=1e999"),
                                    ("attn_mask=causal[n n])", "attn_mask=causal[n n], scale=1e999)"),
                                    ("    attn_norm: [D] = ones", "    attn_norm: [D] = normal(1e999)")],
                         ids=["eps", "theta", "scale", "init"])
def test_a_number_that_overflows_is_refused_before_writing(tmp_path, change):
    (tmp_path / "m.ss").write_text(TINY.replace(*change, 1))
    p = cli("export", tmp_path / "m.ss", "--hf", "--random-weights", "-o", tmp_path / "out")
    assert p.returncode == 1 and "finite" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) <= 3
    assert not (tmp_path / "out").exists() and os.listdir(tmp_path) == ["m.ss"]


def test_an_import_of_a_python_file_is_e0213_and_never_exported(tmp_path):
    (tmp_path / "modeling_llama.py").write_text('open("marker", "w")\n')
    (tmp_path / "main.ss").write_text('import "modeling_llama.py"\n' + TINY)
    p = cli("check", "--format", "json", tmp_path / "main.ss")
    diags = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert [(d["code"], d["range"]["start"]["line"]) for d in diags if d["severity"] == "error"] == [("E0213", 1)]
    p = cli("export", tmp_path / "main.ss", "--hf", "--random-weights", "-o", tmp_path / "out")
    assert p.returncode == 1 and "not exported: 1 error" in p.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["modeling_llama.py", "config.json", "configuration_llama.py",
                                  ".shapescript-export.json"])
def test_a_source_named_like_a_generated_file_is_refused(tmp_path, name):
    (tmp_path / name).write_text(TINY)
    p = cli("export", tmp_path / name, "--hf", "--random-weights", "-o", tmp_path / "out")
    assert p.returncode == 1, p.stderr
    assert f"two files of the export are named `{name}`" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists() and sorted(os.listdir(tmp_path)) == [name]


def test_sources_are_exported_under_their_relative_paths(tmp_path):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "lib.ss").write_text('import "deeper/more.ss"\ndim Z = 4\n')
    (tmp_path / "sub" / "deeper" / "more.ss").write_text("dim Y = 3\n")
    (tmp_path / "main.ss").write_text('import "sub/lib.ss"\n' + TINY)
    p = cli("export", tmp_path / "main.ss", "--hf", "--random-weights", "-o", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    assert (out / "sub" / "lib.ss").read_text() == 'import "deeper/more.ss"\ndim Z = 4\n'
    assert (out / "sub" / "deeper" / "more.ss").read_text() == "dim Y = 3\n"
    assert (out / "main.ss").read_text().startswith('import "sub/lib.ss"')
    assert load_all([out])[out]["ok"]


def test_vllm_plugin_and_readme_hold_names_and_paths_as_data(tmp_path):
    evil = 'x"\ndependencies = ["evil-pkg @ https:\\u002f\\u002fexample.invalid"]\nreadme = "y.ss'
    (tmp_path / "plain.ss").write_text(TINY)
    (tmp_path / evil).write_text(TINY)
    out_plain = tmp_path / "plain"
    out = tmp_path / 'o", __import__("os").system("touch marker"), "x'
    for src, o in (("plain.ss", out_plain), (evil, out)):
        p = cli("export", tmp_path / src, "--vllm", "--random-weights", "-o", o)
        assert p.returncode == 0, p.stderr
    want = tomllib.loads((out_plain / "vllm_plugin" / "pyproject.toml").read_text())
    got = tomllib.loads((out / "vllm_plugin" / "pyproject.toml").read_text())
    assert set(got) == set(want) and set(got["project"]) == set(want["project"])
    assert "dependencies" not in got["project"] and got["project"]["entry-points"] == want["project"]["entry-points"]
    assert got["project"]["description"].startswith('The native vLLM model of a ShapeScript export (x"\\x0a')
    # the plugin installs (pip, into a throwaway folder) and runs nothing of the names
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                        "--quiet", "--target", str(target), str(out / "vllm_plugin")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not (tmp_path / "marker").exists()
    assert (target / "shapescript_vllm_llama" / "__init__.py").exists()
    readme = (out / "README.md").read_text()
    blocks = re.findall(r"^```([a-z]*)\n(.*?)^```", readme, re.S | re.M)
    commands = [shlex.split(line) for lang, body in blocks if lang == "" for line in body.splitlines() if line]
    assert commands and all(c[0] in ("vllm", "pip") for c in commands)
    assert all(str(out) in c or str(out / "vllm_plugin") in c for c in commands)
    (snippet,) = [body for lang, body in blocks if lang == "python"]
    models = [k.value.value for n in ast.walk(ast.parse(snippet)) if isinstance(n, ast.Call)
              and getattr(n.func, "id", "") == "LLM" for k in n.keywords if k.arg == "model"]
    assert models == [str(out)]
    assert not (tmp_path / "marker").exists()
