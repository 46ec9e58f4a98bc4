"""Real checkpoints in (issue 17): transformers' own Llama, Mistral, Qwen2, Qwen3 and GPT-2
models, saved with `save_pretrained` (also sharded), exported through `--weights` into
ShapeScript sources matched by role; the exports run in transformers and llama.cpp and
give the original model's logits. GGUF files in, dequantized. Every bad input: its one
message, exit 1, nothing written."""
from __future__ import annotations

import json
import os

import pytest

from import_support import (SOURCES, TOKENS, export, greedy, hf_model, load_export, logits, max_diff,
                            requantize, save_checkpoint)

# (checkpoint kind, source, model options, sharded)
CASES = [
    ("llama", "llama", {}, False),
    ("llama", "llama", {}, True),
    ("mistral", "llama", {}, False),
    ("qwen2", "qwen2", {}, False),
    ("qwen3", "qwen3", {}, True),
    ("gpt2", "gpt2", {}, False),
    ("llama", "llama_other", {}, False),        # other names, fused k/v and gate/up, x @ W, interleaved
    ("llama", "llama_variant", {}, False),      # other names, helpers split differently
    ("llama", "llama_fused", {}, False),
    ("llama", "llama_tied", {"tied": True, "theta": 10000.0, "eps": 1e-6}, False),  # interleaved, tied
    # q, k, v as separate params from GPT-2's fused c_attn; no output-projection bias (zeros in the checkpoint)
    ("gpt2", "gpt2_separate", {"zero": "attn.c_proj.bias"}, False),
]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """One saved checkpoint per (kind, options, sharded), and its transformers model."""
    made = {}

    def get(kind, opts, shards):
        key = (kind, tuple(sorted(opts.items())), shards)
        if key not in made:
            model = hf_model(kind, **opts)
            d = tmp_path_factory.mktemp(f"{kind}-ckpt")
            made[key] = (save_checkpoint(model, str(d), shards), model)
        return made[key]
    return get


@pytest.mark.parametrize("kind,source,opts,shards", CASES,
                         ids=[f"{k}-{s}{'-sharded' if sh else ''}" for k, s, _, sh in CASES])
def test_checkpoint_exports_with_its_own_weights(checkpoints, tmp_path, kind, source, opts, shards):
    ckpt, ref = checkpoints(kind, opts, shards)
    if shards:
        assert os.path.isfile(os.path.join(ckpt, "model.safetensors.index.json"))
    out = tmp_path / "out"
    r = export(source, "hf", out, ckpt)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" not in r.stderr  # the sources' constants are the checkpoints'
    got = load_export(str(out))
    assert max_diff(logits(got), logits(ref)) < 1e-4
    assert greedy(got) == greedy(ref)


def test_a_bare_safetensors_with_hugging_face_names_is_read_by_role(checkpoints, tmp_path):
    ckpt, ref = checkpoints("llama", {}, False)
    out = tmp_path / "out"
    r = export("llama_other", "hf", out, os.path.join(ckpt, "model.safetensors"))
    assert r.returncode == 0, r.stderr
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4


def test_dims_the_source_leaves_open_are_read_from_the_checkpoint(checkpoints, tmp_path):
    from import_support import PROGRAMS, run_cli
    ckpt, ref = checkpoints("llama", {}, True)
    out = tmp_path / "out"
    r = run_cli("export", os.path.join(PROGRAMS, "import", "llama_open_dims.ss"), "--hf", "-o", out,
                "--weights", ckpt)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dims read from the checkpoint: L=2, V=300, D=64, F=128" in r.stderr
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4
    assert json.loads((out / "config.json").read_text())["D"] == 64


def test_head_counts_the_source_leaves_open_come_from_the_checkpoints_config(checkpoints, tmp_path):
    """examples/qwen3.ss leaves every size open: the heads hide in products (`[H*Dh D]`),
    so they are read from config.json, then from the GGUF metadata of the --gguf export."""
    from import_support import run_cli
    ckpt, ref = checkpoints("qwen3", {}, True)
    f = tmp_path / "q3.gguf"
    r = run_cli("export", SOURCES["qwen3"][0], "--gguf", "-o", f, "--weights", ckpt)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dims read from the checkpoint: L=2, V=300, D=64, Dh=16, F=128, H=4, Hkv=2" in r.stderr
    out = tmp_path / "hf"
    r = run_cli("export", SOURCES["qwen3"][0], "--hf", "-o", out, "--weights", f)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dims read from the checkpoint: L=2, V=300, D=64, Dh=16, F=128, H=4, Hkv=2" in r.stderr
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["H"], cfg["Hkv"], cfg["Dh"]) == (4, 2, 16)
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4


