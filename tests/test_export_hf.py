"""The Hugging Face export in real transformers: llama and its variants match
transformers' own LlamaForCausalLM, gpt2 its GPT2LMHeadModel, the classifier plain torch."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_support import (OK_PROGRAMS, VARIANTS, dim_flags, export_variant, load_causal_lm,  # noqa: E402
                        shapescript)

PROMPTS = torch.randint(0, 256, (3, 9), generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hf")
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = export_variant(name, tmp)
        return cache[name]
    return get


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_matches_llama(exported, name):
    ref, out = exported(name)
    model, info = load_causal_lm(out)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    with torch.no_grad():
        got, want = model(PROMPTS).logits, ref(PROMPTS).logits
    assert got.shape == want.shape == (3, 9, 256)
    assert (got - want).abs().max().item() < 1e-4
    greedy = model.generate(PROMPTS[:1], max_new_tokens=8, do_sample=False)
    assert torch.equal(greedy, ref.generate(PROMPTS[:1], max_new_tokens=8, do_sample=False))


def test_layout_is_a_hugging_face_decoder(exported):
    _, out = exported("llama")
    model, _ = load_causal_lm(out)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["ShapeScriptLlamaForCausalLM"]
    assert set(cfg["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForCausalLM"}
    assert {k: cfg[k] for k in ("vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads",
                                "head_dim", "num_hidden_layers", "tie_word_embeddings")} == {
        "vocab_size": 256, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 64, "num_hidden_layers": 2, "tie_word_embeddings": False}
    assert (cfg["V"], cfg["D"], cfg["Dh"], cfg["G"]) == (256, 256, 64, 2)
    assert isinstance(model.model.embed, torch.nn.Embedding)
    assert isinstance(model.model.layers[0].attn.wq, torch.nn.Linear)
    cores = [m for m in model.modules() if type(m).__name__ == "CausalAttention"]
    assert [c.layer_idx for c in cores] == [0, 1]
    assert model.model.layers[1].attn.attention is cores[1]
    assert cores[0].num_key_value_groups == 2
    hidden = model.model(PROMPTS).last_hidden_state
    assert hidden.shape == (3, 9, 256)
    mapping = json.loads((out / "shapescript-weights.json").read_text())["keys"]
    assert mapping["layers.1.attn.wk"] == "model.layers.1.attn.wk.weight"
    assert mapping["lm_head"] == "lm_head.weight"
    modeling = (out / "modeling_llama.py").read_text()
    assert "# line 42: o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])" in modeling
    assert "ALL_ATTENTION_FUNCTIONS" in modeling and "import shapescript" not in modeling


def test_kv_cache_holds_key_value_heads(exported):
    _, out = exported("llama")
    model, _ = load_causal_lm(out)
    res = model(PROMPTS[:1], use_cache=True)
    cache = getattr(res, "cache", None) or res.past_key_values
    k = cache.layers[0].keys if hasattr(cache, "layers") else cache.key_cache[0]
    assert k.shape == (1, 2, 9, 64)  # Hkv heads, not H


def test_a_repeat_in_a_helper_keeps_the_key_value_heads(exported):
    """`k = widen(k)` with `fn widen(t: [b Hkv n Dh]) -> [b H n Dh]`: the plan finds the
    repeat in the helper, as gguf's head_count_kv does (logits: test_variant_matches_llama)."""
    _, out = exported("llama_widen")
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (4, 2)
    model, _ = load_causal_lm(out)
    cores = [m for m in model.modules() if type(m).__name__ == "CausalAttention"]
    assert [c.num_key_value_groups for c in cores] == [2, 2]
    res = model(PROMPTS[:1], use_cache=True)
    cache = getattr(res, "cache", None) or res.past_key_values
    k = cache.layers[0].keys if hasattr(cache, "layers") else cache.key_cache[0]
    assert k.shape == (1, 2, 9, 64)  # Hkv heads, not H


def test_the_vllm_export_of_a_repeat_in_a_helper_keeps_the_key_value_heads(tmp_path):
    _, out = export_variant("llama_widen", tmp_path, target="vllm")
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (4, 2)
    (native,) = (out / "vllm_plugin").rglob("model.py")
    # PagedAttention gets num_kv_heads = num_heads // num_key_value_groups: H // 2
    assert native.read_text().count("CausalAttention(config, layer_idx, H, 2, Dh ** -0.5, Dh)") == 1


def test_left_padded_batch_generates_each_prompt(exported):
    _, out = exported("llama")
    model, _ = load_causal_lm(out)
    a, b = PROMPTS[0, :9], PROMPTS[1, :5]
    ids = torch.stack([a, torch.cat([torch.zeros(4, dtype=torch.long), b])])
    mask = torch.tensor([[1] * 9, [0] * 4 + [1] * 5])
    both = model.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=0)
    alone_a = model.generate(a[None], max_new_tokens=8, do_sample=False)
    alone_b = model.generate(b[None], max_new_tokens=8, do_sample=False)
    assert torch.equal(both[0, 9:], alone_a[0, 9:])
    assert torch.equal(both[1, 9:], alone_b[0, 5:])


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_attention_implementations_agree(exported, implementation):
    ref, out = exported("llama")
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(str(out), trust_remote_code=True,
                                                 attn_implementation=implementation).eval()
    with torch.no_grad():
        assert (model(PROMPTS).logits - ref(PROMPTS).logits).abs().max().item() < 1e-4


