"""Checking time and memory against the program's size (issue 16): each case runs the CLI
in a process of its own and prints its wall time and peak resident memory.

  dims      `shapescript check` of a file of N `dim` declarations (default 1,000,000 lines,
            about 20 MB): time, peak RSS, and the peak as a multiple of the file's size
            (the interpreter's own ~30 MB included); goal: at most 10x
  blank     `shapescript check` of one dim and N blank lines (default 20,000,000): the
            line index and the items' ends on a file of very many short lines
  server    the same file opened in the language server (the real stdio server, a
            didOpen of its text): time to the first publish and to the answer of a hover
            on its last dim (after the check), the server's peak RSS by then, and once it
            has kept the parsed items on disk (the editor quiet)
  layers    examples/llama.ss made small (V=64, D=32) with a stack of L layers (default 100,000):
            `shapescript check --target gguf --dim L=…`, then the export's work before it
            writes (the params of every layer, the size checks) through `export` into a
            per-tensor cap of 1 byte, which refuses right after them: nothing is written

    .venv/bin/python bench/scale.py [dims|layers|blank|server] [--n N]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the bare JSON-RPC client is a test helper
from stdio_client import StdioClient  # noqa: E402
CLI = [sys.executable, "-m", "shapescript_core.cli"]
LLAMA = os.path.join(ROOT, "examples", "llama.ss")  # made small but for L: the layers are what grows
SMALL = ["--dim", "V=64", "--dim", "D=32", "--dim", "H=4", "--dim", "Hkv=2", "--dim", "F=64"]


def run(args, cwd) -> tuple:
    """(seconds, peak RSS of this child in MiB, exit status, last line of stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    p = subprocess.run(CLI + args, cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT})
    took = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of the children is the largest one so far: run each case once, largest last
    tail = (p.stderr.strip().splitlines() or [""])[-1]
    return took, max(peak, before) / 1024, p.returncode, tail


def dims_text(n: int) -> str:
    return "".join(f"dim X{i} = {i + 1}\n" for i in range(n))


def dims(n: int):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "dims.ss")
        with open(path, "w") as fh:
            fh.write(dims_text(n))
        size = os.path.getsize(path) / 2 ** 20
        took, peak, rc, _ = run(["check", "dims.ss"], d)
        print(f"dims: {n:,} declarations ({size:.1f} MiB): check {took:.1f} s, exit {rc}, "
              f"peak RSS {peak:.0f} MiB = {peak / size:.1f}x the file")


def layers(n: int):
    with tempfile.TemporaryDirectory() as d:
        with open(LLAMA) as src, open(os.path.join(d, "llama.ss"), "w") as fh:
            fh.write(src.read())
        with open(os.path.join(d, "shapescript.toml"), "w") as fh:
            fh.write('[limits]\nmax_tensor_size = 1\n')  # refuse right after the params and sizes
        took, peak, rc, _ = run(["check", "--target", "gguf", *SMALL, "--dim", f"L={n}", "llama.ss"], d)
        print(f"layers: L={n:,}: check --target gguf {took:.1f} s, exit {rc}, peak RSS {peak:.0f} MiB")
        took, peak, rc, tail = run(["export", "llama.ss", "--gguf", "--random-weights", *SMALL, "--dim",
                                    f"L={n}", "-o", "o.gguf"], d)
        assert not os.path.exists(os.path.join(d, "o.gguf"))
        print(f"layers: L={n:,}: export up to its size check ({9 * n + 3:,} params) {took:.1f} s, exit {rc}, "
              f"peak RSS {peak:.0f} MiB ({tail[:60]}…)")


def blank(n: int):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "blank.ss"), "w") as fh:
            fh.write("dim X = 1\n" + "\n" * n)
        size = os.path.getsize(os.path.join(d, "blank.ss")) / 2 ** 20
        took, peak, rc, _ = run(["check", "blank.ss"], d)
        print(f"blank: a dim and {n:,} blank lines ({size:.1f} MiB): check {took:.1f} s, exit {rc}, "
              f"peak RSS {peak:.0f} MiB = {peak / size:.1f}x the file")


def peak_of(pid: int) -> float:
    """A live process's peak resident set size (Linux: VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def server(n: int):
    text = dims_text(n)
    size = len(text.encode()) / 2 ** 20
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "dims.ss")
        with open(path, "w") as fh:
            fh.write(text)
        uri = f"file://{path}"
        cache = os.path.join(d, "cache")
        env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": cache}
        srv = StdioClient([sys.executable, "-m", "shapescript_server.main"], cwd=d, env=env,
                          stderr=subprocess.DEVNULL)
        try:
            srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{d}",
                                       "capabilities": {"textDocument": {"publishDiagnostics": {
                                           "versionSupport": True}}}}, timeout=120)
            srv.notify("initialized", {})
            base = peak_of(srv.proc.pid)
            t = srv.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "shapescript", "version": 1, "text": text}})
            del text
            got = []
            while not got:  # the first publish (syntax errors first, for a big file)
                at, msg = srv.receive(600)
                if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
                    got.append(len(msg["params"]["diagnostics"]))
                else:
                    srv.answer_server_request(msg)
            # a hover needs the check: answered once it is done (the core does one job at a time)
            hover = srv.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                       "position": {"line": n - 1, "character": 5}}, timeout=600)
            last = time.perf_counter()
            assert "result" in hover and hover["result"], hover
            checked = peak_of(srv.proc.pid)
            end = time.perf_counter() + 120
            while not (os.path.isdir(cache) and any(f.endswith(".pickle") for f in os.listdir(cache))) \
                    and time.perf_counter() < end:
                time.sleep(0.2)
            time.sleep(1)
            saved = peak_of(srv.proc.pid)
        finally:
            srv.close(timeout=60)
        print(f"server: {n:,} declarations ({size:.1f} MiB): didOpen to the first publish ({got[0]} diagnostics) "
              f"{at - t:.1f} s, to a hover's answer (after the check) {last - t:.1f} s; "
              f"peak RSS {checked:.0f} MiB = {checked / size:.1f}x the file (at initialize: {base:.0f} MiB), "
              f"{saved:.0f} MiB = {saved / size:.1f}x once the parsed items are kept on disk")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?", choices=("dims", "layers", "blank", "server"))
    ap.add_argument("--n", type=int)
    a = ap.parse_args()
    if a.case in (None, "layers"):
        layers(a.n or 100_000)
    if a.case in (None, "blank"):  # before dims: the children's peak is the largest so far
        blank(a.n or 20_000_000)
    if a.case in (None, "dims"):
        dims(a.n or 1_000_000)
    if a.case in (None, "server"):
        server(a.n or 1_000_000)


if __name__ == "__main__":
    main()
