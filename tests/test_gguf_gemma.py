"""Gemma 3 (and Gemma 2) through `--gguf` (issue 21): transformers' own `Gemma3ForCausalLM` (6 layers, a
sliding window of 8 on five of every six, rope base 1e4 there and 1e6 on the sixth, a head
width of 64 where D / H is 32, query_pre_attn_scalar 48, tied embeddings), random weights,
saved with `save_pretrained`; imported by role into examples/gemma3.ss at that size (norm
weights w used as 1 + w, as the checkpoint stores them) and exported as llama.cpp's
`gemma3`. On a
40-token prompt (5x the window) real llama.cpp gives transformers' logits and greedy
tokens; the window is not dropped (full attention differs past it); the `.gguf` imports
back into the source exactly (its norms hold 1 + w, its query norm the folded scale).
"""
import os

import pytest

from checkout import ROOT

np = pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from gguf_support import hf_logits, llama_cpp_run, max_diff, program, run_cli

SOURCE = os.path.join(ROOT, "examples", "gemma3.ss")
DIMS = dict(V=256, D=128, H=4, Hkv=2, Dh=64, F=256, L=6, Q=48, W=8, P=256)
AT_SIZE = [x for k, v in DIMS.items() for x in ("--dim", f"{k}={v}")]
PROMPT = [(i * 37 + 11) % DIMS["V"] for i in range(5 * DIMS["W"])]
STEPS = 6
# llama.cpp's CPU GELU reads an f16 table (see docs/serving-engines.md): measured 1.5e-3
TOLERANCE = 5e-3


def gemma3(window: int, Q: int = DIMS["Q"]):
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    d = dict(DIMS, Q=Q)
    cfg = Gemma3TextConfig(
        vocab_size=d["V"], hidden_size=d["D"], intermediate_size=d["F"], num_hidden_layers=d["L"],
        num_attention_heads=d["H"], num_key_value_heads=d["Hkv"], head_dim=d["Dh"], sliding_window=window,
        query_pre_attn_scalar=d["Q"], max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}},
        pad_token_id=0, bos_token_id=2, eos_token_id=1)
    cfg._attn_implementation = "eager"
    model = Gemma3ForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # norm weights far from 0, so that a lost "1 +" changes the logits a lot
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() == 1 else 0.08))
    return model


def greedy_hf(model, tokens, use_cache: bool) -> list:
    import torch
    with torch.no_grad():
        out = model.generate(torch.tensor([tokens]), max_new_tokens=STEPS, do_sample=False, use_cache=use_cache,
                             pad_token_id=0, eos_token_id=None)
    return out[0, len(tokens):].tolist()


def run_llama_cpp(path: str, tokens):
    """All positions' logits of the prompt, then greedy tokens one at a time (through the cache)."""
    return llama_cpp_run(path, tokens, STEPS, n_ctx=64)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("gemma3")
    model = gemma3(DIMS["W"])
    ckpt = str(d / "hf")
    model.save_pretrained(ckpt)
    out = str(d / "gemma3.gguf")
    r = run_cli("export", SOURCE, "--gguf", "-o", out, "--weights", ckpt, "--force", *AT_SIZE)
    assert r.returncode == 0, r.stdout + r.stderr
    return model, ckpt, out, r.stdout + r.stderr


def test_a_gemma3_checkpoint_runs_in_llama_cpp_as_in_transformers(exported):
    model, _, out, log = exported
    assert "(gguf: gemma3," in log and "E3316" not in log
    ref = hf_logits(model, PROMPT)
    logits, tokens = run_llama_cpp(out, PROMPT)
    diff = max_diff(ref, logits)
    print(f"gemma3 llama.cpp vs transformers, {len(PROMPT)} tokens: max |logit diff| {diff:.2e}")
    assert diff < TOLERANCE
    assert (ref.argmax(-1) == logits.argmax(-1)).all()
    assert tokens == greedy_hf(model, PROMPT, use_cache=True) == greedy_hf(model, PROMPT, use_cache=False)


def test_the_window_is_not_dropped(exported):
    """Past the window, full attention is another model: llama.cpp stays with the windowed one."""
    model, _, out, _ = exported
    full = gemma3(len(PROMPT) + 1)
    full.load_state_dict(model.state_dict())
    logits, _ = run_llama_cpp(out, PROMPT)
    w = DIMS["W"]
    assert max_diff(hf_logits(full, PROMPT)[:w], logits[:w]) < TOLERANCE  # the same inside the window
    assert max_diff(hf_logits(full, PROMPT)[w:], logits[w:]) > 0.1


