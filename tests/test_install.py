"""The install a user gets: the wheel (`pip wheel .`), installed into fresh virtual
environments (no system site-packages, nothing of the checkout on the path), run from a
folder outside the checkout.

- The wheel holds every file of the source packages (every `.py`, the grammar, the docs
  pages), compared file by file with the checkout: not a list derived from `__init__.py`
  files, which a missing `__init__.py` leaves out of both sides.
- A plain install (`pip install shapescript-*.whl`): `check`, `explain`, the language
  server (an LSP initialize and a publish over stdio), every diagnostic link opens a page
  of the install; `export` says in one line to install the extra (exit 2, no traceback).
- An export install: torch 2.13.0 first (the CPU build, from the machine's local wheel),
  then `shapescript[export]` from the wheel: `check`, `explain`, `export --hf`, `--gguf`,
  `--vllm` of the llama example (tiny dims, random weights); transformers loads the `--hf`
  export and computes logits; `gguf` reads the `.gguf` back; the vLLM plugin compiles.

torch and the extra's libraries take minutes to install, so they live in a venv cached
outside the clone, `$SHAPESCRIPT_CACHE/install-test/base-HASH` (HASH: the Python, the
torch pin, the extra's requirements as the wheel declares them and the versions of
locks/main.txt, which every install here takes as constraints), built once under a
lock. The venv the test installs into is fresh each time and sees the cached one's
site-packages through a `.pth` file, after its own: shapescript itself is installed from
the freshly built wheel every time, and pip resolves the extra against what is there.

The venvs are made without pip (`venv --without-pip`, 2 s instead of 30 on a loaded
machine) and filled by this interpreter's pip (`pip --python`), from the package index
as a user's would be.
"""
from __future__ import annotations

import email.parser
import fcntl
import glob
import hashlib
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

import lockfile
from envs import CACHE_DIR, SCRIPT_ENV, run_in_env
from stdio_client import StdioClient

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"shapescript_core": ROOT / "shapescript_core", "shapescript_server": ROOT / "shapescript_server"}
SOURCES = ("pyproject.toml", "setup.py", "README.md", "shapescript_core", "shapescript_server", "docs")
BROKEN = ROOT / "examples" / "broken_attention.ss"  # E0408 at 14:27
CLEAN = ROOT / "examples" / "llama.ss"
TORCH_PIN = "torch==2.13.0"  # scripts/env_common.sh
LOCK = ROOT / "locks" / "main.txt"
TINY = {"V": 256, "D": 64, "H": 4, "Hkv": 2, "F": 128, "L": 1}  # the llama example, small
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


