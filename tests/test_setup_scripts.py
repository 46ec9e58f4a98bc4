"""What setup and CI do when something goes wrong: a clear message and the right status."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import lockfile

ROOT = Path(__file__).resolve().parent.parent


def _run(argv, **env):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env})


def test_a_python_that_cannot_run_fails_setup_naming_it(tmp_path):
    cache = tmp_path / "cache"
    r = _run([str(ROOT / "scripts" / "env_vllm.sh")], SHAPESCRIPT_CACHE=str(cache),
             SHAPESCRIPT_PYTHON=str(tmp_path / "no-python"), SHAPESCRIPT_PYTHON_VERSION="")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        f"setup: FAILED: cannot run {tmp_path / 'no-python'} "
        "(set SHAPESCRIPT_PYTHON to a Python 3.10+)")
    assert not (cache / "venv-vllm").exists()


def test_a_failed_step_shows_its_log_and_names_it(tmp_path):
    # pip with no index and nothing local cannot fetch the locked pip the llama-cpp-python
    # build environment starts with.
    cache = tmp_path / "cache"
    r = _run([str(ROOT / "scripts" / "env_llama_wheel.sh")], SHAPESCRIPT_CACHE=str(cache),
             PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path), PIP_EXTRA_INDEX_URL="",
             PIP_CONFIG_FILE=os.devnull)
    assert r.returncode == 1, r.stderr
    log = cache / "logs" / "llama-build-pip.log"
    pip_version = lockfile.locked(ROOT / "locks" / "pip.txt")["pip"]
    assert f"setup: --- last lines of {log} ---" in r.stderr
    assert f"No matching distribution found for pip=={pip_version}" in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"setup: FAILED: installing locks/pip.txt into {cache / 'venv-llama-build'} (full log: {log})")
    # nothing half-built is left where setup looks for the wheel, nor marked ready
    assert sorted(p.name for p in (cache / "wheels").iterdir()) == [".build.lock"]
    assert not (cache / "venv-llama-build" / ".shapescript-ready").exists()


def _ci_with_test_sh(tmp_path, status: int):
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    test_sh = tmp_path / "test.sh"
    test_sh.write_text(f"#!/usr/bin/env bash\necho \"test.sh $*\"\nexit {status}\n")
    test_sh.chmod(0o755)
    return _run(["bash", str(tmp_path / ".ci" / "run")], CI="true")


def test_ci_passes_pytest_s_status_through(tmp_path):
    r = _ci_with_test_sh(tmp_path, 1)
    assert r.returncode == 1
    assert r.stdout.startswith("test.sh -rfEs --durations=25")
    assert "ci: ./test.sh exited 1" in r.stderr


def test_ci_treats_no_tests_collected_as_no_failure(tmp_path):
    r = _ci_with_test_sh(tmp_path, 5)
    assert r.returncode == 0
    assert "ci: pytest collected no tests" in r.stderr
