"""The stacks of blocks (`layers: [L] Block`) in the model an exported function takes:
what the dims read from a checkpoint give its number of blocks, and what the E3315 for a
number of blocks the checkpoint contradicts names."""
from __future__ import annotations

from ..check.types import ModelT, StackT


def stack_fields(env, fn_name: str) -> list:
    """Every stack field (FieldInfo) of the model `fn_name` takes first, in its submodels
    too, each model looked into once."""
    sig = env.sig(fn_name)
    if not (sig and sig.params and isinstance(sig.params[0].type, ModelT)):
        return []
    todo, seen, found = [sig.params[0].type.name], set(), []
    while todo:
        info = env.model(todo.pop())
        for f in (info.fields.values() if info else ()):
            t = f.type
            if isinstance(t, StackT):
                found.append(f)
            name = t.model if isinstance(t, StackT) else t.name if isinstance(t, ModelT) else None
            if name is not None and name not in seen:
                seen.add(name)
                todo.append(name)
    return found
