"""A model that has learned something survives import and export (issue 17): a tiny
transformers Llama trained here for a few hundred steps on a short story shipped in the
repo (examples/tiny_story: story.txt and train.py, which ./demo.sh runs too), with a
byte-level BPE trained on the same story, saved as a Hub checkpoint is. Its greedy text
(the story, recited) comes out the same from transformers' own model, from `--hf` in
transformers, from `--gguf` in llama.cpp (which tokenizes and detokenizes with the
vocabulary that came along), and from `--vllm` in vLLM."""
from __future__ import annotations

import importlib.util
import os

import pytest

from checkout import ROOT
from import_support import load_export, run_cli

TINY_STORY = os.path.join(ROOT, "examples", "tiny_story")
SOURCE = os.path.join(ROOT, "examples", "llama.ss")
PROMPTS = ["Once upon a time", "Pip closed the", "The cat was"]
NEW = 16      # tokens generated per prompt


def _recipe():
    """examples/tiny_story/train.py, the recipe ./demo.sh runs too."""
    spec = importlib.util.spec_from_file_location("tiny_story_train", os.path.join(TINY_STORY, "train.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECIPE = _recipe()
STORY = RECIPE.STORY


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("trained") / "checkpoint")
    model, fast = RECIPE.train(d)
    return d, model, fast


def _export(trained, target: str, out, weights=None):
    d, _, fast = trained
    r = run_cli("export", SOURCE, f"--{target}", "-o", out, "--weights", weights or d, "--force",
                *RECIPE.dim_flags(len(fast)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "E3316" not in r.stderr
    return str(out)


def _hf_texts(model, fast) -> list:
    """(prompt + greedy continuation) per prompt, as token ids and decoded text."""
    import torch
    out = []
    for p in PROMPTS:
        ids = fast.encode(p, add_special_tokens=False)
        with torch.no_grad():
            got = model.generate(torch.tensor([ids]), max_new_tokens=NEW, do_sample=False, eos_token_id=None,
                                 pad_token_id=0)[0].tolist()
        out.append((got, fast.decode(got)))
    return out


@pytest.fixture(scope="module")
def reference(trained):
    _, model, fast = trained
    return _hf_texts(model, fast)


def test_the_trained_model_recites_the_story(reference):
    story = " ".join(open(STORY, encoding="utf-8").read().split())
    for (ids, text), prompt in zip(reference, PROMPTS):
        assert len(ids) > len(prompt.split()) + 8
        assert " ".join(text.split()) in story, text  # it learned: real text, not noise


def test_the_hf_export_says_the_same(trained, reference, tmp_path):
    from transformers import AutoTokenizer
    out = _export(trained, "hf", tmp_path / "hf")
    tok = AutoTokenizer.from_pretrained(out, trust_remote_code=True)  # the checkpoint's tokenizer came along
    assert _hf_texts(load_export(out), tok) == reference


def test_llama_cpp_says_the_same_from_the_gguf_export(trained, reference, tmp_path):
    """llama.cpp tokenizes the prompt and detokenizes its output itself, with the
    vocabulary the import embedded."""
    from gguf_support import llama_cpp_model
    out = _export(trained, "gguf", tmp_path / "m.gguf")
    llm = llama_cpp_model(out)
    try:
        for prompt, (want_ids, want_text) in zip(PROMPTS, reference):
            ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=False)
            got = list(ids)
            for t in llm.generate(ids, top_k=1, temp=0.0, reset=True):
                got.append(t)
                if len(got) == len(want_ids):
                    break
            assert got == want_ids
            assert llm.detokenize(got).decode("utf-8") == want_text
    finally:
        llm.close()


VLLM_TEXT = r'''
if __name__ == "__main__":
    import json, sys
    from vllm import LLM, SamplingParams
    out, n, prompts = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    llm = LLM(model=out, trust_remote_code=True, model_impl="transformers", dtype="float32",
              enforce_eager=True, max_model_len=256, max_num_seqs=4, seed=0)
    outs = llm.generate(prompts, SamplingParams(max_tokens=n, temperature=0, ignore_eos=True))
    print(json.dumps([[list(o.prompt_token_ids) + list(o.outputs[0].token_ids), o.prompt + o.outputs[0].text]
                      for o in outs]))
'''


def test_vllm_says_the_same_from_the_vllm_export(trained, reference, tmp_path):
    import json
    from envs import require_vllm, run_in_env
    python = require_vllm()
    out = _export(trained, "vllm", tmp_path / "vllm")
    got = run_in_env(python, VLLM_TEXT, out, NEW, json.dumps(PROMPTS), timeout=480).result
    assert [tuple(g) for g in got] == [(ids, text) for ids, text in reference]