def test_an_untied_source_gets_a_copy_of_a_tied_checkpoints_embedding(checkpoints, tmp_path):
    ckpt, ref = checkpoints("qwen3", {}, True)
    assert ref.config.tie_word_embeddings
    src = tmp_path / "qwen3_untied.ss"
    text = open(SOURCES["qwen3"][0], encoding="utf-8").read()
    text = text.replace("    norm: [D] = ones\n\nfn", "    norm: [D] = ones\n    lm_head: [V D]\n\nfn")
    text = text.replace("|> linear(m.embed)", "|> linear(m.lm_head)")
    src.write_text(text)
    from import_support import run_cli
    out = tmp_path / "out"
    r = run_cli("export", src, "--hf", "-o", out, "--weights", ckpt, *sum((["--dim", f"{k}={v}"] for k, v in
                                                                            SOURCES["qwen3"][2].items()), []))
    assert r.returncode == 0, r.stderr
    assert "`lm_head` gets a copy of it" in r.stderr
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4


# ------------------------------------------------------------------ llama.cpp runs the --gguf export
@pytest.mark.parametrize("kind,source", [("llama", "llama"), ("qwen3", "qwen3"), ("llama", "llama_other")])
def test_gguf_export_of_a_checkpoint_runs_in_llama_cpp(checkpoints, tmp_path, kind, source):
    from gguf_support import llama_cpp_logits
    ckpt, ref = checkpoints(kind, {}, False)
    out = tmp_path / "m.gguf"
    r = export(source, "gguf", out, ckpt)
    assert r.returncode == 0, r.stderr
    assert max_diff(llama_cpp_logits(str(out), TOKENS), logits(ref)) < 1e-3


# ------------------------------------------------------------------ GGUF in
@pytest.fixture(scope="module")
def llama_gguf(checkpoints, tmp_path_factory):
    """An f32 GGUF of the tiny Llama, by our --gguf export (llama.cpp's layout: Q/K rows
    interleaved), and the checkpoint's model."""
    ckpt, ref = checkpoints("llama", {}, False)
    f = tmp_path_factory.mktemp("gguf") / "llama-f32.gguf"
    r = export("llama", "gguf", f, ckpt)
    assert r.returncode == 0, r.stderr
    return str(f), ref


def test_an_f32_gguf_imports_exactly(llama_gguf, tmp_path):
    f, ref = llama_gguf
    out = tmp_path / "out"
    r = export("llama_variant", "hf", out, f)  # another source than the one that wrote it
    assert r.returncode == 0, r.stderr
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_a_quantized_gguf_is_dequantized_as_transformers_does(llama_gguf, tmp_path, qtype):
    """Against transformers loading the same file (`gguf_file=`), which dequantizes it and
    undoes llama.cpp's Q/K permutation itself."""
    import torch
    from transformers import AutoModelForCausalLM
    f, ref = llama_gguf
    q = requantize(f, str(tmp_path / f"llama-{qtype}.gguf"), qtype)
    out = tmp_path / "out"
    r = export("llama_other", "hf", out, q)
    assert r.returncode == 0, r.stderr
    theirs = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=os.path.basename(q),
                                                  dtype=torch.float32).eval()
    ours = logits(load_export(str(out)))
    assert max_diff(ours, logits(theirs)) < 1e-4
    assert max_diff(ours, logits(ref)) > 1e-3  # it was quantized: the test sees the dequantization


# ------------------------------------------------------------------ bad inputs: one message, exit 1, nothing written
def _fails(r, out) -> str:
    assert r.returncode == 1, r.stdout + r.stderr
    assert not os.path.exists(out)
    assert "Traceback" not in r.stdout + r.stderr
    return r.stdout + r.stderr


def test_another_architecture_is_one_e3314(checkpoints, tmp_path):
    ckpt, _ = checkpoints("llama", {}, False)
    out = tmp_path / "out"
    err = _fails(export("qwen3", "hf", out, ckpt), out)
    assert err.count("error[") == 1
    assert "error[E3314]: the checkpoint is a `llama` model, but the source is a qwen3 model" in err
    assert "LlamaForCausalLM" in err
    assert "`layers.0.attn.q_norm` (line 21) is block 0's per-head query norm" in err
    assert "`layers.1.attn.q_norm`" not in err  # each kind of role once
    assert "and 2 more tensors like these" in err