@dataclass
class Install:
    work: Path       # the folder outside the checkout the commands run in
    wheel: Path
    venv: Path
    env: dict

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *cmd, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(list(map(str, cmd)), cwd=self.work, env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def shapescript(self, *args, timeout: float = 300) -> subprocess.CompletedProcess:
        return self.run(self.bin("shapescript"), *args, timeout=timeout)


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
    out = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{what} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def _venv(path: Path) -> Path:
    _step("venv", [sys.executable, "-m", "venv", "--without-pip", path], timeout=120)
    return path


def _pip_install(venv: Path, *args, timeout: float = 900):
    _step(f"pip install {' '.join(map(str, args))}",
          [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", *args],
          timeout=timeout, env=_clean_env())


def _site_packages(venv: Path) -> Path:
    (sp,) = glob.glob(str(venv / "lib" / "python*" / "site-packages"))
    return Path(sp)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the checkout's sources."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=IGNORED)
        else:
            shutil.copy2(ROOT / name, src / name)
    # the build backend of this environment when it is recent enough: no download
    isolation = ["--no-build-isolation"] if _can_build_here() else []
    _step("pip wheel", [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, src,
                        "-w", work / "dist"], timeout=300)
    (built,) = (work / "dist").glob("shapescript-*.whl")
    return built


def _outside(tmp_path_factory, name: str) -> Path:
    work = tmp_path_factory.mktemp(name)
    assert ROOT not in work.parents
    for example in (BROKEN, CLEAN):
        shutil.copy2(example, work / example.name)
    return work


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Install:
    """A plain install: the wheel alone, with the dependencies it declares (at the locked versions)."""
    work = _outside(tmp_path_factory, "plain")
    venv = _venv(work / "venv")
    _pip_install(venv, "-c", _constraints(work), wheel)
    return Install(work, wheel, venv, _clean_env())


def _export_requirements(wheel: Path) -> list:
    meta = _metadata(wheel)
    return sorted(r.split(";")[0].strip() for r in meta.get_all("Requires-Dist") if 'extra == "export"' in r)


def _constraints(folder: Path) -> Path:
    """A constraints file pinning torch and every version of locks/main.txt: nothing
    installed after torch replaces it, and the wheel's ranges resolve to what the suite was
    locked at (the test does not move when a new release is published)."""
    return lockfile.constraints_file(folder, LOCK, extra=(TORCH_PIN,))


def _base_venv(wheel: Path) -> Path:
    """The cached venv with torch and the export extra's libraries (not shapescript)."""
    recipe = json.dumps([sys.version, TORCH_PIN, _export_requirements(wheel), LOCK.read_text()])
    base = CACHE_DIR / "install-test" / f"base-{hashlib.sha256(recipe.encode()).hexdigest()[:16]}"
    ready = base / ".shapescript-ready"
    base.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{base}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others wait for it
        if not ready.exists():
            shutil.rmtree(base, ignore_errors=True)
            _venv(base)
            _pip_install(base, TORCH_PIN, timeout=1800)  # torch first, as setup installs it
            _pip_install(base, "-c", _constraints(base), *_export_requirements(wheel), timeout=1800)
            (base / "recipe.json").write_text(recipe, encoding="utf-8")
            ready.write_text("", encoding="utf-8")
    return base


@pytest.fixture(scope="module")
def exporting(wheel, tmp_path_factory) -> Install:
    """torch, then `shapescript[export]` from the wheel, into a fresh venv (the libraries
    from the cached base venv, shapescript itself from the wheel)."""
    base = _base_venv(wheel)
    work = _outside(tmp_path_factory, "export")
    venv = _venv(work / "venv")
    own = _site_packages(venv)
    (own / "_shapescript_test_base.pth").write_text(f"{_site_packages(base)}\n", encoding="utf-8")
    _pip_install(venv, "-c", _constraints(work), f"{wheel}[export]")
    return Install(work, wheel, venv, {**_clean_env(), **SCRIPT_ENV})


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


# ---------------------------------------------------------------- the wheel
def _expected_files() -> dict:
    """{name in the wheel: file in the checkout}: every file of the source packages, and
    the docs pages (under shapescript_core/docs/)."""
    out = {}
    for pkg, folder in PACKAGES.items():
        for f in folder.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                out[f"{pkg}/{f.relative_to(folder).as_posix()}"] = f
    for f in (ROOT / "docs").rglob("*.md"):
        out[f"shapescript_core/docs/{f.relative_to(ROOT / 'docs').as_posix()}"] = f
    return out


def test_the_wheel_holds_every_file_of_the_packages(wheel):
    expected = _expected_files()
    assert "shapescript_core/weights/random_init.py" in expected  # the package the wheel once lacked
    assert "shapescript_core/syntax/grammar.lark" in expected and "shapescript_core/docs/errors/E0408.md" in expected
    with zipfile.ZipFile(wheel) as z:
        names = {n for n in z.namelist() if ".dist-info/" not in n}
        missing, extra = sorted(set(expected) - names), sorted(names - set(expected))
        assert (missing, extra) == ([], []), f"missing from the wheel: {missing}; not in the checkout: {extra}"
        changed = [n for n, f in expected.items() if z.read(n) != f.read_bytes()]
    assert changed == []


def test_the_wheel_declares_only_the_core_s_dependencies(wheel):
    meta = _metadata(wheel)
    requires = meta.get_all("Requires-Dist")
    plain = sorted(re.split(r"[<>=!~ ;\[]", r)[0].lower() for r in requires if "extra ==" not in r)
    assert plain == ["lark", "lsprotocol", "pygls"]
    export = {re.split(r"[<>=!~ ;\[]", r)[0].lower() for r in requires if 'extra == "export"' in r}
    assert {"numpy", "safetensors", "gguf", "transformers"} <= export
    assert not [r for r in requires if r.lower().startswith("torch")]
    with zipfile.ZipFile(wheel) as z:
        entry = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "shapescript = shapescript_core.cli:entry" in entry
    assert "shapescript-lsp = shapescript_server.main:main" in entry


# ---------------------------------------------------------------- a plain install
def _check_and_explain(inst: Install):
    bad = inst.shapescript("check", BROKEN.name)
    assert bad.returncode == 1, bad.stderr
    assert "error[E0408]" in bad.stdout and f"{BROKEN.name}:14:27" in bad.stdout
    good = inst.shapescript("check", CLEAN.name)
    assert (good.returncode, good.stdout.strip(), good.stderr) == (0, "", "")
    project = inst.shapescript("check", "--format", "json")  # no path: the folder, the venv skipped
    assert project.returncode == 1
    assert [(Path(d["file"]).name, d["code"]) for d in map(json.loads, project.stdout.splitlines())] == [
        (BROKEN.name, "E0408")]
    page = inst.shapescript("explain", "E0408")
    assert page.returncode == 0, page.stderr
    assert page.stdout.strip() == (ROOT / "docs" / "errors" / "E0408.md").read_text(encoding="utf-8").strip()
    assert inst.shapescript("explain", "E9999").returncode == 2
    version = inst.shapescript("--version")
    assert version.stdout == f"shapescript {_metadata(inst.wheel)['Version']}\n"


def test_the_cli_checks_and_explains_without_numpy_or_torch(installed):
    _check_and_explain(installed)
    # the checker ran with neither installed: they are the export extra's
    probe = installed.run(installed.bin("python"), "-c", "import importlib.util as u; "
                          "print([m for m in ('numpy', 'torch', 'server') if u.find_spec(m)])")
    assert probe.stdout.strip() == "[]", probe.stderr


# what a plain install's export says: it has none of the export extra's libraries, nor torch
PLAIN_EXPORT_NEEDS = ("needs safetensors, numpy, gguf, rich, transformers, accelerate, tokenizers and torch, "
                      "which are not installed: install torch (the build you want), then "
                      "pip install 'shapescript[export]'")


@pytest.mark.parametrize("target", ["--hf", "--gguf"])
def test_a_plain_install_s_export_names_the_extra_in_one_line(installed, target):
    r = installed.shapescript("export", CLEAN.name, target, "--random-weights", "-o", "out")
    name = target[2:]
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"shapescript: the {name} export {PLAIN_EXPORT_NEEDS}\n"
    assert not (installed.work / "out").exists()


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
    site = _site_packages(installed.venv)
    for code in codes:
        path, fragment = _target(urls[code])
        _opens(path, fragment, site)


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
        _opens(path, fragment, _site_packages(installed.venv))
        assert path.read_text(encoding="utf-8").startswith("# E0408")
        # the editor's export, in a plain install: the same one line as the CLI's
        out = srv.request("workspace/executeCommand", {"command": "shapescript.export", "arguments": [{
            "uri": (installed.work / CLEAN.name).as_uri(), "target": "hf", "random": True,
            "output": str(installed.work / "from-editor")}]}, timeout=60)
        assert out["result"]["ok"] is False
        assert out["result"]["message"] == f"the hf export {PLAIN_EXPORT_NEEDS}"
        assert not (installed.work / "from-editor").exists()
    finally:
        srv.close()
        stderr = srv.proc.stderr.read().decode(errors="replace")
    assert srv.proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr


# ---------------------------------------------------------------- an export install
def _dims() -> list:
    return [a for k, v in TINY.items() for a in ("--dim", f"{k}={v}")]


def test_the_export_install_holds_shapescript_from_the_wheel(exporting):
    where = exporting.run(exporting.bin("python"), "-c", "import shapescript_core, torch; "
                          "print(shapescript_core.__file__); print(torch.__version__)")
    assert where.returncode == 0, where.stderr
    module, torch_version = where.stdout.split()
    assert Path(module).parent.parent == _site_packages(exporting.venv)  # its own, not the cached venv's
    assert torch_version.startswith("2.13.0")
    _check_and_explain(exporting)


def test_the_hf_export_runs_in_transformers(exporting):
    r = exporting.shapescript("export", CLEAN.name, "--hf", "--random-weights", *_dims(), "-o", "llama-hf")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.splitlines()[-1].startswith(f"shapescript: wrote {exporting.work / 'llama-hf'} (hf: ")
    run = run_in_env(exporting.bin("python"), """
        import json, sys
        import torch
        from transformers import AutoModelForCausalLM
        model, info = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True,
                                                           output_loading_info=True)
        model.eval()
        ids = torch.tensor([[1, 17, 42, 99, 3, 250]])
        with torch.no_grad():
            logits = model(ids).logits
            again = model(ids[:, :3]).logits
        print(json.dumps({"shape": list(logits.shape), "finite": bool(torch.isfinite(logits).all()),
                          "missing": sorted(info["missing_keys"]), "unexpected": sorted(info["unexpected_keys"]),
                          "std": float(logits.std()),
                          "causal": float((logits[:, :3] - again).abs().max())}))
    """, exporting.work / "llama-hf", timeout=600, env=exporting.env)
    assert run.result["shape"] == [1, 6, TINY["V"]] and run.result["finite"]
    assert (run.result["missing"], run.result["unexpected"]) == ([], [])  # every weight loaded
    assert run.result["std"] > 0
    assert run.result["causal"] < 1e-4  # later tokens don't change earlier logits


def test_the_gguf_export_reads_back(exporting):
    r = exporting.shapescript("export", CLEAN.name, "--gguf", "--random-weights", *_dims(), "-o", "llama.gguf")
    assert r.returncode == 0, r.stdout + r.stderr
    run = run_in_env(exporting.bin("python"), """
        import json, sys
        from gguf import GGUFReader
        reader = GGUFReader(sys.argv[1])
        field = reader.fields["general.architecture"]
        print(json.dumps({"arch": bytes(field.parts[field.data[0]]).decode(),
                          "tensors": sorted(t.name for t in reader.tensors)}))
    """, exporting.work / "llama.gguf", timeout=300, env=exporting.env)
    assert run.result["arch"] == "llama"
    assert {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"} <= set(run.result["tensors"])


def test_the_vllm_export_holds_a_plugin_that_compiles(exporting):
    r = exporting.shapescript("export", CLEAN.name, "--vllm", "--random-weights", *_dims(), "-o", "llama-vllm")
    assert r.returncode == 0, r.stdout + r.stderr
    out = exporting.work / "llama-vllm"
    assert (out / "config.json").is_file() and (out / "README.md").is_file()
    plugin = sorted(p.relative_to(out).as_posix() for p in (out / "vllm_plugin").rglob("*.py"))
    assert plugin, "no vllm_plugin/*.py"
    compiled = exporting.run(exporting.bin("python"), "-m", "compileall", "-q", out / "vllm_plugin")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
