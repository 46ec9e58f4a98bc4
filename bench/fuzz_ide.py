"""Mutations of the repository's programs through the checker and every editor feature,
each against an oracle (what found the bugs of 2026-12-06: docs/language-server.md,
"Robustness").

A case is one of the programs (examples, tests/programs, the shared conformance cases
when they are beside the checkout) with 0-4 mutations: a token deleted, replaced,
duplicated or moved, a line copied or deleted, a name or number swapped for another of
the text's, a piece of another program pasted. Per case:

- the diagnostics, hover, completion, signature help, definition, references, call
  hierarchy at random places, inlay hints, symbols, semantic tokens, formatting, export
  lenses: none raises (SHAPESCRIPT_DEBUG is set, so an internal error raises too);
- semantic tokens are in order, within the text, each on one line;
- formatting is idempotent and keeps the diagnostics (by code: a message may quote
  the source as it was written);
- a rename of the symbol at a random place keeps the diagnostics (by code), unless it
  renames `forward` (the export checks' default), a `_`-name, or one of two definitions;
- a safe fix removes its diagnostic and adds no other code.

    .venv/bin/python bench/fuzz_ide.py [--seed 0] [-n 300]

Prints each finding once (by kind and place in our code) with the case written to
--keep, and a summary line; exit 1 when something was found.
"""
from __future__ import annotations

import argparse
import glob
import os
import random
import re
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ["SHAPESCRIPT_DEBUG"] = "1"

from shapescript_core.apply_fixes import apply_edits  # noqa: E402
from shapescript_core.diagnostics import Applicability  # noqa: E402
from shapescript_core.ide import calls, completion, hover, inlay, lens, navigation, references  # noqa: E402
from shapescript_core.ide.format import format_text  # noqa: E402
from shapescript_core.ide.rename import prepare_rename, rename  # noqa: E402
from shapescript_core.ide.semantic_tokens import semantic_tokens  # noqa: E402
from shapescript_core.syntax.lexer import TOKEN_RE  # noqa: E402
from shapescript_core.workspace import Workspace  # noqa: E402

SNIPPETS = ["(", ")", "[", "]", ",", ":", "->", "|>", "=", " ", "\n", "    ", "x", "D", "1", "0", "-1", "2.5",
            "f32", "Index[V]", "sum(", "einsum(", "topk(", "take(", "softmax(", " if ", " else ", '"a"', "@", "#",
            "model M:\n", "fn g(x: [D]) -> [D]:\n    return x\n", "dim K\n", 'import "x.ss"\n', "for i in "]
NAME_OR_NUMBER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")


def programs() -> list:
    found = glob.glob(os.path.join(ROOT, "examples", "*.ss")) + \
        glob.glob(os.path.join(ROOT, "tests", "programs", "**", "*.ss"), recursive=True) + \
        glob.glob(os.path.join(ROOT, "..", "shared", "conformance", "**", "*.ss"), recursive=True)
    return [open(p, encoding="utf-8").read() for p in sorted(found)]