def test_qwen2_biases_into_a_llama_source_is_one_e3314(checkpoints, tmp_path):
    ckpt, _ = checkpoints("qwen2", {}, False)
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, ckpt), out)
    assert err.count("error[") == 1
    assert "the checkpoint is a `qwen2` model, but the source is a llama model" in err
    assert "`model.layers.0.self_attn.q_proj.bias` is block 0's query projection bias, which the source " \
           "has no param for" in err


def test_a_bias_the_source_lacks_is_one_e3314_unless_it_is_zeros(checkpoints, tmp_path):
    ckpt, _ = checkpoints("gpt2", {}, False)
    out = tmp_path / "out"
    err = _fails(export("gpt2_separate", "hf", out, ckpt), out)
    assert err.count("error[") == 1
    assert "the checkpoint has 2 tensors the source has no param for" in err
    assert "`transformer.h.0.attn.c_proj.bias` is block 0's attention output projection bias" in err
    ckpt, _ = checkpoints("gpt2", {"zero": "attn.c_proj.bias"}, False)
    r = export("gpt2_separate", "hf", out, ckpt)
    assert r.returncode == 0
    assert "2 biases of zeros in the checkpoint (`transformer.h.0.attn.c_proj.bias`...) have no param" in r.stderr


def test_a_model_type_the_importer_does_not_know_is_one_e3314(checkpoints, tmp_path):
    import shutil
    ckpt, _ = checkpoints("llama", {}, False)
    other = tmp_path / "phi"
    shutil.copytree(ckpt, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg.update(model_type="phi3", architectures=["Phi3ForCausalLM"])
    (other / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, other), out)
    assert "error[E3314]: the checkpoint is a `phi3` model, which the importer doesn't know" in err


def test_a_dim_the_checkpoint_contradicts_is_one_e3315(checkpoints, tmp_path):
    ckpt, _ = checkpoints("llama", {}, False)
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, ckpt, "--dim", "F=256"), out)
    assert err.count("error[") == 1
    assert ("error[E3315]: `F` is 256 in the source, but the checkpoint's "
            "`model.layers.0.mlp.gate_proj.weight` says 128") in err
    assert "examples/llama.ss:20:5" in err


def test_a_head_count_the_checkpoint_contradicts_is_one_e3315(checkpoints, tmp_path):
    ckpt, _ = checkpoints("llama", {}, False)
    out = tmp_path / "out"
    err = _fails(export("llama", "hf", out, ckpt, "--dim", "H=8", "--dim", "Hkv=4"), out)
    assert err.count("error[") == 1
    assert "error[E3315]: the source has 8 query heads, but the checkpoint's config.json " \
           "num_attention_heads says 4" in err


def test_a_constant_the_config_contradicts_is_an_e3316_warning(checkpoints, tmp_path):
    ckpt, _ = checkpoints("llama", {"theta": 10000.0}, False)
    out = tmp_path / "out"
    r = export("llama", "hf", out, ckpt)
    assert r.returncode == 0
    assert ("[E3316] the source's rotary theta is 500000, but the checkpoint's config.json rope_theta "
            "says 10000") in r.stderr
    assert r.stderr.count("E3316") == 1



