"""Quantized GGUF: size and accuracy of each `--dtype` against f32, in llama.cpp, and the
export's speed beside llama.cpp's own quantizer.

Two models: the trained tiny story model (examples/tiny_story, 64 wide: its rows are too
short for the K-quants' 256-value blocks, so llama.cpp's recipe falls back for some
tensors) and a 134M-parameter Llama (V=32000, D=768, 12 layers, F=2048; random weights,
std 0.02: its text means nothing, its logits still show each type's error). Each is
exported --gguf f32 and at every type; llama.cpp runs a 64-token prompt (the story's
opening for the story model) through each file: the top-1 agreement with f32 at the
prompt's positions, the greedy continuation's tokens equal to f32's (of 32), and the
largest logit difference. Then, for the 134M model, the time of `--dtype TYPE` against
llama.cpp's quantizer alone on the f32 file (warm cache, best of 2).

    python bench/gguf_quantized.py [--types q8_0,q6_k,q5_k_m,q4_k_m,q4_0] [--dir DIR] [--no-big]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "examples", "tiny_story"))

LLAMA = os.path.join(ROOT, "examples", "llama.ss")
BIG = {"V": 32000, "D": 768, "H": 12, "Hkv": 4, "F": 2048, "L": 12}
QUANTIZE = '''
import os, sys, time, logging, llama_cpp
logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
p = llama_cpp.llama_model_quantize_default_params()
p.ftype = getattr(llama_cpp, "LLAMA_FTYPE_" + sys.argv[3])
t = time.perf_counter()
assert llama_cpp.llama_model_quantize(os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), p) == 0
print(time.perf_counter() - t)
'''


def export(args: list) -> float:
    t = time.perf_counter()
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "shapescript"), "export", LLAMA, "--gguf",
                        "--force", *args], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    return time.perf_counter() - t


def run(path: str, prompt: list, steps: int = 32):
    import numpy as np
    from gguf_support import llama_cpp_model
    llm = llama_cpp_model(path, n_ctx=len(prompt) + steps + 8)
    try:
        llm.eval(prompt)
        logits = np.array(llm.scores[:len(prompt)], dtype=np.float32)
        out = []
        for _ in range(steps):
            out.append(int(np.argmax(llm.scores[llm.n_tokens - 1])))
            llm.eval([out[-1]])
        return logits, out
    finally:
        llm.close()


def table(name: str, files: dict, prompt: list):
    import numpy as np
    base, base_out = run(files["f32"], prompt)
    print(f"\n{name}: 64-token prompt, llama.cpp (llama-cpp-python), against f32")
    print(f"{'dtype':8} {'size':>10} {'x f32':>6} {'top-1 =':>8} {'greedy =':>9} {'max |dlogit|':>13}")
    for dtype, path in files.items():
        logits, out = run(path, prompt)
        same = float((logits.argmax(-1) == base.argmax(-1)).mean())
        prefix = next((i for i, (a, b) in enumerate(zip(out, base_out)) if a != b), len(out))
        size = os.path.getsize(path)
        print(f"{dtype:8} {size / 1e6:8.2f} MB {size / os.path.getsize(files['f32']):6.3f} {same:8.1%} "
              f"{prefix:6d}/{len(out)} {float(np.abs(logits - base).max()):13.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--types", default="q8_0,q6_k,q5_k_m,q4_k_m,q4_0")
    ap.add_argument("--dir")
    ap.add_argument("--no-big", action="store_true", help="the story model only")
    args = ap.parse_args()
    types = args.types.split(",")
    work = args.dir or tempfile.mkdtemp(prefix="shapescript-quantized-")
    import train as story
    ckpt = os.path.join(work, "story")
    _, fast = story.train(ckpt)
    dims = story.dim_flags(len(fast))
    files = {}
    for dtype in ["f32"] + types:
        files[dtype] = os.path.join(work, f"story-{dtype}.gguf")
        export(["-o", files[dtype], "--weights", ckpt, "--dtype", dtype, *dims])
    table("tiny story model (examples/tiny_story: D=64, 2 layers, V=384)", files,
          (fast.encode(open(story.STORY, encoding="utf-8").read(), add_special_tokens=False) * 2)[:64])
    if args.no_big:
        return
    dims = [a for k, v in BIG.items() for a in ("--dim", f"{k}={v}")]
    files = {}
    timing = {}
    for dtype in ["f32"] + types:
        files[dtype] = os.path.join(work, f"big-{dtype}.gguf")
        timing[dtype] = min(export(["-o", files[dtype], "--random-weights", "--seed", "1", "--dtype", dtype, *dims])
                            for _ in range(2))
    table("134M Llama (V=32000, D=768, 12 layers, F=2048; random weights)", files,
          [(i * 7919 + 13) % BIG["V"] for i in range(64)])
    print("\nspeed, 134M model, warm (best of 2): the export at each type, and llama.cpp's quantizer alone "
          "on the f32 file")
    print(f"{'dtype':8} {'export s':>9} {'quantizer s':>12} {'ratio':>6}")
    for dtype in types:
        from shapescript_core.dtypes import QUANTIZED
        alone = min(float(subprocess.run([sys.executable, "-c", QUANTIZE, files["f32"], os.path.join(work, "q.gguf"),
                                          QUANTIZED[dtype]], capture_output=True, text=True, check=True)
                          .stdout.split()[-1]) for _ in range(2))
        print(f"{dtype:8} {timing[dtype]:9.2f} {alone:12.2f} {timing[dtype] / alone:6.2f}")
    print(f"(f32 export alone: {timing['f32']:.2f} s)")


if __name__ == "__main__":
    main()
