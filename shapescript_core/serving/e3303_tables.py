"""E3303: the embedding table and the output layer are the serving engine's own. The
token ids go into one `embedding(ids, m.E)` of a [V D] param of the model, and neither
table is read anywhere else, in the exported function or in what it calls. Its checks,
their messages and helps. E3302 (e3302_output.py) finds the output layer first; both
fill the same `Layers`."""
from __future__ import annotations

from ..check.types import ModelT
from ..diagnostics import error
from ..syntax import ast as A
from .e3302_output import Layers, model_field, table_shape_ok
from .places import placed_error


def table_read(field: str) -> str:
    return f"`{field}` is the embedding table, which a serving engine holds itself"


def output_read(field: str) -> str:
    return f"`{field}` is the output layer, which a serving engine holds itself"


def ids_twice(ids: str) -> str:
    return f"`{ids}` is used more than once, but a serving engine looks the tokens up once"


def ids_unused(ids: str) -> str:
    return f"`{ids}` goes into no embedding, but a serving engine looks the tokens up itself"


def ids_elsewhere(ids: str) -> str:
    return f"`{ids}` is used here, but a serving engine only looks the tokens up in its embedding"


def table_not_param(table: str, model: str) -> str:
    return f"the embedding table `{table}` must be a param of `{model}`, which a serving engine holds itself"


def look_up_once_help(ids: str, model: str) -> str:
    return f"look the tokens up once, with `embedding({ids}, {model}.E)`"


def use_once_help(ids: str, model: str) -> str:
    return f"use `{ids}` once, in `embedding({ids}, {model}.E)`"


def check_embedding(prog, res, env, si, layers: Layers) -> list:
    """E3303 for the token ids' uses in the exported function; fills layers.table."""
    item = res.item
    ids = si.ids.name
    mname = si.model.name
    parents = _parents(item)
    uses = [n for s in A.walk_stmts(item.body) for n in _stmt_exprs(s)
            if isinstance(n, A.Name) and n.id == ids]
    good = []
    for u in uses:
        call = parents.get(id(u))
        info = res.calls.get(id(call)) if call is not None else None
        if info is None or info.target != "embedding" or info.builtin is None:
            continue
        e_arg, i_arg = info.arg_map.get("E"), info.arg_map.get("ids")
        if i_arg is None or i_arg.value is not u or e_arg is None:
            continue
        mf = model_field(res, env, e_arg.value, mname)
        good.append((u, call, e_arg, mf))
    if not uses:
        return [error("E3303", ids_unused(ids), item.span(si.ids.node.name_pos),
                      "never looked up").help(look_up_once_help(ids, mname))]
    if len(uses) > 1:
        good_ids = {id(g[0]) for g in good if g[3] is not None}
        first_good = next((u for u in uses if id(u) in good_ids), uses[0])
        bad = next((u for u in uses if u is not first_good), uses[1])
        again = next((g for g in good if g[0] is bad), None)
        if again is not None:  # that second lookup's table read is part of this mistake
            layers.allowed.add(id(again[2].value))
        d = error("E3303", ids_twice(ids), item.span(bad.pos), "used again here")
        d.label(item.span(first_good.pos), "looked up here")
        if first_good in [g[0] for g in good]:
            g = next(g for g in good if g[0] is first_good)
            if g[3] is not None:
                layers.table = g[3][0]
                layers.allowed.add(id(g[2].value))
        return [d.help(use_once_help(ids, mname))]
    u = uses[0]
    if not good:
        return [error("E3303", ids_elsewhere(ids), item.span(u.pos),
                      f"`{ids}` must go straight into `embedding({ids}, {mname}.E)`")]
    _, call, e_arg, mf = good[0]
    if mf is None or not table_shape_ok(mf[1], si.vocab):
        text = item.src(e_arg.value.pos)
        return [error("E3303", table_not_param(text, mname), item.span(e_arg.value.pos),
                      f"not a [{env.dims.render(si.vocab)} D] param of `{mname}`")]
    layers.table = mf[0]
    layers.allowed.add(id(e_arg.value))
    return []


def check_stray_reads(prog, fns: list, si, layers: Layers, skip: set, model_type: str, stack_to) -> list:
    """E3303 at every read of the table or the output layer beyond their own uses, in any
    function the exported one reaches (`stack_to(result)`: the calls leading there)."""
    fields = {f for f in (layers.table, layers.output) if f}
    if not fields:
        return []
    out = []
    for r in fns:
        for s in A.walk_stmts(r.item.body):
            for node in _stmt_exprs(s):
                if not isinstance(node, A.FieldRead) or node.name not in fields:
                    continue
                if id(node) in layers.allowed or id(node) in skip:
                    continue
                t = r.types.get(id(node.obj))
                if not (isinstance(t, ModelT) and t.name == model_type):
                    continue
                table = node.name == layers.table
                msg = table_read(node.name) if table else output_read(node.name)
                label = "read here" if table else "read here, outside the output layer"
                out.append(placed_error(prog, r.item, node.pos, stack_to(r), "E3303", msg, label))
    return out


def _stmt_exprs(s):
    if isinstance(s, A.For):
        yield from A.walk_expr(s.iter)
    elif hasattr(s, "value"):
        yield from A.walk_expr(s.value)


def _parents(item) -> dict:
    """id(node) -> the Call whose argument it is (directly)."""
    out = {}
    for s in A.walk_stmts(item.body):
        for n in _stmt_exprs(s):
            if isinstance(n, A.Call):
                for a in n.args:
                    out[id(a.value)] = n
    return out
