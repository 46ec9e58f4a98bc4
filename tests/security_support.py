"""Helpers of the security tests: the reproductions' tiny llama, and loading exports the
way a user does (transformers, trust_remote_code=True) in one child process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = (ROOT / "tests" / "programs" / "security_tiny.ss").read_text(encoding="utf-8")

LOADER = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch, transformers
transformers.logging.set_verbosity_error()
ids = torch.tensor([[1, 2, 3, 4, 5]])
out = {}
for d in sys.argv[1:]:
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(d, trust_remote_code=True).eval()
        with torch.no_grad():
            out[d] = {"ok": True, "logits": m(input_ids=ids, use_cache=False).logits.float().tolist()}
    except BaseException as e:
        out[d] = {"ok": False, "error": (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]}
print(json.dumps(out))
"""


def cli(*args, cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """Run `shapescript` (the real CLI) in a child process."""
    return subprocess.run([sys.executable, "-m", "shapescript_core.cli", *map(str, args)], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def load_all(dirs, env=None, timeout=600) -> dict:
    """{dir: {"ok": True, "logits": [...]} or {"ok": False, "error": ...}}: each export
    loaded by transformers with trust_remote_code=True and run once."""
    home = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
            "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run([sys.executable, "-c", LOADER, *map(str, dirs)], capture_output=True, text=True,
                       env={**os.environ, **home, **(env or {})}, timeout=timeout, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    return {Path(k): v for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items()}


def max_diff(a, b) -> float:
    import numpy as np
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())
