"""Time and memory of a tiny `shapescript export --litert` (examples/llama.ss at V=320
D=256 H=4 Hkv=2 F=512 L=2, random weights, prefill 16, cache 64, with a tokenizer so the
.litertlm is made too): wall time of the whole export, the conversion's share of it (the
summary line), and the peak resident memory of the export process and of the LiteRT
conversion it runs (getrusage of the waited-for children: the largest of them, the
conversion's python), and the CPU time of both (on a shared machine, the steadier number). The issue measured about 15 s and 0.9 GB for such an export on an
idle 2-core machine.

    python bench/litert_export.py [--runs 2] [--dir DIR] [--split-cache]

`--split-cache` measures export_hf's split-cache mode instead (embedder.tflite and
auxiliary.tflite beside model.tflite).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
DIMS = {"V": 320, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 2}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--split-cache", action="store_true")
    args = ap.parse_args()
    from test_gguf_tokenizer import train  # a byte-level BPE of V=320 tokens
    work = args.dir or tempfile.mkdtemp(prefix="shapescript-bench-litert-")
    tok = os.path.join(work, "tokenizer")
    if not os.path.isdir(tok):
        train(tok)
    print(f"litert export of examples/llama.ss {DIMS}, prefill 16, cache 64 (load {os.getloadavg()[0]:.1f})")
    for run in range(args.runs):
        out = os.path.join(work, f"out{run}")
        cmd = [sys.executable, "-m", "shapescript_core.cli", "export", os.path.join(ROOT, "examples", "llama.ss"),
               "--litert", "--random-weights", "--tokenizer", tok, "-o", out, "--force",
               "--prefill-length", "16", "--cache-length", "64"] + (["--split-cache"] if args.split_cache else [])
        for k, v in DIMS.items():
            cmd += ["--dim", f"{k}={v}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            return 1
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        m = re.search(r"converted in (\d+) s", p.stderr)
        files = ("model.tflite", "model.litertlm") + (("embedder.tflite", "auxiliary.tflite") if args.split_cache else ())
        sizes = ", ".join(f"{f} {os.path.getsize(os.path.join(out, f)) / 1e6:.2f} MB" for f in files)
        print(f"run {run + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU (conversion {m.group(1) if m else '?'} s wall), "
              f"peak RSS of the largest process so far {peak_mib:.0f} MiB; {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
