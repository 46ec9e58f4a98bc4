"""Differential testing: random well-typed programs, each export against the evaluator.

    python bench/differential.py [-n 10000] [--start 0] [--targets hf,gguf] [--keep DIR]

For each seed (tests/progen.py makes its program), the program is checked; one that
checks clean is evaluated by the reference evaluator (shapescript_core.evaluate) on
random weights and inputs, exported --hf with the real pipeline and run by
transformers (with and without the KV cache for a language model), and the outputs
compared within 1e-5 relative. Prints programs tried, exported and disagreements per
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
    args = ap.parse_args(argv)
    from differential_support import case_text, quiet, run_case
    quiet()
    from progen import generate
    counts = {"tried": 0, "checked": 0, "exported": {"hf": 0}, "disagree": {"hf": 0}}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.start, args.start + args.n):
            case = generate(seed)
            counts["tried"] += 1
            try:
                res = run_case(case, tmp)
            except Exception:  # a crash of the harness or the exporter: a disagreement, with its traceback
                res = {"checked": True, "hf": ("disagree", traceback.format_exc(limit=3))}
            if res.pop("checked", False):
                counts["checked"] += 1
            for target, (status, why) in res.items():
                if status in ("agree", "disagree"):
                    counts["exported"][target] += 1
                if status == "disagree":
                    counts["disagree"][target] += 1
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, f"seed{seed}.ss"), "w") as fh:
                        fh.write(case_text(case, f"progen-seed={seed}"))
                    print(f"seed {seed} ({target}): {why.strip()[:600]}", flush=True)
            if counts["tried"] % 25 == 0:
                print(f"... {counts['tried']} tried, {time.time() - t0:.0f} s", flush=True)
    print(f"programs tried: {counts['tried']}; checked clean: {counts['checked']}")
    for target in counts["exported"]:
        print(f"{target}: exported and compared {counts['exported'][target]}, "
              f"disagreements {counts['disagree'][target]}")
    print(f"{time.time() - t0:.0f} s")
    return 1 if any(counts["disagree"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
