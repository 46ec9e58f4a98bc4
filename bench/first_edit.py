"""The first keystroke after opening a large file, against the moment it comes.

A fresh server (an empty cache folder) opens a generated 10,000-line file (`gen.py`);
once the file's first publish has come (its first lines' syntax errors), it waits D ms,
then types one letter in a function body in the middle of the file (`typing_mix.py`'s
`letter`: `x` becomes the unknown `xs`). Printed per D (median of --runs fresh servers):
the time from the keystroke to the first publish of its version (the edited function's
diagnostics, published before the rest of the file's first check: docs/language-server.md),
and to the last one (the complete list), and whether the keystroke's error is in both.

    .venv/bin/python bench/first_edit.py [--delays 0,100,200,300,600] [--runs 3] [--lines 10000]
"""
from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the bare client is a test helper

import typing_mix  # noqa: E402
from gen import generate  # noqa: E402
from stdio_client import StdioClient  # noqa: E402

QUIET = 3.0  # seconds without a publish after which the last one counts as complete


def position(text: str, offset: int) -> dict:
    return {"line": text.count("\n", 0, offset), "character": offset - (text.rfind("\n", 0, offset) + 1)}


def one(text: str, delay: float) -> tuple:
    """(ms to the keystroke's first publish, ms to its last, the error in the first, in the last)."""
    root = tempfile.mkdtemp(prefix="ss-first-edit-")
    uri = f"file://{root}/big.ss"
    env = {**os.environ, "SHAPESCRIPT_CACHE_DIR": tempfile.mkdtemp(prefix="ss-cache-")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    srv = StdioClient([sys.executable, "-m", "shapescript_server.main"], cwd=root, env=env)
    start, end, new = next(iter(typing_mix.sites(text, "letter", 1)))
    line = position(text, start)["line"]
    try:
        srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}", "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}}, timeout=120)
        srv.notify("initialized", {})
        srv.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shapescript",
                                                             "version": 1, "text": text}})
        sent = None
        got: list = []
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            try:
                t, msg = srv.receive(QUIET if got else max(0.01, deadline - time.perf_counter()))
            except queue.Empty:
                break
            if msg.get("method") != "textDocument/publishDiagnostics":
                srv.answer_server_request(msg)
                continue
            p = msg["params"]
            if sent is None:
                time.sleep(delay)
                sent = srv.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [{"range": {"start": position(text, start), "end": position(text, end)},
                                        "text": new}]})
            elif p.get("version") == 2:
                got.append((t, any(d["range"]["start"]["line"] == line for d in p["diagnostics"])))
    finally:
        srv.close()
    if not got:
        raise RuntimeError("no publish of the keystroke's version")
    return (got[0][0] - sent) * 1000, (got[-1][0] - sent) * 1000, got[0][1], got[-1][1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delays", default="0,100,200,300,600", help="ms after the first publish, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lines", type=int, default=10_000)
    args = ap.parse_args(argv)
    text = generate(args.lines)
    one(text[:2000], 0)  # the modules compiled once, untimed
    print(f"first keystroke after the open of a {text.count(chr(10))}-line file, median of {args.runs} fresh servers:")
    for d in (int(x) for x in args.delays.split(",")):
        runs = [one(text, d / 1000) for _ in range(args.runs)]
        first = statistics.median(r[0] for r in runs)
        last = statistics.median(r[1] for r in runs)
        shown = all(r[2] and r[3] for r in runs)
        print(f"  typed {d:4d} ms after the first publish: its first publish {first:6.0f} ms, its complete "
              f"diagnostics {last:6.0f} ms (each run {', '.join(f'{r[0]:.0f}' for r in runs)} ms); "
              f"its error in both: {'yes' if shown else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
