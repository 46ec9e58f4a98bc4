"""Which functions can be exported, for which targets: the code lens "Export ▸ hf · vllm · gguf · litert".

The rule is the export checks' own (`targets.py`, after SERVING-ENGINES.md): a
function marked `@export(…)` for its listed targets; in a file with no `@export`, a
function named `forward`, for all four targets if one of its parameters is an
`Index[…]` tensor, else for `hf` only, or for the settings' `default_targets`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..targets import TARGETS


@dataclass
class ExportLens:
    fn: str
    start: int  # absolute offsets of the function's name
    end: int
    targets: list


def exportable(ws, analysis) -> list:
    """[(FnItem, [target])] of the analysed file, in source order."""
    return [(it, [t for t in TARGETS if t in targets]) for it, targets in ws.exported(analysis) if targets]


def export_lenses(ws, path: str) -> list:
    a = ws.analyze(path)
    if a is None:
        return []
    return [ExportLens(it.name, it.offset + it.name_pos[0], it.offset + it.name_pos[1], targets)
            for it, targets in exportable(ws, a)]


def function_at(ws, path: str, offset: int):
    """The exportable function holding `offset`, or the file's only exportable one."""
    a = ws.analyze(path)
    if a is None:
        return None
    found = exportable(ws, a)
    for it, _ in found:
        if it.offset <= offset <= it.offset + len(it.text):
            return it.name
    return found[0][0].name if len(found) == 1 else None
