"""Importing a checkpoint into a source whose sizes are open: the dims derived from open
dims (`dim Dh = D / H`) are computed from the values read, whatever order the dims are
declared in, and checked against the checkpoint; a stack of another number of blocks than
the checkpoint's is one E3315 naming its count. Checkpoints: transformers' own models,
tiny, saved with `save_pretrained` (import_support)."""
from __future__ import annotations

import json
import os
import re

import pytest

from import_support import (EXAMPLES, SOURCES, export, greedy, hf_model, load_export, logits, max_diff, run_cli,
                            save_checkpoint)

OPEN = ("V", "D", "H", "Hkv", "F", "L")
LLAMA = os.path.join(EXAMPLES, "llama.ss")


def _open_llama(tmp_path) -> str:
    """examples/llama.ss with its sizes open, `G = H / Hkv` and `Dh = D / H` kept derived."""
    text = open(LLAMA, encoding="utf-8").read()
    text, n = re.subn(rf"^dim ({'|'.join(OPEN)})\s*=\s*\d+\s*$", r"dim \1", text, flags=re.M)
    assert n == len(OPEN)
    assert "dim Dh  = D / H" in text and "dim G   = H / Hkv" in text
    path = tmp_path / "llama_open.ss"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _fails(r, out) -> str:
    assert r.returncode == 1, r.stdout + r.stderr
    assert not os.path.exists(out)
    assert "Traceback" not in r.stdout + r.stderr
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The tiny Llama checkpoint (2 blocks) and its transformers model."""
    model = hf_model("llama")
    return save_checkpoint(model, str(tmp_path_factory.mktemp("llama-ckpt"))), model


def _checkpoint(tmp_path, cls: str, **config) -> str:
    """A tiny transformers model of class `cls` with the config's other values, saved."""
    import torch
    import transformers as tf
    torch.manual_seed(0)
    base = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    model = getattr(tf, f"{cls}ForCausalLM")(getattr(tf, f"{cls}Config")(**{**base, **config}))
    return save_checkpoint(model, str(tmp_path / "ckpt"))


# ------------------------------------------------------------------ derived dims
def test_a_dim_derived_from_open_dims_is_computed_from_the_values_read(llama, tmp_path):
    ckpt, ref = llama
    out = tmp_path / "out"
    r = run_cli("export", _open_llama(tmp_path), "--hf", "-o", out, "--weights", ckpt)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error" not in r.stdout
    assert ("dims read from the checkpoint: L=2, V=300, D=64, F=128, H=4, Hkv=2; "
            "computed from them: G=2, Dh=16") in r.stderr
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["D"], cfg["H"], cfg["Hkv"], cfg["Dh"], cfg["L"]) == (64, 4, 2, 16, 2)
    got = load_export(str(out))
    assert max_diff(logits(got), logits(ref)) < 1e-4
    assert greedy(got) == greedy(ref)


def test_the_stand_ins_keep_every_derived_dim_whole_whatever_the_order(tmp_path):
    """The graph is traced with stand-in values for the open dims: a quotient (whichever of
    its dims is declared first) and a difference of them must stay whole and positive."""
    from shapescript_core.weights.dims_from_checkpoint import _open_dims, _probe_order, _probes
    from shapescript_core.workspace import Workspace
    src = tmp_path / "dims.ss"
    src.write_text("dim H\ndim Hkv\ndim G = H / Hkv\ndim Dh = D / H\ndim D\ndim E = (D - H) / Hkv\n"
                   "dim R = D * Hkv / H\ndim K = F - D\ndim F\n", encoding="utf-8")
    ws = Workspace()
    env = ws.analyze(str(src)).env
    names = _open_dims(env)
    assert sorted(names) == ["D", "F", "H", "Hkv"]
    probes = _probes(_probe_order(env, names))
    assert len(set(probes.values())) == len(names)  # distinct: a head count is told by its stand-in
    ws.set_dim_overrides(probes)
    env = ws.analyze(str(src)).env
    values = {n: env.dims.info[n].value for n in ("G", "Dh", "E", "R", "K")}
    assert all(isinstance(v, int) and v > 0 for v in values.values()), values
    assert not [d for d in ws.diagnostics(str(src)) if d.code == "E0208"]