@pytest.mark.parametrize("change, warned", [
    # an integer too large for a float (JSON has no limit), and one past its range as a float
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 10 ** 400}, "rms_norm_eps": float("inf")},
     ["rope_theta says inf", "rms_norm_eps says inf"]),
    # a rope type that is no name, and yarn's fields that are no numbers
    ({"rope_parameters": {"rope_type": {"yarn": 1}, "rope_theta": 500000.0}}, []),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": "4", "mscale": [1],
                          "mscale_all_dim": {}}}, ["rope scaling"]),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 10 ** 400, "mscale": 1,
                          "mscale_all_dim": 10 ** 400}}, ["rope scaling"]),
    # a head width no tensor has: the width over the heads (16) is the config's
    ({"head_dim": 10 ** 400, "partial_rotary_factor": 0.5}, ["partial_rotary_factor says 8"]),
])
def test_config_values_of_any_type_or_size_are_read_as_data(checkpoints, tmp_path, change, warned):
    # config.json is anyone's: its numbers are compared, never trusted to convert; a value
    # that is no number is as good as absent (an internal error before: unhashable type,
    # int too large to convert to float)
    ckpt, _ = checkpoints("llama", {}, False)
    mine = tmp_path / "ckpt"
    mine.mkdir()
    for f in os.listdir(ckpt):
        (mine / f).write_bytes(open(os.path.join(ckpt, f), "rb").read())
    config = json.loads((mine / "config.json").read_text())
    config.update(change)
    (mine / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    r = export("llama", "hf", out, str(mine))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert os.path.isfile(out / "model.safetensors")
    assert r.stderr.count("[E3316]") == len(warned), r.stderr
    for w in warned:
        assert w in r.stderr, r.stderr

def test_a_truncated_shard_a_missing_shard_a_corrupt_gguf(checkpoints, llama_gguf, tmp_path):
    import shutil
    ckpt, _ = checkpoints("llama", {}, True)
    out = tmp_path / "out"
    trunc = tmp_path / "trunc"
    shutil.copytree(ckpt, trunc)
    shard = sorted(p for p in os.listdir(trunc) if p.startswith("model-"))[-1]
    os.truncate(trunc / shard, os.path.getsize(trunc / shard) - 100)
    err = _fails(export("llama", "hf", out, trunc), out)
    assert f"from {shard}:" in err and "(the file is truncated)" in err
    missing = tmp_path / "missing"
    shutil.copytree(ckpt, missing)
    os.remove(missing / shard)
    err = _fails(export("llama", "hf", out, missing), out)
    assert f"its shard `{shard}` does not exist" in err
    f, _ = llama_gguf
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(open(f, "rb").read()[:5000])
    err = _fails(export("llama", "gguf", out, bad), out)
    assert "cut.gguf is not a GGUF file that can be read" in err and "truncated" in err



NOT_UTF8 = b"\xff\xfe\xfd\xfc\xfb\xfa"


def _with_metadata(src: str, dst, changes: dict) -> str:
    """A copy of a GGUF file with some metadata set: {key: (value, type, sub type)}; a
    string value's "XFFXFE" is written as six bytes no UTF-8 string holds (the metadata
    comes before the tensors: its first occurrence)."""
    import gguf
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(str(dst), arch=r.get_field("general.architecture").contents(), use_temp_file=False)
    fields = {n: (f.contents(), f.types[0], f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None)
              for n, f in r.fields.items() if not n.startswith("GGUF.") and n != "general.architecture"}
    for name, (value, vtype, sub) in {**fields, **changes}.items():
        w.add_key_value(name, value, vtype, sub_type=sub)
    for t in r.tensors:
        w.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in r.tensors:
        w.write_tensor_data(t.data)
    w.close()
    data = open(dst, "rb").read()
    open(dst, "wb").write(data.replace(b"XFFXFE", NOT_UTF8, 1))
    return str(dst)


def test_a_gguf_vocabulary_that_is_not_utf8_is_copied_as_it_is_and_a_huge_context_is_left_out(llama_gguf, tmp_path):
    from shapescript_core.arch.match import DEFAULT_CONTEXT
    # anyone's file: strings that are not UTF-8 (llama.cpp reads token texts as bytes) and
    # a context length no uint32 holds were internal errors (UnicodeDecodeError, struct.error)
    import gguf
    f, _ = llama_gguf
    T = gguf.GGUFValueType
    odd = _with_metadata(f, tmp_path / "odd.gguf", {
        "tokenizer.ggml.model": ("gpt2", T.STRING, None),
        "tokenizer.ggml.tokens": ([f"t{i}" for i in range(299)] + ["XFFXFE"], T.ARRAY, T.STRING),
        "tokenizer.ggml.token_type": ([1] * 300, T.ARRAY, T.INT32),
        "llama.context_length": (2 ** 64 - 1, T.UINT64, None),
    })
    out = tmp_path / "out.gguf"
    r = export("llama", "gguf", out, odd)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    written = gguf.GGUFReader(str(out))
    tokens = written.get_field("tokenizer.ggml.tokens")
    assert bytes(tokens.parts[tokens.data[-1]]) == NOT_UTF8  # the file's bytes, as they were
    assert bytes(tokens.parts[tokens.data[5]]) == b"t5"
    assert written.get_field("llama.context_length").contents() == DEFAULT_CONTEXT  # as if not said
    r = export("llama", "hf", tmp_path / "hf", odd)
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr

# ------------------------------------------------------------------ the tokenizer and settings come along
CHAT = "{% for m in messages %}<|endoftext|>{{ m['content'] }}{% endfor %}"


@pytest.fixture(scope="module")
def with_tokenizer(tmp_path_factory):
    """A tiny Llama checkpoint of the tokenizer's vocabulary (320), with that tokenizer,
    a chat template and generation settings saved beside it, as a Hub checkpoint has them."""
    from test_gguf_tokenizer import V, train
    d = str(tmp_path_factory.mktemp("llama-tok"))
    model = hf_model("llama", seed=3, V=V)
    model.generation_config.bos_token_id = 0
    model.generation_config.eos_token_id = 0
    model.generation_config.pad_token_id = 0
    save_checkpoint(model, d)
    fast = train(d)
    fast.chat_template = CHAT
    fast.save_pretrained(d)
    assert os.path.isfile(os.path.join(d, "chat_template.jinja"))
    return d, model, fast, V


def test_the_tokenizer_and_generation_settings_come_along_into_hf(with_tokenizer, tmp_path):
    from transformers import AutoTokenizer
    d, _, fast, V = with_tokenizer
    out = tmp_path / "out"
    r = export("llama", "hf", out, d, "--dim", f"V={V}")
    assert r.returncode == 0, r.stderr
    for f in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        assert (out / f).is_file(), f
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["bos_token_id"], cfg["eos_token_id"], cfg["pad_token_id"]) == (0, 0, 0)
    assert cfg["max_position_embeddings"] == 256
    tok = AutoTokenizer.from_pretrained(str(out))
    assert tok.encode("The quick brown fox.") == fast.encode("The quick brown fox.")
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "<|endoftext|>hi"


