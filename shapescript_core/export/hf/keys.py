"""Param paths (`layers.3.attn.wq`) to the generated model's state_dict keys.

The checkpoint's keys are the generated model's (`model.layers.3.attn.wq.weight` for a
projection that became an `nn.Linear` in a language model's base model); the export
writes this mapping beside the weights as `shapescript-weights.json`, so a later export
can read the checkpoint back through it. A packed param (compile/parallel_plan.py) is
held as its parts, one tensor each: its key is the list of theirs
(`[….w_qkv.0.weight, ….w_qkv.1.weight, ….w_qkv.2.weight]`), its rows in that order.
"""
from __future__ import annotations

from ...check.types import ModelT, StackT

MAPPING_FILE = "shapescript-weights.json"


def state_dict_key(plan, path: str, parts_of=None):
    """The key of a param path (a list of keys for a param held as parts: `parts_of(model,
    field)` says how many), or None when the checkpoint holds it under another key (the
    output layer tied to the embedding)."""
    prog = plan.prog
    parts = path.split(".")
    model = plan.root
    out = []
    i = 0
    while i < len(parts):
        fname = parts[i]
        fp = plan.fields[(model, fname)]
        f = prog.model(model).fields[fname]
        if fp.kind == "stack":
            out += [fp.attr, parts[i + 1]]
            model = f.type.model
            i += 2
            continue
        if fp.kind == "model":
            out.append(fp.attr)
            model = f.type.name
            i += 1
            continue
        if i != len(parts) - 1:
            raise KeyError(path)
        if fp.kind == "lm_head":
            return "lm_head.weight"
        k = 1
        if fp.kind in ("linear", "embedding"):
            out += [fp.attr, "weight"]
            k = parts_of(model, fname) if parts_of is not None and fp.kind == "linear" else 1
        elif fp.kind == "bias":
            out += [plan.fields[(model, fp.folded_into)].attr, "bias"]
            k = parts_of(model, fp.folded_into) if parts_of is not None else 1
        else:
            out.append(fp.attr)
        i += 1
    key = ".".join(out)
    key = f"model.{key}" if plan.lm is not None else key
    if k > 1:
        head, leaf = key.rsplit(".", 1)
        return [f"{head}.{j}.{leaf}" for j in range(k)]
    return key


def key_map(plan, paths, parts_of=None) -> dict:
    return {p: state_dict_key(plan, p, parts_of) for p in paths}
