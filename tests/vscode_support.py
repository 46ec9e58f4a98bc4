"""Where the VS Code extension's toolchain is (scripts/setup_vscode.sh puts it there),
and stopping what a test started."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(ROOT, "editors", "vscode")
CACHE = os.path.join(os.environ.get("SHAPESCRIPT_CACHE") or os.path.expanduser("~/.cache/shapescript"), "vscode")
CODE_SERVER_VERSION = "4.100.3"
CODE_SERVER_DIR = os.path.join(CACHE, f"code-server-{CODE_SERVER_VERSION}")
CODE_SERVER = os.path.join(CODE_SERVER_DIR, "node_modules", ".bin", "code-server")
SETUP = os.path.join(ROOT, "scripts", "setup_vscode.sh")


def chromium_path():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def server_command() -> str:
    """The language server's console script: the checkout's .venv, else next to this Python."""
    for d in (os.path.join(ROOT, ".venv", "bin"), os.path.dirname(sys.executable)):
        p = os.path.join(d, "shapescript-lsp")
        if os.access(p, os.X_OK):
            return p
    found = shutil.which("shapescript-lsp")
    if found:
        return found
    raise AssertionError("shapescript-lsp is not installed (pip install -e .)")


def _missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm"
    for what in ("playwright-core", "esbuild", "@vscode/vsce", "vscode-textmate"):
        if not os.path.isdir(os.path.join(EXT, "node_modules", what)):
            return f"editors/vscode/node_modules/{what}"
    if not os.path.exists(os.path.join(CODE_SERVER_DIR, ".done")):
        return f"code-server {CODE_SERVER_VERSION} in {CACHE}"
    if chromium_path() is None:
        return "chromium"
    return None


def missing_toolchain() -> str | None:
    """None when everything is there; else what is missing. Runs the setup script first
    (quick when all is cached) so a checkout set up without it still gets it."""
    if _missing() is None:
        return None
    if os.path.exists(SETUP):
        p = subprocess.run(["bash", SETUP], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            return f"{_missing()} (setup_vscode.sh failed: {(p.stderr or p.stdout)[-1500:]})"
    return _missing()


def _pids_naming(text: str) -> list:
    """The processes whose command line or environment names `text` (this run's tmp folder)."""
    mine = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == mine:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read().decode(errors="replace")
            env = ""
            if text not in cmd:
                with open(f"/proc/{d}/environ", "rb") as fh:
                    env = fh.read().decode(errors="replace")
            if text in cmd or text in env:
                out.append(int(d))
        except OSError:
            continue
    return out


def kill_tree(proc, marker: str | None = None, grace: float = 3.0) -> None:
    """Stop `proc`'s process group (it was started with start_new_session), or, with
    `marker`, every process that names it (this run's folder: browsers, servers and
    their children that left the group). TERM first, then KILL."""
    if proc is not None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the rest of the group, if any is left
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    if marker:
        pids = _pids_naming(marker)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        end = time.monotonic() + grace
        while pids and time.monotonic() < end:
            pids = [p for p in pids if os.path.exists(f"/proc/{p}") and _alive(p)]
            time.sleep(0.1)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def leftover(marker: str) -> list:
    """Processes still naming `marker` (for the test's own check that all stopped)."""
    return [p for p in _pids_naming(marker) if _alive(p)]
