"""The one export request: defaults, settings, path resolution and validation, the same
for the CLI and the language server."""
from __future__ import annotations

import os

import pytest

from shapescript_core.export.request import RequestError, default_output, find_settings, make_request
from shapescript_core.settings import parse_settings


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "models" / "lm.ss"
    p.parent.mkdir()
    p.write_text("dim D = 4\n")
    return str(p)


def test_defaults_beside_the_source(src, tmp_path):
    r = make_request(src, "hf")
    assert r.output == str(tmp_path / "models" / "lm-hf")
    assert r.random_weights and r.seed == 0 and r.dtype == "f32" and not r.force
    assert r.random_reason.startswith("no weights were named")
    assert r.weights_note() == f"random weights (seed 0): {r.random_reason}"
    assert make_request(src, "vllm").output.endswith("lm-vllm")
    assert make_request(src, "gguf").output == str(tmp_path / "models" / "lm.gguf")
    assert default_output(src, "gguf") == str(tmp_path / "models" / "lm.gguf")
    # asked for: no reason to give
    assert make_request(src, "hf", random_weights=True, seed=5).weights_note() == "random weights (seed 5)"


def test_settings_file_above_the_source_gives_defaults_relative_to_itself(src, tmp_path, monkeypatch):
    (tmp_path / "w.safetensors").write_bytes(b"")
    (tmp_path / "shapescript.toml").write_text(
        '[export]\noutput = "out/exported"\nweights = "w.safetensors"\nseed = 3\ndtype = "bf16"\n[dims]\nD = 8\n')
    cfg, where = find_settings(src)
    assert where == str(tmp_path) and cfg.export["seed"] == 3
    monkeypatch.chdir(src.rsplit("/", 1)[0])
    r = make_request(src, "hf")
    assert r.output == str(tmp_path / "out" / "exported")
    assert r.weights == str(tmp_path / "w.safetensors") and not r.random_weights
    assert (r.seed, r.dtype, r.dims, r.explicit_dims) == (3, "bf16", {"D": 8}, ())
    assert make_request(src, "gguf").output == str(tmp_path / "out" / "exported.gguf")
    # explicit options win, and resolve against the caller's directory
    r = make_request(src, "hf", output="here", random_weights=True, dims={"D": 16}, dtype="f32")
    assert r.output == os.path.join(os.getcwd(), "here") and r.random_weights and r.weights is None
    assert r.dims == {"D": 16} and r.explicit_dims == ("D",) and r.dtype == "f32"


def test_editor_settings_resolve_against_the_workspace_root(src, tmp_path):
    cfg = parse_settings({"export": {"output": "built", "randomWeights": True, "seed": 9}})
    r = make_request(src, "hf", settings=cfg, settings_dir=str(tmp_path), base=str(tmp_path))
    assert r.output == str(tmp_path / "built") and r.random_weights and r.random_reason == "" and r.seed == 9
    r = make_request(src, "hf", output="rel", settings=cfg, settings_dir=str(tmp_path), base=str(tmp_path / "models"))
    assert r.output == str(tmp_path / "models" / "rel")


def test_tokenizer_dir_is_checked(src, tmp_path):
    tok = tmp_path / "tok"
    tok.mkdir()
    with pytest.raises(RequestError, match="holds no tokenizer"):
        make_request(src, "hf", tokenizer=str(tok))
    (tok / "tokenizer.json").write_text("{}")
    assert make_request(src, "hf", tokenizer=str(tok)).tokenizer == str(tok)
    with pytest.raises(RequestError, match="is not a directory"):
        make_request(src, "hf", tokenizer=str(tok / "tokenizer.json"))


@pytest.mark.parametrize("kw, says", [
    (dict(target="onnx"), "unknown target `onnx`: use one of hf, vllm, gguf"),
    (dict(dtype="q8_0"), "--dtype q8_0 is for gguf only"),
    (dict(dtype="f8"), "--dtype takes one of f32, f16, bf16, got `f8`"),
    (dict(seed=-2), "the seed takes a non-negative integer"),
    (dict(weights="missing.safetensors"), "can't read the weights"),
    (dict(weights="w", random_weights=True), "exclude each other"),
    (dict(dims={"D": 0}), "dim `D` takes a positive integer"),
    (dict(dims={"2x": 3}), "`2x` is not a dim name"),
])
def test_bad_options(src, kw, says):
    target = kw.pop("target", "hf")
    with pytest.raises(RequestError, match=says.replace("(", r"\(").replace(")", r"\)")):
        make_request(src, target, **kw)


def test_q8_0_is_for_gguf(src):
    assert make_request(src, "gguf", dtype="q8_0").dtype == "q8_0"


def test_an_output_that_would_replace_the_source_is_refused(src, tmp_path):
    with pytest.raises(RequestError, match="would replace the source"):
        make_request(src, "hf", output=src)
    with pytest.raises(RequestError, match="would replace the source"):
        make_request(src, "hf", output=str(tmp_path / "models"))


def test_the_export_front_ends_import_no_numpy_or_torch():
    import subprocess
    import sys
    code = ("import sys; import shapescript_core.cli, shapescript_server.export; "
            "from shapescript_core.export import request, run, writers, atomic; "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'torch', 'safetensors', 'rich')); "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
