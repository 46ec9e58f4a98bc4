"""Mixtures of experts (v0.3, LANGUAGE.md §6.2; issue 33) against transformers' own classes.

`examples/mixtral.ss` and `examples/qwen3_moe.ss` with the weights of a tiny random
MixtralForCausalLM / Qwen3MoeForCausalLM (E = 4 experts, K = 2 per token; every tensor
random, the router's choices spread over the experts), exported --hf: the logits of a
40-token prompt, batch 2, within 1e-4 of transformers', and the same greedy tokens with
and without the KV cache. The weights reach the export under the source's param paths
(transformers holds each block's experts stacked: `gate_up_proj [E 2F D]`, gate first).
"""
from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")

from checkout import ROOT  # noqa: E402
from import_support import load_export, max_diff, quantize_with_llama_cpp, run_cli  # noqa: E402

MIXTRAL = os.path.join(ROOT, "examples", "mixtral.ss")
QWEN3_MOE = os.path.join(ROOT, "examples", "qwen3_moe.ss")
E, K, F, L = 4, 2, 128, 2
DIMS = {"V": 256, "D": 256, "H": 4, "Hkv": 2, "Dh": 64, "F": F, "L": L, "E": E, "K": K}
BATCH = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(5))


def _randomize(model, seed: int):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if name.endswith("norm.weight") else 0.08 * torch.randn_like(p))
    return model.eval()


def mixtral(seed: int = 0):
    cfg = tf.MixtralConfig(vocab_size=256, hidden_size=256, intermediate_size=F, num_hidden_layers=L,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_local_experts=E,
                           num_experts_per_tok=K, rms_norm_eps=1e-5, sliding_window=None,
                           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                           tie_word_embeddings=False)
    return _randomize(tf.MixtralForCausalLM(cfg), seed)


def qwen3_moe(norm_topk_prob: bool = True, seed: int = 1):
    cfg = tf.Qwen3MoeConfig(vocab_size=256, hidden_size=256, intermediate_size=512, moe_intermediate_size=F,
                            num_hidden_layers=L, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                            num_experts=E, num_experts_per_tok=K, norm_topk_prob=norm_topk_prob,
                            decoder_sparse_step=1, mlp_only_layers=[], rms_norm_eps=1e-6,
                            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                            use_sliding_window=False, tie_word_embeddings=False)
    return _randomize(tf.Qwen3MoeForCausalLM(cfg), seed)


def our_weights(model) -> dict:
    """The model's tensors under the examples' param paths."""
    sd = model.state_dict()
    out = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"], "lm_head": sd["lm_head.weight"]}
    for i in range(L):
        p, q = f"model.layers.{i}.", f"layers.{i}."
        out[q + "attn_norm"] = sd[p + "input_layernorm.weight"]
        out[q + "mlp_norm"] = sd[p + "post_attention_layernorm.weight"]
        for ours, theirs in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
            out[q + f"attn.{ours}"] = sd[p + f"self_attn.{theirs}.weight"]
        for n in ("q_norm", "k_norm"):
            if p + f"self_attn.{n}.weight" in sd:
                out[q + f"attn.{n}"] = sd[p + f"self_attn.{n}.weight"]
        gate_up = sd[p + "mlp.experts.gate_up_proj"]  # [E 2F D]: each expert's gate rows, then its up rows
        out[q + "moe.router"] = sd[p + "mlp.gate.weight"]
        out[q + "moe.w_gate"], out[q + "moe.w_up"] = gate_up[:, :F], gate_up[:, F:]
        out[q + "moe.w_down"] = sd[p + "mlp.experts.down_proj"]
    return {k: v.contiguous() for k, v in out.items()}


def export(source: str, model, tmp_path, name: str) -> str:
    from safetensors.torch import save_file
    weights = str(tmp_path / f"{name}.safetensors")
    save_file(our_weights(model), weights)
    out = str(tmp_path / name)
    dims = [x for k, v in DIMS.items() for x in ("--dim", f"{k}={v}") if not (k == "Dh" and source == MIXTRAL)]
    r = run_cli("export", source, "--hf", "-o", out, "--weights", weights, "--force", *dims)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def experts_chosen(model) -> set:
    """The experts transformers' router picks in layer 0 over the batch (non-degenerate routing)."""
    with torch.no_grad():
        routers = model(BATCH, output_router_logits=True).router_logits
    return set(routers[0].topk(K, dim=-1).indices.flatten().tolist())


