"""The exported function's params: one ParamSpec per tensor of the root model (its
first parameter), in field order with stacks unrolled, and the dims' values.

`resolve(db, path, fn_name, target)` finds the function (`--fn`, else the one marked
`@export` for the target, else `forward`), and gives every param's path, shape (the
dims' values substituted), dtype and initializer, with E3312 for each visible dim that
has no value: the writers put every dim's value into the configuration they write.
"""
from __future__ import annotations

import gc

from dataclasses import dataclass, field
from typing import Optional

from ..check.types import ModelT, StackT, TensorT
from ..syntax import ast as A
from ..targets import candidates, decorated_targets
from ..check.codes.e3306_model_first import message
from ..export_errors import ExportError, ParamSpec
from .e3312 import e3312


@dataclass
class ParamSite:
    """Where a param is declared, for diagnostics."""
    span: object      # the field's name in its model
    written: str      # its type as the source writes it: "[V D]"


@dataclass
class Resolved:
    fn_item: A.FnItem
    model: str                                   # the root model's name
    specs: list                                  # [ParamSpec], in field order
    sites: dict = field(default_factory=dict)    # param path -> ParamSite
    dims: dict = field(default_factory=dict)     # dim name -> int
    diagnostics: list = field(default_factory=list)  # E3312


def find_function(db, path: str, fn_name: Optional[str], target: str) -> A.FnItem:
    """The function to export (`--fn`, else targets.py's rule); ExportError (a usage
    problem) when there is none or several."""
    a = db.analyze(path)
    fns = [it for it in a.own.values() if isinstance(it, A.FnItem)]
    if fn_name is not None:
        for it in fns:
            if it.name == fn_name:
                return it
        raise ExportError(f"`{fn_name}` isn't a function in {path}")
    picked = candidates(a.own, a.env, target, db.inputs.default_targets)
    if len(picked) == 1:
        return picked[0]
    if len(picked) > 1:
        names = ", ".join(f"`{it.name}`" for it in picked)
        marked = all(target in (decorated_targets(it) or ()) for it in picked)
        raise ExportError(f"{names} are all marked @export{f'({target})' if marked else ''}: choose one with --fn")
    raise ExportError(f"nothing to export for {target} in {path}: mark a function "
                      f"@export({target}), name it `forward`, or choose one with --fn")


def resolve(db, path: str, fn_item: A.FnItem) -> Resolved:
    """The params of the exported function's model, stacks unrolled (one ParamSpec per
    tensor), and the dims' values. The cycle collector is paused meanwhile: a stack of
    100,000 layers makes a million small objects and no cycle, and collections over
    them took two thirds of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _resolve(db, path, fn_item)
    finally:
        if enabled:
            gc.enable()


def _resolve(db, path: str, fn_item: A.FnItem) -> Resolved:
    a = db.analyze(path)
    env = a.env
    sig = env.sig(fn_item.name)
    if sig is None or not sig.params or not isinstance(sig.params[0].type, ModelT):
        raise ExportError(message(fn_item.name))
    root = sig.params[0].type.name
    dims = {n: d.value for n, d in env.dims.info.items() if d.value is not None}
    res = Resolved(fn_item, root, [], {}, dims, [])
    for name, it in env.dims.items.items():
        info = env.dims.info.get(name)
        if info is not None and info.canon is not None and info.value is None:
            res.diagnostics.append(e3312(name, it.span(it.name_pos)))
    values = env.dims.values
    missing = False
    # an explicit stack instead of recursion: models nest as deep as the user writes them
    # `todo` holds the path from the root only (a stack's copies are made one at a time,
    # by its entry's iterator), so "is this model on the path" costs the nesting depth,
    # not the number of layers (it was quadratic in a stack's length)
    todo = [(root, "", iter(_fields(env, root)))]
    shapes: dict = {}  # id(field) -> its shape, or False when a dim has no value
    while todo:
        model, prefix, fields = todo[-1]
        if model is None:  # a stack: (None, its param path, its copies' (model, prefix) pairs)
            copy = next(fields, None)
            if copy is None:
                todo.pop()
            else:
                todo.append((copy[0], copy[1], iter(_fields(env, copy[0]))))
            continue
        f = next(fields, None)
        if f is None:
            todo.pop()
            continue
        p = prefix + f.name
        t = f.type
        if isinstance(t, TensorT):
            shape = shapes.get(id(f))  # every copy of a stacked model has the same shapes
            if shape is None:
                shape = shapes[id(f)] = _shape(t, values)
            if shape is False:
                missing = True
            else:
                res.specs.append(ParamSpec(p, f.name, model, tuple(shape), t.dtype.name,
                                           init_of(f.node, f.item)))
                res.sites[p] = ParamSite(f.item.span(f.node.name_pos), f.item.src(f.node.type.axes_pos))
        elif isinstance(t, (ModelT, StackT)) and _on_path(todo, getattr(t, "name", None) or t.model):
            continue  # a model that contains itself: the checker reports it
        elif isinstance(t, ModelT):
            todo.append((t.name, p + ".", iter(_fields(env, t.name))))
        elif isinstance(t, StackT):
            n = t.count.evaluate(values)
            if n is None:
                missing = True
                continue
            # the copies in order, layer 0 first, each made when the previous one is done
            todo.append((None, p, _copies(t.model, p, int(n))))
    if missing and not res.diagnostics:
        raise ExportError("a param's shape has no value: give every dim a value with --dim")
    return res


def _copies(model: str, path: str, n: int):
    """A stack's copies, made one at a time: (model, param path prefix)."""
    return ((model, f"{path}.{i}.") for i in range(n))


def _shape(t, values):
    """A tensor field's shape with the dims' values, or False when one has none."""
    shape = []
    for ax in t.axes:
        v = ax.size.evaluate(values)
        if v is None or v.denominator != 1:
            return False
        shape.append(int(v))
    return tuple(shape)


def _fields(env, model: str) -> list:
    info = env.model(model)
    if info is None:
        raise ExportError(f"`{model}` can't be exported: it has errors")
    return list(info.fields.values())


def _on_path(todo, model: str) -> bool:
    return any(m == model for m, _, _ in todo)  # todo is the path: its length is the nesting depth


def init_of(node: A.Field, item) -> tuple:
    e = node.init
    if e is None:
        return ("normal", 0.02)
    if isinstance(e, A.Name) and e.id in ("ones", "zeros"):
        return (e.id,)
    if isinstance(e, A.Call) and isinstance(e.func, A.Name) and e.func.id == "normal":
        if not e.args:
            return ("normal", 0.02)
        if len(e.args) == 1 and e.args[0].name in (None, "std"):
            v = e.args[0].value
            if isinstance(v, A.Number) and v.value >= 0:
                return ("normal", float(v.value))
    return ("unknown", item.src(e.pos))
