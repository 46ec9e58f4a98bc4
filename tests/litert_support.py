"""Building blocks for the LiteRT tests: the export itself (the real CLI), and the scripts
that run in the LiteRT environment (tests/envs.py: LITERT_PYTHON) against it: the .tflite
in ai-edge-litert's interpreter and the .litertlm in the LiteRT-LM engine, each compared
with transformers on the `hf/` export of the same weights."""
from __future__ import annotations

import os
import subprocess

from checkout import CLI, ROOT

EXAMPLES = os.path.join(ROOT, "examples")
PREFILL, CACHE = 16, 64
LLAMA_DIMS = {"V": 320, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}  # V: the tokenizer's
GPT2_DIMS = {"V": 320, "D": 256, "H": 4, "L": 2, "P": 64}
# a prompt shorter than the prefill (right-padded), and one as long as it; then decode.
# Ids below 256 (the llama variants' vocabulary), none 0 (export_hf reads 0 as padding).
PROMPTS = [[5, 17, 42, 99, 3, 250, 7], [11, 64, 128, 200, 31, 9, 77, 150, 2, 30, 45, 88, 19, 26, 133, 71]]
DECODE = [23, 180, 6, 91, 240, 14, 57, 101]


def export_litert(source: str, out: str, dims: dict, *, tokenizer: str | None = None, weights: str | None = None,
                  extra=(), env=None, timeout=600) -> subprocess.CompletedProcess:
    args = [*CLI, "export", source, "--litert", "-o", out,
            "--prefill-length", str(PREFILL), "--cache-length", str(CACHE), *extra]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    args += ["--weights", weights] if weights else ["--random-weights", "--seed", "3"]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


# argv: OUT, the prompts and decode tokens as JSON. For each prompt: a right-padded (or
# full) prefill, then one decode step per token, each step's logits compared with
# transformers' logits of the whole sequence at that position.
INTERPRETER_PARITY = r"""
import json, sys
import numpy as np, torch, transformers
from ai_edge_litert.interpreter import Interpreter

out, prompts, decode = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
model = transformers.AutoModelForCausalLM.from_pretrained(out + "/hf", trust_remote_code=True,
                                                          dtype=torch.float32).eval()
it = Interpreter(model_path=out + "/model.tflite")
names = list(it.get_signature_list())
prefill_name = next(n for n in names if n.startswith("prefill_"))
P = int(prefill_name.split("_")[1])
prefill, step = it.get_signature_runner(prefill_name), it.get_signature_runner("decode")
details = prefill.get_input_details()
caches = sorted(k for k in details if k.startswith("kv_cache_"))
C = int(details["mask"]["shape"][-1])
NEG = np.float32(-1e38)

def mask(rows, positions):
    m = np.full((1, 1, rows, C), NEG, np.float32)
    for i, p in enumerate(positions):
        m[0, 0, i, : p + 1] = 0
    return m

report = []
for prompt in prompts:
    seq = prompt + decode
    with torch.no_grad():
        ref = model(torch.tensor([seq])).logits[0].numpy()
    n = len(prompt)
    tokens = np.zeros((1, P), np.int32); tokens[0, :n] = prompt
    pos = np.arange(P, dtype=np.int32)
    kv = {k: np.zeros(details[k]["shape"], np.float32) for k in caches}
    r = prefill(tokens=tokens, input_pos=pos, mask=mask(P, pos), **kv)
    kv = {k: r[k] for k in caches}
    got = []  # (position, logits)
    if n == P:
        got.append((n - 1, r["logits"][0, -1]))
    for i, t in enumerate(decode[:-1]):
        p = n + i
        r = step(tokens=np.array([[seq[p]]], np.int32), input_pos=np.array([p], np.int32), mask=mask(1, [p]), **kv)
        kv = {k: r[k] for k in caches}
        got.append((p, r["logits"][0, -1]))
    for p, logits in got:
        report.append({"prompt": n, "position": p, "max_diff": float(np.abs(logits - ref[p]).max()),
                       "max_logit": float(np.abs(ref[p]).max()),
                       "argmax": [int(logits.argmax()), int(ref[p].argmax())]})
print(json.dumps({"signatures": names, "prefill": P, "cache": C, "steps": report}))
"""

