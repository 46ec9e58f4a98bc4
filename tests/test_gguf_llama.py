"""`shapescript export --gguf` of issue 7's tiny llama, run by real llama.cpp.

conformance/ok/llama.ss with V=256 D=256 H=4 Hkv=2 F=512 L=2 (head width 64), weights
from transformers' own LlamaForCausalLM (renamed to the param paths): llama.cpp's logits
at every position (f32 KV cache) match transformers' within 1e-4 in f32, within the
tolerances of docs/serving-engines.md in f16, bf16 and q8_0; transformers loads the GGUF
back with the same logits.
"""
import os

import pytest

np = pytest.importorskip("numpy")

from gguf_support import (CONFORMANCE, LLAMA_DIMS, TOKENS, export_gguf, export_hf, hf_llama, hf_logits,
                          llama_cpp_logits, llama_to_source, load_hf_export, max_diff, save_weights, state)

# documented in docs/serving-engines.md ("GGUF"); measured 7.7e-6, 5.1e-3, 5.1e-2, 0.20
TOLERANCE = {"f32": 1e-4, "f16": 2e-2, "bf16": 1.2e-1, "q8_0": 4e-1}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf_llama")
    model = hf_llama(seed=0)
    weights = save_weights(str(d / "w.safetensors"), llama_to_source(state(model), LLAMA_DIMS["L"]))
    files, outputs = {}, {}
    for dtype in TOLERANCE:
        files[dtype] = str(d / f"llama-{dtype}.gguf")
        outputs[dtype] = export_gguf(os.path.join(CONFORMANCE, "llama.ss"), files[dtype], weights,
                                     LLAMA_DIMS, dtype=dtype)
    return {"model": model, "ref": hf_logits(model, TOKENS), "files": files, "out": outputs, "dir": d,
            "weights": weights}


@pytest.mark.parametrize("dtype", list(TOLERANCE))
def test_llama_cpp_logits_match_transformers(exported, dtype):
    got = llama_cpp_logits(exported["files"][dtype], TOKENS)
    assert got.shape == (len(TOKENS), LLAMA_DIMS["V"])
    assert max_diff(got, exported["ref"]) < TOLERANCE[dtype]


def test_llama_cpp_matches_the_hf_export(exported):
    hf = load_hf_export(export_hf(os.path.join(CONFORMANCE, "llama.ss"), str(exported["dir"] / "hf"),
                                  exported["weights"], LLAMA_DIMS))
    ref = hf_logits(hf, TOKENS)
    assert max_diff(ref, exported["ref"]) < 1e-4  # the hf export is the same model
    assert max_diff(llama_cpp_logits(exported["files"]["f32"], TOKENS), ref) < 1e-4


def test_summary_names_the_architecture_and_the_missing_tokenizer(exported):
    err = exported["out"]["f32"].stderr
    assert "gguf: llama, 21 tensors, f32" in err
    assert 'tokenizer.ggml.model = "none"' in err


def test_metadata_and_tensor_types(exported):
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFReader
    r = GGUFReader(exported["files"]["q8_0"])

    def value(key):
        f = r.fields[key]
        return f.contents()
    assert value("general.architecture") == "llama"
    assert value("llama.rope.freq_base") == pytest.approx(500000.0)
    assert value("llama.attention.layer_norm_rms_epsilon") == pytest.approx(1e-5)
    assert (value("llama.attention.head_count"), value("llama.attention.head_count_kv")) == (4, 2)
    assert value("llama.rope.dimension_count") == 64
    assert value("tokenizer.ggml.model") == "none"
    types = {t.name: t.tensor_type for t in r.tensors}
    assert types["blk.0.attn_norm.weight"] == Q.F32 and types["output_norm.weight"] == Q.F32
    assert types["blk.1.attn_q.weight"] == Q.Q8_0 and types["token_embd.weight"] == Q.Q8_0
    assert "output.weight" in types  # a separate output layer


def test_q_rows_are_permuted_for_llama_cpp(exported):
    # the layout change that matters: rotate-half rows -> llama.cpp's interleaved pairs
    from gguf import GGUFReader
    r = GGUFReader(exported["files"]["f32"])
    q = next(t for t in r.tensors if t.name == "blk.0.attn_q.weight")
    stored = np.asarray(q.data).reshape(256, 256)
    hf = state(exported["model"])["model.layers.0.self_attn.q_proj.weight"]
    expect = hf.reshape(4, 2, 32, 256).swapaxes(1, 2).reshape(256, 256)
    assert np.array_equal(stored, expect)
    assert not np.array_equal(stored, hf)


def test_transformers_loads_the_gguf_back(exported):
    import torch
    from transformers import AutoModelForCausalLM
    path = exported["files"]["f32"]
    m = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                             dtype=torch.float32).eval()
    assert type(m).__name__ == "LlamaForCausalLM"
    assert max_diff(hf_logits(m, TOKENS), exported["ref"]) < 1e-4
