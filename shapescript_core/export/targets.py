"""Which functions of a file the export checks run on, and for which targets.

1. a function marked `@export(hf, vllm, gguf, litert)` (any subset), for its listed targets;
2. in a file with no `@export`, `forward`: all targets when a parameter is an `Index[…]`
   tensor (a language model), else `hf` only (or the settings' default targets);
3. explicit requests (`check --target/--fn`, `export`) replace both for their file.
"""
from __future__ import annotations

from ..check.types import TensorT
from ..syntax import ast as A

TARGETS = ("hf", "vllm", "gguf", "litert")
FULL = frozenset(("vllm", "gguf", "litert"))  # the targets that add E3301 to E3305


def decorated_targets(item: A.FnItem):
    """The targets of an `@export(…)` decorator, or None without one."""
    for d in item.decorators:
        if d.name == "export":
            named = {n for n, _ in d.args if n in TARGETS}
            return named if d.args else set(TARGETS)
    return None


def export_targets(ws, analysis) -> list:
    """[(FnItem, set of targets)] for the file, in source order."""
    fns = [it for it in analysis.own.values() if isinstance(it, A.FnItem)]
    requests = (getattr(ws, "export_requests", None) or {}).get(analysis.path)
    found = _found(ws, analysis, fns)
    if not requests:
        return found
    out: dict = {}
    for name, targets in requests:
        targets = {t for t in targets if t in TARGETS}
        if name is None:
            for it, _ in found:
                out.setdefault(id(it), (it, set()))[1].update(targets)
        else:
            it = analysis.own.get(name)
            if isinstance(it, A.FnItem):
                out.setdefault(id(it), (it, set()))[1].update(targets)
    order = {id(it): k for k, it in enumerate(fns)}
    return sorted(out.values(), key=lambda p: order.get(id(p[0]), 0))


def _found(ws, analysis, fns: list) -> list:
    marked = [(it, decorated_targets(it)) for it in fns]
    marked = [(it, t) for it, t in marked if t is not None]
    if marked:
        return [(it, t) for it, t in marked if t]
    fwd = analysis.own.get("forward")
    if not isinstance(fwd, A.FnItem):
        return []
    default = getattr(ws, "default_targets", None)
    if default:
        return [(fwd, {t for t in default if t in TARGETS})]
    sig = analysis.env.sig("forward")
    is_lm = sig is not None and any(isinstance(p.type, TensorT) and p.type.dtype.name == "Index"
                                    for p in sig.params)
    return [(fwd, set(TARGETS) if is_lm else {"hf"})]