def test_save_pretrained_round_trip(exported, tmp_path):
    _, out = exported("llama")
    model, _ = load_causal_lm(out)
    model.save_pretrained(tmp_path / "saved")
    again, info = load_causal_lm(tmp_path / "saved")
    assert not info["missing_keys"] and not info["unexpected_keys"]
    with torch.no_grad():
        assert torch.equal(model(PROMPTS).logits, again(PROMPTS).logits)


def test_gpt2_matches_transformers(tmp_path):
    from safetensors.torch import save_file
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    ref = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_embd=256, n_layer=2, n_head=4,
                                     activation_function="gelu_new", resid_pdrop=0, embd_pdrop=0, attn_pdrop=0,
                                     layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0)).eval()
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_((1 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else 0)
                    + 0.08 * torch.randn_like(p))
    sd = ref.state_dict()
    w = {"wte": sd["transformer.wte.weight"], "wpe": sd["transformer.wpe.weight"],
         "lnf_w": sd["transformer.ln_f.weight"], "lnf_b": sd["transformer.ln_f.bias"]}
    for i in range(2):
        h = f"transformer.h.{i}."
        p = f"layers.{i}."
        w.update({p + "ln1_w": sd[h + "ln_1.weight"], p + "ln1_b": sd[h + "ln_1.bias"],
                  p + "ln2_w": sd[h + "ln_2.weight"], p + "ln2_b": sd[h + "ln_2.bias"],
                  p + "w_qkv": sd[h + "attn.c_attn.weight"].T, p + "b_qkv": sd[h + "attn.c_attn.bias"],
                  p + "w_o": sd[h + "attn.c_proj.weight"].T, p + "b_o": sd[h + "attn.c_proj.bias"],
                  p + "w_fc": sd[h + "mlp.c_fc.weight"].T, p + "b_fc": sd[h + "mlp.c_fc.bias"],
                  p + "w_proj": sd[h + "mlp.c_proj.weight"].T, p + "b_proj": sd[h + "mlp.c_proj.bias"]})
    save_file({k: v.contiguous() for k, v in w.items()}, str(tmp_path / "w.safetensors"))
    out = tmp_path / "gpt2-hf"
    shapescript("export", OK_PROGRAMS / "gpt2.ss", "--hf", "--weights", tmp_path / "w.safetensors",
                *dim_flags({"V": 256, "D": 256, "H": 4, "P": 64, "L": 2}), "-o", out)
    model, info = load_causal_lm(out)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["tie_word_embeddings"] is True and cfg["max_position_embeddings"] == 64
    assert model.lm_head.weight.data_ptr() == model.model.wte.weight.data_ptr()
    with torch.no_grad():
        assert (model(PROMPTS).logits - ref(PROMPTS).logits).abs().max().item() < 1e-4
    assert torch.equal(model.generate(PROMPTS[:1], max_new_tokens=8, do_sample=False),
                       ref.generate(PROMPTS[:1], max_new_tokens=8, do_sample=False))


def test_classifier_is_an_auto_model(tmp_path):
    from safetensors.torch import save_file
    from transformers import AutoModel
    g = torch.Generator().manual_seed(3)
    w = {"w1": torch.randn(256, 64, generator=g), "b1": torch.randn(256, generator=g),
         "w2": torch.randn(10, 256, generator=g), "b2": torch.randn(10, generator=g)}
    save_file(w, str(tmp_path / "w.safetensors"))
    out = tmp_path / "clf"
    shapescript("export", OK_PROGRAMS / "classifier.ss", "--hf", "--weights", tmp_path / "w.safetensors", "-o", out)
    model, info = AutoModel.from_pretrained(str(out), trust_remote_code=True, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    x = torch.randn(5, 64, generator=g)
    want = torch.nn.functional.log_softmax(
        torch.nn.functional.linear(torch.nn.functional.gelu(torch.nn.functional.linear(x, w["w1"], w["b1"])),
                                   w["w2"], w["b2"]), dim=-1)
    with torch.no_grad():
        got = model(x)
    assert got.shape == (5, 10)
    assert (got - want).abs().max().item() < 1e-5


def test_deep_expressions_compile(tmp_path):
    """A 1,000-term sum and a 300-step pipe are valid code: they export and compute."""
    from transformers import AutoModel
    pipe = "x" + "".join("\n        |> scale(1.0)" for _ in range(300))
    src = tmp_path / "deep.ss"
    src.write_text("dim D = 8\nmodel M:\n    w: [D] = ones\n@export(hf)\n"
                   "fn forward(m: M, x: [b D]) -> [b D]:\n"
                   f"    y = {' + '.join(['x'] * 1000)}\n    z = {pipe}\n    return (y + z) * m.w\n")
    out = tmp_path / "deep-hf"
    shapescript("export", src, "--hf", "--random-weights", "-o", out)
    model = AutoModel.from_pretrained(str(out), trust_remote_code=True)
    x = torch.randn(2, 8)
    with torch.no_grad():
        assert torch.allclose(model(x), 1001 * x, rtol=1e-4, atol=1e-4)  # 1,000 float32 additions
