"""`shapescript export --litert` end to end with the real LiteRT stack (the LiteRT
environment, tests/envs.py): tiny exports of examples/llama.ss (with a tokenizer: the
.tflite and the .litertlm) and examples/gpt2.ss (without one: the .tflite only), then

- the .tflite in ai-edge-litert's interpreter: a right-padded and a full prefill, then
  decode step by step, against transformers on the `hf/` export at every position;
- the .litertlm in the LiteRT-LM engine: its tokenization and greedy continuation against
  the Hugging Face tokenizer and transformers' greedy generate;
- the shipped ModelExtension (the seed's inner-loop checks): patch parity and restore,
  torch.export of prefill and decode with the odml composites and the causal flag;
- a `--split-cache` export (embedder, auxiliary and model .tflite) driven signature by
  signature as LiteRT-LM does, against transformers at every decode position;
- what is refused: a function that is no language model, a cache longer than a learned
  position table (E3317), a split cache without one rotary table (E3318), a missing
  environment (one line, exit 2), wrong options.
"""
from __future__ import annotations

import json
import os

import pytest

from checkout import CLI, ROOT
from envs import require_litert, run_in_env
from litert_support import (CACHE, DECODE, ENGINE_GREEDY, EXAMPLES, EXTENSION_CHECKS, GPT2_DIMS,
                            INTERPRETER_PARITY, LLAMA_DIMS, PREFILL, PROMPTS, SPLIT_PARITY, V2_LOADER,
                            export_litert)

TOLERANCE = 1e-4  # of the largest logit (float32 through XNNPACK: measured below 1e-6)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    pytest.importorskip("tokenizers")
    from test_gguf_tokenizer import V, train
    assert V == LLAMA_DIMS["V"]
    d = str(tmp_path_factory.mktemp("litert_tok") / "tokenizer")
    train(d)
    return d


@pytest.fixture(scope="module")
def llama(tmp_path_factory, tokenizer_dir):
    require_litert()
    out = str(tmp_path_factory.mktemp("litert_llama") / "llama-litert")
    r = export_litert(os.path.join(EXAMPLES, "llama.ss"), out, LLAMA_DIMS, tokenizer=tokenizer_dir)
    assert r.returncode == 0, r.stderr
    return out, r


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    require_litert()
    out = str(tmp_path_factory.mktemp("litert_gpt2") / "gpt2-litert")
    r = export_litert(os.path.join(EXAMPLES, "gpt2.ss"), out, GPT2_DIMS)
    assert r.returncode == 0, r.stderr
    return out, r


def test_the_llama_export_holds_the_tflite_the_bundle_the_hf_export_and_the_extension(llama):
    out, r = llama
    for f in ("model.tflite", "model.litertlm", "README.md", "shapescript_litert_llama.py",
              "hf/config.json", "hf/model.safetensors", "hf/modeling_llama.py", "hf/tokenizer.json"):
        assert os.path.isfile(os.path.join(out, f)), f
    config = json.load(open(os.path.join(out, "hf", "config.json")))
    assert config["model_type"] == "shapescript_llama"
    assert (config["bos_token_id"], config["eos_token_id"]) == (0, 0)  # <|endoftext|>
    assert json.load(open(os.path.join(out, "hf", "generation_config.json"))) == {"bos_token_id": 0, "eos_token_id": 0}
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"shapescript: wrote {out} (litert: model.tflite ")
    assert f"float32, prefill {PREFILL}, cache {CACHE}; model.litertlm " in last
    readme = open(os.path.join(out, "README.md")).read()
    assert "--extension_modules=shapescript_litert_llama" in readme and "--quantization_recipe=none" in readme
    assert not [n for n in os.listdir(os.path.dirname(out)) if ".shapescript-tmp-" in n]


def _parity(out, tolerance=TOLERANCE, argmax=True):
    got = run_in_env(require_litert(), INTERPRETER_PARITY, out, json.dumps(PROMPTS), json.dumps(DECODE),
                     timeout=600).result
    assert sorted(got["signatures"]) == sorted([f"prefill_{PREFILL}", "decode"])
    assert (got["prefill"], got["cache"]) == (PREFILL, CACHE)
    steps = got["steps"]
    # every decode position after the padded prompt, the full prompt's last one, and its decode
    assert len(steps) == 2 * (len(DECODE) - 1) + 1
    for s in steps:
        assert s["max_diff"] <= tolerance * s["max_logit"], s
        assert not argmax or s["argmax"][0] == s["argmax"][1], s
    return steps


def test_the_llama_tflite_runs_as_transformers_at_every_position(llama):
    steps = _parity(llama[0])
    print("llama max |diff|:", max(s["max_diff"] for s in steps))


