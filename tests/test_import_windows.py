"""Checkpoints with sliding windows, imported by role (issue 21), beyond what
test_gemma3_mistral.py holds to transformers (both imported into the examples, --hf and
--vllm): a window the source lacks or contradicts, and a rope scaling it can't say, are
E3316 warnings; a Mistral checkpoint into `--gguf` is one E3313 (llama.cpp's llama has no
window), nothing written; a Mistral held by llama.cpp as a llama (.gguf, no window)
imports into examples/mistral.ss and is transformers' Mistral again.
"""
import os

import pytest

from import_support import TINY, hf_model, load_export, logits, max_diff, run_cli, save_checkpoint
from checkout import ROOT

np = pytest.importorskip("numpy")

MISTRAL = os.path.join(ROOT, "examples", "mistral.ss")
LLAMA = os.path.join(ROOT, "examples", "llama.ss")
GEMMA3 = os.path.join(ROOT, "examples", "gemma3.ss")
W = 8
PROMPT = [(i * 37 + 11) % 256 for i in range(5 * W)]


def dims(**more) -> list:
    out = []
    for k, v in dict(TINY, **more).items():
        out += ["--dim", f"{k}={v}"]
    return out


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    model = hf_model("mistral", window=W, theta=10000.0)  # Mistral 7B v0.1's, as the example says
    return model, save_checkpoint(model, str(tmp_path_factory.mktemp("mistral") / "hf"))


def test_a_window_the_source_lacks_or_contradicts_is_an_e3316_warning(mistral, tmp_path):
    _, ckpt = mistral
    r = run_cli("export", LLAMA, "--hf", "-o", str(tmp_path / "a"), "--weights", ckpt, "--force", *dims())
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("[E3316] the source's sliding window is none (full attention), but the checkpoint's config.json "
            "sliding_window says 8") in r.stdout + r.stderr
    r = run_cli("export", MISTRAL, "--hf", "-o", str(tmp_path / "b"), "--weights", ckpt, "--force", *dims(W=16))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[E3316] the source's sliding window is 16, but the checkpoint's config.json sliding_window says 8" \
        in r.stdout + r.stderr


def test_a_mistral_checkpoint_into_gguf_is_one_e3313(mistral, tmp_path):
    _, ckpt = mistral
    out = tmp_path / "out"
    out.mkdir()
    r = run_cli("export", MISTRAL, "--gguf", "-o", str(out / "m.gguf"), "--weights", ckpt, "--force", *dims(W=W))
    assert r.returncode == 1
    text = r.stdout + r.stderr
    assert text.count("E3313") == 1 and "the attention has a sliding window of 8" in text
    assert os.listdir(out) == []


def test_a_rope_scaling_the_source_lacks_is_an_e3316_warning(tmp_path):
    """Gemma 3 from 4B up scales its global layers' positions (linear, factor 8): a source's
    rope has no scaling, so the export says its outputs differ."""
    import json
    from test_gguf_gemma import AT_SIZE, DIMS, gemma3
    ckpt = save_checkpoint(gemma3(DIMS["W"]), str(tmp_path / "ckpt"))
    cfg_file = os.path.join(ckpt, "config.json")
    cfg = json.load(open(cfg_file, encoding="utf-8"))
    cfg["rope_parameters"]["full_attention"] = {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}
    json.dump(cfg, open(cfg_file, "w", encoding="utf-8"))
    r = run_cli("export", GEMMA3, "--gguf", "-o", str(tmp_path / "g.gguf"), "--weights", ckpt, "--force", *AT_SIZE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x for x in (r.stdout + r.stderr).splitlines() if "E3316" in x] == [
        "shapescript: warning: [E3316] the source's rope scaling is none, but the checkpoint's config.json "
        "rope_parameters says linear, factor 8: the export keeps the source's, and its outputs will differ "
        "from the original model's"]


def test_a_mistral_gguf_imports_into_the_windowed_source(mistral, tmp_path):
    """llama.cpp holds a Mistral as a llama (no window in the file): its .gguf, here written
    by --gguf from a window-less llama source, imports by role into examples/mistral.ss,
    whose window makes it transformers' Mistral again."""
    model, ckpt = mistral
    gguf_file = str(tmp_path / "mistral.gguf")
    r = run_cli("export", LLAMA, "--gguf", "-o", gguf_file, "--weights", ckpt, "--force", *dims())
    assert r.returncode == 0, r.stdout + r.stderr
    out = str(tmp_path / "hf")
    r = run_cli("export", MISTRAL, "--hf", "-o", out, "--weights", gguf_file, "--force", *dims(W=W))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" in r.stdout + r.stderr  # the file's rope base is llama.ss's 500000: the source keeps 10000
    assert max_diff(logits(model, PROMPT), logits(load_export(out), PROMPT)) < 1e-4
