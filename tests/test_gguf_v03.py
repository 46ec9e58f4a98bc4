"""Spec v0.3's rope scaling and partial rotary through --gguf (issue 32): written as
llama.cpp reads them (arch/rope_gguf.py) and run by llama.cpp itself.

- llama3: the `rope_freqs` divisors, the numbers llama.cpp's own converter writes for the
  same checkpoint (Llama 3.2's rope parameters, transformers' own class, random weights);
- yarn: `rope.scaling.*`, with an attention factor of the source's own (Qwen2);
- partial rotary: llama.cpp's llama and qwen2 rotate whole heads (its llama refuses the file,
  its qwen2 aborts): an E3313;
- and each departure llama.cpp's architectures impose, an E3313 that names it.
Each .gguf is also imported back: the matching source has no E3316, one without the
scaling keeps its warning.
"""
from __future__ import annotations

import math
import os

import pytest

from checkout import ROOT

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from import_support import convert_hf_to_gguf, logits, max_diff, run_cli  # noqa: E402
from test_language_v03 import LLAMA3, LLAMA3_ROPE, PROMPT, QWEN2, _randomize  # noqa: E402

LLAMA_CPP_TOL = 1e-3
QWEN2_INTERLEAVED = os.path.join(ROOT, "tests", "programs", "gguf", "qwen2_interleaved.ss")


def _field(path: str, key: str):
    f = gguf.GGUFReader(path).get_field(key)
    return None if f is None else f.contents()


def _tensor(path: str, name: str) -> np.ndarray:
    return next(np.array(t.data) for t in gguf.GGUFReader(path).tensors if t.name == name)


def _gguf(source: str, out: str, *args) -> str:
    r = run_cli("export", source, "--gguf", "-o", out, "--force", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def _llama_cpp(path: str, prompt) -> np.ndarray:
    from gguf_support import llama_cpp_logits
    return llama_cpp_logits(path, prompt)


# ---------------------------------------------------------------- llama3: rope_freqs
LLAMA3_DIMS = ("--dim", "V=320", "--dim", "D=128", "--dim", "H=2", "--dim", "Hkv=1", "--dim", "F=256",
               "--dim", "L=2")


@pytest.fixture(scope="module")
def llama3(tmp_path_factory):
    """(checkpoint, transformers model, the converter's .gguf): Llama 3.2's rope parameters,
    a vocabulary of 320 with its tokenizer (the converter needs one)."""
    from test_gguf_tokenizer import train
    root = tmp_path_factory.mktemp("llama3_gguf")
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=320, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=131072,
                         rms_norm_eps=1e-5, rope_parameters=dict(LLAMA3_ROPE), tie_word_embeddings=True)
    model = _randomize(tf.LlamaForCausalLM(cfg))
    ckpt = str(root / "ckpt")
    model.save_pretrained(ckpt)
    train(ckpt)
    converted = str(root / "converted.gguf")
    convert_hf_to_gguf([(ckpt, "f32", converted)])
    return ckpt, model, converted


def test_a_llama_3_2_runs_in_llama_cpp_with_the_converters_rope_freqs(llama3, tmp_path):
    ckpt, model, converted = llama3
    out = str(tmp_path / "llama3.gguf")
    said = _gguf(LLAMA3, out, "--weights", ckpt, *LLAMA3_DIMS)
    assert "E3316" not in said, said
    ours, theirs = _tensor(out, "rope_freqs.weight"), _tensor(converted, "rope_freqs.weight")
    assert ours.shape == theirs.shape == (32,)
    # the converter's numbers, within one float32 rounding of its torch pow
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0)
    assert ours.min() == 1.0 and ours.max() == 32.0 and 1 < ours[16] < 32  # the three bands
    assert _field(out, "llama.rope.scaling.type") is None  # llama3 has no scaling key
    want = logits(model, PROMPT)
    assert max_diff(_llama_cpp(out, PROMPT), want) < LLAMA_CPP_TOL
    assert max_diff(_llama_cpp(converted, PROMPT), want) < LLAMA_CPP_TOL
    # the teeth: the same weights without the scaling (the import says so)
    plain_src = tmp_path / "llama3_plain.ss"
    plain_src.write_text(_unscaled(open(LLAMA3, encoding="utf-8").read()), encoding="utf-8")
    plain = str(tmp_path / "plain.gguf")
    said = _gguf(str(plain_src), plain, "--weights", ckpt, *LLAMA3_DIMS)
    assert "the source's rope scaling is none, but the checkpoint's config.json rope_parameters says llama3" in said
    assert "rope_freqs.weight" not in [t.name for t in gguf.GGUFReader(plain).tensors]
    assert max_diff(_llama_cpp(plain, PROMPT), want) > 1e-2