def generate(model, use_cache: bool) -> list:
    with torch.no_grad():
        out = model.generate(BATCH[:, :8], max_new_tokens=12, do_sample=False, use_cache=use_cache, pad_token_id=0)
    return out.tolist()


def unnormalised_source(tmp_path) -> str:
    """examples/qwen3_moe.ss without its division by the K weights' sum (norm_topk_prob=False)."""
    text = open(QWEN3_MOE, encoding="utf-8").read()
    line = "    w = w / sum(w, over=K)  # norm_topk_prob: the K weights sum to 1\n"
    assert line in text
    source = tmp_path / "qwen3_moe_unnormalised.ss"
    source.write_text(text.replace(line, ""), encoding="utf-8")
    return str(source)


@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe", "qwen3_moe_unnormalised"])
def test_an_exported_mixture_computes_what_transformers_does(family, tmp_path):
    if family == "mixtral":
        theirs, source = mixtral(), MIXTRAL
    else:
        theirs, source = qwen3_moe(norm_topk_prob=family == "qwen3_moe"), QWEN3_MOE
    if family == "qwen3_moe_unnormalised":  # norm_topk_prob=False: another function, written so
        source = unnormalised_source(tmp_path)
    assert len(experts_chosen(theirs)) == E  # every expert has tokens: a wrong gather would show
    out = export(source, theirs, tmp_path, family)
    cfg = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert (cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["norm_topk_prob"]) == \
        (E, K, family != "qwen3_moe_unnormalised")
    modeling = open(os.path.join(out, next(f for f in os.listdir(out) if f.startswith("modeling_"))),
                    encoding="utf-8").read()
    assert modeling.count("expert_einsum(") == 4  # the three einsums (and the helper): no dense gather
    ours = load_export(out)
    with torch.no_grad():
        diff = max_diff(ours(BATCH).logits.numpy(), theirs(BATCH).logits.numpy())
    assert diff < 1e-4, diff
    want = generate(theirs, True)
    assert generate(ours, True) == want
    assert generate(ours, False) == want


def test_a_mixture_written_another_way_is_another_function(tmp_path):
    """Teeth: the Qwen3-MoE source without its renormalisation is not transformers'
    norm_topk_prob=True model (the test above would see a routing mix-up)."""
    theirs = qwen3_moe(norm_topk_prob=True)
    text = open(QWEN3_MOE, encoding="utf-8").read().replace("    w = w / sum(w, over=K)", "    w = w")
    source = str(tmp_path / "raw.ss")
    open(source, "w", encoding="utf-8").write(text)
    ours = load_export(export(source, theirs, tmp_path, "raw"))
    with torch.no_grad():
        assert max_diff(ours(BATCH).logits.numpy(), theirs(BATCH).logits.numpy()) > 1e-2


# ---------------------------------------------------------------- checkpoints by role, every engine
def llama_cpp_run(path: str, prompt: list, steps: int = 12):
    """(llama.cpp's logits over the prompt, its greedy continuation)."""
    from gguf_support import llama_cpp_run as run
    return run(path, prompt, steps)