def test_the_file_says_what_llama_cpp_reads_with_the_norms_plus_one(exported):
    model, _, out, _ = exported
    r = gguf.GGUFReader(out)

    def field(key):
        return r.get_field(f"gemma3.{key}").contents()
    assert r.get_field("general.architecture").contents() == "gemma3"
    assert (field("attention.key_length"), field("attention.value_length")) == (64, 64)
    assert field("attention.sliding_window") == 8
    assert field("attention.sliding_window_pattern") == [True] * 5 + [False]
    assert (field("rope.freq_base"), field("rope.freq_base_swa")) == (1e6, 1e4)
    assert field("context_length") == 256  # the positions' bound
    t = {x.name: np.asarray(x.data) for x in r.tensors}
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert np.array_equal(t["output_norm.weight"], sd["model.norm.weight"] + np.float32(1))
    assert np.array_equal(t["blk.5.post_ffw_norm.weight"],
                          sd["model.layers.5.post_feedforward_layernorm.weight"] + np.float32(1))
    # llama.cpp scales the queries by 1/sqrt(64); the model by 1/sqrt(48): the ratio is in the query norm
    ratio = np.float32((48 ** -0.5) / (64 ** -0.5))
    want = (sd["model.layers.0.self_attn.q_norm.weight"] + np.float32(1)) * ratio
    assert max_diff(t["blk.0.attn_q_norm.weight"], want) < 1e-6
    assert np.array_equal(t["blk.0.attn_k_norm.weight"], sd["model.layers.0.self_attn.k_norm.weight"] + np.float32(1))
    assert "output.weight" not in t  # tied


