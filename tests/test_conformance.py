"""The shared conformance cases, through the real CLI (../shared/conformance/run.py)."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "..", "shared", "conformance", "run.py")


def _cli() -> str:
    venv = os.path.join(ROOT, ".venv", "bin", "shapescript")
    if os.path.exists(venv):
        return venv
    found = shutil.which("shapescript")
    if found:
        return found
    return f"{sys.executable} -m shapescript_core.cli"


@pytest.mark.parametrize("folder", ["ok", "core", "export"])
def test_conformance(folder):
    assert os.path.exists(RUNNER), "../shared/conformance/run.py is missing"
    p = subprocess.run([sys.executable, RUNNER, "--cli", _cli(),
                        os.path.join(ROOT, "..", "shared", "conformance", folder)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.endswith(" 0 failed") and not last.startswith("0 passed"), last
