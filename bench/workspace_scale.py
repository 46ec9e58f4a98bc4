"""A workspace of many large files in an import chain, through the real server (stdio).

Generates N files of M lines (`gen.py`'s llama-like blocks): file k imports file k-1
and uses its models and functions, and every file k > 0 calls `base_scale`, a function
of file 0, so an edit of that function's name changes what every dependent sees. All N
files are opened in one server; then, measuring from the send of a `didChange` to the
`publishDiagnostics` that answers it:

- cold open: didOpen of all N files -> every file's first diagnostics (a syntax-only
  publish counts), -> every file's complete diagnostics, and the server's CPU time by
  then (a loaded machine stretches wall time, CPU time much less), with an empty parse
  cache (`SHAPESCRIPT_CACHE_DIR` a new folder);
- warm open: the same in a new server on the same project and cache, after the first
  server has gone (a reopened project: the items the first one saved are reused);
- typing in the first file (imported by all) and in the last one: a body edit and its
  undo (`eps=1e-5` -> `1e-6`), each waited for: p50 / p95 / p99 of its own publish;
- an interface edit in file 0 (`base_scale` renamed, then back): the time until the
  last dependent's diagnostics were republished;
- the server's resident set after opening and after all the edits.

Typing starts once the server is idle after the open (its parsed items saved, a request
queued behind that answered), for both servers.

With `ruff` installed (the venv or the PATH; `pip install ruff`, for the benchmark only)
the same run measures ruff's server on N Python files of M lines (typing in the first
and the last, the cold open, its RSS), side by side.

    .venv/bin/python bench/workspace_scale.py [--files 10] [--lines 10000] [--edits 20]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the bare client is a test helper

from gen import BLOCK, HEAD  # noqa: E402
from lsp_latency import cpu_ms, percentile, python_source, position, ruff_command  # noqa: E402
from stdio_client import StdioClient  # noqa: E402

BASE = """
fn base_scale(x: [b n D]) -> [b n D]:
    return x * 2.0
"""

USE = """
model Wrap{k}:
    inner: Block{p}
    extra: [D] = ones

fn use{k}(w: Wrap{k}, x: [b n D], pos: [b n] i64) -> [b n D]:
    return base_scale(block{p}(w.inner, x, pos))
"""


QUIET = 5.0  # seconds without a publish after the open: the diagnostics are complete


def workspace(files: int, lines: int) -> list:
    """[(name, text)]: file k imports file k-1, uses its Block and block, and base_scale."""
    out = []
    per = len(BLOCK.splitlines())
    for k in range(files):
        head = HEAD + BASE if k == 0 else f'import "f{k - 1}.ss"\n' + USE.format(k=k, p=(k - 1) * 10_000)
        parts, n, j = [head], len(head.splitlines()), 0
        while n + per <= lines:
            parts.append(BLOCK.format(i=k * 10_000 + j))
            n += per
            j += 1
        text = "".join(parts)
        text += "".join(f"# padding line {x}\n" for x in range(lines - text.count("\n")))
        out.append((f"f{k}.ss", text))
    return out


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Client(StdioClient):
    def __init__(self, cmd: list, root: str):
        super().__init__(cmd, cwd=root, stderr=open(os.devnull, "w"))
        self.root = root
        self.versions: dict = {}
        self.texts: dict = {}
        self.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}",
                                    "workspaceFolders": [{"uri": f"file://{root}", "name": "bench"}],
                                    "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}},
                     timeout=120)
        self.notify("initialized", {})

    def next_publish(self, deadline: float):
        while True:
            t, msg = self.receive(max(0.01, deadline - time.perf_counter()))
            if msg.get("method") == "textDocument/publishDiagnostics":
                return t, msg["params"]
            self.answer_server_request(msg)

    def open_all(self, files: list, language: str) -> dict:
        """didOpen of every file, then seconds until each has had a publish ("first": a
        syntax-only one counts), until the last publish before QUIET seconds of none ("complete":
        the checked diagnostics), until the last publish of the file opened last ("active":
        the one an editor shows, checked first), and the server's CPU seconds by then."""
        uris = []
        c0 = cpu_ms(self.proc.pid)
        t0 = time.perf_counter()
        for name, text in files:
            uri = f"file://{os.path.join(self.root, name)}"
            self.versions[uri], self.texts[uri] = 1, text
            uris.append(uri)
            self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                                  "version": 1, "text": text}})
        waiting = set(uris)
        deadline = time.perf_counter() + 600
        first = last = t0
        lasts: dict = {}
        cpu = None
        while True:
            try:
                t, p = self.next_publish(deadline if waiting else time.perf_counter() + QUIET)
            except Exception:
                if waiting:
                    raise
                break  # nothing for QUIET seconds after every file's first publish: complete
            waiting.discard(p["uri"])
            last = lasts[p["uri"]] = t
            if not waiting and first == t0:
                first = t
            c1 = cpu_ms(self.proc.pid)
            cpu = (c1 - c0) / 1000 if c0 is not None and c1 is not None else None
        idle = None  # the server's CPU once it stops working (checks behind an early publish)
        while c0 is not None:
            before = cpu_ms(self.proc.pid)
            time.sleep(0.5)
            now = cpu_ms(self.proc.pid)
            if before is None or now is None:
                break
            if now - before < 10:
                idle = (now - c0) / 1000
                break
        return {"first": first - t0, "complete": last - t0, "active": lasts[uris[-1]] - t0, "cpu": cpu,
                "idle": idle}

    def settle(self, uri: str, after: float = 3.0, saved: tuple = ()):
        """Wait `after` seconds, and until `saved` = (folder, n) holds n parse caches (the
        server keeps its parsed items on disk once the editor is quiet and its core idle:
        parse_cache.py), then until a request queued behind that work answers."""
        time.sleep(after)
        end = time.perf_counter() + 300
        while saved and time.perf_counter() < end and \
                sum(n.endswith(".pickle") for n in os.listdir(saved[0])) < saved[1]:
            time.sleep(0.2)
        self.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
                     timeout=600)
        self.drain(0.5)

    def drain(self, quiet: float):
        """Read until nothing came for `quiet` seconds (background republishing done)."""
        while True:
            try:
                _, msg = self.receive(quiet)
            except Exception:
                return
            self.answer_server_request(msg)

    def edit(self, uri: str, start: int, end: int, new: str) -> float:
        text = self.texts[uri]
        a, b = position(text, start), position(text, end)
        self.texts[uri] = text[:start] + new + text[end:]
        self.versions[uri] += 1
        return self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]},
            "contentChanges": [{"range": {"start": a, "end": b}, "text": new}]})

    def typed(self, uri: str, start: int, end: int, new: str) -> float:
        """One edit, waited for: ms to the publish of its version."""
        t = self.edit(uri, start, end, new)
        deadline = time.perf_counter() + 120
        while True:
            at, p = self.next_publish(deadline)
            if p["uri"] == uri and p.get("version") in (self.versions[uri], None):
                return (at - t) * 1000


