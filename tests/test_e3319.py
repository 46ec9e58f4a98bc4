"""E3319: what vLLM or LiteRT can't run, in the checker (so the editor says it before an
export) and at the export, which then writes nothing. Attention sinks for vLLM; LiteRT's
list (rope scaling, partial rotary, softcaps, sinks, topk/take) is also exercised by
test_language_v03.py and test_moe.py."""
from __future__ import annotations

import os

import pytest

from checkout import ROOT, shapescript
from shapescript_core.workspace import Workspace

LLAMA = open(os.path.join(ROOT, "examples", "llama.ss"), encoding="utf-8").read()
SINKS = (LLAMA.replace("    wo: [D H*Dh]\n", "    wo: [D H*Dh]\n    sinks: [H]\n")
         .replace("attn_mask=causal[n n])", "attn_mask=causal[n n], sinks=a.sinks)"))
DIMS = {"V": 256, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}
SDPA_LINE = next(i for i, x in enumerate(SINKS.splitlines(), 1) if "sinks=a.sinks" in x)


def _diags(source: str, decorator: str) -> list:
    assert "@export(hf, vllm, gguf)\n" in source  # examples/llama.ss's, replaced
    source = source.replace("@export(hf, vllm, gguf)\n", decorator + "\n" if decorator else "")
    ws = Workspace(dict(DIMS))
    path = "/tmp/shapescript-e3319/m.ss"
    ws.set_text(path, source)
    return [(d.code, d.message, source.count("\n", 0, d.span.abs_start) + 1) for d in ws.diagnostics(path)]


def test_sinks_are_e3319_where_vllm_is_asked_for():
    assert SINKS != LLAMA and "sinks=a.sinks" in SINKS
    assert _diags(SINKS, "@export(vllm)") == [
        ("E3319", "vLLM can't run `forward`: it uses attention sinks", SDPA_LINE)]
    # both engines asked for: one diagnostic naming both
    assert _diags(SINKS, "@export(vllm, litert)") == [
        ("E3319", "vLLM and LiteRT can't run `forward`: it uses attention sinks", SDPA_LINE)]


def test_one_diagnostic_with_a_label_for_each_feature_and_which_engine_lacks_it():
    capped = SINKS.replace("sinks=a.sinks)", "sinks=a.sinks, softcap=30.0)")
    rope_line = next(i for i, x in enumerate(capped.splitlines(), 1) if "rope(" in x)
    ws = Workspace(dict(DIMS))
    path = "/tmp/shapescript-e3319/c.ss"
    ws.set_text(path, capped.replace("@export(hf, vllm, gguf)", "@export(vllm, litert)")
                .replace("rope(pos, theta=500000.0)", 'rope(pos, theta=500000.0, scaling="linear", factor=2.0)'))
    (d,) = ws.diagnostics(path)
    assert (d.code, d.message) == ("E3319", "vLLM and LiteRT can't run `forward`: it uses rope scaling (linear), "
                                            "attention sinks and a softcap")
    text = ws.file(path).text
    assert text.count("\n", 0, d.span.abs_start) + 1 == rope_line
    assert d.primary_label == "rope scaling (linear): LiteRT can't run it"
    assert [lab.message for lab in d.labels] == ["attention sinks: vLLM and LiteRT can't run it",
                                                 "a softcap: LiteRT can't run it"]
    assert len(d.notes) == 2 and d.helps == ["Export it with --hf, which runs it as written."]


@pytest.mark.parametrize("decorator", ["@export(hf)", "@export(hf, gguf)", ""], ids=["hf", "hf+gguf", "implied"])
def test_not_where_the_engine_was_not_asked_for(decorator):
    """--hf runs sinks; a plain `forward` implies every target, and is not held to them (as
    E3313 is not); gguf has its own E3313."""
    assert [c for c in _diags(SINKS, decorator) if c[0] == "E3319"] == []


def test_the_same_model_without_sinks_passes():
    assert _diags(LLAMA, "@export(vllm, litert)") == []


def test_the_vllm_export_refuses_it_and_writes_nothing(tmp_path):
    src = tmp_path / "sinks.ss"
    src.write_text(SINKS)
    out = tmp_path / "out"
    dims = [x for k, v in DIMS.items() for x in ("--dim", f"{k}={v}")]
    r = shapescript("export", str(src), "--vllm", "--random-weights", "-o", str(out), *dims)
    assert r.returncode == 1
    assert "error[E3319]: vLLM can't run `forward`: it uses attention sinks\n" in r.stdout, r.stdout
    assert f"sinks.ss:{SDPA_LINE}:" in r.stdout
    assert "help: Export it with --hf" in r.stdout
    assert not out.exists() and os.listdir(tmp_path) == ["sinks.ss"]
    ok = shapescript("export", str(src), "--hf", "--random-weights", "-o", str(out), *dims)
    assert ok.returncode == 0, ok.stderr
    assert (out / "config.json").exists()