def test_tokenizer_overrides_the_checkpoints(with_tokenizer, tmp_path):
    from test_gguf_tokenizer import train
    d, _, _, V = with_tokenizer
    other = tmp_path / "other_tok"
    train(str(other), llama3_split=True)
    out = tmp_path / "out"
    r = export("llama", "hf", out, d, "--dim", f"V={V}", "--tokenizer", other)
    assert r.returncode == 0, r.stderr
    assert (out / "tokenizer.json").read_text() == (other / "tokenizer.json").read_text()
    assert not (out / "chat_template.jinja").exists()


def test_the_vocabulary_and_context_come_along_into_gguf_and_back(with_tokenizer, tmp_path):
    """HF checkpoint -> --gguf embeds its vocabulary and context length; that .gguf -> --hf
    gets a tokenizer transformers builds from it, and -> --gguf the same vocabulary."""
    from gguf import GGUFReader
    from transformers import AutoTokenizer
    d, model, fast, V = with_tokenizer
    f = tmp_path / "m.gguf"
    r = export("llama", "gguf", f, d, "--dim", f"V={V}")
    assert r.returncode == 0, r.stderr
    fields = GGUFReader(str(f)).fields
    assert fields["tokenizer.ggml.model"].contents() == "gpt2"
    assert fields["tokenizer.ggml.eos_token_id"].contents() == 0
    assert fields["llama.context_length"].contents() == 256
    out = tmp_path / "hf"
    r = export("llama_other", "hf", out, f, "--dim", f"Vocab={V}")
    assert r.returncode == 0, r.stderr
    tok = AutoTokenizer.from_pretrained(str(out))
    text = "Shapes are names: [b n D]"
    assert tok.encode(text, add_special_tokens=False) == fast.encode(text, add_special_tokens=False)
    assert json.loads((out / "config.json").read_text())["eos_token_id"] == 0
    assert max_diff(logits(load_export(str(out))), logits(model)) < 1e-4
    again = tmp_path / "again.gguf"
    r = export("llama_other", "gguf", again, f, "--dim", f"Vocab={V}")
    assert r.returncode == 0, r.stderr
    back = GGUFReader(str(again)).fields
    for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.pre"):
        assert back[k].contents() == fields[k].contents()


