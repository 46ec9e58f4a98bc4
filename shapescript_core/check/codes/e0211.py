"""E0211: a model that contains itself. Checked in check/env.py (`model_cycles`)."""
from __future__ import annotations

from ...diagnostics import Diagnostic, error


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
