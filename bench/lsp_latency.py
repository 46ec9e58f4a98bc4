"""Diagnostics latency of the language server as the user types.

Starts `shapescript-lsp` as a subprocess and opens a generated 10,000-line file (copies
of a llama-like model, `gen.py`). Then, measuring from sending `didChange` to receiving
the `publishDiagnostics` of that version:

- cold: didOpen to the first publish;
- an edit mix like real typing (`typing_mix.py`: letters, a digit, brackets, commas,
  operators, `:`, `#`, Enter, a pasted line, a deleted line), each edit followed by its
  undo, one at a time: p50 / p95 / p99 per kind (edit and undo together);
- bursts: 20 keystrokes sent without waiting, with hovers and completions interleaved:
  the time from the last keystroke to the publish of its version, and how many of the
  earlier versions were published anyway.

    .venv/bin/python bench/lsp_latency.py [--lines 10000] [--sites 15] [--bursts 5]
                                          [--kinds letter,paren] [--profile FILE]
                                          [--cold N] [--cold-only]

Cold open, against ruff's server (`--cold N` runs, median; `ruff` on the PATH or in the
venv, installed for the benchmark only: `pip install ruff`): a fresh server for each
run, on a 10,000-line file each (ours: `gen.py`; ruff's: generated Python with a lint
finding every 50 lines): spawn -> first diagnostics (process start, initialize,
initialized, didOpen, the first publishDiagnostics of the file), didOpen -> first
diagnostics, and for ours didOpen -> the complete diagnostics when a first, syntax-only
publish comes before them. Ours twice per run, with a cache folder of its own: first
open (the folder empty: no parsed items or diagnostics kept; the initialize answered
before pygls is loaded, with the answer shipped, and the syntax errors of the file's
first lines published at didOpen, shapescript_server/fast_start.py), then reopened (what
the first session kept once idle: the kept diagnostics published at didOpen).

`--profile FILE` runs the server under cProfile and writes its stats there. Beside
each kind, the server's CPU time per edit (all its threads, Linux): on a busy machine
wall time stretches with the load, CPU time much less.
Goal: p95 < 50 ms for every kind; a burst's last version within 100 ms.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import typing_mix  # noqa: E402
from gen import generate  # noqa: E402
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the bare client is a test helper
from stdio_client import StdioClient  # noqa: E402


class Server(StdioClient):
    def __init__(self, cmd: list):
        super().__init__(cmd, cwd=ROOT)
        self.seen: list = []  # versions published, in order

    def wait_publish(self, uri: str, version: int, timeout: float = 60) -> tuple:
        """(arrival time, diagnostics) of the publishDiagnostics for this version;
        answers the server's requests (and ignores answers to ours) meanwhile."""
        deadline = time.perf_counter() + timeout
        while True:
            t, msg = self.receive(max(0.01, deadline - time.perf_counter()))
            if msg.get("method") == "textDocument/publishDiagnostics":
                p = msg["params"]
                if p["uri"] == uri:
                    self.seen.append(p.get("version"))
                    if p.get("version") == version:
                        return t, p["diagnostics"]
            else:
                self.answer_server_request(msg)

    def send_request(self, method: str, params) -> None:
        """A request whose answer nobody waits for."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})


def position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return {"line": line, "character": col}  # the generated text is ASCII: UTF-16 = code points


def cpu_ms(pid: int) -> float | None:
    """CPU time the process has used, all threads (Linux schedstat, ns): the server's own
    work, which a busy machine stretches less than wall time."""
    try:
        total = 0
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e6
    except (OSError, ValueError, IndexError):
        return None


def percentile(xs: list, p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def stats(xs: list) -> str:
    return (f"p50 {percentile(xs, 50):6.1f}   p95 {percentile(xs, 95):6.1f}   p99 {percentile(xs, 99):6.1f} ms"
            f"   (max {max(xs):6.1f}, n={len(xs)})")


class Session:
    def __init__(self, srv: Server, uri: str, text: str):
        self.srv, self.uri, self.text, self.version = srv, uri, text, 1
        self.cpu: list = []  # server CPU ms of each timed edit
        self.order: list = []  # ms of every timed edit, in the order sent

    def change(self, edit: tuple) -> float:
        """Send one edit; returns the time it was sent."""
        start, end, new = edit
        a, b = position(self.text, start), position(self.text, end)
        self.text = self.text[:start] + new + self.text[end:]
        self.version += 1
        return self.srv.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"range": {"start": a, "end": b}, "text": new}]})

    def timed(self, edit: tuple) -> float:
        """Send one edit and wait for its publish: milliseconds."""
        c0 = cpu_ms(self.srv.proc.pid)
        t = self.change(edit)
        arrived, _ = self.srv.wait_publish(self.uri, self.version)
        c1 = cpu_ms(self.srv.proc.pid)
        if c0 is not None and c1 is not None:
            self.cpu.append(c1 - c0)
        self.order.append((arrived - t) * 1000)
        return self.order[-1]

    def burst(self, edits: list) -> tuple:
        """Send the edits without waiting, a hover and a completion after every fourth:
        (ms from the last edit to its publish, earlier versions published)."""
        first = self.version + 1
        t = 0.0
        c0 = cpu_ms(self.srv.proc.pid)
        for k, e in enumerate(edits):
            t = self.change(e)
            if k % 4 == 3:
                pos = position(self.text, e[0] + len(e[2]))
                doc = {"uri": self.uri}
                self.srv.send_request("textDocument/hover", {"textDocument": doc, "position": pos})
                self.srv.send_request("textDocument/completion", {"textDocument": doc, "position": pos})
        self.srv.seen.clear()
        c_last = cpu_ms(self.srv.proc.pid)
        arrived, _ = self.srv.wait_publish(self.uri, self.version)
        stale = sum(1 for v in self.srv.seen if v is not None and first <= v < self.version)
        c1 = cpu_ms(self.srv.proc.pid)
        if c0 is not None and c1 is not None:
            self.cpu.append((c1 - c0, c1 - c_last))
        return (arrived - t) * 1000, stale


def python_source(lines: int) -> str:
    """A 10,000-line Python file for ruff: functions, an unused import (F401) and an
    unused local (F841) every 50 lines."""
    out = ["import os", "import sys", ""]
    k = 0
    while len(out) < lines:
        out += [f"import json as json_{k}", "", f"def function_{k}(x, y):", "    unused = x * 2",
                f"    total = x + y + {k}", "    for i in range(3):", "        total += i * y", "    return total",
                ""]
        out += [f"value_{k}_{j} = function_{k}({j}, {j} + 1)" for j in range(50 - 9)]
        k += 1
    return "\n".join(out[:lines]) + "\n"


QUIET = 4.0  # seconds without a publish after which the diagnostics count as complete


def _write(root: str, name: str, text: str) -> str:
    """Write the file to open; its URI."""
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return f"file://{path}"


def cold_open(cmd: list, root: str, name: str, text: str, language: str, env=None, linger: str = "") -> dict:
    """One fresh server: seconds from spawn to the first publish of the file, from
    didOpen to it, and from didOpen to the last publish of version 1 that came within
    QUIET seconds (the complete diagnostics when a syntax-only publish came first)."""
    if linger:
        os.makedirs(linger, exist_ok=True)
    uri = _write(root, name, text)
    t_spawn = time.perf_counter()
    srv = StdioClientFor(cmd, root, env)
    srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}",
                               "workspaceFolders": [{"uri": f"file://{root}", "name": "bench"}],
                               "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}},
                timeout=120)
    srv.notify("initialized", {})
    t_open = srv.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": text}})
    publishes = []
    first_cpu = None
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        try:
            t, msg = srv.receive(QUIET if publishes else max(0.01, deadline - time.perf_counter()))
        except Exception:
            break  # QUIET seconds with nothing more: the diagnostics are complete
        if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
            publishes.append((t, len(msg["params"]["diagnostics"])))
            if len(publishes) == 1:
                first_cpu = cpu_ms(srv.proc.pid)
        else:
            srv.answer_server_request(msg)
    end = time.perf_counter() + 30
    while linger and not all(any(n.endswith(suffix) for n in os.listdir(linger)) for suffix in (".pickle", ".diags.json")) \
            and time.perf_counter() < end:
        time.sleep(0.1)  # the server keeps the parsed items and the diagnostics once the editor is quiet
    srv.close()
    if not publishes:
        raise RuntimeError(f"{cmd[0]}: no diagnostics for {name}")
    return {"cpu": (first_cpu or 0) / 1000, "spawn": publishes[0][0] - t_spawn, "open": publishes[0][0] - t_open,
            "complete": publishes[-1][0] - t_open, "publishes": len(publishes), "diagnostics": publishes[-1][1],
            "each": [t - t_open for t, _ in publishes]}


def cold_pull(cmd: list, root: str, name: str, text: str, env=None) -> dict:
    """One fresh server, for a client that pulls diagnostics (as VS Code does): seconds
    from spawn, and from didOpen, to the answer of its first pull."""
    uri = _write(root, name, text)
    t_spawn = time.perf_counter()
    srv = StdioClientFor(cmd, root, env)
    try:
        srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}",
                                   "workspaceFolders": [{"uri": f"file://{root}", "name": "bench"}],
                                   "capabilities": {"textDocument": {"diagnostic": {}},
                                                    "workspace": {"diagnostics": {"refreshSupport": True}}}},
                    timeout=120)
        srv.notify("initialized", {})
        t_open = srv.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "shapescript", "version": 1, "text": text}})
        srv.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout=120)
        t = time.perf_counter()
    finally:
        srv.close()
    return {"spawn": t - t_spawn, "open": t - t_open}


class StdioClientFor(StdioClient):
    def __init__(self, cmd, cwd, env):
        super().__init__(cmd, cwd=cwd, env=env, stderr=subprocess.DEVNULL)


def ruff_command() -> list | None:
    here = os.path.join(os.path.dirname(sys.executable), "ruff")
    exe = here if os.path.exists(here) else shutil.which("ruff")
    return [exe, "server"] if exe else None


def report_cold(runs: int, lines: int, text: str) -> None:
    ours_cmd = [sys.executable, "-m", "shapescript_server.main"]
    # as an installed server starts: from compiled modules (PYTHONDONTWRITEBYTECODE, when
    # set, would have every start compile the project's modules again: ~0.2 s of CPU),
    # written once by an untimed start
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="ss-pyc-")
    cold_open(ours_cmd, tempfile.mkdtemp(prefix="ss-cold-"), "small.ss", "dim D = 1\n", "shapescript",
              {**base, "SHAPESCRIPT_CACHE_DIR": tempfile.mkdtemp(prefix="ss-cache-")})
    ours, again = [], []
    for _ in range(runs):  # each run: an empty parse cache, a first open, then the same file reopened
        root, cache = tempfile.mkdtemp(prefix="ss-cold-"), tempfile.mkdtemp(prefix="ss-cache-")
        env = {**base, "SHAPESCRIPT_CACHE_DIR": cache}
        ours.append(cold_open(ours_cmd, root, "big.ss", text, "shapescript", env, linger=cache))
        again.append(cold_open(ours_cmd, root, "big.ss", text, "shapescript", env))
    med = {k: statistics.median(r[k] for r in ours) for k in ("spawn", "open", "complete", "cpu")}
    med2 = {k: statistics.median(r[k] for r in again) for k in ("spawn", "open", "complete", "cpu")}
    print(f"cold open, {lines} lines, median of {runs} fresh servers:")
    print(f"  shapescript-lsp, first open: spawn -> first diagnostics {med['spawn'] * 1000:6.0f} ms, didOpen -> "
          f"first {med['open'] * 1000:6.0f} ms, didOpen -> complete {med['complete'] * 1000:6.0f} ms "
          f"({ours[0]['publishes']} publishes, {ours[0]['diagnostics']} diagnostics; server CPU to the first "
          f"{med['cpu'] * 1000:.0f} ms)")
    counts = {len(r["each"]) for r in ours}
    if len(counts) == 1:
        each = [statistics.median(r["each"][k] for r in ours) * 1000 for k in range(counts.pop())]
        print("    didOpen -> each publish of the first open (the first lines' syntax errors, then the "
              "check's): " + ", ".join(f"{t:.0f} ms" for t in each))
    pulls = [cold_pull(ours_cmd, tempfile.mkdtemp(prefix="ss-cold-"), "big.ss", text,
                       {**base, "SHAPESCRIPT_CACHE_DIR": tempfile.mkdtemp(prefix="ss-cache-")}) for _ in range(runs)]
    print(f"    a client that pulls (VS Code), first open: spawn -> first pull answered "
          f"{statistics.median(r['spawn'] for r in pulls) * 1000:.0f} ms, didOpen -> it "
          f"{statistics.median(r['open'] for r in pulls) * 1000:.0f} ms")
    print(f"  shapescript-lsp, reopened:   spawn -> first diagnostics {med2['spawn'] * 1000:6.0f} ms, didOpen -> "
          f"first {med2['open'] * 1000:6.0f} ms, didOpen -> complete {med2['complete'] * 1000:6.0f} ms "
          f"(what the first session kept: the diagnostics, the parsed items; server CPU to the first {med2['cpu'] * 1000:.0f} ms)")
    cmd = ruff_command()
    if cmd is None:
        print("  ruff: not installed (pip install ruff), no comparison")
        return
    py = python_source(lines)
    theirs = [cold_open(cmd, tempfile.mkdtemp(prefix="ruff-cold-"), "big.py", py, "python") for _ in range(runs)]
    rmed = {k: statistics.median(r[k] for r in theirs) for k in ("spawn", "open", "complete", "cpu")}
    print(f"  ruff server:     spawn -> first diagnostics {rmed['spawn'] * 1000:6.0f} ms, didOpen -> first "
          f"{rmed['open'] * 1000:6.0f} ms ({theirs[0]['diagnostics']} diagnostics; server CPU to the first "
          f"{rmed['cpu'] * 1000:.0f} ms)")
    print(f"  ratio, first open: didOpen -> first {med['open'] / rmed['open']:.1f}x ruff, spawn -> first "
          f"{med['spawn'] / rmed['spawn']:.1f}x ruff; reopened: {med2['open'] / rmed['open']:.1f}x, "
          f"{med2['spawn'] / rmed['spawn']:.1f}x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--sites", type=int, default=15, help="sites per kind (each: the edit and its undo)")
    ap.add_argument("--bursts", type=int, default=5)
    ap.add_argument("--kinds", help="comma-separated kinds of typing_mix.KINDS (default: all)")
    ap.add_argument("--profile", help="run the server under cProfile, stats to this file")
    ap.add_argument("--cold", type=int, default=3, metavar="N", help="cold opens against ruff (0: none)")
    ap.add_argument("--cold-only", action="store_true", help="measure the cold open only")
    args = ap.parse_args(argv)

    text = generate(args.lines)
    missing = args.lines - text.count("\n")
    if missing > 0:  # the generator stops at a whole copy: pad with comments to the exact count
        text += "".join(f"# padding line {k}\n" for k in range(missing))
    if args.cold:
        report_cold(args.cold, args.lines, text)
    if args.cold_only:
        return 0
    kinds = args.kinds.split(",") if args.kinds else list(typing_mix.KINDS)
    cmd = [sys.executable, "-m", "shapescript_server.main"]
    if args.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", args.profile, "-m", "shapescript_server.main"]
    srv = Server(cmd)
    root = "/tmp/shapescript-bench"
    uri = f"file://{root}/big.ss"
    srv.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}", "capabilities": {}})
    srv.notify("initialized", {})
    t0 = srv.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "shapescript", "version": 1, "text": text}})
    c0 = cpu_ms(srv.proc.pid)
    cold = srv.wait_publish(uri, 1, timeout=120)[0] - t0
    c1 = cpu_ms(srv.proc.pid)
    cold_cpu = f" (server CPU {c1 - c0:.0f} ms)" if c0 is not None and c1 is not None else ""
    s = Session(srv, uri, text)

    per_kind: dict = {}
    cpu_kind: dict = {}
    for kind in kinds:
        xs = per_kind[kind] = []
        s.cpu = cpu_kind[kind] = []
        for edit in typing_mix.sites(s.text, kind, args.sites):
            undo = typing_mix.apply(s.text, edit)[1]
            xs.append(s.timed(edit))
            xs.append(s.timed(undo))
    bursts, stale = [], 0
    s.cpu = burst_cpu = []
    for k in range(args.bursts):
        edits = typing_mix.typing_burst(s.text, k)
        ms, n = s.burst(edits)
        bursts.append(ms)
        stale += n
        start = edits[0][0]
        s.cpu = []
        s.timed((start, start + len(edits), ""))  # back to the valid file
        s.cpu = burst_cpu
    srv.close()

    print(f"file: {text.count(chr(10))} lines, {len(text)} characters; "
          f"didOpen -> first diagnostics {cold * 1000:.0f} ms{cold_cpu}")
    # typing starts at the open's first publish (its syntax errors), while its check runs
    print("the first edits after the open (sent at its first publish, while its check runs): "
          + ", ".join(f"{x:.0f}" for x in s.order[:int(os.environ.get("SS_SHOW_FIRST", "4"))]) + " ms; the slowest of all "
          f"{len(s.order)}: {max(s.order):.0f} ms")
    print("didChange -> publishDiagnostics of that version, by kind of edit (each edit and its undo):")
    for kind, xs in per_kind.items():
        cpu = cpu_kind.get(kind)
        extra = f"   [server CPU p50 {percentile(cpu, 50):5.1f}, p95 {percentile(cpu, 95):5.1f}]" if cpu else ""
        print(f"  {kind:9s} {stats(xs)}{extra}")
    everything = [x for xs in per_kind.values() for x in xs]
    if everything:
        print(f"  {'all':9s} {stats(everything)}   (mean {statistics.mean(everything):.1f})")
    if bursts:
        print(f"bursts of 20 keystrokes with hovers and completions interleaved, last keystroke -> its "
              f"publish: {stats(bursts)}; earlier versions published: {stale} of {19 * len(bursts)}")
        if burst_cpu:
            print(f"  server CPU per burst: p50 {percentile([a for a, _ in burst_cpu], 50):.1f} ms in all "
                  f"(20 keystrokes, 10 requests), {percentile([b for _, b in burst_cpu], 50):.1f} ms after the "
                  f"last keystroke was sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