def _unscaled(text: str) -> str:
    import re
    out = re.sub(r'rope\(pos, theta=500000.0,[^)]*\)', "rope(pos, theta=500000.0)", text)
    assert out != text
    return out


def test_a_llama3_gguf_imports_into_the_source_that_scales_as_it(llama3, tmp_path):
    """The converter's .gguf in: the llama3 source takes it without E3316 and its --hf export
    gives transformers' logits; the unscaled source is warned, naming the divisors."""
    from import_support import load_export
    ckpt, model, converted = llama3
    out = str(tmp_path / "llama3_from_gguf")
    r = run_cli("export", LLAMA3, "--hf", "-o", out, "--weights", converted, "--force", *LLAMA3_DIMS)
    assert r.returncode == 0 and "E3316" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert max_diff(logits(load_export(out), PROMPT), logits(model, PROMPT)) < 1e-4
    plain_src = tmp_path / "llama3_plain_in.ss"
    plain_src.write_text(_unscaled(open(LLAMA3, encoding="utf-8").read()), encoding="utf-8")
    r = run_cli("export", str(plain_src), "--hf", "-o", str(tmp_path / "plain_in"), "--weights", converted,
                "--force", *LLAMA3_DIMS)
    assert ("warning: [E3316] the source's rope scaling is none, but the checkpoint's rope_freqs.weight says "
            "per-frequency divisors 1 to 32 (rope_freqs.weight)") in r.stdout + r.stderr, r.stdout + r.stderr
    other = tmp_path / "llama3_factor8.ss"
    other.write_text(open(LLAMA3, encoding="utf-8").read().replace("factor=32.0", "factor=8.0"), encoding="utf-8")
    r = run_cli("export", str(other), "--hf", "-o", str(tmp_path / "other_in"), "--weights", converted,
                "--force", *LLAMA3_DIMS)
    assert "the source's rope scaling is llama3 (factor 8," in r.stdout + r.stderr, r.stdout + r.stderr


# ---------------------------------------------------------------- yarn: rope.scaling.*
def _yarn(attention: str, betas=("32.0", "1.0")) -> str:
    return (f'rope(pos, theta=1000000.0, scaling="yarn", factor=4.0, original_positions=32, '
            f'beta_fast={betas[0]}, beta_slow={betas[1]}, attention_factor={attention})')


def _qwen2_yarn(directory: str, attention: float) -> tf.PreTrainedModel:
    torch.manual_seed(1)
    rope = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 32,
            "attention_factor": attention, "beta_fast": 32.0, "beta_slow": 1.0}
    cfg = tf.Qwen2Config(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         rms_norm_eps=1e-6, rope_parameters=rope, use_sliding_window=False,
                         tie_word_embeddings=False)
    model = _randomize(tf.Qwen2ForCausalLM(cfg))
    model.save_pretrained(directory)
    return model


def test_a_qwen2_with_yarn_and_its_own_attention_factor_runs_in_llama_cpp(tmp_path):
    """llama.cpp multiplies by 1 + 0.1 ln(factor) itself: the source's 1.3 is written as
    rope.scaling.attn_factor = 1.3 / (1 + 0.1 ln 4); the transformers default is written as
    nothing. 48 positions, past the original 32."""
    prompt = [t % 256 for t in PROMPT]
    for attention, written in ((1.3, 1.3 / (1 + 0.1 * math.log(4.0))), (1 + 0.1 * math.log(4.0), None)):
        ckpt = str(tmp_path / f"ckpt_{attention:.3f}")
        model = _qwen2_yarn(ckpt, attention)
        src = tmp_path / f"qwen2_yarn_{attention:.3f}.ss"
        src.write_text(open(QWEN2, encoding="utf-8").read().replace("rope(pos, theta=1000000.0)",
                                                                     _yarn(repr(attention))), encoding="utf-8")
        out = str(tmp_path / f"yarn_{attention:.3f}.gguf")
        said = _gguf(str(src), out, "--weights", ckpt, "--fn", "forward")
        assert "E3316" not in said, said
        assert _field(out, "qwen2.rope.scaling.type") == "yarn"
        assert _field(out, "qwen2.rope.scaling.factor") == 4.0
        assert _field(out, "qwen2.rope.scaling.original_context_length") == 32
        got = _field(out, "qwen2.rope.scaling.attn_factor")
        assert (got is None) if written is None else abs(got - written) < 1e-6
        want = logits(model, prompt)
        assert max_diff(_llama_cpp(out, prompt), want) < LLAMA_CPP_TOL
        if written is not None:  # the teeth: the factor matters (the default's file, these weights)
            plain = str(tmp_path / "default_attention.gguf")
            src.write_text(src.read_text(encoding="utf-8").replace("attention_factor=1.3",
                                                                   "attention_factor=1.1386294361119891"))
            _gguf(str(src), plain, "--weights", ckpt, "--fn", "forward")
            assert max_diff(_llama_cpp(plain, prompt), want) > 1e-2
        # imported back: the source that says it has no E3316; one without yarn is warned
        r = run_cli("export", QWEN2, "--hf", "-o", str(tmp_path / f"back_{attention:.3f}"), "--weights", out,
                    "--force", "--fn", "forward")
        assert ("the source's rope scaling is none, but the checkpoint's rope.scaling.type says yarn, factor 4, "
                "original context 32") in r.stdout + r.stderr, r.stdout + r.stderr