# argv: OUT, prompt texts as JSON, max new tokens: greedy through the LiteRT-LM engine (the
# .litertlm, its own tokenizer and stop tokens) and through transformers' generate on the
# hf/ export, with its tokenizer; both stop at the end-of-sequence token.
ENGINE_GREEDY = r"""
import json, sys
import torch, transformers
import litert_lm

out, texts, new = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
tok = transformers.AutoTokenizer.from_pretrained(out + "/hf", trust_remote_code=True)
model = transformers.AutoModelForCausalLM.from_pretrained(out + "/hf", trust_remote_code=True,
                                                          dtype=torch.float32).eval()
litert_lm.set_min_log_severity(litert_lm.LogSeverity.ERROR)
engine = litert_lm.Engine(out + "/model.litertlm", backend=litert_lm.Backend.CPU())
runs = []
for text in texts:
    ids = tok(text, return_tensors="pt").input_ids
    with torch.no_grad():
        ref = model.generate(ids, max_new_tokens=new, do_sample=False)
    ref_new = ref[0, ids.shape[1]:].tolist()
    eos = model.generation_config.eos_token_id
    if ref_new and ref_new[-1] == eos:
        ref_new = ref_new[:-1]
    session = engine.create_session(apply_prompt_template=False, max_output_tokens=new,
                                    sampler_config=litert_lm.SamplerConfig(top_k=1, temperature=0.0))
    session.run_prefill([text])
    got = session.run_decode().texts[0]
    session.close()
    runs.append({"text": text, "engine_prompt_ids": engine.tokenize(text), "hf_prompt_ids": ids[0].tolist(),
                 "engine_text": got, "transformers_text": tok.decode(ref_new), "transformers_ids": ref_new,
                 "engine_ids": tok(got, add_special_tokens=False).input_ids})
print(json.dumps({"eos": engine.eos_token_ids, "runs": runs}))
"""

