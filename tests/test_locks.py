"""Every environment setup builds holds exactly what its lock names (locks/*.txt), and
every install in scripts/ installs from a lock.

- Each built environment is compared with its lock: a package the lock does not name, or
  names at another version, fails the test, and so does one the lock names but the
  environment lacks (scripts/lockfile.py's `diff`, what `pip freeze --all` would show).
- Each lock names every requirement at one version with its sha256.
- A venv built from a lock is rebuilt when the lock changes, and left alone when it doesn't.
- The scripts install nothing by range: every `pip install` in scripts/ is `--require-hashes`
  (lock.sh, which writes the locks, is the one place that resolves ranges), every npm
  install is `npm ci` from a package-lock.json.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lockfile
from envs import CACHE_DIR, CONVERT_VENV, LITERT_VENV, READY_MARK, VLLM_VENV, missing

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ROOT / "locks"
SCRIPTS = ROOT / "scripts"

# (environment, its python, the locks it holds, what is installed beside them)
ENVIRONMENTS = {
    "main": (Path(sys.prefix), ["pip.txt", "main.txt", "llama-sdist.txt"], ("shapescript",)),
    "vllm": (VLLM_VENV, ["pip.txt", "vllm.txt"], ()),
    "litert": (LITERT_VENV, ["pip.txt", "litert.txt"], ()),
    "convert": (CONVERT_VENV, ["pip.txt", "convert.txt"], ()),
    "llama-build": (CACHE_DIR / "venv-llama-build", ["pip.txt", "llama-build.txt"], ()),
}


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_an_environment_holds_exactly_its_lock(name):
    venv, locks, allow = ENVIRONMENTS[name]
    python = venv / "bin" / "python"
    if name != "main" and not (venv / READY_MARK).exists():
        missing(f"no {name} environment at {venv} (run scripts/setup.sh)")
    extra, lacking = lockfile.differences(python, [str(LOCKS / f) for f in locks], allow)
    assert (extra, lacking) == ([], []), (
        f"{venv} differs from locks/{locks[1]}: not in the lock {extra}, missing {lacking}")


def _requirement_blocks(text: str) -> list[str]:
    """The lock's requirements, each with its continuation lines joined."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("lock", sorted(p.name for p in LOCKS.glob("*.txt")))
def test_a_lock_pins_every_package_with_its_hash(lock):
    blocks = _requirement_blocks((LOCKS / lock).read_text())
    assert blocks, f"locks/{lock} names nothing"
    for block in blocks:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==\S+( --hash=sha256:[0-9a-f]{64})+", block), block
    names = [lockfile.normalize(b.split("==")[0]) for b in blocks]
    assert len(names) == len(set(names)), f"locks/{lock} names a package twice"


def test_the_locks_read_back_as_name_and_version():
    got = lockfile.locked(LOCKS / "llama-sdist.txt")
    assert got == {"llama-cpp-python": "0.3.36"}
    main = lockfile.locked(LOCKS / "main.txt")
    assert main["torch"] == "2.13.0+cpu"
    assert "shapescript" not in main  # the project is installed beside its lock, editable


def _commands(script: Path):
    """The script's shell commands, continuation lines joined, comments dropped."""
    text = re.sub(r"\s*\\\n\s*", " ", script.read_text())
    for line in text.splitlines():
        line = line.split(" #")[0].strip()
        if line and not line.startswith("#"):
            yield line


# Installs of what was built here, with nothing resolved: the project itself (its
# dependencies are the lock's) and the llama-cpp-python wheel built from the hashed sdist.
LOCAL_INSTALLS = ("pip install -q --no-deps --no-build-isolation -e .", 'pip install -q --no-deps "$wheel"')


def test_every_install_in_the_scripts_is_from_a_lock():
    pip = re.compile(r"\bpip (install|wheel|download)\b")
    offenders = []
    for script in sorted(SCRIPTS.glob("*.sh")):
        if script.name == "lock.sh":
            continue  # the one place that resolves ranges: it writes the locks
        for line in _commands(script):
            if pip.search(line) and "--require-hashes" not in line and not any(a in line for a in LOCAL_INSTALLS):
                offenders.append(f"{script.name}: {line}")
            if re.search(r"\bnpm (install|i|add)\b", line):
                offenders.append(f"{script.name}: {line}")
    assert offenders == []
    npm_ci = [line for s in SCRIPTS.glob("*.sh") for line in _commands(s) if "npm ci" in line]
    assert len(npm_ci) == 2  # the extension's packages and code-server
    for folder in (ROOT / "editors" / "vscode", SCRIPTS / "code-server"):
        assert (folder / "package-lock.json").is_file(), folder


