"""Gemma 3 and Mistral through --hf and --vllm (issue 21): transformers' own
`Gemma3ForCausalLM` (6 layers, a window of 8 on five of six, head_dim != D/H,
query_pre_attn_scalar, tied embeddings) and `MistralForCausalLM` (a window of 8 on every
layer), random weights, saved with save_pretrained and imported into examples/gemma3.ss
and examples/mistral.ss. On a prompt of 40 tokens (5x the window) the exports compute
transformers' logits within 1e-4, with and without the KV cache, and greedy generation
gives its tokens; vLLM (its Transformers backend and the native plugin) gives them too, log-probabilities within 1e-4.
Dropping the window would show: full attention differs past it."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from checkout import ROOT  # noqa: E402
from import_support import run_cli  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
WINDOW = 8
PROMPT = 40  # 5x the window
ATOL = 1e-4
DIMS = {
    "gemma3": dict(V=300, D=128, H=4, Hkv=2, Dh=64, F=256, L=6, W=WINDOW, Q=48, P=128),
    "mistral": dict(V=300, D=256, H=4, Hkv=2, F=512, L=2, W=WINDOW, P=128),
}


def hf_model(kind: str, sliding_window: int = WINDOW):
    """transformers' own model, tiny, seeded; weights large enough that a wrong layout or
    a missing window changes the logits a lot."""
    import transformers as tf
    torch.manual_seed(0)
    d = DIMS[kind]
    common = dict(vocab_size=d["V"], hidden_size=d["D"], intermediate_size=d["F"], num_hidden_layers=d["L"],
                  num_attention_heads=d["H"], num_key_value_heads=d["Hkv"], max_position_embeddings=d["P"],
                  sliding_window=sliding_window)
    if kind == "gemma3":
        cfg = tf.Gemma3TextConfig(**common, head_dim=d["Dh"], query_pre_attn_scalar=d["Q"], rms_norm_eps=1e-6,
                                  tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh")
        model = tf.Gemma3ForCausalLM(cfg)
    else:
        cfg = tf.MistralConfig(**common, head_dim=d["D"] // d["H"], rms_norm_eps=1e-5, tie_word_embeddings=False,
                               rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        model = tf.MistralForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            norm = p.dim() == 1 and "norm" in name
            if norm:  # Gemma scales by (1 + w): w near 0; Mistral by w: near 1
                p.copy_((0.0 if kind == "gemma3" else 1.0) + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    return model.eval()


def export(kind: str, target: str, checkpoint: str, out: str, source: str | None = None):
    args = ["export", source or os.path.join(EXAMPLES, f"{kind}.ss"), f"--{target}", "-o", out,
            "--weights", checkpoint, "--force"]
    for k, v in DIMS[kind].items():
        args += ["--dim", f"{k}={v}"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module", params=["gemma3", "mistral"])
def case(request, tmp_path_factory):
    kind = request.param
    tmp = tmp_path_factory.mktemp(kind)
    model = hf_model(kind)
    ckpt = str(tmp / "checkpoint")
    model.save_pretrained(ckpt)
    out = str(tmp / "hf")
    export(kind, "hf", ckpt, out)  # the importer reads the checkpoint by role, as it is saved
    prompt = torch.randint(0, DIMS[kind]["V"], (2, PROMPT), generator=torch.Generator().manual_seed(1))
    return kind, model, ckpt, out, prompt, tmp


def load(out: str, impl: str = "sdpa"):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, dtype=torch.float32,
                                                attn_implementation=impl).eval()


def stepwise(model, ids, first: int = 4):
    """Logits through the KV cache: a prefix, then one token at a time."""
    with torch.no_grad():
        o = model(ids[:, :first], use_cache=True)
        steps, cache = [o.logits], getattr(o, "cache", None) or o.past_key_values
        for t in range(first, ids.shape[1]):
            o = model(ids[:, t:t + 1], past_key_values=cache, use_cache=True)
            cache = getattr(o, "cache", None) or o.past_key_values
            steps.append(o.logits)
    return torch.cat(steps, 1), cache


def layer_types(model) -> list:
    """Gemma 3's config lists them; Mistral's slides on every layer."""
    return getattr(model.config, "layer_types", None) or ["sliding_attention"] * model.config.num_hidden_layers


def test_config_is_written_as_transformers_writes_its_own(case):
    kind, model, _, out, _, _ = case
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["sliding_window"] == WINDOW
    assert cfg["layer_types"] == layer_types(model)
    assert cfg["num_hidden_layers"] == model.config.num_hidden_layers
    assert cfg["head_dim"] == model.config.head_dim
    if kind == "gemma3":
        assert cfg["head_dim"] != cfg["hidden_size"] // cfg["num_attention_heads"]
        assert cfg["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
        assert cfg["rope_parameters"] == model.config.rope_parameters
        assert cfg["tie_word_embeddings"] is True
    else:
        assert cfg["layer_types"] == ["sliding_attention"] * 2
        assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0}


def test_logits_equal_transformers_with_and_without_the_cache(case):
    kind, model, _, out, ids, _ = case
    with torch.no_grad():
        want = model(ids, use_cache=False).logits
    for impl in ("sdpa", "eager"):
        exp = load(out, impl)
        with torch.no_grad():
            full = exp(ids, use_cache=False).logits
        assert (full - want).abs().max().item() < ATOL, impl
    cached, cache = stepwise(load(out), ids)
    assert (cached - want).abs().max().item() < ATOL
    # the cache keeps the last window - 1 positions on sliding layers, all on full ones
    kept = [layer.keys.shape[-2] for layer in cache.layers]
    assert kept == [WINDOW - 1 if t == "sliding_attention" else PROMPT for t in layer_types(model)]


def test_greedy_tokens_equal_transformers_with_and_without_the_cache(case):
    kind, model, _, out, ids, _ = case
    exp = load(out)
    with torch.no_grad():
        want = model.generate(ids[:1], max_new_tokens=8, do_sample=False, pad_token_id=0)
        for use_cache in (True, False):
            got = exp.generate(ids[:1], max_new_tokens=8, do_sample=False, pad_token_id=0, use_cache=use_cache)
            assert got.tolist() == want.tolist(), use_cache


def test_dropping_the_window_would_show(case):
    """Full attention (the model with a window longer than the prompt) is another model
    past the window: the comparisons above tell them apart."""
    kind, model, _, out, ids, tmp = case
    full = hf_model(kind, sliding_window=4 * PROMPT)
    with torch.no_grad():
        want, without = model(ids).logits, full(ids).logits
        got = load(out)(ids).logits
    assert (without[:, :WINDOW] - want[:, :WINDOW]).abs().max().item() < ATOL  # the same up to the window
    assert (without - got).abs().max().item() > 100 * ATOL


SERVE = r'''
if __name__ == "__main__":
    import json, sys
    from vllm import LLM, SamplingParams
    prompts, runs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    outs = {}
    for name, directory, impl in runs:
        kw = {"model_impl": "transformers"} if impl == "transformers" else {}
        llm = LLM(model=directory, trust_remote_code=True, skip_tokenizer_init=True, dtype="float32",
                  enforce_eager=True, max_model_len=128, max_num_seqs=2, seed=0, **kw)
        res = llm.generate([{"prompt_token_ids": p} for p in prompts[name]],
                           SamplingParams(max_tokens=8, temperature=0, detokenize=False, logprobs=1))
        outs[f"{name}/{impl}"] = {
            "tokens": [list(o.outputs[0].token_ids) for o in res],
            "logprobs": [[lp[t].logprob for lp, t in zip(o.outputs[0].logprobs, o.outputs[0].token_ids)]
                         for o in res],
            "class": llm.apply_model(lambda m: type(m).__module__ + "." + type(m).__name__)[0]}
        del llm
    print(json.dumps(outs))
'''


def test_vllm_gives_transformers_tokens_through_both_model_implementations(tmp_path):
    """Both models in one script: the native model of the --vllm directory's plugin
    (pip-installed into a directory of its own), and vLLM's Transformers backend."""
    from envs import require_vllm, run_in_env
    python = require_vllm()
    site = tmp_path / "site"
    prompts, runs, want = {}, [], {}
    for kind in ("gemma3", "mistral"):
        model = hf_model(kind)
        ckpt = str(tmp_path / kind / "checkpoint")
        model.save_pretrained(ckpt)
        out = str(tmp_path / kind / "vllm")
        export(kind, "vllm", ckpt, out)
        subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                        "--no-build-isolation", "--target", str(site), os.path.join(out, "vllm_plugin")],
                       check=True, capture_output=True, text=True, timeout=300)
        g = torch.Generator().manual_seed(2)
        prompts[kind] = [torch.randint(0, DIMS[kind]["V"], (n,), generator=g).tolist() for n in (PROMPT, 13)]
        want[kind] = []
        full = hf_model(kind, sliding_window=4 * PROMPT)  # the model with its window dropped
        for p in prompts[kind]:
            with torch.no_grad():
                seq = model.generate(torch.tensor([p]), max_new_tokens=8, do_sample=False, pad_token_id=0)
                logp = model(seq).logits.log_softmax(-1)[0]
                dropped = full(seq).logits.log_softmax(-1)[0]
            new = seq[0, len(p):].tolist()
            want[kind].append((new, [logp[len(p) - 1 + k, t].item() for k, t in enumerate(new)]))
            if len(p) == PROMPT:  # past the window, the comparison below tells the two apart
                assert max(abs(logp[len(p) - 1 + k, t].item() - dropped[len(p) - 1 + k, t].item())
                           for k, t in enumerate(new)) > 1e-2
        # the native model for both; vLLM's Transformers backend for Gemma 3, whose mixed
        # layer types it reads from config.json (one engine fewer: each starts in ~30 s)
        runs += [(kind, out, "native")] + ([(kind, out, "transformers")] if kind == "gemma3" else [])
    got = run_in_env(python, SERVE, json.dumps(prompts), json.dumps(runs), timeout=900,
                     env={"PYTHONPATH": str(site)}).result
    for kind, _, impl in runs:
        r = got[f"{kind}/{impl}"]
        if impl == "native":
            assert r["class"].startswith(f"shapescript_vllm_{kind}.model."), r["class"]
        else:
            assert r["class"].endswith("TransformersForCausalLM"), r["class"]
        for (tokens, logprobs), t, lp in zip(want[kind], r["tokens"], r["logprobs"]):
            assert t == tokens, f"{kind}/{impl}"
            assert max(abs(a - b) for a, b in zip(lp, logprobs)) < ATOL, f"{kind}/{impl}"