# argv: OUT. The seed's checks of the shipped extension, on the hf/ export:
# - patch parity: logits with and without patch_model equal, every patched function and
#   every module's class and forward restored on exit;
# - torch.export of prefill and decode through the extension's exportables (what export_hf
#   traces), plain and with apply_gpu_composites: the odml composites found in each graph;
# - weights resolvable: with every fusion/composite flag on, each parameter of the patched
#   model is found by Converter V2's HFCheckpointWeightsLoader in hf/ (shape and value), the
#   loader made inside the extension's patch_context as export_hf makes it (a tied head's
#   table key comes from there), and the loader class restored after it.
EXTENSION_CHECKS = r"""
import dataclasses, importlib, json, os, sys
import torch

out = sys.argv[1]
hf = out + "/hf"
sys.path.insert(0, out)
name = next(f[:-3] for f in os.listdir(out) if f.startswith("shapescript_litert_") and f.endswith(".py"))
ext_module = importlib.import_module(name)
from litert_torch.generative.export_hf.core import export_lib, exportable_module
from litert_torch.generative.export_hf.model_ext import extension as extension_lib

config = exportable_module.ExportableModuleConfig(
    model=hf, trust_remote_code=True, prefill_lengths=[8], cache_length=32, prefill_logits=True,
    quantization_recipe="none", extension_modules=[name])
artifacts = export_lib.load_model(hf, config, trust_remote_code=True)
config = export_lib.update_export_config(config, artifacts)
model = artifacts.model.eval()
ext = extension_lib.resolve_model_extension(model.config.model_type, config)
modeling = sys.modules[type(model).__module__]

ids = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 11]])
model.set_attn_implementation("sdpa")  # eager runs; export_hf's attention needs its cache
def logits():
    with torch.no_grad():
        return model(ids, use_cache=False).logits

functions = {n: getattr(modeling, n) for n in ext_module.PATCHED if hasattr(modeling, n)}
modules = {n: (type(m), type(m).forward) for n, m in model.named_modules()}
before = logits()
with ext.patch_model(model, config):
    swapped = sorted(n for n, f in functions.items() if getattr(modeling, n) is not f)
    during = logits()
restored = (all(getattr(modeling, n) is f for n, f in functions.items())
            and modules == {n: (type(m), type(m).forward) for n, m in model.named_modules()})
after = logits()

def composites(gpu, extension=True):
    cfg = dataclasses.replace(config, apply_gpu_composites=gpu, use_sdpa_composite=gpu)
    found = {}
    model.set_attn_implementation("lrt_transposed_attention")
    with ext.patch_model(model, cfg):
        pair = export_lib.get_prefill_decode_exportable_cls(artifacts.model_config, cfg) if extension else \
            (exportable_module.LiteRTExportableModuleForDecoderOnlyLMPrefill,
             exportable_module.LiteRTExportableModuleForDecoderOnlyLMGenerate)
        for cls in pair:
            module = cls(model, cfg, artifacts)
            for sig, (inputs, dyn) in module.get_sample_inputs(artifacts.text_model_config).items():
                ep = torch.export.export(module, args=(), kwargs=inputs)
                ops = {}
                for node in ep.graph.nodes:
                    if node.op == "call_function" and "mark_tensor" in str(node.target) \
                            and not node.kwargs.get("is_input", node.args[4] if len(node.args) > 4 else True):
                        kw = dict(node.kwargs)
                        nm = kw.get("name", node.args[1] if len(node.args) > 1 else None)
                        attr = kw.get("attr", node.args[5] if len(node.args) > 5 else None)
                        entry = ops.setdefault(nm, {"count": 0, "attrs": []})
                        entry["count"] += 1
                        if attr is not None:
                            entry["attrs"].append({k: v for k, v in attr if isinstance(v, (int, float, bool, str))})
                found[sig] = ops
    return {"exportables": [c.__name__ for c in pair], "signatures": found}

from litert_torch.generative.export_hf.core import weights_loader
original_loader = weights_loader.HFCheckpointWeightsLoader
with ext.patch_context():
    loader = weights_loader.HFCheckpointWeightsLoader(hf, tie_word_embeddings=bool(model.config.tie_word_embeddings))
loader_restored = weights_loader.HFCheckpointWeightsLoader is original_loader
plain_loader = original_loader(hf, tie_word_embeddings=bool(model.config.tie_word_embeddings))
every_flag = dataclasses.replace(config, apply_gpu_composites=True, use_sdpa_composite=True, use_rope_composite=True,
                                 use_swiglu_composite=True, use_qkv_norm_rope_composite=True)
unresolved, mismatched, checked, plain_unresolved = [], [], 0, []
with ext.patch_model(model, every_flag):
    for pname, p in model.named_parameters(remove_duplicate=False):
        checked += 1
        try:
            plain_loader(pname)
        except KeyError:
            plain_unresolved.append(pname)
        try:
            t = loader(pname)
        except KeyError:
            unresolved.append(pname)
            continue
        if tuple(t.shape) != tuple(p.shape) or not torch.equal(t.to(p.dtype), p.detach()):
            mismatched.append(pname)

print(json.dumps({"swapped": swapped, "restored": restored, "loader_restored": loader_restored,
                  "weights": {"checked": checked, "unresolved": unresolved, "mismatched": mismatched},
                  "without_the_extension_unresolved": plain_unresolved,
                  "parity": float((during - before).abs().max()), "after": float((after - before).abs().max()),
                  "plain": composites(False), "gpu": composites(True),
                  "gpu_generic_exportables": composites(True, extension=False),
                  "layers": model.config.num_hidden_layers}))
"""

