"""Run LiteRT-Torch's `export_hf` on an `hf` export: `convert_main.py` in the LiteRT
environment's python, as a subprocess (torch and litert_torch are not in ours).

Its output goes to a log file beside nothing we write (the system's temporary folder),
removed when the conversion succeeds and named in the error when it fails. Its
`shapescript-litert:` lines are the progress; a cancel (or Ctrl-C) kills its process group.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time

from ...blas_threads import child_env
from ...export_errors import ExportError
from .convert_main import PREFIX
from .litert_messages import conversion_failed

log = logging.getLogger("shapescript.export.litert")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert_main.py")
POLL_S = 0.2


def _env() -> dict:
    env = child_env({k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")})
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    return env


def _tail(path: str, lines: int = 400) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()[-20000:]
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _last_error(text: str) -> str:
    """The exception line of a Python traceback, else the last non-empty line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in reversed(lines):
        if l and not l.startswith(("File ", "^", "~")) and ("Error" in l or "Exception" in l):
            return l[:300]
    return lines[-1][:300] if lines else "no output"


def run_export_hf(ctx, python: str, args: dict) -> float:
    """Run the conversion; its wall time in seconds. ExportError when it fails."""
    work = tempfile.mkdtemp(prefix="shapescript-litert-")
    args_file = os.path.join(work, "args.json")
    log_file = os.path.join(work, "export_hf.log")
    with open(args_file, "w", encoding="utf-8") as fh:
        json.dump(args, fh)
    start = time.monotonic()
    keep = False  # the log stays only when the conversion failed: the error names it
    try:
        with open(log_file, "wb") as out:
            proc = subprocess.Popen([python, SCRIPT, args_file], stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=_env(), cwd=work, start_new_session=True)
            try:
                seen = 0
                while proc.poll() is None:
                    time.sleep(POLL_S)
                    seen = _report(ctx, log_file, seen, start)
                    ctx.check_cancelled()
            finally:
                if proc.poll() is None:  # cancelled or interrupted: leave no process behind
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        if proc.returncode != 0:
            text = _tail(log_file)
            log.error("export_hf failed (exit %s); its output:\n%s", proc.returncode, text)
            keep = True
            raise ExportError(conversion_failed(_last_error(text), log_file))
        return time.monotonic() - start
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _report(ctx, log_file: str, seen: int, start: float) -> int:
    try:
        with open(log_file, "rb") as fh:
            fh.seek(seen)
            chunk = fh.read()
    except OSError:
        return seen
    end = chunk.rfind(b"\n") + 1
    message = None
    for line in chunk[:end].decode("utf-8", "replace").splitlines():
        if line.startswith(PREFIX):
            message = line[len(PREFIX):]
    if message is not None:
        ctx.progress(f"LiteRT: {message}", 0, 1)
    return seen + end
