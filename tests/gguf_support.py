"""Shared pieces of the GGUF tests: weights, the CLI export, transformers' reference
models and llama.cpp's logits. Real components only: the `shapescript export --gguf` CLI,
llama-cpp-python, transformers' own model classes."""
from __future__ import annotations

import os
import subprocess

import pytest

from checkout import shapescript

np = pytest.importorskip("numpy")

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs", "gguf")
CONFORMANCE = os.path.join(HERE, "programs", "ok")  # copies of the shared conformance cases

# issue 7's tiny llama: head width 64 (D / H)
LLAMA_DIMS = {"V": 256, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}
TOKENS = [1, 17, 42, 99, 3, 250, 7, 128, 64, 5, 200, 31]


def program(name: str) -> str:
    return os.path.join(PROGRAMS, name)


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return shapescript(*args, cwd=cwd)


def export_gguf(source: str, out: str, weights: str | None = None, dims: dict | None = None,
                dtype: str = "f32", tokenizer: str | None = None) -> subprocess.CompletedProcess:
    args = ["export", source, "--gguf", "-o", out, "--dtype", dtype, "--force"]
    args += ["--weights", weights] if weights else ["--random-weights"]
    for k, v in (dims or {}).items():
        args += ["--dim", f"{k}={v}"]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    r = run_cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(out)
    return r


def export_hf(source: str, out: str, weights: str, dims: dict | None = None,
              tokenizer: str | None = None) -> str:
    """The same model through `--hf` (issue 7's writer), for comparing against its export."""
    args = ["export", source, "--hf", "-o", out, "--weights", weights, "--force"]
    for k, v in (dims or {}).items():
        args += ["--dim", f"{k}={v}"]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    r = run_cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def load_hf_export(out: str):
    import torch
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, dtype=torch.float32).eval()


def save_weights(path: str, tensors: dict) -> str:
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}, path)
    return path


def randomize(model, seed: int, scale: float = 0.08):
    """Weights large enough that a wrong layout changes the logits a lot."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * scale
            is_norm = p.dim() == 1 and ("norm" in name or "ln_" in name) and name.endswith("weight")
            p.copy_(1.0 + noise if is_norm else noise)
    return model


def state(model) -> dict:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def hf_llama(seed=0, V=256, D=256, H=4, Hkv=2, F=512, L=2, theta=500000.0, eps=1e-5, tied=False,
             qwen2=False, scale=0.08):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(seed)
    kw = dict(vocab_size=V, hidden_size=D, intermediate_size=F, num_hidden_layers=L,
              num_attention_heads=H, num_key_value_heads=Hkv, rms_norm_eps=eps,
              rope_parameters={"rope_type": "default", "rope_theta": theta},
              max_position_embeddings=4096, tie_word_embeddings=tied)
    if qwen2:
        cfg = Qwen2Config(**kw, use_sliding_window=False)
        model = Qwen2ForCausalLM(cfg)
    else:
        cfg = LlamaConfig(**kw, head_dim=D // H, attention_bias=False, mlp_bias=False)
        model = LlamaForCausalLM(cfg)
    cfg._attn_implementation = "eager"
    return randomize(model.eval(), seed, scale)


def hf_gpt2(seed=0, V=256, D=256, H=4, P=64, L=2):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=V, n_embd=D, n_head=H, n_layer=L, n_positions=P,
                     activation_function="gelu_new", layer_norm_epsilon=1e-5,
                     tie_word_embeddings=True, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    cfg._attn_implementation = "eager"
    return randomize(GPT2LMHeadModel(cfg).eval(), seed)


def hf_logits(model, tokens) -> np.ndarray:
    import torch
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].numpy()


def _no_extra_buffer_types(llama_cpp):
    """Load models without llama.cpp's "extra" CPU buffer types: on these machines (a VM
    whose CPU reports AMX) the AMX buffer's tile instructions trap (SIGILL) on q8_0
    weights. The plain CPU kernels still run every type. See docs/serving-engines.md."""
    low = llama_cpp.llama_cpp
    if getattr(low.llama_model_default_params, "_shapescript", False):
        return
    orig = low.llama_model_default_params

    def params():
        p = orig()
        p.use_extra_bufts = False
        return p
    params._shapescript = True
    low.llama_model_default_params = params


def llama_cpp_model(path: str, n_ctx: int = 64, f32_cache: bool = True):
    from envs import require_llama_cpp
    llama_cpp = require_llama_cpp()
    _no_extra_buffer_types(llama_cpp)
    kw = dict(type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32) if f32_cache else {}
    return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, logits_all=True, verbose=False,
                           n_threads=2, seed=0, **kw)


def llama_cpp_run(path: str, prompt, steps: int, n_ctx: int | None = None):
    """(llama.cpp's logits at every position of the prompt, then its greedy tokens one at a
    time through the cache)."""
    llm = llama_cpp_model(path, n_ctx=n_ctx or len(prompt) + steps + 4)
    try:
        llm.eval(prompt)
        logits = np.array(llm.scores[:len(prompt)], dtype=np.float32)
        out = []
        for _ in range(steps):
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            out.append(tok)
            llm.eval([tok])
        return logits, out
    finally:
        llm.close()


def llama_cpp_logits(path: str, tokens, f32_cache: bool = True) -> np.ndarray:
    llm = llama_cpp_model(path, f32_cache=f32_cache)
    try:
        llm.eval(tokens)
        return np.array(llm.scores[:len(tokens)], dtype=np.float32)
    finally:
        llm.close()


# ---------------------------------------------------------------- name mappings
def llama_to_source(sd: dict, L: int) -> dict:
    """transformers' Llama / Qwen2 state dict -> the param paths of conformance/ok/llama.ss."""
    out = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"],
           "lm_head": sd["lm_head.weight"]}
    for i in range(L):
        p, s = f"layers.{i}.", f"model.layers.{i}."
        out[p + "attn_norm"] = sd[s + "input_layernorm.weight"]
        out[p + "mlp_norm"] = sd[s + "post_attention_layernorm.weight"]
        for a, b in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
            out[p + "attn." + a] = sd[s + f"self_attn.{b}.weight"]
        for a, b in (("w_gate", "gate_proj"), ("w_up", "up_proj"), ("w_down", "down_proj")):
            out[p + "mlp." + a] = sd[s + f"mlp.{b}.weight"]
    return out


def max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