def test_the_gpt2_tflite_runs_as_transformers_at_every_position(gpt2):
    out, r = gpt2
    steps = _parity(out)
    print("gpt2 max |diff|:", max(s["max_diff"] for s in steps))
    # no tokenizer: the .tflite alone, and the user is told why
    assert not os.path.exists(os.path.join(out, "model.litertlm"))
    assert "shapescript: warning: no model.litertlm: the LiteRT-LM bundle needs a tokenizer (--tokenizer DIR)" \
        in r.stderr


INT8_TOLERANCE = 0.1  # of the largest logit: int8 weights, float activations (measured 0.033 at 1.25)


def test_converter_v2_finds_the_tied_head_of_gpt2_through_the_extension(gpt2):
    """gpt2.ss reads its output layer from the embedding table (`model.wte.weight`): Converter
    V2's loader finds it through the extension only (its own list has `transformer.wte.weight`)."""
    got = run_in_env(require_litert(), V2_LOADER, gpt2[0], timeout=600).result
    assert got["tied"] is True and got["restored"] is True
    checked = got["extension"]["checked"]
    assert got["extension"] == {"checked": checked, "unresolved": [], "mismatched": []}
    assert "lm_head.weight" not in got["extension"]["unresolved"] and checked > 20
    assert got["plain"] == {"checked": checked, "unresolved": ["lm_head.weight"], "mismatched": []}


def test_int8_weights_only_when_asked_within_their_documented_tolerance(tmp_path, llama):
    out = str(tmp_path / "q8")
    r = export_litert(os.path.join(EXAMPLES, "llama.ss"), out, LLAMA_DIMS, extra=["--quantize", "int8"])
    assert r.returncode == 0, r.stderr
    assert "int8 weights (dynamic int8)" in r.stderr.strip().splitlines()[-1]
    assert not os.path.exists(os.path.join(out, "model_quantized.tflite"))
    # about a quarter of the float32 file: the matrices are int8
    assert os.path.getsize(os.path.join(out, "model.tflite")) < 0.4 * os.path.getsize(
        os.path.join(llama[0], "model.tflite"))
    steps = _parity(out, tolerance=INT8_TOLERANCE, argmax=False)
    assert max(s["max_diff"] for s in steps) > 1e-4  # quantized, not the float model
    print("int8 max |diff|:", max(s["max_diff"] for s in steps), "of", max(s["max_logit"] for s in steps))


@pytest.mark.parametrize("variant", ["llama_fused", "llama_interleaved"])
def test_a_llama_written_differently_runs_as_transformers(tmp_path, variant):
    """Fused projections split by patterns and a tied head; interleaved (GPT-J) rotary."""
    require_litert()
    from safetensors.torch import save_file
    from hf_support import VARIANTS, interleaved_llama, llama_reference, llama_state, to_variant
    src, opts, dims = VARIANTS[variant]
    if src == "interleaved":
        src = interleaved_llama(tmp_path)
    weights = tmp_path / "w.safetensors"
    save_file(to_variant(variant, llama_state(llama_reference(**opts))), str(weights))
    out = str(tmp_path / "out")
    r = export_litert(str(src), out, dims, weights=str(weights))
    assert r.returncode == 0, r.stderr
    steps = _parity(out)
    print(variant, "max |diff|:", max(s["max_diff"] for s in steps))



def test_a_norm_whose_eps_comes_through_a_parameter_runs_as_transformers(tmp_path):
    """A helper `normed(x, w, e: [])` called with a number: the generated code passes eps
    as a tensor, which no odml.rms_norm composite attribute holds (export_hf failed with
    "Composite attr value must be either Python str, float, ..."): that norm is
    normalized as written, the others stay composites. Found by random llama programs."""
    require_litert()
    src = open(os.path.join(EXAMPLES, "llama.ss")).read()
    assert src.count("rms_norm(x, blk.attn_norm, over=D, eps=1e-5)") == 1
    src = src.replace("rms_norm(x, blk.attn_norm, over=D, eps=1e-5)", "normed(x, blk.attn_norm, 1e-5)")
    src += "\nfn normed(x: [b n D], w: [D], e: []) -> [b n D]:\n    return rms_norm(x, w, over=D, eps=e)\n"
    path = tmp_path / "llama_normed.ss"
    path.write_text(src)
    out = str(tmp_path / "out")
    r = export_litert(str(path), out, LLAMA_DIMS)
    assert r.returncode == 0, r.stderr
    steps = _parity(out)
    print("eps through a parameter, max |diff|:", max(s["max_diff"] for s in steps))

