"""The language's diagnostics that are raised from more than one place, one constructor
per code (or per form of a code), so that every place words a mistake the same way."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error


# ---------------------------------------------------------------- E0210 imports
def import_missing(imp) -> Diagnostic:
    return error("E0210", f"can't find `{imp.target}`", imp.span(imp.target_pos), "no such file next to this one")


def import_not_utf8(imp, where: str) -> Diagnostic:
    """The imported file exists but its bytes are not UTF-8 (`where`: the first bad byte)."""
    return error("E0210", f"can't read `{imp.target}`: it isn't UTF-8 ({where})", imp.span(imp.target_pos),
                 "this file can't be decoded").help("save the file as UTF-8")


# ---------------------------------------------------------------- E0211 models
def model_contains_itself(item, field, hops: list, total: int) -> Diagnostic:
    """`hops`: [(model, field name), ...], the first hops of the cycle from this model's
    field back to the model; `total`: how many hops the cycle has."""
    model = hops[0][0]
    path = " → ".join(f"{m}.{f}" for m, f in hops)
    path += f" → {model}" if total <= len(hops) else f" → … → {model} ({total} models)"
    what = f"`{model}` itself" if total == 1 else f"a model that holds `{model}`"
    return error("E0211", f"`{model}` contains itself: {path}", item.span(field.type.pos),
                 f"this field holds {what}").help(
        "a model is a finite set of weights: give the inner part a model of its own, and repeat a "
        "block with a stack (`layers: [L] Block`) and `for`")
