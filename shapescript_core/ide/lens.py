"""Which functions can be exported, for which targets: the code lens "Export ▸ hf · vllm · gguf".

The rule is the one the export checks follow (SERVING-ENGINES.md): a function marked
`@export(…)` for its listed targets; in a file with no `@export`, a function named
`forward`, for all three targets if one of its parameters is an `Index[…]` tensor, else
for `hf` only. Settings may name the targets of unmarked functions (`default_targets`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..check.types import TensorT
from ..exporting import TARGETS
from ..syntax import ast as A


@dataclass
class ExportLens:
    fn: str
    start: int  # absolute offsets of the function's name
    end: int
    targets: list


def exportable(analysis, default_targets=None) -> list:
    """[(FnItem, [target])] for the analysed file, in source order."""
    fns = [it for it in analysis.file.items if isinstance(it, A.FnItem) and it.name]
    marked = [it for it in fns if any(d.name == "export" for d in it.decorators)]
    out = []
    if marked:
        for it in marked:
            named = [n for d in it.decorators if d.name == "export" for n, _ in d.args]
            targets = [t for t in TARGETS if t in named] if named else list(TARGETS)
            if targets:
                out.append((it, targets))
        return out
    for it in fns:
        if it.name != "forward":
            continue
        if default_targets:
            targets = [t for t in TARGETS if t in set(default_targets)]
        else:
            sig = analysis.env.sig(it.name)
            lm = sig is not None and any(isinstance(p.type, TensorT) and p.type.dtype.name == "Index"
                                         for p in sig.params)
            targets = list(TARGETS) if lm else ["hf"]
        if targets:
            out.append((it, targets))
    return out


def export_lenses(ws, path: str) -> list:
    a = ws.analyze(path)
    if a is None:
        return []
    default = getattr(ws, "default_targets", None)
    return [ExportLens(it.name, it.offset + it.name_pos[0], it.offset + it.name_pos[1], targets)
            for it, targets in exportable(a, default)]


def function_at(ws, path: str, offset: int):
    """The exportable function holding `offset`, or the file's only exportable one."""
    a = ws.analyze(path)
    if a is None:
        return None
    found = exportable(a, getattr(ws, "default_targets", None))
    for it, _ in found:
        if it.offset <= offset <= it.offset + len(it.text):
            return it.name
    return found[0][0].name if len(found) == 1 else None