@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe"])
def test_a_checkpoint_imports_by_role_and_runs_in_transformers_and_llama_cpp(family, tmp_path):
    """save_pretrained's per-expert tensors (`block_sparse_moe.experts.{i}.w1`, `mlp.experts.{i}.gate_proj`)
    stacked by role; the sizes and K read from the checkpoint; --hf and --gguf compute what
    transformers does; the .gguf's stacked `ffn_*_exps` import back by role too."""
    pytest.importorskip("llama_cpp")
    theirs, source = (mixtral(), MIXTRAL) if family == "mixtral" else (qwen3_moe(), QWEN3_MOE)
    ckpt = str(tmp_path / "ckpt")
    theirs.save_pretrained(ckpt)
    from safetensors import safe_open
    with safe_open(os.path.join(ckpt, "model.safetensors"), "pt") as f:
        assert sum(".experts.3." in k for k in f.keys()) == 3 * L  # one tensor per expert, as transformers saves them
    said = {}
    for target in ("hf", "gguf"):
        out = str(tmp_path / (family + (".gguf" if target == "gguf" else "")))
        r = run_cli("export", source, f"--{target}", "-o", out, "--weights", ckpt, "--force")
        assert r.returncode == 0, r.stdout + r.stderr
        said[target] = (out, r.stdout + r.stderr)
    assert "E=4" in said["hf"][1] and "K=2" in said["hf"][1]  # read from the checkpoint, K from its config
    assert f"gguf: {'llama' if family == 'mixtral' else 'qwen3moe'}, " in said["gguf"][1]
    ours = load_export(said["hf"][0])
    with torch.no_grad():
        assert max_diff(ours(BATCH).logits.numpy(), theirs(BATCH).logits.numpy()) < 1e-4
    want = generate(theirs, True)
    assert generate(ours, True) == want and generate(ours, False) == want
    prompt = BATCH[0].tolist()
    scores, tokens = llama_cpp_run(said["gguf"][0], prompt)
    with torch.no_grad():
        assert max_diff(scores, theirs(BATCH[:1]).logits[0].numpy()) < 1e-3
        greedy = theirs.generate(BATCH[:1], max_new_tokens=12, do_sample=False, pad_token_id=0)[0, 40:].tolist()
    assert tokens == greedy
    back = str(tmp_path / "from_gguf")
    r = run_cli("export", source, "--hf", "-o", back, "--weights", said["gguf"][0], "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    with torch.no_grad():
        assert max_diff(load_export(back)(BATCH).logits.numpy(), theirs(BATCH).logits.numpy()) < 1e-4


def test_a_checkpoint_imports_by_role_whatever_its_routing_and_another_routing_is_e3316(tmp_path):
    """Qwen3-MoE with norm_topk_prob=False (OLMoE's routing too) names its tensors as with it:
    the source written without the division imports its checkpoint by role, the dims read from
    it, and computes what transformers does. The source that divides, given that checkpoint,
    is another function of the same tensors: exported (the source means what it computes) with
    an E3316 naming norm_topk_prob; the same for a .gguf, whose qwen3moe routing always divides."""
    unnormalised = unnormalised_source(tmp_path)
    said, logits = {}, {}
    for norm in (False, True):
        theirs = qwen3_moe(norm_topk_prob=norm)
        ckpt = str(tmp_path / f"ckpt-{norm}")
        theirs.save_pretrained(ckpt)
        with torch.no_grad():
            want = theirs(BATCH).logits.numpy()
        for name, source in (("unnormalised", unnormalised), ("normalised", QWEN3_MOE)):
            out = str(tmp_path / f"{name}-{norm}")
            r = run_cli("export", source, "--hf", "-o", out, "--weights", ckpt, "--force")
            assert r.returncode == 0, r.stdout + r.stderr
            said[name, norm] = r.stdout + r.stderr
            with torch.no_grad():
                logits[name, norm] = max_diff(load_export(out)(BATCH).logits.numpy(), want)
    assert logits["unnormalised", False] < 1e-4 and logits["normalised", True] < 1e-4
    assert logits["normalised", False] > 0.1 and logits["unnormalised", True] > 0.1  # the warnings' teeth
    assert "E3316" not in said["unnormalised", False] and "E3316" not in said["normalised", True]
    assert ("warning: [E3316] the source's routing of the experts is the softmax of the K chosen router logits, "
            "but the checkpoint's config.json norm_topk_prob says false (the softmax over all E router logits, "
            "the K largest kept as they are): the export keeps the source's") in said["normalised", False]
    assert ("warning: [E3316] the source's routing of the experts is the softmax over all E router logits, the K "
            "largest kept as they are, but the checkpoint's config.json norm_topk_prob says true (the softmax of "
            "the K chosen router logits)") in said["unnormalised", True]
    assert all(said[k].count("E3316") == 1 for k in (("normalised", False), ("unnormalised", True)))
    gguf_file = str(tmp_path / "qwen3moe.gguf")
    r = run_cli("export", QWEN3_MOE, "--gguf", "-o", gguf_file, "--weights", str(tmp_path / "ckpt-True"), "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_cli("export", unnormalised, "--hf", "-o", str(tmp_path / "from-gguf"), "--weights", gguf_file, "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("but the checkpoint's `general.architecture` (qwen3moe, whose mixture always divides) says true (the "
            "softmax of the K chosen router logits)") in r.stderr


def test_llama_cpp_refuses_a_routing_it_does_not_run_at_the_topk(tmp_path):
    """Qwen3-MoE with norm_topk_prob=False: llama.cpp's qwen3moe always renormalises (measured:
    its converter's file is 2.08 off transformers); E3313 at the topk, naming the routing."""
    source = unnormalised_source(tmp_path)
    text = open(source, encoding="utf-8").read()
    dims = [x for k, v in DIMS.items() for x in ("--dim", f"{k}={v}")]
    r = run_cli("check", str(source), *dims)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "topk(k=K" in x)
    assert r.stdout.count("error[") == 1, r.stdout
    assert (f"error[E3313]: no llama.cpp architecture runs this model: the router's weights are the softmax over all "
            f"E router logits, the K largest kept as they are (line {line}), where llama.cpp's qwen3moe routes by the "
            f"softmax of the K chosen router logits") in r.stdout
    assert f"qwen3_moe_unnormalised.ss:{line}:12" in r.stdout


def test_a_checkpoint_missing_an_expert_is_one_clear_error(tmp_path):
    from safetensors.torch import load_file, save_file
    ckpt = tmp_path / "ckpt"
    mixtral().save_pretrained(str(ckpt))
    tensors = load_file(str(ckpt / "model.safetensors"))
    for k in [k for k in tensors if ".experts.2." in k]:
        del tensors[k]
    save_file(tensors, str(ckpt / "model.safetensors"), metadata={"format": "pt"})
    r = run_cli("export", MIXTRAL, "--hf", "-o", str(tmp_path / "out"), "--weights", str(ckpt), "--force")
    assert r.returncode == 1
    assert "the checkpoint's experts of `model.layers.0.block_sparse_moe.experts.w1.weight` are numbered 0, 1, 3: " \
           "experts 0 to 2 expected" in r.stderr, r.stderr
    assert "Traceback" not in r.stdout + r.stderr and not (tmp_path / "out").exists()


# ---------------------------------------------------------------- vLLM, LiteRT
@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe"])
def test_vllm_serves_a_checkpoint_on_both_paths(family, tmp_path):
    """The --vllm export of a Mixtral / Qwen3-MoE imported by role: vLLM's Transformers backend (its MoE
    class: config.json names the experts) and the native plugin (vLLM's fused mixture of
    experts, arch/fused_experts.py) give transformers' greedy tokens."""
    from envs import require_vllm, run_in_env
    from test_partial_rotary import VLLM_GREEDY, install_plugin
    python = require_vllm()
    theirs, source, cls = (mixtral(), MIXTRAL, "Mixtral") if family == "mixtral" else \
        (qwen3_moe(), QWEN3_MOE, "Qwen3Moe")
    ckpt = str(tmp_path / "ckpt")
    theirs.save_pretrained(ckpt)
    out = str(tmp_path / f"{family}_vllm")
    r = run_cli("export", source, "--vllm", "-o", out, "--weights", ckpt, "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    prompts = [BATCH[0, :12].tolist(), BATCH[1, :5].tolist()]
    with torch.no_grad():
        want = [theirs.generate(torch.tensor([p]), max_new_tokens=8, do_sample=False, pad_token_id=0)[0, len(p):]
                .tolist() for p in prompts]
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    r = run_in_env(python, VLLM_GREEDY, out, "transformers", json.dumps(prompts), 8, timeout=480, env=env).result
    assert r["classes"][0].endswith("TransformersMoEForCausalLM"), r
    assert r["got"] == want, r
    site = install_plugin(python, out, tmp_path / "site")
    script = VLLM_GREEDY.replace('type(m).__module__ + "." + type(m).__name__',
                                 'sorted({type(x).__name__ for x in m.modules()})')
    r = run_in_env(python, script, out, "native", json.dumps(prompts), 8, timeout=480,
                   env={**env, "PYTHONPATH": site}).result
    assert f"ShapeScript{cls}ForCausalLM" in r["classes"][0], r
    assert "MoERunner" in r["classes"][0] or "FusedMoE" in r["classes"][0], r  # vLLM's fused mixture runs it
    assert r["got"] == want, r


def test_litert_refuses_a_mixture_it_would_not_keep(tmp_path):
    dims = [x for k, v in DIMS.items() for x in ("--dim", f"{k}={v}") if k != "Dh"]
    r = run_cli("export", MIXTRAL, "--litert", "-o", str(tmp_path / "litert"), *dims)
    assert r.returncode == 1
    line = next(i for i, x in enumerate(open(MIXTRAL, encoding="utf-8").read().splitlines(), 1) if "topk(" in x)
    assert "error[E3319]: LiteRT can't run `forward`: it uses `topk`\n" in r.stdout, r.stdout
    assert f"mixtral.ss:{line}:" in r.stdout, r.stdout
    assert not (tmp_path / "litert").exists()


def test_vllm_splits_every_expert_across_two_ranks(tmp_path):
    """TP=2 through the native plugin: vLLM's fused mixture holds half of every expert's
    width on each rank, half the heads; greedy tokens equal transformers' on the same export.
    (Expert parallelism is vLLM's own: on this CPU build even its own Mixtral's worker dies
    with `enable_expert_parallel`, so it is not tested here.)"""
    from envs import require_vllm, run_in_env
    from test_vllm_parallel import SCRIPT, install_plugin
    python = require_vllm()
    ckpt = str(tmp_path / "ckpt")
    mixtral().save_pretrained(ckpt)
    out = tmp_path / "mixtral_tp"
    r = run_cli("export", MIXTRAL, "--vllm", "-o", str(out), "--weights", ckpt, "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    site = install_plugin(python, out, tmp_path / "site")
    runs = [{"name": "mixtral-tp-native", "kind": "tp", "impl": "auto", "layers": ".layers.", "dir": str(out)}]
    prompts = [BATCH[0, :9].tolist(), BATCH[1, :2].tolist(), BATCH[0, 20:25].tolist()]
    results = tmp_path / "results.json"
    run = run_in_env(python, SCRIPT, json.dumps(runs), json.dumps(prompts), results, timeout=900,
                     env={"VLLM_CPU_OMP_THREADS_BIND": "0|1", "PYTHONPATH": site}, check=False)
    assert run.returncode == 0 and results.exists(), (run.stdout + run.stderr)[-6000:]
    for name in ("mixtral-tp-native",):
        res = json.loads(results.read_text())[name]
        assert "got" in res, (name, res, (run.stdout + run.stderr)[-4000:])
        assert res["got"] == res["want"] and [len(g) for g in res["got"]] == [8, 8, 8], (name, res)
        ranks = res["ranks"]
        assert [rank["heads"] for rank in ranks] == [[[2, 1], [2, 1]]] * 2
        experts = 3 * E * F * 256  # gate, up, down per layer
        for rank in ranks:  # half of everything but the norms and the (replicated) router
            share = rank["layers"] / res["total"]
            assert 0.5 < share < 0.52, (name, share)
        assert res["total"] > L * experts  # the experts are most of the layers: a whole copy would show


def test_topk_along_the_token_axis_is_e3304_at_the_operation(tmp_path):
    """Choosing among positions mixes them: a serving engine can't run it (E3304, like a
    reduction over `n`), reported once, at the `topk`."""
    source = tmp_path / "tok.ss"
    source.write_text("dim V = 64\ndim D = 16\ndim K = 2\n\nmodel M:\n    e: [V D]\n    out: [V D]\n\n"
                      "@export(hf, vllm)\nfn forward(m: M, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:\n"
                      "    x = embedding(ids, m.e)\n    w, _i = topk(x, k=K, over=n)\n"
                      "    return linear(x + sum(w, over=K), m.out)\n", encoding="utf-8")
    r = run_cli("check", str(source))
    assert r.stdout.count("error[") == 1, r.stdout
    assert "error[E3304]: a serving engine can't run this: this works along `n`, which mixes its positions" in r.stdout
    assert "tok.ss:12:13" in r.stdout and "`topk` over `n`" in r.stdout


@pytest.mark.parametrize("edit,fused", [
    (None, ("router", None, True)),
    (("    w = softmax(w, over=K)  # Mixtral: the softmax of the chosen\n", ""), None),  # raw topk logits: written
    (("linear(x, p.router) |> topk", "linear(x, p.router, p.bias) |> topk"), ("router", "bias", True)),  # gpt-oss's
    (("einsum(silu(g) * u", "einsum(gelu(g) * u"), None),  # not SwiGLU: vLLM's fused layer computes silu
])
def test_the_functions_vllm_runs_as_its_fused_mixture(edit, fused, tmp_path):
    """arch/fused_experts.py: a function that computes exactly a mixture whose routing and
    SwiGLU vLLM's fused layer has; anything else is compiled as written (and its experts
    split across ranks by compile/expert_parallel.py)."""
    from shapescript_core.arch.fused_experts import fused_mixtures
    from shapescript_core.compile.graph import build_program
    from shapescript_core.workspace import Workspace
    text = open(MIXTRAL, encoding="utf-8").read().replace("    router: [E D]\n", "    router: [E D]\n    bias: [E]\n")
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    source = tmp_path / "m.ss"
    source.write_text(text, encoding="utf-8")
    ws = Workspace({k: v for k, v in DIMS.items() if k != "Dh"})
    got = fused_mixtures(build_program(ws.program, ws.norm(str(source)), "forward"))
    if fused is None:
        assert got == {}
        return
    f = got["experts"]
    assert (f.router, f.router_bias, f.renormalize) == fused
    assert (f.gate, f.up, f.down, f.experts, f.used, f.width, f.hidden) == ("w_gate", "w_up", "w_down", E, K, F, 256)


def test_a_quantized_mixture_is_kept_block_for_block(tmp_path):
    """Quantized GGUF (issue 34) with stacked experts: --dtype q4_k_m is llama.cpp's quantizer's
    file; --dtype keep of it copies every tensor, experts included, byte for byte; q8_0
    (written by gguf-py, 3-D experts too; the router f32, as llama.cpp keeps it) is
    llama.cpp's own Q8_0 of the f32 file, byte for byte, and runs close to transformers."""
    pytest.importorskip("llama_cpp")
    import gguf
    ckpt = str(tmp_path / "ckpt")
    theirs = mixtral()
    theirs.save_pretrained(ckpt)
    files = {}
    for dtype, weights in (("f32", ckpt), ("q8_0", ckpt), ("q4_k_m", ckpt), ("keep", None)):
        files[dtype] = str(tmp_path / f"{dtype}.gguf")
        r = run_cli("export", MIXTRAL, "--gguf", "--dtype", dtype, "-o", files[dtype], "--force",
                    "--weights", weights or files["q4_k_m"])
        assert r.returncode == 0, r.stdout + r.stderr
    q4, kept = (gguf.GGUFReader(files[k]) for k in ("q4_k_m", "keep"))
    a, b = ({t.name: t for t in r.tensors} for r in (q4, kept))
    assert sorted(a) == sorted(b) and a["blk.0.ffn_gate_exps.weight"].tensor_type.name.startswith("Q")
    assert all(a[n].tensor_type == b[n].tensor_type and a[n].data.tobytes() == b[n].data.tobytes() for n in a)
    q8 = {t.name: (t.tensor_type.name, t.data.tobytes()) for t in gguf.GGUFReader(files["q8_0"]).tensors}
    assert q8["blk.1.ffn_down_exps.weight"][0] == "Q8_0" and q8["blk.1.ffn_gate_inp.weight"][0] == "F32"
    ref = quantize_with_llama_cpp(files["f32"], str(tmp_path / "ref-q8_0.gguf"), "MOSTLY_Q8_0")
    assert q8 == {t.name: (t.tensor_type.name, t.data.tobytes()) for t in gguf.GGUFReader(ref).tensors}
    prompt = BATCH[0].tolist()
    with torch.no_grad():
        want = theirs(BATCH[:1]).logits[0].numpy()
    assert 1e-3 < max_diff(llama_cpp_run(files["q8_0"], prompt)[0], want) < 0.25  # quantized, and close
