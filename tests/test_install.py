"""A plain install, as a user gets it: the wheel (`pip wheel .`), installed into a fresh
virtual environment (no system site-packages, nothing of the checkout on the path), runs
the CLI and the language server, and every link a diagnostic carries opens a page that
the install itself holds.

The venv is made without pip (`venv --without-pip`, 2 s instead of 30 on a loaded
machine) and filled by this interpreter's pip (`pip --python`); the dependencies come
from the package index, as they would for a user.
"""
from __future__ import annotations

import email.parser
import glob
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from stdio_client import StdioClient

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "shapescript_core", "shapescript_server", "docs")
BROKEN = ROOT / "examples" / "broken_attention.ss"  # E0408 at 14:27
CLEAN = ROOT / "examples" / "llama.ss"


@dataclass
class Install:
    work: Path
    wheel: Path
    venv: Path
    env: dict

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *cmd, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), cwd=self.work, env=self.env, capture_output=True, text=True,
                              timeout=timeout)


def _can_build_here() -> bool:
    """Whether this environment's setuptools builds the wheel (>= 61 for pyproject
    metadata; bdist_wheel is its own from 70.1, before that the `wheel` package's)."""
    try:
        major, minor = (int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    if (major, minor) >= (70, 1):
        return True
    try:
        importlib.metadata.version("wheel")
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 61


def _step(what: str, cmd: list, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{what} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Install:
    work = tmp_path_factory.mktemp("install")
    src = work / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    # the build backend of this environment when it is recent enough: no download
    isolation = ["--no-build-isolation"] if _can_build_here() else []
    _step("pip wheel", [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, str(src),
                        "-w", str(work / "dist")], timeout=300)
    (wheel,) = (work / "dist").glob("shapescript-*.whl")
    venv = work / "venv"
    _step("venv", [sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    _step("pip install", [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "-q", str(wheel)], timeout=600, env=env)
    for example in (BROKEN, CLEAN):
        shutil.copy2(example, work / example.name)
    return Install(work, wheel, venv, env)


def _site_packages(inst: Install) -> Path:
    (sp,) = glob.glob(str(inst.venv / "lib" / "python*" / "site-packages"))
    return Path(sp)


# ---------------------------------------------------------------- the wheel
def test_the_wheel_holds_the_packages_and_the_pages_and_only_the_core_s_dependencies(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    tops = {n.split("/")[0] for n in names}
    assert "server" not in tops and "shapescript_server" in tops
    assert "shapescript_server/main.py" in names and "shapescript_server/transport.py" in names
    assert not [n for n in names if "stdio_client" in n]  # a test helper, not shipped
    for init in ROOT.glob("shapescript_core/**/__init__.py"):  # every subpackage of the core
        assert str(init.relative_to(ROOT)) in names
    assert "shapescript_core/syntax/grammar.lark" in names
    for page in [*ROOT.glob("docs/*.md"), *ROOT.glob("docs/errors/*.md")]:
        assert "shapescript_core/" + str(page.relative_to(ROOT)) in names

    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = email.parser.Parser().parsestr(zipfile.ZipFile(installed.wheel).read(meta_name).decode())
    requires = meta.get_all("Requires-Dist")
    plain = sorted(re.split(r"[<>=!~ ;\[]", r)[0].lower() for r in requires if "extra ==" not in r)
    assert plain == ["lark", "lsprotocol", "pygls"]
    export = {re.split(r"[<>=!~ ;\[]", r)[0].lower() for r in requires if 'extra == "export"' in r}
    assert {"numpy", "safetensors", "gguf"} <= export
    assert not [r for r in requires if r.lower().startswith("torch")]
    entry = zipfile.ZipFile(installed.wheel).read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert "shapescript-lsp = shapescript_server.main:main" in entry


# ---------------------------------------------------------------- the CLI
def test_the_cli_checks_and_explains_without_numpy_or_torch(installed):
    bad = installed.run(installed.bin("shapescript"), "check", BROKEN.name)
    assert bad.returncode == 1, bad.stderr
    assert "error[E0408]" in bad.stdout and f"{BROKEN.name}:14:27" in bad.stdout
    good = installed.run(installed.bin("shapescript"), "check", CLEAN.name)
    assert (good.returncode, good.stdout.strip(), good.stderr) == (0, "", "")

    page = installed.run(installed.bin("shapescript"), "explain", "E0408")
    assert page.returncode == 0, page.stderr
    assert page.stdout.strip() == (ROOT / "docs" / "errors" / "E0408.md").read_text(encoding="utf-8").strip()
    assert installed.run(installed.bin("shapescript"), "explain", "E9999").returncode != 0

    # the checker ran with neither installed: they are the export extra's
    probe = installed.run(installed.bin("python"), "-c", "import importlib.util as u; "
                          "print([m for m in ('numpy', 'torch', 'server') if u.find_spec(m)])")
    assert probe.stdout.strip() == "[]", probe.stderr


def _codes() -> list:
    """Every code the core can emit, and every code with a page."""
    found = set(p.stem for p in (ROOT / "docs" / "errors").glob("*.md"))
    for py in (ROOT / "shapescript_core").rglob("*.py"):
        found |= set(re.findall(r"[\"']([EW]\d{4})[\"']", py.read_text(encoding="utf-8")))
    return sorted(found)


def _target(url: str) -> tuple:
    u = urlparse(url)
    assert u.scheme == "file", url
    return Path(unquote(u.path)), u.fragment


def _opens(path: Path, fragment: str, inside: Path) -> None:
    assert path.is_file(), f"{path} does not exist"
    assert inside in path.parents, f"{path} is not in the install ({inside})"
    if fragment:
        text = path.read_text(encoding="utf-8")
        heading = any(re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") == fragment
                      for h in re.findall(r"^#+\s+(.*)$", text, re.M))
        assert f'id="{fragment}"' in text or heading, f"{path} has no anchor #{fragment}"


def test_every_diagnostic_link_opens_a_page_the_install_holds(installed):
    codes = _codes()
    assert "E0408" in codes and "E3306" in codes
    out = installed.run(installed.bin("python"), "-c",
                        "import json, sys; from shapescript_core.diagnostics import doc_url; "
                        "print(json.dumps({c: doc_url(c) for c in sys.argv[1:]}))", *codes)
    assert out.returncode == 0, out.stderr
    urls = json.loads(out.stdout)
    site = _site_packages(installed)
    for code in codes:
        path, fragment = _target(urls[code])
        _opens(path, fragment, site)


# ---------------------------------------------------------------- the server
def _publish(srv: StdioClient, uri: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        _, msg = srv.receive(max(deadline - time.monotonic(), 0.01))
        if srv.answer_server_request(msg):
            continue
        if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
            return msg["params"]


def test_the_server_runs_from_the_install_over_stdio(installed):
    srv = StdioClient([installed.bin("shapescript-lsp")], cwd=str(installed.work), env=installed.env,
                      stderr=subprocess.PIPE)
    try:
        init = srv.request("initialize", {"processId": os.getpid(), "rootUri": installed.work.as_uri(),
                                          "capabilities": {}}, timeout=60)
        assert init["result"]["serverInfo"]["name"] == "shapescript-lsp"
        srv.notify("initialized", {})
        uri = (installed.work / BROKEN.name).as_uri()
        srv.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "shapescript", "version": 1, "text": BROKEN.read_text(encoding="utf-8")}})
        pub = _publish(srv, uri)
        assert pub["version"] == 1
        (d,) = [d for d in pub["diagnostics"] if d["code"] == "E0408"]
        assert d["range"]["start"] == {"line": 13, "character": 26}
        path, fragment = _target(d["codeDescription"]["href"])
        _opens(path, fragment, _site_packages(installed))
        assert path.read_text(encoding="utf-8").startswith("# E0408")
    finally:
        srv.close()
        stderr = srv.proc.stderr.read().decode(errors="replace")
    assert srv.proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
