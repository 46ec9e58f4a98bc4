"""Differential testing through vLLM, on a sample: llama-shaped programs from
tests/progen.py (their scalar keywords written many ways), widened to heads of 64 (vLLM's
CPU attention needs them), exported --vllm with the evaluator's random weights, served by
vLLM's Transformers backend on the CPU. Its greedy tokens must be the evaluator's greedy
tokens (docs/evaluate.md), one vLLM engine for the whole sample."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from differential_support import export, quiet  # noqa: E402
from envs import require_vllm, run_in_env  # noqa: E402
from progen import llama_case  # noqa: E402

SEEDS = (1, 2)
NEW_TOKENS = 6
PROMPTS = [[5, 17, 99, 3, 250, 8, 1], [11, 200, 7]]

SERVE = r'''
if __name__ == "__main__":
    import json, sys
    from vllm import LLM, SamplingParams
    outs = {}
    for out in sys.argv[2:]:
        llm = LLM(model=out, trust_remote_code=True, model_impl="transformers", skip_tokenizer_init=True,
                  dtype="float32", enforce_eager=True, max_model_len=64, max_num_seqs=2, seed=0)
        prompts = json.loads(sys.argv[1])
        res = llm.generate([{"prompt_token_ids": p} for p in prompts],
                           SamplingParams(max_tokens=%d, temperature=0, detokenize=False))
        outs[out] = [list(o.outputs[0].token_ids) for o in res]
        del llm
    print(json.dumps(outs))
''' % NEW_TOKENS


def widened(seed: int):
    """llama_case(seed) with heads of 64 (D 256, 4 heads) and a larger MLP."""
    case = llama_case(seed)
    case.source = case.source.replace("dim D = 64", "dim D = 256").replace("dim F = 96", "dim F = 384")
    case.source = case.source.replace("@export(gguf)", "@export(vllm)")
    return case


def evaluator_greedy(prog, weights, prompt: list) -> list:
    import torch
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            t = torch.tensor([ids])
            logits = prog.run("forward", weights, ids=t, pos=torch.arange(len(ids)).unsqueeze(0))
            ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]


def test_vllm_greedy_tokens_equal_the_evaluators(tmp_path):
    from shapescript_core.evaluate import load
    quiet()
    want, outs = {}, []
    for seed in SEEDS:
        case = widened(seed)
        prog = load(case.source)
        weights = prog.random_weights("forward", seed=case.seed, std=0.05)
        out = str(tmp_path / f"vllm{seed}")
        r = export(case, weights, out, target="vllm")
        assert r.ok, f"seed {seed}: {r.message}\n{case.source}"
        assert os.path.isdir(os.path.join(out, "vllm_plugin"))
        want[out] = [evaluator_greedy(prog, weights, p) for p in PROMPTS]
        outs.append(out)
    got = run_in_env(require_vllm(), SERVE, json.dumps(PROMPTS), *outs, timeout=900).result
    for out in outs:
        assert got[out] == want[out], f"{out}: vLLM {got[out]}, the evaluator {want[out]}"