def typing(c: Client, uri: str, edits: int, anchor: str, old: str, new: str) -> list:
    text = c.texts[uri]
    offs = []
    k = text.find(anchor)
    while k >= 0:
        offs.append(k + len(anchor))
        k = text.find(anchor, k + 1)
    offs = offs[::max(1, len(offs) // max(1, edits // 2))][:max(1, edits // 2)]
    xs = []
    for off in offs:
        xs.append(c.typed(uri, off, off + len(old), new))
        xs.append(c.typed(uri, off, off + len(new), old))
    return xs


def dependents_republished(c: Client, uri0: str, dependents: set, rounds: int) -> tuple:
    """Rename base_scale in file 0 and back: ms until the last dependent's new publish,
    and the server's CPU ms meanwhile."""
    out, cpu = [], []
    for r in range(rounds):
        for old, new in (("base_scale", "base_scalx"), ("base_scalx", "base_scale")):
            text = c.texts[uri0]
            k = text.find("fn " + old) + 3
            c0 = cpu_ms(c.proc.pid)
            t = c.edit(uri0, k, k + len(old), new)
            waiting = set(dependents)
            deadline = time.perf_counter() + 120
            last = t
            while waiting:
                at, p = c.next_publish(deadline)
                if p["uri"] in waiting:
                    waiting.discard(p["uri"])
                    last = at
            c1 = cpu_ms(c.proc.pid)
            out.append((last - t) * 1000)
            if c0 is not None and c1 is not None:
                cpu.append(c1 - c0)
    return out, cpu


def fmt(xs: list) -> str:
    if not xs:
        return "-"
    return f"p50 {percentile(xs, 50):7.1f}  p95 {percentile(xs, 95):7.1f}  p99 {percentile(xs, 99):7.1f} ms"


def run_ours(files: list, edits: int) -> dict:
    root = tempfile.mkdtemp(prefix="ss-scale-")
    for name, text in files:
        with open(os.path.join(root, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    env_cache = tempfile.mkdtemp(prefix="ss-cache-")
    os.environ["SHAPESCRIPT_CACHE_DIR"] = env_cache  # an empty parse cache: a true cold open
    c = Client([sys.executable, "-m", "shapescript_server.main"], root)
    res = {"open": c.open_all(files, "shapescript")}
    uris = [f"file://{os.path.join(root, n)}" for n, _ in files]
    c.settle(uris[0], saved=(env_cache, len(files)))
    res["rss_open"] = rss_mb(c.proc.pid)
    res["first"] = typing(c, uris[0], edits, "eps=1e-", "5", "6")
    c.drain(1.0)
    res["last"] = typing(c, uris[-1], edits, "eps=1e-", "5", "6")
    c.drain(1.0)
    res["iface"], res["iface_cpu"] = dependents_republished(c, uris[0], set(uris[1:]), max(1, edits // 4))
    c.drain(1.0)
    res["rss_end"] = rss_mb(c.proc.pid)
    c.close()
    c = Client([sys.executable, "-m", "shapescript_server.main"], root)  # the project reopened
    res["open_warm"] = c.open_all(files, "shapescript")
    res["rss_warm"] = rss_mb(c.proc.pid)
    c.close()
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(env_cache, ignore_errors=True)
    return res


def run_ruff(n: int, lines: int, edits: int) -> dict | None:
    cmd = ruff_command()
    if cmd is None:
        return None
    root = tempfile.mkdtemp(prefix="ruff-scale-")
    files = []
    for k in range(n):
        text = (f"from f{k - 1} import function_0\n" if k else "") + python_source(lines - (1 if k else 0))
        files.append((f"f{k}.py", text))
        with open(os.path.join(root, f"f{k}.py"), "w", encoding="utf-8") as fh:
            fh.write(text)
    c = Client(cmd, root)
    res = {"open": c.open_all(files, "python")}
    uris = [f"file://{os.path.join(root, n)}" for n, _ in files]
    c.settle(uris[0])
    res["rss_open"] = rss_mb(c.proc.pid)
    res["first"] = typing(c, uris[0], edits, "unused = x * ", "2", "3")
    res["last"] = typing(c, uris[-1], edits, "unused = x * ", "2", "3")
    res["rss_end"] = rss_mb(c.proc.pid)
    c.close()
    c = Client(cmd, root)  # reopened (ruff's server keeps nothing on disk: as cold)
    res["open_warm"] = c.open_all(files, "python")
    res["rss_warm"] = rss_mb(c.proc.pid)
    c.close()
    shutil.rmtree(root, ignore_errors=True)
    return res


def open_rows(label: str, o: dict, r: dict | None):
    print(f"  {label}")
    for label, k in (("  didOpen of all -> every first diagnostics", "first"),
                     ("  didOpen of all -> the last one's complete", "active"),
                     ("  didOpen of all -> every complete diagnostics", "complete")):
        line = f"  {label:44s} shapescript {o[k] * 1000:7.0f} ms"
        if r:
            line += f"   ruff {r[k] * 1000:7.0f} ms   ratio {o[k] / r[k]:.1f}x"
        print(line)
    if o["cpu"] is not None:
        line = f"  {'    server CPU by then (all threads)':44s} shapescript {o['cpu'] * 1000:7.0f} ms"
        if r and r["cpu"]:
            line += f"   ruff {r['cpu'] * 1000:7.0f} ms   ratio {o['cpu'] / r['cpu']:.1f}x"
        print(line)
    if o.get("idle") is not None:
        line = f"  {'    server CPU until idle':44s} shapescript {o['idle'] * 1000:7.0f} ms"
        if r and r.get("idle"):
            line += f"   ruff {r['idle'] * 1000:7.0f} ms   ratio {o['idle'] / r['idle']:.1f}x"
        print(line)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=20, help="timed edits per file (each: edit, undo)")
    args = ap.parse_args(argv)
    files = workspace(args.files, args.lines)
    ours = run_ours(files, args.edits)
    theirs = run_ruff(args.files, args.lines, args.edits)
    print(f"workspace: {args.files} files of {args.lines} lines in an import chain, all open")
    rows = [("keystroke -> diagnostics, first file", "first"), ("keystroke -> diagnostics, last file", "last")]
    for label, k in rows:
        print(f"  {label:44s} shapescript {fmt(ours[k])}")
        if theirs:
            print(f"  {'':44s} ruff        {fmt(theirs[k])}   p95 ratio "
                  f"{percentile(ours[k], 95) / percentile(theirs[k], 95):.1f}x")
    print(f"  {'interface edit -> all dependents republished':44s} shapescript {fmt(ours['iface'])}")
    if ours["iface_cpu"]:
        print(f"  {'  server CPU meanwhile (all threads)':44s} shapescript {fmt(ours['iface_cpu'])}")
    open_rows("cold open (an empty parse cache)", ours["open"], theirs["open"] if theirs else None)
    open_rows("warm open (the project reopened: the parse cache the first server saved)",
              ours["open_warm"], theirs["open_warm"] if theirs else None)
    line = f"  {'RSS after opening / after the edits / warm':44s} shapescript " \
           f"{ours['rss_open']:.0f} / {ours['rss_end']:.0f} / {ours['rss_warm']:.0f} MB"
    if theirs:
        line += f"   ruff {theirs['rss_open']:.0f} / {theirs['rss_end']:.0f} / {theirs['rss_warm']:.0f} MB"
    print(line)
    if theirs is None:
        print("  ruff: not installed (pip install ruff), no comparison")
    return 0


if __name__ == "__main__":
    sys.exit(main())