# ------------------------------------------------------------------ --weights-map
MAP = '''# the tiny Llama under names no table knows, into llama_other_layout.ss
"tokens" = "wte"
"final_norm" = "ln_f"
"head" = "out_proj"
"blocks.{i}.pre_attn" = "h.{i}.ln1"
"blocks.{i}.pre_ffn" = "h.{i}.ln2"
"blocks.{i}.query" = { key = "h.{i}.q", permute_rotary = { heads = 4, to = "interleaved" }, transpose = true }
"blocks.{i}.kv" = { concat = [{ key = "h.{i}.k", permute_rotary = { heads = 2, to = "interleaved" } }, "h.{i}.v"], transpose = true }
"blocks.{i}.out" = "h.{i}.o"
"blocks.{i}.gate_up" = { concat = ["h.{i}.gate", "h.{i}.up"] }
"blocks.{i}.down" = "h.{i}.down"
'''
RENAME = {"model.embed_tokens.weight": "wte", "model.norm.weight": "ln_f", "lm_head.weight": "out_proj",
          "input_layernorm": "ln1", "post_attention_layernorm": "ln2", "self_attn.q_proj": "q",
          "self_attn.k_proj": "k", "self_attn.v_proj": "v", "self_attn.o_proj": "o", "mlp.gate_proj": "gate",
          "mlp.up_proj": "up", "mlp.down_proj": "down"}


def _renamed(model, file):
    from safetensors.numpy import save_file
    out = {}
    for k, v in model.state_dict().items():
        if k in RENAME:
            out[RENAME[k]] = v.numpy()
            continue
        _, _, i, rest = k.split(".", 3)
        out[f"h.{i}.{RENAME[rest.rsplit('.', 1)[0]]}"] = v.numpy()
    save_file(out, str(file))
    return file


def test_a_weights_map_reads_a_checkpoint_no_table_knows(checkpoints, tmp_path):
    _, ref = checkpoints("llama", {}, False)
    w = _renamed(ref, tmp_path / "odd.safetensors")
    m = tmp_path / "map.toml"
    m.write_text(MAP)
    out = tmp_path / "out"
    r = export("llama_other", "hf", out, w, "--weights-map", m)
    assert r.returncode == 0, r.stdout + r.stderr
    assert max_diff(logits(load_export(str(out))), logits(ref)) < 1e-4


def test_a_weights_map_that_leaves_params_out_is_one_e3314(checkpoints, tmp_path):
    _, ref = checkpoints("llama", {}, False)
    w = _renamed(ref, tmp_path / "odd.safetensors")
    m = tmp_path / "map.toml"
    m.write_text(MAP.replace('"blocks.{i}.down" = "h.{i}.down"', '"blocks.{i}.down" = "h.{i}.mlp_down"'))
    out = tmp_path / "out"
    err = _fails(export("llama_other", "hf", out, w, "--weights-map", m), out)
    assert err.count("error[") == 1
    assert "error[E3314]: the weights map gives 2 of the source's params no tensor of the checkpoint" in err
    assert "`blocks.0.down` (line 21) maps to `h.0.mlp_down`, which the checkpoint doesn't have" in err
    m.write_text('"tokens" = { key = "wte", split = [2, 2] }\n')
    err = _fails(export("llama_other", "hf", out, w, "--weights-map", m), out)
    assert "`tokens` takes `split = [INDEX, PARTS]`, with 0 <= INDEX < PARTS" in err


def test_a_k_quant_gguf_from_llama_cpps_quantizer_is_dequantized_as_transformers_does(tmp_path):
    """Q4_K_M by llama.cpp's own quantizer (llama-cpp-python), rows of 256 so that the
    K-quants apply (Q4_K, and Q6_K for some tensors), imported into another source."""
    import torch
    from envs import require_llama_cpp
    from gguf import GGMLQuantizationType, GGUFReader
    from transformers import AutoModelForCausalLM
    from import_support import EXAMPLES, run_cli
    llama_cpp = require_llama_cpp()
    dims = dict(V=300, D=256, H=4, Hkv=2, F=512, L=1)
    flags = [x for k, v in dims.items() for x in ("--dim", f"{k}={v}")]
    f32 = tmp_path / "f32.gguf"
    r = run_cli("export", os.path.join(EXAMPLES, "llama.ss"), "--gguf", "--random-weights", "--seed", "5",
                "-o", f32, *flags)
    assert r.returncode == 0, r.stderr
    q = tmp_path / "q4_k_m.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    assert llama_cpp.llama_model_quantize(str(f32).encode(), str(q).encode(), params) == 0
    types = {t.tensor_type for t in GGUFReader(str(q)).tensors}
    assert GGMLQuantizationType.Q4_K in types
    out = tmp_path / "out"
    r = export("llama_variant", "hf", out, q, "--dim", "Width=256", "--dim", "Hidden=512", "--dim", "Depth=1")
    assert r.returncode == 0, r.stdout + r.stderr
    theirs = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=q.name, dtype=torch.float32).eval()
    assert max_diff(logits(load_export(str(out))), logits(theirs)) < 1e-4
