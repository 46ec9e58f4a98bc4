"""Memory over a long session: resident set size after many edits.

Opens the generated 10,000-line file (`gen.py`) in a Workspace and toggles a digit in
function bodies (`eps=1e-5` ⇄ `1e-6`, at 50 places spread over the file), re-checking
after each edit as the server does. Prints the RSS after 100 edits and after all of them, and the
entries in the workspace's item caches against the items that exist.

    .venv/bin/python bench/memory.py [--lines 10000] [--edits 10000]

Goal: RSS after 10,000 edits within 10% of the RSS after 100. Beside the RSS, the
blocks Python's allocator holds for live objects (`sys.getallocatedblocks`): constant
when nothing leaks, while the RSS may still grow a little by fragments (arenas that keep
a few live blocks among freed ones), up to a plateau.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from gen import body_edit_offsets, generate  # noqa: E402
from shapescript_core.workspace import Workspace  # noqa: E402


def rss_mb() -> float:
    """The resident set size now (Linux /proc; else the peak from getrusage)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cache_sizes(ws) -> dict:
    if hasattr(ws, "cache_sizes"):
        return ws.cache_sizes()
    return {"models": len(ws._model_cache), "signatures": len(ws._sig_cache), "bodies": len(ws._body_cache)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=10_000)
    args = ap.parse_args(argv)

    text = generate(args.lines)
    path = "/tmp/shapescript-bench/memory.ss"
    ws = Workspace()
    ws.set_text(path, text)
    ws.diagnostics(path)
    sites = body_edit_offsets(text, 50)  # by edit 100, each has been toggled twice
    marks = sorted({m for m in (100, 1000, args.edits) if m <= args.edits})
    got = {}
    t0 = time.perf_counter()
    for k in range(1, args.edits + 1):
        off = sites[k % len(sites)]
        text = text[:off] + ("6" if text[off] == "5" else "5") + text[off + 1:]
        ws.set_text(path, text)
        ws.diagnostics(path)
        if k in marks:
            gc.collect()
            got[k] = rss_mb()
            print(f"after {k:6d} edits: RSS {got[k]:7.1f} MB   live blocks {sys.getallocatedblocks():,}   "
                  f"caches {cache_sizes(ws)}   "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    items = ws.file(path).items
    fns = sum(1 for it in items if it.kind == "fn")
    models = sum(1 for it in items if it.kind == "model")
    print(f"items now: {len(items)} ({fns} functions, {models} models)")
    first, last = got[marks[0]], got[marks[-1]]
    print(f"RSS after {marks[-1]} edits / after {marks[0]}: {last / first:.3f} "
          f"(+{last - first:.1f} MB; goal: within 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