# argv: OUT, the prompts and decode tokens as JSON. A --split-cache export runs as LiteRT-LM
# drives it: embedder.tflite (tokens -> embeddings), auxiliary.tflite (the rotary table of the
# positions, the mask, the cache update) and model.tflite (the new keys and values; logits at
# decode). For each prompt: a right-padded (or full) prefill, then one decode step per token,
# each decode's logits compared with transformers' at that position.
SPLIT_PARITY = r"""
import json, sys
import numpy as np, torch, transformers
from ai_edge_litert.interpreter import Interpreter

out, prompts, decode = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
model = transformers.AutoModelForCausalLM.from_pretrained(out + "/hf", trust_remote_code=True,
                                                          dtype=torch.float32).eval()
its = {n: Interpreter(model_path=f"{out}/{n}.tflite") for n in ("embedder", "auxiliary", "model")}
sigs = {n: sorted(it.get_signature_list()) for n, it in its.items()}
run = lambda n, s: its[n].get_signature_runner(s)
P = int(next(s for s in sigs["model"] if s.startswith("prefill_")).split("_")[1])
details = run("model", "decode").get_input_details()
caches = sorted(k for k in details if k.startswith("kv_cache_"))
C = int(details[caches[0]]["shape"][2])

def step(tokens, start, valid, phase):
    # phase "prefill_P" or "decode": embed, rope, mask, model, then the cache update
    global kv
    T = tokens.shape[1]
    pos = np.arange(start, start + T, dtype=np.int32)
    emb = run("embedder", f"{phase}_embedder" if phase == "decode" else f"prefill_embedder_{P}")(token_ids=tokens)
    rope = run("auxiliary", "decode_rope" if phase == "decode" else f"prefill_rope_{P}")(input_pos=pos)
    mask = run("auxiliary", "decode_mask" if phase == "decode" else f"prefill_mask_{P}")(
        input_tokens=tokens, time_step=np.array(start, np.int32), valid_mask=valid)
    r = run("model", phase)(embeddings=emb["embeddings"], pos_emb_cos=rope["pos_emb_cos"],
                            pos_emb_sin=rope["pos_emb_sin"], mask_global=mask["mask_global"], **kv)
    slices = {k: v for k, v in r.items() if k.startswith("kv_slice_")}
    kv = run("auxiliary", "decode_cache_update" if phase == "decode" else f"prefill_cache_update_{P}")(
        input_pos=pos, valid_mask=valid, **kv, **slices)
    return r.get("logits")

report = []
for prompt in prompts:
    seq = prompt + decode
    with torch.no_grad():
        ref = model(torch.tensor([seq])).logits[0].numpy()
    n = len(prompt)
    kv = {k: np.zeros(details[k]["shape"], np.float32) for k in caches}
    tokens = np.zeros((1, P), np.int32); tokens[0, :n] = prompt
    valid = np.zeros((1, P), bool); valid[0, :n] = True
    step(tokens, 0, valid, f"prefill_{P}")
    for i in range(len(decode) - 1):
        p = n + i
        logits = step(np.array([[seq[p]]], np.int32), p, np.ones((1, 1), bool), "decode")[0, -1]
        report.append({"prompt": n, "position": p, "max_diff": float(np.abs(logits - ref[p]).max()),
                       "max_logit": float(np.abs(ref[p]).max()),
                       "argmax": [int(logits.argmax()), int(ref[p].argmax())]})
print(json.dumps({"signatures": sigs, "prefill": P, "cache": C, "steps": report}))
"""

# argv: OUT. Converter V2's checkpoint loader on OUT/hf, made as export_hf makes it (inside
# the shipped extension's patch_context) and made plainly: which parameters of the model
# each resolves, and whether each resolved one equals the model's.
V2_LOADER = r"""
import importlib, json, os, sys
import torch, transformers

out = sys.argv[1]
hf = out + "/hf"
sys.path.insert(0, out)
name = next(f[:-3] for f in os.listdir(out) if f.startswith("shapescript_litert_") and f.endswith(".py"))
importlib.import_module(name)
from litert_torch.generative.export_hf.core import exportable_module, weights_loader
from litert_torch.generative.export_hf.model_ext import extension as extension_lib

model = transformers.AutoModelForCausalLM.from_pretrained(hf, trust_remote_code=True, dtype=torch.float32).eval()
config = exportable_module.ExportableModuleConfig(model=hf, trust_remote_code=True, prefill_lengths=[8],
                                                  cache_length=32, quantization_recipe="none",
                                                  extension_modules=[name])
ext = extension_lib.resolve_model_extension(model.config.model_type, config)
tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
original = weights_loader.HFCheckpointWeightsLoader
with ext.patch_context():
    patched = weights_loader.HFCheckpointWeightsLoader(hf, tie_word_embeddings=tied)
plain = weights_loader.HFCheckpointWeightsLoader(hf, tie_word_embeddings=tied)
report = {"tied": tied, "restored": weights_loader.HFCheckpointWeightsLoader is original}
for label, loader in (("extension", patched), ("plain", plain)):
    unresolved, mismatched, checked = [], [], 0
    for pname, p in model.named_parameters(remove_duplicate=False):
        checked += 1
        try:
            t = loader(pname)
        except KeyError:
            unresolved.append(pname)
            continue
        if tuple(t.shape) != tuple(p.shape) or not torch.equal(t.to(p.dtype), p.detach()):
            mismatched.append(pname)
    report[label] = {"checked": checked, "unresolved": unresolved, "mismatched": mismatched}
print(json.dumps(report))
"""
