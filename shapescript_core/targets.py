"""The one rule: which functions of a file are exported, and for which targets.

1. a function marked `@export(hf, vllm, gguf, litert)` (any subset; bare `@export` is all four)
   is exported for its listed targets; a name that is no target is E0212 at the name;
2. in a file with no `@export`, `forward`: for all targets when a parameter is an
   `Index[…]` tensor (a language model), else for `hf` only, or for the settings'
   default targets;
3. explicit requests (`check --target/--fn`, `export`, the editor's Export) replace both
   for their file: `(name, targets)` checks that function, `(None, targets)` the
   functions `export` picks from for each target (`candidates`).

Everything that needs the answer asks here: the export checks, the code lens, W0102,
the compiler and `export`. The functions take plain data (a file's own items and its
environment), so the layers above decide where the requests and settings come from.
"""
from __future__ import annotations

from typing import Optional

from .check.codes.e0212 import unknown_target
from .check.suggest import closest
from .check.types import TensorT
from .syntax import ast as A
from .syntax.names import without_simple_dims

TARGETS = ("hf", "vllm", "gguf", "litert")
FULL = frozenset(("vllm", "gguf", "litert"))  # the targets that add E3301 to E3305


def decorated_targets(item: A.FnItem) -> Optional[set]:
    """The known targets of the function's `@export(…)` decorator (all of them for a bare
    one), or None without one."""
    d = export_decorator(item)
    return decorator_targets(d) if d is not None else None


def export_decorator(item: A.FnItem) -> Optional[A.Decorator]:
    """The function's `@export` that counts: its first (a later one changes nothing)."""
    return next((d for d in item.decorators if d.name == "export"), None)


def decorator_targets(d: A.Decorator) -> Optional[set]:
    """The targets one decorator exports for: an `@export(…)`'s known names, all of them
    for a bare `@export`; None for any other decorator (it exports nothing)."""
    if d.name != "export":
        return None
    return {n for n, _ in d.args if n in TARGETS} if d.args else set(TARGETS)


def unknown_targets(item: A.FnItem) -> list:
    """E0212 at each name in `@export(…)` that is no target."""
    out = []
    for d in item.decorators:
        if d.name == "export":
            out += [unknown_target(item.span(pos), name, closest(name, TARGETS), TARGETS)
                    for name, pos in d.args if name not in TARGETS]
    return out


def exported(own: dict, env, default_targets=None) -> list:
    """[(FnItem, set of targets)] by rules 1 and 2, in source order. A function marked
    `@export` with no known target is exported for none (its names are E0212)."""
    fns = [it for it in without_simple_dims(own).values() if isinstance(it, A.FnItem)]
    marked = [(it, decorated_targets(it)) for it in fns]
    marked = [(it, t) for it, t in marked if t is not None]
    if marked:
        return marked
    fwd = own.get("forward")
    if not isinstance(fwd, A.FnItem):
        return []
    if default_targets:
        return [(fwd, {t for t in default_targets if t in TARGETS})]
    return [(fwd, set(TARGETS) if _is_language_model(env) else {"hf"})]


def candidates(own: dict, env, target: str, default_targets=None) -> list:
    """The functions an explicit request for `target` without a named function takes
    (`export --gguf`, `check --target gguf`): those exported for it; when none is, the
    file's exported functions whatever their targets (asked for explicitly, the target
    goes: `forward` of a file with no `@export`, a function marked for other targets).
    More than one is ambiguous for `export`, which asks for `--fn`."""
    found = exported(own, env, default_targets)
    return [it for it, t in found if target in t] or [it for it, _ in found]


def export_targets(own: dict, env, requests=None, default_targets=None) -> list:
    """[(FnItem, set of targets)] for the file, in source order: rules 1 and 2, or the
    explicit requests [(fn name or None, targets)] (rule 3) when there are any."""
    if not requests:
        return exported(own, env, default_targets)
    fns = [it for it in without_simple_dims(own).values() if isinstance(it, A.FnItem)]
    out: dict = {}
    for name, targets in requests:
        for t in (t for t in targets if t in TARGETS):
            if name is None:
                picked = candidates(own, env, t, default_targets)
            else:
                it = own.get(name)
                picked = [it] if isinstance(it, A.FnItem) else []
            for it in picked:
                out.setdefault(id(it), (it, set()))[1].add(t)
    order = {id(it): k for k, it in enumerate(fns)}
    return sorted(out.values(), key=lambda p: order.get(id(p[0]), 0))


def asked_for(item: A.FnItem, target: str, requests=None, default_targets=None) -> bool:
    """Did the user name `target` for this function (its `@export`, a request, the
    settings' default targets), rather than rule 2 implying it?"""
    named = decorated_targets(item)
    if named is not None and target in named:
        return True
    if any(name in (None, item.name) and target in targets for name, targets in requests or ()):
        return True
    return named is None and target in (default_targets or ())


def _is_language_model(env) -> bool:
    sig = env.sig("forward")
    return sig is not None and any(isinstance(p.type, TensorT) and p.type.dtype.name == "Index"
                                   for p in sig.params)