def _locked_venv(cache: Path, locks: Path) -> subprocess.CompletedProcess:
    script = f'source "{SCRIPTS / "env_common.sh"}"; ensure_cache_dirs; locked_venv tiny "$SHAPESCRIPT_CACHE/venv-tiny"'
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(SHAPESCRIPT_CACHE=str(cache), SHAPESCRIPT_LOCKS=str(locks), SHAPESCRIPT_PYTHON_VERSION="")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=600,
                          stdin=subprocess.DEVNULL)


def _lock_of(*names: str) -> str:
    """The blocks of locks/main.txt for these packages (small pure-Python ones)."""
    blocks = {lockfile.normalize(b.split("==")[0]): b for b in _requirement_blocks((LOCKS / "main.txt").read_text())}
    return "\n".join(blocks[n] for n in names) + "\n"


def test_a_venv_is_rebuilt_when_its_lock_changes_and_only_then(tmp_path):
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "pip.txt").write_text((LOCKS / "pip.txt").read_text())
    (locks / "tiny.txt").write_text(_lock_of("iniconfig"))
    cache = tmp_path / "cache"
    python = cache / "venv-tiny" / "bin" / "python"

    first = _locked_venv(cache, locks)
    assert first.returncode == 0, first.stderr
    assert "building" in first.stderr
    have = lockfile.installed(python)
    assert sorted(have) == ["iniconfig", "pip"]  # ensurepip's setuptools pruned
    assert have["pip"] == lockfile.locked(LOCKS / "pip.txt")["pip"]

    again = _locked_venv(cache, locks)
    assert again.returncode == 0 and again.stderr == ""

    (locks / "tiny.txt").write_text(_lock_of("iniconfig", "packaging"))
    changed = _locked_venv(cache, locks)
    assert changed.returncode == 0, changed.stderr
    assert "building" in changed.stderr
    assert sorted(lockfile.installed(python)) == ["iniconfig", "packaging", "pip"]


def test_a_lock_with_a_wrong_hash_fails_setup_naming_the_step(tmp_path):
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "pip.txt").write_text((LOCKS / "pip.txt").read_text())
    (locks / "tiny.txt").write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, _lock_of("iniconfig")))
    cache = tmp_path / "cache"
    r = _locked_venv(cache, locks)
    assert r.returncode == 1
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in r.stderr
    log = cache / "logs" / "tiny-install.log"
    assert r.stderr.strip().splitlines()[-1] == (
        f"setup: FAILED: installing tiny.txt into {cache / 'venv-tiny'} (full log: {log})")
    assert not (cache / "venv-tiny" / READY_MARK).exists()


def test_a_lock_is_written_from_pips_reports(tmp_path):
    """lock.sh's last step: every package pip installed, with the hash of the file it took
    (an index's, or computed for a local wheel found through --find-links), less the
    project itself (editable) and what the finished environment no longer holds."""
    local = tmp_path / "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    local.write_bytes(b"a local wheel")
    report = {"install": [
        {"metadata": {"name": "Jinja2", "version": "3.1.6"},
         "download_info": {"url": "https://files.example/jinja2-3.1.6-py3-none-any.whl",
                           "archive_info": {"hash": "sha256=" + "a" * 64, "hashes": {"sha256": "a" * 64}}}},
        {"metadata": {"name": "torch", "version": "2.13.0+cpu"},
         "download_info": {"url": local.as_uri(), "archive_info": {}}},
        {"metadata": {"name": "torchvision", "version": "0.29.1"},
         "download_info": {"url": "https://files.example/tv.whl", "archive_info": {"hashes": {"sha256": "b" * 64}}}},
        {"metadata": {"name": "shapescript", "version": "0.1.0"},
         "download_info": {"url": "file:///work/main", "dir_info": {"editable": True}}},
    ]}
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "freeze.txt").write_text("Jinja2==3.1.6\ntorch==2.13.0+cpu\npip==26.3\n")
    out = tmp_path / "x.txt"
    lockfile.write(str(out), [str(tmp_path / "r.json")], str(tmp_path / "freeze.txt"), ["shapescript"], "a note")
    assert _requirement_blocks(out.read_text()) == [
        "Jinja2==3.1.6 --hash=sha256:" + "a" * 64,
        "torch==2.13.0+cpu --hash=sha256:" + hashlib.sha256(b"a local wheel").hexdigest(),
    ]
    assert "# a note" in out.read_text()
