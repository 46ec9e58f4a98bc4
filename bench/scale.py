"""Checking time and memory against the program's size (issue 16): each case runs the CLI
in a process of its own and prints its wall time and peak resident memory.

  dims      `shapescript check` of a file of N `dim` declarations (default 1,000,000 lines,
            about 20 MB): time, peak RSS, and the peak as a multiple of the file's size
            (the interpreter's own ~30 MB included)
  layers    examples/llama.ss made small (V=64, D=32) with a stack of L layers (default 100,000):
            `shapescript check --target gguf --dim L=…`, then the export's work before it
            writes (the params of every layer, the size checks) through `export` into a
            per-tensor cap of 1 byte, which refuses right after them: nothing is written

    .venv/bin/python bench/scale.py [dims|layers] [--n N]
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


def dims(n: int):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "dims.ss")
        with open(path, "w") as fh:
            fh.write("".join(f"dim X{i} = {i + 1}\n" for i in range(n)))
        size = os.path.getsize(path) / 2 ** 20
        took, peak, rc, _ = run(["check", "dims.ss"], d)
        print(f"dims: {n:,} declarations ({size:.1f} MiB): check {took:.1f} s, exit {rc}, "
              f"peak RSS {peak:.0f} MiB = {peak / size:.0f}x the file")


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?", choices=("dims", "layers"))
    ap.add_argument("--n", type=int)
    a = ap.parse_args()
    if a.case in (None, "layers"):
        layers(a.n or 100_000)
    if a.case in (None, "dims"):
        dims(a.n or 1_000_000)


if __name__ == "__main__":
    main()