# ---------------------------------------------------------------- qwen2, both rope styles
@pytest.mark.parametrize("source", [QWEN2, QWEN2_INTERLEAVED], ids=["half", "interleaved"])
def test_a_yarn_qwen2_runs_in_llama_cpp_as_the_evaluator(source, tmp_path):
    """llama.cpp's qwen2 (it rotates halves: interleaved rows are permuted) with yarn, all
    positions' logits against the reference evaluator."""
    scaling = 'scaling="yarn", factor=4.0, original_positions=8, beta_fast=32.0, beta_slow=1.0, attention_factor=1.2'
    from differential_support import Case, quiet, run_gguf
    quiet()
    text = open(source, encoding="utf-8").read()
    scaled = text.replace("rope(pos, theta=1000000.0", f"rope(pos, theta=1000000.0, {scaling}")
    assert scaled != text
    res = run_gguf(Case(scaled, lm=True, seed=3), str(tmp_path))
    assert res["gguf"] == ("agree", ""), res


# ---------------------------------------------------------------- what llama.cpp can't run: E3313
LLAMA_SS = os.path.join(ROOT, "examples", "llama.ss")
GEMMA3 = os.path.join(ROOT, "tests", "programs", "gguf", "gemma3.ss")


@pytest.mark.parametrize("source,old,new,said", [
    (QWEN2, "rope(pos, theta=1000000.0)", _yarn("1.2", ("16.0", "2.0")),
     "rope's yarn betas are 16 and 2 (line 36), where llama.cpp reads no beta from the file: it uses 32 and 1"),
    (LLAMA_SS, "rope(pos, theta=500000.0)", "rope(pos, theta=500000.0, rotary_dims=32)",
     "rope rotates 32 of the head's 128 features (line 37), where llama.cpp's llama rotates them all"),
    (QWEN2, "rope(pos, theta=1000000.0)", "rope(pos, theta=1000000.0, rotary_dims=32)",
     "rope rotates 32 of the head's 64 features (line 36), where llama.cpp's qwen2 rotates them all"),
    (QWEN2, "rope(pos, theta=1000000.0)", 'rope(pos, theta=1000000.0, scaling="llama3", factor=8.0, '
     'low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16)',
     "rope is scaled as llama3 (line 36): llama.cpp reads its per-frequency factors (rope_freqs) only as llama, "
     "not as qwen2"),
    (GEMMA3, "rope(pos, theta=theta)", 'rope(pos, theta=theta, scaling="llama3", factor=8.0, '
     'low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16)',
     "rope is scaled as llama3 (line 46): llama.cpp reads its per-frequency factors (rope_freqs) only as llama, "
     "not as gemma3"),
], ids=["yarn_betas", "llama_partial", "qwen2_partial", "qwen2_llama3", "gemma3_llama3"])
def test_what_llama_cpp_cant_run_is_an_e3313_naming_it(source, old, new, said, tmp_path):
    text = open(source, encoding="utf-8").read()
    assert old in text
    src = tmp_path / "departs.ss"
    src.write_text(text.replace(old, new), encoding="utf-8")
    out = tmp_path / "departs.gguf"
    r = run_cli("export", str(src), "--gguf", "-o", str(out), "--random-weights", "--force", "--fn", "forward")
    assert r.returncode != 0
    lines = [x for x in (r.stdout + r.stderr).splitlines() if "E3313" in x]
    assert len(lines) == 1 and said in lines[0], r.stdout + r.stderr
    assert not out.exists()
