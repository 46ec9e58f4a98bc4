"""One BLAS thread for the command line's own process.

numpy loads OpenBLAS, which starts a thread per core and allocates their buffers as it
loads: 0.05-0.1 s of a cold start on the 2-core bench machine (docs/importing-weights.md,
Speed). No command of the command line multiplies matrices with numpy (an export copies,
re-orders, converts and quantizes), so `shapescript` asks for one thread before numpy is
loaded, unless the user set `OPENBLAS_NUM_THREADS`. A process the command starts (the
LiteRT conversion) gets the variable as the user had it: `child_env`.
"""
from __future__ import annotations

import os

VAR = "OPENBLAS_NUM_THREADS"
_set_here = False  # True when this process set VAR (the user had not)


def one_thread():
    """Ask OpenBLAS for one thread, unless the user chose a number; before numpy loads."""
    global _set_here
    if VAR not in os.environ:
        os.environ[VAR] = "1"
        _set_here = True


def child_env(env: dict) -> dict:
    """`env` (a copy of os.environ) as the user had it: without the VAR set here."""
    if _set_here and env.get(VAR) == "1":
        env = {k: v for k, v in env.items() if k != VAR}
    return env