def test_a_derived_dim_the_checkpoint_contradicts_is_one_e3315(tmp_path):
    """Heads 32 wide, where the source's `Dh = D / H` makes them 16: the query projection's
    shape says so."""
    ckpt = _checkpoint(tmp_path, "Llama", head_dim=32)
    out = tmp_path / "out"
    err = _fails(run_cli("export", _open_llama(tmp_path), "--hf", "-o", out, "--weights", ckpt), out)
    assert err.count("error[") == 1
    assert ("error[E3315]: `H*Dh` (an axis of [H*Dh D]) is 64 in the source, but the checkpoint's "
            "`model.layers.0.self_attn.q_proj.weight` says 128") in err
    assert "`model.layers.0.self_attn.q_proj.weight` is [128 64] in the checkpoint" in err


def test_a_derived_dim_the_values_read_do_not_divide_is_one_e0208(tmp_path):
    """A Qwen3 of 6 heads 16 wide in a width of 64, into qwen3.ss with `Dh = D / H`."""
    ckpt = _checkpoint(tmp_path, "Qwen3", num_attention_heads=6, head_dim=16, tie_word_embeddings=True)
    text = open(SOURCES["qwen3"][0], encoding="utf-8").read()
    text, n = re.subn(r"^dim Dh$", "dim Dh = D / H", text, flags=re.M)
    assert n == 1
    src = tmp_path / "qwen3_derived.ss"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    err = _fails(run_cli("export", src, "--hf", "-o", out, "--weights", ckpt), out)
    assert err.count("error[") == 1
    assert "error[E0208]: `Dh = D / H` doesn't divide: 64 / 6" in err
    assert "dims read from the checkpoint: L=2, V=300, D=64, F=128, H=6, Hkv=2" in err
    assert "not exported: the dims read from the checkpoint give 1 error" in err


# ------------------------------------------------------------------ the number of blocks
@pytest.mark.parametrize("L", [32, 1])
def test_a_stack_of_another_length_than_the_checkpoints_is_one_e3315(llama, tmp_path, L):
    ckpt, _ = llama
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, ckpt, "--dim", f"L={L}"), out)
    assert err.count("error[") == 1
    assert "E3314" not in err
    assert f"error[E3315]: `L` is {L} in the source, but the checkpoint's config.json num_hidden_layers says 2" in err
    assert "examples/llama.ss:32:5" in err  # `layers: [L] Block`
    assert "declared [L] Block here" in err
    assert f"the checkpoint has 2 blocks, the source {L}" in err
    assert "not exported: the checkpoint's number of blocks contradicts the source's" in err


def test_the_number_of_blocks_of_a_bare_safetensors_and_of_a_gguf(llama, tmp_path):
    """Without a config the tensors' numbering tells it; a GGUF's `block_count` does."""
    ckpt, _ = llama
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, os.path.join(ckpt, "model.safetensors"), "--dim", "L=3"), out)
    assert err.count("error[") == 1
    assert "error[E3315]: `L` is 3 in the source, but the checkpoint's tensor numbering says 2" in err
    f = tmp_path / "llama.gguf"
    r = export("llama", "gguf", f, ckpt)
    assert r.returncode == 0, r.stdout + r.stderr
    err = _fails(export("llama", "hf", out, f, "--dim", "L=3"), out)
    assert err.count("error[") == 1
    assert "error[E3315]: `L` is 3 in the source, but the checkpoint's `llama.block_count` says 2" in err


def test_a_stack_count_written_as_an_expression_is_named_as_written(llama, tmp_path):
    ckpt, _ = llama
    text = open(LLAMA, encoding="utf-8").read().replace("layers: [L] Block", "layers: [2*L] Block")
    src = tmp_path / "llama_double.ss"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    dims = sum((["--dim", f"{k}={v}"] for k, v in SOURCES["llama"][2].items()), [])
    err = _fails(run_cli("export", src, "--hf", "-o", out, "--weights", ckpt, *dims), out)
    assert err.count("error[") == 1
    assert ("error[E3315]: `2*L` (the count of [2*L] Block) is 4 in the source, but the checkpoint's "
            "config.json num_hidden_layers says 2") in err
