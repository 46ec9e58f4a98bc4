"""Differential testing: random well-typed programs, each export against the evaluator.

    python bench/differential.py [-n 10000] [--start 0] [--targets hf,gguf] [--keep DIR]

For each seed (tests/progen.py makes its program), the program is checked; one that
checks clean is evaluated by the reference evaluator (shapescript_core.evaluate) on
random weights and inputs, exported --hf with the real pipeline and run by
transformers (with and without the KV cache for a language model), and the outputs
compared within 1e-5 relative. Every K seeds a llama-shaped program (progen.llama_case:
its scalar keywords written many ways) is also exported --gguf and run by llama.cpp
(1e-4 relative: llama.cpp's own kernels). Prints programs tried, exported and disagreements per
target, and each disagreement's seed and reason; a disagreement's program is written
to --keep (default: bench/differential-failures/) for shrinking (tests/shrink.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--keep", default=os.path.join(HERE, "differential-failures"))
    ap.add_argument("--gguf-every", type=int, default=5,
                    help="also a llama-shaped program through --gguf and llama.cpp every K seeds (0: never)")
    args = ap.parse_args(argv)
    from differential_support import quiet, run_case, run_gguf
    quiet()
    from progen import generate, llama_case
    counts = {"tried": 0, "checked": 0, "exported": {"hf": 0, "gguf": 0}, "disagree": {"hf": 0, "gguf": 0},
              "refused": {"hf": 0, "gguf": 0}}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.start, args.start + args.n):
            runs = [(generate(seed), run_case, "hf")]
            if args.gguf_every and seed % args.gguf_every == 0:
                runs.append((llama_case(seed), run_gguf, "gguf"))
            for case, run, name in runs:
                tally(counts, seed, case, run, name, tmp, args.keep)
            if (seed - args.start + 1) % 25 == 0:
                print(f"... {counts['tried']} tried, {counts['checked']} checked, exported {counts['exported']}, "
                      f"refused {counts['refused']}, disagreements {counts['disagree']}, {time.time() - t0:.0f} s",
                      flush=True)
    print(f"programs tried: {counts['tried']} (hf: one per seed; gguf: a llama-shaped one every "
          f"{args.gguf_every} seeds); checked clean: {counts['checked']}")
    for target in counts["exported"]:
        print(f"{target}: exported and compared {counts['exported'][target]}, "
              f"refused with a diagnostic {counts['refused'][target]}, "
              f"disagreements {counts['disagree'][target]}, "
              f"conditioned (f32 rounding amplified, the same in f64) {counts.get('conditioned', {}).get(target, 0)}")
    print(f"{time.time() - t0:.0f} s")
    return 1 if any(counts["disagree"].values()) else 0


def tally(counts: dict, seed: int, case, run, name: str, tmp: str, keep: str):
    """Run one case for one target and count it; a disagreement is printed and kept."""
    from differential_support import case_text
    counts["tried"] += 1
    try:
        res = run(case, tmp)
    except Exception:  # a crash of the harness or the exporter: a disagreement, with its traceback
        res = {"checked": True, name: ("disagree", traceback.format_exc(limit=3))}
    if not res.pop("checked", False):
        return
    counts["checked"] += 1
    status, why = res[name]
    if status in ("agree", "disagree", "conditioned"):  # conditioned: f32 rounding amplified
        counts["exported"][name] += 1
    if status == "refused":
        counts["refused"][name] += 1
    if status == "conditioned":  # the same function in f64; the program amplifies f32 rounding here
        counts.setdefault("conditioned", {}).setdefault(name, 0)
        counts["conditioned"][name] += 1
        print(f"seed {seed} ({name}) conditioned: {why.strip()[:300]}", flush=True)
    if status == "disagree":
        counts["disagree"][name] += 1
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, f"seed{seed}-{name}.ss"), "w") as fh:
            fh.write(case_text(case, f"progen-seed={seed} target={name}"))
        print(f"seed {seed} ({name}): {why.strip()[:600]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
