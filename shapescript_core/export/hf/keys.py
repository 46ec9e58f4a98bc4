"""Param paths (`layers.3.attn.wq`) to the generated model's state_dict keys.

The checkpoint's keys are the generated model's (`model.layers.3.attn.wq.weight` for a
projection that became an `nn.Linear` in a language model's base model); the export
writes this mapping beside the weights as `shapescript-weights.json`, so a later export
can read the checkpoint back through it.
"""
from __future__ import annotations

from ...check.types import ModelT, StackT

MAPPING_FILE = "shapescript-weights.json"


def state_dict_key(plan, path: str) -> str | None:
    """The key of a param path, or None when the checkpoint holds it under another key
    (the output layer tied to the embedding)."""
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
        if fp.kind in ("linear", "embedding"):
            out += [fp.attr, "weight"]
        elif fp.kind == "bias":
            out += [plan.fields[(model, fp.folded_into)].attr, "bias"]
        else:
            out.append(fp.attr)
        i += 1
    key = ".".join(out)
    return f"model.{key}" if plan.lm is not None else key


def key_map(plan, paths) -> dict:
    return {p: state_dict_key(plan, p) for p in paths}
