"""Quantized GGUF: size and accuracy of each `--dtype` against f32, in llama.cpp, and the
export's speed beside llama.cpp's own quantizer.

Two models: the trained tiny story model (examples/tiny_story, 64 wide: its rows are too
short for the K-quants' 256-value blocks, so llama.cpp's recipe falls back for some
tensors) and a 134M-parameter Llama (V=32000, D=768, 12 layers, F=2048; random weights,
std 0.02: its text means nothing, its logits still show each type's error). Each is
exported --gguf f32 and at every type; llama.cpp runs a 64-token prompt (the story's
opening for the story model) through each file: the top-1 agreement with f32 at the
prompt's positions, the greedy continuation's tokens equal to f32's (of 32), and the
largest logit difference (with f32's own logit spread and top-two gap beside: on random
weights the gap is small, so top-1 and greedy flip at errors a trained model shrugs off).
Then, for the 134M model, the time of `--dtype TYPE` (the whole command) against
llama.cpp's quantizer alone on the f32 file, and against the f32 export plus that
quantizer, the two-step way (warm cache, best of 3, the sides alternating).

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
    top2 = np.sort(base, axis=-1)[:, -2:]
    gap = float(np.median(top2[:, 1] - top2[:, 0]))
    print(f"\n{name}: 64-token prompt, llama.cpp (llama-cpp-python), against f32")
    print(f"(f32's logits: std {float(base.std()):.4f}, median gap between the top two {gap:.4f}: "
          "a type's top-1 flips where its error exceeds that gap)")
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
    for dtype in ["f32"] + types:
        files[dtype] = os.path.join(work, f"big-{dtype}.gguf")
        export(["-o", files[dtype], "--random-weights", "--seed", "1", "--dtype", dtype, *dims])
    table("134M Llama (V=32000, D=768, 12 layers, F=2048; random weights)", files,
          [(i * 7919 + 13) % BIG["V"] for i in range(64)])

    # the speed: each side run `repeats` times, alternating with the other (a shared
    # machine's load moves within seconds), the best of each compared
    from shapescript_core.dtypes import QUANTIZED
    repeats = 3

    def alone(dtype: str) -> float:
        r = subprocess.run([sys.executable, "-c", QUANTIZE, files["f32"], os.path.join(work, "q.gguf"),
                            QUANTIZED[dtype]], capture_output=True, text=True, check=True)
        return float(r.stdout.split()[-1])

    def ours(dtype: str) -> float:
        return export(["-o", files[dtype], "--random-weights", "--seed", "1", "--dtype", dtype, *dims])

    f32 = min(ours("f32") for _ in range(repeats))
    print(f"\nspeed, 134M model, warm (best of {repeats}, the two sides alternating): `shapescript export --dtype "
          f"TYPE` (the whole command), and llama.cpp's quantizer alone on the f32 file (the call only)")
    print(f"{'dtype':8} {'export s':>9} {'quantizer s':>12} {'ratio':>6} {'f32 export + quantizer s':>25} {'ratio':>6}")
    for dtype in types:
        a, e = [], []
        for _ in range(repeats):
            e.append(ours(dtype))
            a.append(alone(dtype))
        print(f"{dtype:8} {min(e):9.2f} {min(a):12.2f} {min(e) / min(a):6.2f} {f32 + min(a):25.2f} "
              f"{min(e) / (f32 + min(a)):6.2f}")
    print(f"(the f32 export alone: {f32:.2f} s)")


if __name__ == "__main__":
    main()