def test_the_litertlm_tokenizes_and_continues_greedily_as_transformers(llama):
    texts = ["The quick brown", "Shapes are", "def forward(m,"]
    got = run_in_env(require_litert(), ENGINE_GREEDY, llama[0], json.dumps(texts), 12, timeout=600).result
    assert got["eos"] == [[0]]  # the stop token, from the tokenizer's eos
    for run in got["runs"]:
        assert run["engine_prompt_ids"] == run["hf_prompt_ids"], run
        assert run["engine_text"] == run["transformers_text"], run
        assert run["transformers_ids"], run  # it did continue


def test_the_shipped_extension_patches_exactly_and_marks_composites_and_causality(llama):
    got = run_in_env(require_litert(), EXTENSION_CHECKS, llama[0], timeout=600).result
    assert got["swapped"] == ["rms_norm"]
    assert got["restored"] is True
    assert got["parity"] == 0.0 and got["after"] == 0.0
    # every parameter, under its checkpoint key (the patch renames and fuses nothing)
    assert got["weights"] == {"checked": 9 * got["layers"] + 3, "unresolved": [], "mismatched": []}
    assert got["loader_restored"] is True and got["without_the_extension_unresolved"] == []
    norms = 2 * got["layers"] + 1  # two per block, the final one
    for variant in ("plain", "gpu"):
        assert got[variant]["exportables"] == ["CausalLiteRTExportableModuleForDecoderOnlyLMPrefill",
                                               "CausalLiteRTExportableModuleForDecoderOnlyLMGenerate"]
        for sig, ops in got[variant]["signatures"].items():
            assert ops["odml.rms_norm"]["count"] == norms, (variant, sig)
            assert {a["epsilon"] for a in ops["odml.rms_norm"]["attrs"]} == {1e-5}
    prefill = got["gpu"]["signatures"][f"prefill_8"]["odml.sdpa_transposed"]
    assert prefill["count"] == got["layers"] and all(a["is_causal"] for a in prefill["attrs"])
    # what export_hf's own exportables make of the same model: not causal (not on its allowlist)
    generic = got["gpu_generic_exportables"]["signatures"]["prefill_8"]["odml.sdpa_transposed"]
    assert not any(a["is_causal"] for a in generic["attrs"])


def test_a_split_cache_export_runs_as_transformers_at_every_decode_position(tmp_path):
    """export_hf's split-cache mode: the model takes embeddings, the rotary table its
    auxiliary RoPE signature computes (from the hf export's rotary_emb) and the mask; a
    right-padded and a full prefill, then decode steps, through all three files."""
    require_litert()
    out = str(tmp_path / "llama-split")
    r = export_litert(os.path.join(EXAMPLES, "llama.ss"), out, LLAMA_DIMS, extra=["--split-cache"])
    assert r.returncode == 0, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert f"float32, prefill {PREFILL}, cache {CACHE}; split cache: embedder.tflite " in last, last
    assert "--split_cache=True" in open(os.path.join(out, "README.md")).read()
    config = json.load(open(os.path.join(out, "hf", "config.json")))
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 500000.0}
    got = run_in_env(require_litert(), SPLIT_PARITY, out, json.dumps(PROMPTS), json.dumps(DECODE), timeout=600).result
    assert got["signatures"] == {
        "embedder": ["decode_embedder", f"prefill_embedder_{PREFILL}"],
        "auxiliary": ["decode_cache_update", "decode_mask", "decode_rope", f"prefill_cache_update_{PREFILL}",
                      f"prefill_mask_{PREFILL}", f"prefill_rope_{PREFILL}"],
        "model": ["decode", f"prefill_{PREFILL}"]}
    assert (got["prefill"], got["cache"]) == (PREFILL, CACHE)
    steps = got["steps"]
    assert len(steps) == 2 * (len(DECODE) - 1)  # the split prefill returns no logits
    for s in steps:
        assert s["max_diff"] <= TOLERANCE * s["max_logit"], s
        assert s["argmax"][0] == s["argmax"][1], s
    print("split-cache llama max |diff|:", max(s["max_diff"] for s in steps))


def test_a_split_cache_without_one_rotary_table_is_e3318(tmp_path):
    require_litert()
    r = export_litert(os.path.join(EXAMPLES, "gpt2.ss"), str(tmp_path / "gpt2-split"), GPT2_DIMS,
                      extra=["--split-cache"])
    assert r.returncode == 1, r.stderr
    assert ("error[E3318]: LiteRT's split cache needs `forward`'s rotary positions as one table, but the "
            "positions `pos` feed no rope (positions a rotary table can't hold)") in r.stdout
    assert r.stderr.strip().splitlines()[-1] == \
        "shapescript: not exported: --split-cache needs `forward`'s rotary positions as one table"
    assert os.listdir(tmp_path) == []