def test_the_gguf_imports_back_into_the_source(exported, tmp_path):
    _, _, out, _ = exported
    again = str(tmp_path / "again.gguf")
    r = run_cli("export", SOURCE, "--gguf", "-o", again, "--weights", out, "--force", *AT_SIZE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" not in r.stdout + r.stderr
    a = {x.name: np.asarray(x.data) for x in gguf.GGUFReader(out).tensors}
    b = {x.name: np.asarray(x.data) for x in gguf.GGUFReader(again).tensors}
    assert a.keys() == b.keys()
    assert max(max_diff(a[k], b[k]) for k in a) < 1e-6


def converter_style_gguf(model, path: str) -> str:
    """The .gguf llama.cpp's convert_hf_to_gguf.py (Gemma3Model) writes for `model`: names
    from gguf-py's tables, every norm weight stored as 1 + w, the window and the global
    rope base, no scale (llama.cpp's is 1/sqrt(head_dim)), the output layer tied."""
    c = model.config
    w = gguf.GGUFWriter(path, "gemma3")
    w.add_name("converted")
    w.add_vocab_size(c.vocab_size)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_rope_freq_base(c.rope_parameters["full_attention"]["rope_theta"])
    w.add_sliding_window(c.sliding_window)
    w.add_tokenizer_model("none")
    names = gguf.TensorNameMap(gguf.MODEL_ARCH.GEMMA3, c.num_hidden_layers)
    for key, value in model.state_dict().items():
        if key == "lm_head.weight":
            continue
        arr = value.detach().numpy().astype(np.float32)
        if key.endswith("norm.weight"):
            arr = arr + np.float32(1)
        w.add_tensor(names.get_type_and_name(key, try_suffixes=(".weight",))[1], np.ascontiguousarray(arr))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_gemma3_gguf_as_llama_cpp_converts_it_imports_into_the_source(tmp_path):
    """The file holds 1 + w; the source's norms are rms_norm(x, 1.0 + w): w comes back, and
    the --hf export computes transformers' model (query_pre_attn_scalar = head_dim, as in
    Gemma 3 1B to 12B, whose files carry no scale)."""
    from import_support import load_export
    model = gemma3(DIMS["W"], Q=DIMS["Dh"])
    path = converter_style_gguf(model, str(tmp_path / "converted.gguf"))
    out = str(tmp_path / "hf")
    r = run_cli("export", SOURCE, "--hf", "-o", out, "--weights", path, "--force", *AT_SIZE, "--dim", f"Q={DIMS['Dh']}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" not in r.stdout + r.stderr
    diff = max_diff(hf_logits(model, PROMPT), hf_logits(load_export(out), PROMPT))
    print(f"gemma3 .gguf (converter-style) -> --hf vs transformers, {len(PROMPT)} tokens: {diff:.2e}")
    assert diff < 1e-4


# ---------------------------------------------------------------- gemma2
GEMMA2 = program("gemma2.ss")


def gemma2(caps=(None, None)):
    """transformers' Gemma2ForCausalLM at the size above, every other layer with the window,
    one rope base; `caps` (attention, logits): Gemma 2's softcapping (a source has none)."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM
    d = DIMS
    cfg = Gemma2Config(
        vocab_size=d["V"], hidden_size=d["D"], intermediate_size=d["F"], num_hidden_layers=d["L"],
        num_attention_heads=d["H"], num_key_value_heads=d["Hkv"], head_dim=d["Dh"], sliding_window=d["W"],
        query_pre_attn_scalar=d["Q"], max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=True,
        attn_logit_softcapping=caps[0], final_logit_softcapping=caps[1], pad_token_id=0, bos_token_id=2,
        eos_token_id=1)
    cfg._attn_implementation = "eager"
    model = Gemma2ForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() == 1 else 0.08))
    return model


def test_a_gemma2_checkpoint_runs_in_llama_cpp_as_in_transformers(tmp_path):
    """No per-head norms: the scale 1/sqrt(48) sits in the query rows; llama.cpp's caps,
    which it always applies, are written too large to change anything."""
    model = gemma2()
    ckpt = str(tmp_path / "hf")
    model.save_pretrained(ckpt)
    out = str(tmp_path / "gemma2.gguf")
    r = run_cli("export", GEMMA2, "--gguf", "-o", out, "--weights", ckpt, "--force", *AT_SIZE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(gguf: gemma2," in r.stdout + r.stderr and "E3316" not in r.stdout + r.stderr
    f = gguf.GGUFReader(out)
    assert f.get_field("gemma2.attention.sliding_window_pattern").contents() == [True, False] * 3
    ref = hf_logits(model, PROMPT)
    logits, tokens = run_llama_cpp(out, PROMPT)
    diff = max_diff(ref, logits)
    print(f"gemma2 llama.cpp vs transformers, {len(PROMPT)} tokens: max |logit diff| {diff:.2e}")
    assert diff < TOLERANCE
    assert tokens == greedy_hf(model, PROMPT, use_cache=True)


def test_gemma2_softcapping_the_source_lacks_is_an_e3316_warning(tmp_path):
    ckpt = str(tmp_path / "hf")
    gemma2(caps=(50.0, 30.0)).save_pretrained(ckpt)
    r = run_cli("export", GEMMA2, "--gguf", "-o", str(tmp_path / "g.gguf"), "--weights", ckpt, "--force", *AT_SIZE)
    assert r.returncode == 0, r.stdout + r.stderr
    said = [x for x in (r.stdout + r.stderr).splitlines() if "E3316" in x]
    assert [x.split(": the export keeps")[0] for x in said] == [
        "shapescript: warning: [E3316] the source's attention logit softcapping is none, but the checkpoint's "
        "config.json attn_logit_softcapping says 50",
        "shapescript: warning: [E3316] the source's final logit softcapping is none, but the checkpoint's "
        "config.json final_logit_softcapping says 30"]


def test_a_gemma3_checkpoint_of_another_attention_scale_is_folded_and_said(tmp_path):
    """The source scales by 1/sqrt(64), the checkpoint by 1/sqrt(48) (its
    query_pre_attn_scalar): the import folds the ratio into the query norms' weights, so
    the --hf export computes the original model, and one E3316 names both values."""
    from import_support import load_export
    model = gemma3(DIMS["W"])
    ckpt = str(tmp_path / "ckpt")
    model.save_pretrained(ckpt)
    out = str(tmp_path / "hf")
    r = run_cli("export", SOURCE, "--hf", "-o", out, "--weights", ckpt, "--force", *AT_SIZE, "--dim", "Q=64")
    assert r.returncode == 0, r.stdout + r.stderr
    said = [x for x in (r.stdout + r.stderr).splitlines() if "E3316" in x]
    assert said == [
        "shapescript: warning: [E3316] the source's attention scale is 1/sqrt(64), but the checkpoint's "
        "config.json query_pre_attn_scalar says 48 (a scale of 1/sqrt(48)): the export folds the difference "
        "into the weights of `layers.0.attn.q_norm` and 5 more (a factor of 1.1547): its outputs are the "
        "original model's, but those weights are not the checkpoint's"]
    assert max_diff(hf_logits(model, PROMPT), hf_logits(load_export(out), PROMPT)) < 1e-4