class Fuzz:
    def __init__(self, seed: int, keep: str):
        self.rng = random.Random(seed)
        self.texts = programs()
        self.keep = keep
        self.seen: set = set()
        self.path = os.path.join(keep, "case.ss")

    # ---- cases
    def mutate(self, t: str) -> str:
        rng = self.rng
        toks = [(m.start(), m.end()) for m in TOKEN_RE.finditer(t) if m.lastgroup not in (None, "NL")]
        if not toks:
            return t + rng.choice(SNIPPETS)
        a, b = rng.choice(toks)
        k = rng.randrange(9)
        if k == 0:
            return t[:a] + t[b:]
        if k == 1:
            return t[:a] + rng.choice(SNIPPETS) + t[b:]
        if k == 2:
            return t[:b] + rng.choice(SNIPPETS) + t[b:]
        if k == 3:
            c, d = rng.choice(toks)
            return t[:a] + t[c:d] + t[b:]
        lines = t.split("\n")
        if k == 4:
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
            return "\n".join(lines)
        if k == 5:
            del lines[rng.randrange(len(lines))]
            return "\n".join(lines)
        if k == 6:
            other = rng.choice(self.texts)
            c = rng.randrange(len(other) + 1)
            return t[:a] + other[c:c + rng.randrange(60)] + t[b:]
        words = [(m.start(), m.end()) for m in NAME_OR_NUMBER.finditer(t)]
        (a, b), (c, d) = rng.choice(words), rng.choice(words)
        return t[:a] + t[c:d] + t[b:]

    def case(self) -> str:
        text = self.rng.choice(self.texts)
        for _ in range(self.rng.randrange(0, 5)):
            text = self.mutate(text)
        return text

    # ---- findings
    def found(self, kind: str, text: str, detail: str, exc: BaseException | None = None) -> None:
        where = ""
        if exc is not None:
            ours = [f for f in traceback.extract_tb(exc.__traceback__) if "shapescript_" in f.filename]
            where = f"{os.path.relpath(ours[-1].filename, ROOT)}:{ours[-1].lineno}" if ours else ""
            detail = f"{type(exc).__name__}: {exc}"[:200]
        key = (kind, where or detail[:60])
        if key in self.seen:
            return
        self.seen.add(key)
        name = os.path.join(self.keep, f"{kind}-{len(self.seen)}.ss")
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"{kind} {where} {detail} ({os.path.relpath(name)})", flush=True)

    def diagnostics(self, text: str) -> list:
        ws = Workspace()
        ws.set_text(self.path, text)
        return ws.diagnostics(self.path)

    # ---- oracles
    def requests(self, text: str) -> None:
        ws = Workspace()
        ws.set_text(self.path, text)
        try:
            ws.diagnostics(self.path)
        except Exception as e:  # noqa: BLE001 - the finding
            self.found("diagnostics-raise", text, "", e)
            return
        p = self.path
        at = [self.rng.randrange(len(text) + 1) for _ in range(4)]
        each = [("hover", lambda o: hover.hover(ws, p, o)), ("completion", lambda o: completion.completions(ws, p, o)),
                ("signature-help", lambda o: completion.signature_help(ws, p, o)),
                ("definition", lambda o: navigation.definition(ws, p, o)),
                ("references", lambda o: references.references(ws, p, o)), ("calls", lambda o: calls.prepare(ws, p, o))]
        whole = [("inlay", lambda: inlay.inlay_hints(ws, p)), ("symbols", lambda: navigation.document_symbols(ws, p)),
                 ("lens", lambda: lens.export_lenses(ws, p)), ("tokens", lambda: self.tokens(ws, text))]
        for name, fn in each:
            for o in at:
                try:
                    fn(o)
                except Exception as e:  # noqa: BLE001
                    self.found(f"{name}-raise", text, "", e)
        for name, fn in whole:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self.found(f"{name}-raise", text, "", e)

    def tokens(self, ws, text: str) -> None:
        last = 0
        for t in semantic_tokens(ws, self.path):
            if not last <= t.start < t.end <= len(text) or "\n" in text[t.start:t.end]:
                self.found("token-range", text, f"{t}")
                return
            last = t.end

    def formatting(self, text: str) -> None:
        try:
            once = format_text(text)
        except Exception as e:  # noqa: BLE001
            self.found("format-raise", text, "", e)
            return
        if once == text:
            return
        if format_text(once) != once:
            self.found("format-not-idempotent", text, "")

        def said(t):  # by code: a message may quote the source as written
            return sorted(d.code for d in self.diagnostics(t))
        if said(once) != said(text):
            self.found("format-changes-diagnostics", text, "")

    def renaming(self, text: str) -> None:
        ws = Workspace()
        ws.set_text(self.path, text)
        before = sorted(d.code for d in ws.diagnostics(self.path))
        offset = self.rng.randrange(len(text) + 1)
        found = prepare_rename(ws, self.path, offset)
        if isinstance(found, str) or found[2] == "forward" or found[2].startswith("_") or "E0203" in before:
            return
        new = self.rng.choice(["renamed_1", "Qq", "x9"])
        result = rename(ws, self.path, offset, new)
        if result.error is not None or new in text:
            return
        renamed = text
        for e in sorted(result.edits.get(self.path, []), key=lambda e: e.start, reverse=True):
            renamed = renamed[:e.start] + e.text + renamed[e.end:]
        after = sorted(d.code for d in self.diagnostics(renamed))
        if after != before:
            self.found("rename-changes-diagnostics", text, f"{found[2]} -> {new} at {offset}: {before} -> {after}")

    def fixing(self, text: str) -> None:
        diags = self.diagnostics(text)
        count: dict = {}
        for d in diags:
            count[d.code] = count.get(d.code, 0) + 1
        for d in diags:
            for f in d.fixes:
                if f.applicability < Applicability.SAFE or not f.edits:
                    continue
                then = self.diagnostics(apply_edits(text, f.edits))
                after: dict = {}
                for x in then:
                    after[x.code] = after.get(x.code, 0) + 1
                # the export checks run in order, one diagnostic per mistake: a fixed E33xx
                # may show the next check's; and a fix of one part of a diagnostic of many
                # parts (E3301's labels) leaves the others
                new = [c for c in after if c != d.code and after[c] > count.get(c, 0)
                       and not (c.startswith("E33") and d.code.startswith("E33"))]
                parts = {tuple(lb.message for lb in x.labels) for x in then
                         if x.code == d.code}
                kept = tuple(lb.message for lb in d.labels) in parts
                if new or (after.get(d.code, 0) >= count[d.code] and kept):
                    self.found("safe-fix-fails", text, f"{d.code} {d.message!r}: then {new or d.code}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--keep", default=os.path.join(HERE, "fuzz-findings"))
    args = ap.parse_args(argv)
    os.makedirs(args.keep, exist_ok=True)
    fz = Fuzz(args.seed, args.keep)
    for _ in range(args.n):
        text = fz.case()
        fz.requests(text)
        for oracle in (fz.formatting, fz.renaming, fz.fixing):
            try:
                oracle(text)
            except Exception as e:  # noqa: BLE001
                fz.found(f"{oracle.__name__}-raise", text, "", e)
    print(f"{args.n} cases from {len(fz.texts)} programs, seed {args.seed}: {len(fz.seen)} findings")
    return 1 if fz.seen else 0


if __name__ == "__main__":
    sys.exit(main())