def test_a_cache_longer_than_the_position_table_is_e3317(tmp_path):
    require_litert()
    out = str(tmp_path / "gpt2-long")
    r = export_litert(os.path.join(EXAMPLES, "gpt2.ss"), out, GPT2_DIMS, extra=["--cache-length", "128"])
    # export_litert passes --cache-length 64 first: argparse keeps the last one, 128
    assert r.returncode == 1, r.stderr
    assert "error[E3317]: LiteRT's cache holds 128 positions, but `forward` has only 64 (`pos` is an index below 64)" \
        in r.stdout
    assert r.stderr.strip().splitlines()[-1] == \
        "shapescript: not exported: the cache length 128 is longer than `forward`'s 64 positions"
    assert os.listdir(tmp_path) == []


def _cli(*args, env=None):
    import subprocess
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def test_a_function_that_is_no_language_model_is_refused_for_litert(tmp_path):
    classifier = os.path.join(EXAMPLES, "classifier.ss")
    r = _cli("check", "--target", "litert", classifier)
    assert r.returncode == 1
    assert "error[E3301]: `classify` isn't a language model's forward function a serving engine can run" in r.stdout
    r = _cli("export", classifier, "--litert", "--fn", "classify", "--random-weights", "-o", tmp_path / "out")
    assert r.returncode == 1
    assert "error[E3301]" in r.stdout
    assert r.stderr.strip().splitlines()[-1] == "shapescript: not exported: 1 error stops the litert export"
    assert os.listdir(tmp_path) == []


def test_without_the_litert_environment_export_says_how_to_install_it(tmp_path):
    from shapescript_core.export.litert.env import INSTALL
    r = _cli("export", os.path.join(EXAMPLES, "llama.ss"), "--litert", "--random-weights", "-o", tmp_path / "out",
             *sum((["--dim", f"{k}={v}"] for k, v in LLAMA_DIMS.items()), []),
             env={"SHAPESCRIPT_LITERT_PYTHON": str(tmp_path / "no-python")})
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"shapescript: {INSTALL}"
    assert "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args, message", [
    (["--hf", "--prefill-length", "8"], "--prefill-length is for --litert only"),
    (["--gguf", "--quantize", "int8"], "--quantize is for --litert only"),
    (["--hf", "--split-cache"], "--split-cache is for --litert only"),
    (["--litert", "--dtype", "f16"], "--litert converts in float32, not f16: pass --quantize int8 for int8 weights"),
    (["--litert", "--prefill-length", "64", "--cache-length", "32"],
     "the prefill length 64 is longer than the cache length 32: the cache must hold the whole prefill"),
    (["--litert", "--cache-length", "0"], "--cache-length takes a positive integer, got `0`"),
])
def test_litert_options_are_checked_before_anything_runs(tmp_path, args, message):
    r = _cli("export", os.path.join(EXAMPLES, "llama.ss"), "--random-weights", "-o", tmp_path / "out", *args)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == f"shapescript: {message}"


def test_a_failed_conversion_leaves_nothing_and_names_its_log(tmp_path):
    """A python without litert_torch given as the LiteRT environment: the conversion fails."""
    import sys
    r = _cli("export", os.path.join(EXAMPLES, "llama.ss"), "--litert", "--random-weights", "-o", tmp_path / "out",
             *sum((["--dim", f"{k}={v}"] for k, v in LLAMA_DIMS.items()), []),
             env={"SHAPESCRIPT_LITERT_PYTHON": sys.executable})
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("shapescript: LiteRT-Torch's export_hf failed: ModuleNotFoundError: "
                           "No module named 'litert_torch' (its output: ")
    log = last.rsplit("(its output: ", 1)[1].rstrip(")")
    assert "Traceback" in open(log).read()
    assert os.listdir(tmp_path) == []
    import shutil
    shutil.rmtree(os.path.dirname(log))


def test_the_settings_give_litert_its_lengths_and_not_their_dtype():
    from shapescript_core.export.request import make_request
    from shapescript_core.settings import parse_settings
    settings = parse_settings({"export": {"prefillLength": 32, "cacheLength": 64, "dtype": "f16"}})
    r = make_request(os.path.join(EXAMPLES, "llama.ss"), "litert", random_weights=True, settings=settings)
    assert (r.prefill_length, r.cache_length, r.quantize, r.dtype) == (32, 64, None, "f32")
    r = make_request(os.path.join(EXAMPLES, "llama.ss"), "litert", random_weights=True, settings=settings,
                     prefill_length=16, quantize="int8")
    assert (r.prefill_length, r.cache_length, r.quantize) == (16, 64, "int8")
    assert make_request(os.path.join(EXAMPLES, "llama.ss"), "hf", random_weights=True, settings=settings).dtype == "f16"
