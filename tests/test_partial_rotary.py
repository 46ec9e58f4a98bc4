"""Partial rotary (spec v0.3's `rotary_dims`) in the families that rotate part of each head,
told apart by their graphs (blocks side by side, layer norms, biases): GPT-NeoX / Pythia
(`examples/pythia.ss`) and Phi-2 (`tests/programs/gguf/phi2.ss`).

transformers' own GPTNeoXForCausalLM and PhiForCausalLM (random weights, tiny configs)
are imported into the sources by role and exported: --hf against transformers (1e-4,
greedy with and without the cache), --gguf run by llama.cpp's gptneox and phi2 (5e-3:
llama.cpp computes every GELU from a float16 table, see docs/serving-engines.md), --vllm
served by vLLM through its Transformers backend and through the native plugin. The teeth:
the same weights with every feature rotated move the logits by more than 1e-2, and the
import says so (E3316).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from checkout import ROOT

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")

from import_support import greedy, load_export, logits, max_diff, run_cli  # noqa: E402
from test_language_v03 import PROMPT, _randomize  # noqa: E402

PYTHIA = os.path.join(ROOT, "examples", "pythia.ss")
PHI2 = os.path.join(ROOT, "tests", "programs", "gguf", "phi2.ss")
DIMS = ("--dim", "V=256", "--dim", "D=256", "--dim", "H=4", "--dim", "F=512", "--dim", "L=2")
GELU_TOL = 5e-3  # llama.cpp's GELU: the tanh approximation looked up in a float16 table
PROMPT_V = [t % 256 for t in PROMPT]  # 48 tokens


def neox(directory: str, parallel: bool = True) -> tf.PreTrainedModel:
    torch.manual_seed(2)
    cfg = tf.GPTNeoXConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                           num_attention_heads=4, rotary_pct=0.25, max_position_embeddings=128, layer_norm_eps=1e-5,
                           use_parallel_residual=parallel, hidden_act="gelu", tie_word_embeddings=False)
    model = _randomize(tf.GPTNeoXForCausalLM(cfg))
    model.save_pretrained(directory)
    return model


def _source(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _sequential(text: str) -> str:
    """examples/pythia.ss with its blocks in turn (use_parallel_residual false)."""
    old = ("    a = attention(p, layer_norm(x, p.ln1_w, p.ln1_b, over=D, eps=1e-5), pos)\n"
           "    return x + a + mlp(p, layer_norm(x, p.ln2_w, p.ln2_b, over=D, eps=1e-5))")
    new = ("    x = x + attention(p, layer_norm(x, p.ln1_w, p.ln1_b, over=D, eps=1e-5), pos)\n"
           "    return x + mlp(p, layer_norm(x, p.ln2_w, p.ln2_b, over=D, eps=1e-5))")
    assert old in text
    return text.replace(old, new)


def _export(target: str, source: str, out: str, weights: str, *extra) -> str:
    r = run_cli("export", source, f"--{target}", "-o", out, "--weights", weights, "--force", *DIMS, *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def test_a_gpt_neox_imports_into_pythia_and_runs_as_transformers(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    model = neox(ckpt)
    out = str(tmp_path / "pythia_hf")
    said = _export("hf", PYTHIA, out, ckpt)
    assert "E3316" not in said and "E3314" not in said, said
    cfg = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert cfg["rope_parameters"]["partial_rotary_factor"] == 0.25
    ours = load_export(out)
    assert max_diff(logits(ours, PROMPT_V), logits(model, PROMPT_V)) < 1e-4
    want = greedy(model, PROMPT_V[:6], 10)
    assert greedy(ours, PROMPT_V[:6], 10) == want
    with torch.no_grad():
        no_cache = ours.generate(torch.tensor([PROMPT_V[:6]]), max_new_tokens=10, do_sample=False,
                                 use_cache=False, pad_token_id=0)
    assert no_cache[0].tolist() == want
    # the teeth: every feature rotated, said by the import, and the logits move
    full = _source(tmp_path, "pythia_full.ss", open(PYTHIA, encoding="utf-8").read().replace(
        "rotary_dims=16", "rotary_dims=64"))
    said = _export("hf", full, str(tmp_path / "pythia_full_hf"), ckpt)
    assert ("warning: [E3316] the source's rotated head width (rotary_dims) is 64, but the checkpoint's config.json "
            "rope_parameters.partial_rotary_factor says 16") in said, said
    assert max_diff(logits(load_export(str(tmp_path / "pythia_full_hf")), PROMPT_V), logits(model, PROMPT_V)) > 1e-2


@pytest.mark.parametrize("parallel", [True, False], ids=["side_by_side", "in_turn"])
def test_a_gpt_neox_runs_in_llama_cpps_gptneox(parallel, tmp_path):
    import gguf
    from test_gguf_gemma import run_llama_cpp
    ckpt = str(tmp_path / "ckpt")
    model = neox(ckpt, parallel)
    text = open(PYTHIA, encoding="utf-8").read()
    source = PYTHIA if parallel else _source(tmp_path, "pythia_in_turn.ss", _sequential(text))
    out = str(tmp_path / "pythia.gguf")
    said = _export("gguf", source, out, ckpt)
    assert "E3316" not in said, said
    assert "llama.cpp's gptneox computes the MLP's gelu" in said  # exact gelu, said
    f = gguf.GGUFReader(out)
    assert f.get_field("general.architecture").contents() == "gptneox"
    assert f.get_field("gptneox.rope.dimension_count").contents() == 16
    assert f.get_field("gptneox.use_parallel_residual").contents() is parallel
    got, tokens = run_llama_cpp(out, PROMPT_V)
    want = logits(model, PROMPT_V)
    assert max_diff(got, want) < GELU_TOL
    assert tokens == greedy(model, PROMPT_V, len(tokens))[len(PROMPT_V):]
    # the .gguf imported back into the source: no E3316, transformers' logits from --hf
    back = str(tmp_path / "back_hf")
    said = _export("hf", source, back, out)
    assert "E3316" not in said, said
    assert max_diff(logits(load_export(back), PROMPT_V), want) < 1e-4


def test_a_phi_imports_into_a_phi2_source_and_runs_in_llama_cpps_phi2(tmp_path):
    """PhiForCausalLM with a zero output bias (the serving rules give the source's output
    layer none, E3302; a nonzero one is an E3314 tensor the source has no param for)."""
    import gguf
    from test_gguf_gemma import run_llama_cpp
    torch.manual_seed(3)
    cfg = tf.PhiConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                       num_attention_heads=4, partial_rotary_factor=0.5, max_position_embeddings=128,
                       layer_norm_eps=1e-5, hidden_act="gelu_new", tie_word_embeddings=False)
    model = _randomize(tf.PhiForCausalLM(cfg))
    with torch.no_grad():
        model.lm_head.bias.zero_()
    ckpt = str(tmp_path / "ckpt")
    model.save_pretrained(ckpt)
    source = _source(tmp_path, "phi2_hf.ss", open(PHI2, encoding="utf-8").read().replace(
        "@export(gguf)", "@export(hf, gguf)"))
    said = _export("hf", source, str(tmp_path / "phi_hf"), ckpt)
    assert "E3316" not in said and "`lm_head.bias`" in said, said  # zeros, left out, said
    want = logits(model, PROMPT_V)
    assert max_diff(logits(load_export(str(tmp_path / "phi_hf")), PROMPT_V), want) < 1e-4
    out = str(tmp_path / "phi.gguf")
    _export("gguf", source, out, ckpt)
    f = gguf.GGUFReader(out)
    assert f.get_field("general.architecture").contents() == "phi2"
    assert f.get_field("phi2.rope.dimension_count").contents() == 32
    assert not np.any(next(t.data for t in f.tensors if t.name == "output.bias"))
    got, tokens = run_llama_cpp(out, PROMPT_V)
    assert max_diff(got, want) < GELU_TOL
    assert tokens == greedy(model, PROMPT_V, len(tokens))[len(PROMPT_V):]
    with torch.no_grad():  # a real output bias has no place in the source: an error, not a drop
        model.lm_head.bias.normal_()
    model.save_pretrained(ckpt)
    r = run_cli("export", source, "--gguf", "-o", str(tmp_path / "biased.gguf"), "--weights", ckpt, "--force")
    assert r.returncode != 0 and "E3314" in r.stdout + r.stderr and "lm_head.bias" in r.stdout + r.stderr
    assert not os.path.exists(tmp_path / "biased.gguf")


# ---------------------------------------------------------------- vLLM, both paths
VLLM_GREEDY = r'''
if __name__ == "__main__":
    import json, sys
    from vllm import LLM, SamplingParams
    out, impl, prompts, n = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    kw = {"model_impl": "transformers"} if impl == "transformers" else {}
    llm = LLM(model=out, trust_remote_code=True, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
              max_model_len=128, max_num_seqs=2, seed=0, **kw)
    res = llm.generate([{"prompt_token_ids": p} for p in prompts],
                       SamplingParams(max_tokens=n, temperature=0, detokenize=False))
    print(json.dumps({"got": [list(o.outputs[0].token_ids) for o in res],
                      "classes": llm.apply_model(lambda m: type(m).__module__ + "." + type(m).__name__)}))
'''


def install_plugin(python: str, export_dir: str, site) -> str:
    """pip installs a --vllm export's vllm_plugin/ into `site` (a folder of its own, put on
    the script's path: the shared environment stays as it was); the PYTHONPATH to run with."""
    subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "--no-build-isolation", "--target", str(site), os.path.join(export_dir, "vllm_plugin")],
                   check=True, capture_output=True, text=True, timeout=300)
    return str(site)


def test_vllm_serves_pythia_on_both_paths(tmp_path):
    from envs import require_vllm, run_in_env
    python = require_vllm()
    ckpt = str(tmp_path / "ckpt")
    model = neox(ckpt)
    out = str(tmp_path / "pythia_vllm")
    _export("vllm", PYTHIA, out, ckpt)
    prompts = [PROMPT_V[:12], PROMPT_V[20:23]]
    want = [greedy(model, p, 8)[len(p):] for p in prompts]
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    r = run_in_env(python, VLLM_GREEDY, out, "transformers", json.dumps(prompts), 8, timeout=480, env=env).result
    assert r["got"] == want, r
    site = install_plugin(python, out, tmp_path / "site")  # the native model, from the export's plugin
    r = run_in_env(python, VLLM_GREEDY, out, "native", json.dumps(prompts), 8, timeout=480,
                   env={**env, "PYTHONPATH": site}).result
    assert r["classes"][0].startswith("shapescript_vllm_") and r["classes"][0].endswith("ForCausalLM"), r
    assert r["got"] == want, r
