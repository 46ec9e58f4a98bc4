"""E3315: a dim the source fixes that the checkpoint contradicts (an axis of a param, the
number of blocks, the split into heads). Checked in weights/import_diagnostics.py and
weights/match_by_role.py (the heads), when a checkpoint of another layout is imported."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error
from .weight_messages import shape_text


def _e3315(what: str, ours: int, theirs: int, where: str, span, label: str, note: str) -> Diagnostic:
    """A dim the source fixes that the checkpoint contradicts: the one wording of it."""
    return (error("E3315", f"{what} is {ours} in the source, but the checkpoint's {where} says {theirs}",
                  span, label)
            .note(note)
            .help("give the dims the checkpoint's values (--dim NAME=VALUE, or `dim NAME = VALUE`)"))


def e3315(axis: str, ours: int, theirs: int, tensor: str, shape, span, written: str) -> Diagnostic:
    """An axis of a param's tensor: `V`, or `H*Dh` (an axis of [H*Dh D])."""
    what = f"`{axis}`" if axis.isidentifier() else f"`{axis}` (an axis of {written})"
    return _e3315(what, ours, theirs, f"`{tensor}`", span, f"declared {written} here",
                  f"`{tensor}` is {shape_text(shape)} in the checkpoint")


def e3315_blocks(count: str | None, ours: int, theirs: int, where: str, span, written: str | None) -> Diagnostic:
    """The number of blocks: a stack's count as written (`L` of `[L] Block`), or, for a
    source whose blocks are no single stack (`count` None), the number of them."""
    if count is None:
        what, label = "the number of blocks", "the exported function"
    else:
        what = f"`{count}`" if count.isidentifier() else f"`{count}` (the count of {written})"
        label = f"declared {written} here"
    return _e3315(what, ours, theirs, where, span, label,
                  f"the checkpoint has {theirs} block{'s' if theirs != 1 else ''}, the source {ours}")


def e3315_heads(what: str, ours: int, theirs: int, where: str, span) -> Diagnostic:
    return (error("E3315", f"the source has {ours} {what}, but the checkpoint's {where} says {theirs}",
                  span, "the exported function")
            .note("the tensors' shapes agree: only the split into heads differs, which would give other "
                  "outputs silently")
            .help("give the head dims the checkpoint's values (--dim NAME=VALUE)"))
