"""Shrink a program on which an export and the evaluator disagree to a minimal one.

    python tests/shrink.py FILE.ss [-o OUT.ss]

FILE starts with the header bench/differential.py writes (`# case: lm weights-seed=N`):
the kind of forward and the seed of the random weights.

Delta debugging over the source: remove lines, then replace each statement's value by
one of its parts (a local's name, a parenthesized sub-expression, a call's argument),
keeping a change only when the program still checks and the export still disagrees in
the same way (the same exception, or outputs that differ). Repeats until nothing more
goes. The result is kept as a regression case in tests/programs/differential/.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def failure_kind(case, tmp) -> str | None:
    """None when the program does not check or the export agrees; else the kind of failure."""
    import traceback

    from differential_support import run_case, run_gguf
    target = "gguf" if "target=gguf" in case.source.split("\n", 1)[0] else "hf"
    try:
        res = (run_gguf if target == "gguf" else run_case)(case, tmp)
    except Exception as e:  # noqa: BLE001 - an exception is a failure kind of its own
        traceback.print_exc(limit=1)
        return f"exception {type(e).__name__}"
    status, why = res.get(target, (None, ""))
    if status != "disagree":
        return None
    if why.startswith("export failed"):
        return "export failed"
    return "outputs differ"


def parts(expr: str) -> list:
    """Candidate replacements for an expression: its balanced parenthesized parts and the
    names it reads, shortest last."""
    out = set()
    stack = []
    for i, ch in enumerate(expr):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            j = stack.pop()
            inner = expr[j + 1:i]
            for piece in _top_level_split(inner):
                if piece.strip() and ":" not in piece and "=" not in piece and "->" not in piece:
                    out.add(piece.strip())
    out |= set(re.findall(r"\b(?:x|h\d*|o|[ac]\d+)\b", expr))
    return sorted(out, key=len, reverse=True)


def _top_level_split(s: str) -> list:
    depth, cur, out = 0, "", []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def shrink(case, tmp, log=print):
    from dataclasses import replace
    kind = failure_kind(case, tmp)
    if kind is None:
        raise SystemExit("the program does not fail: nothing to shrink")
    log(f"failure: {kind}")
    lines = case.source.split("\n")

    def still(new_lines) -> bool:
        return failure_kind(replace(case, source="\n".join(new_lines)), tmp) == kind
    changed = True
    while changed:
        changed = False
        starts = [k for k, line in enumerate(lines) if line[:1].strip() and not line.startswith("#")]
        for k in reversed(starts):  # whole items first: a line at column 0 and its block
            end = next((j for j in range(k + 1, len(lines)) if lines[j][:1].strip()), len(lines))
            if k < len(lines) and still(lines[:k] + lines[end:]):
                del lines[k:end]
                changed = True
                log(f"removed an item: {len(lines)} lines left")
        i = len(lines) - 1
        while i >= 0:  # lines, last first
            if lines[i].strip() and not lines[i].startswith("# case:") and still(lines[:i] + lines[i + 1:]):
                del lines[i]
                changed = True
                log(f"removed a line: {len(lines)} left")
            i -= 1
        for i, line in enumerate(lines):  # values, by their parts
            m = re.match(r"^(\s+(?:return |[\w, ]+ = ))(.*)$", line)
            if not m:
                continue
            for cand in parts(m.group(2)):
                if len(cand) < len(m.group(2)) and still(lines[:i] + [m.group(1) + cand] + lines[i + 1:]):
                    lines[i] = m.group(1) + cand
                    changed = True
                    log(f"simplified line {i + 1}: {lines[i].strip()}")
                    break
    return replace(case, source="\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    from differential_support import case_from_text, case_text, quiet
    quiet()
    case = case_from_text(open(args.file).read())
    with tempfile.TemporaryDirectory() as tmp:
        small = shrink(case, tmp)
    out = args.output or args.file.replace(".ss", ".min.ss")
    with open(out, "w") as fh:
        fh.write(small.source if small.source.startswith("# case:") else case_text(small))
    print(f"wrote {out} ({len(small.source.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
