"""E3302 (the output layer) and E3303 (the embedding, and stray reads of either table)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..check.types import ModelT, TensorT
from ..diagnostics import error
from ..syntax import ast as A
from . import fixes, serving_messages as M
from ..syntax.ast import op_pos


@dataclass
class Layers:
    """What E3302 and E3303 found: the tables' fields and the reads allowed to use them."""

    table: Optional[str] = None  # embedding field name
    output: Optional[str] = None  # output layer field name
    allowed: set = field(default_factory=set)  # ids of the FieldRead nodes of those two uses
    out_call: Optional[A.Call] = None  # the output layer's call, when found


def _model_field(res, env, node, model_param: str):
    """(field name, field type) when node reads `m.F` directly off the model parameter."""
    if not (isinstance(node, A.FieldRead) and isinstance(node.obj, A.Name) and node.obj.id == model_param):
        return None
    t = res.types.get(id(node.obj))
    if not isinstance(t, ModelT):
        return None
    m = env.model(t.name)
    f = m.fields.get(node.name) if m is not None else None
    return (node.name, f.type) if f is not None else None


def _is_linear(res, node) -> bool:
    info = res.calls.get(id(node)) if isinstance(node, A.Call) else None
    return info is not None and info.builtin is not None and info.target == "linear"


def _table_shape_ok(ftype, vocab) -> bool:
    return isinstance(ftype, TensorT) and len(ftype.axes) == 2 and ftype.axes[0].size == vocab


def check_output(prog, res, env, si, layers: Layers):
    """E3302 on the exported function's last statement; fills layers.output."""
    item = res.item
    last = item.body[-1] if item.body else None
    if not isinstance(last, A.Return):
        return None
    value = last.value
    mname = si.model.name
    found = _find_output_call(res, value)
    problem = None
    if found is None:
        problem = (value.pos, "this isn't the output layer, `linear(h, "
                              f"{mname}.W)`")
    else:
        info = res.calls[id(found)]
        w_arg, b_arg = info.arg_map.get("W"), info.arg_map.get("b")
        mf = _model_field(res, env, w_arg.value, mname) if w_arg is not None else None
        if mf is not None and isinstance(mf[1], TensorT):
            layers.output = mf[0]
            layers.allowed.add(id(w_arg.value))
            layers.out_call = found
        if found is not value:
            outer = _outer_op(res, value)
            problem = (op_pos(outer) if outer is not None else value.pos,
                       f"`{_op_name(res, outer)}` comes after the output layer" if outer is not None
                       else "the output layer must be returned directly")
        elif b_arg is not None:
            problem = (b_arg.pos, "the output layer has a bias")
        elif mf is None:
            problem = (w_arg.value.pos, f"`{item.src(w_arg.value.pos)}` isn't a param field of `{mname}`")
        elif not _table_shape_ok(mf[1], si.vocab):
            problem = (w_arg.value.pos, f"`{item.src(w_arg.value.pos)}` is {env.render(mf[1])}, "
                                        f"not [{env.dims.render(si.vocab)} D]")
    if problem is None:
        return None
    if tuple(problem[0]) == tuple(value.pos):
        d = error("E3302", M.E3302, item.span(value.pos), problem[1])
    else:
        d = error("E3302", M.E3302, item.span(value.pos), "the logits come from here").label(item.span(problem[0]), problem[1])
    d.help(M.E3302_HELP)
    if found is not None and found is not value:
        f = fixes.move_cast(res, env, value, found)
        if f is not None:
            d.fix(f)
    return d


def _find_output_call(res, value):
    """The linear call the returned value comes from: itself, or inside trailing operations."""
    node = value
    while True:
        if _is_linear(res, node):
            return node
        if isinstance(node, A.Call) and node.args:
            info = res.calls.get(id(node))
            if info is None or info.builtin is None:
                return None
            node = node.args[0].value
            continue
        if isinstance(node, A.Unop):
            node = node.operand
            continue
        if isinstance(node, A.Binop):
            lt = res.types.get(id(node.left))
            node = node.left if isinstance(lt, TensorT) else node.right
            continue
        return None


def _outer_op(res, value):
    return value if isinstance(value, (A.Call, A.Binop, A.Unop)) else None


def _op_name(res, node) -> str:
    if isinstance(node, A.Call) and isinstance(node.func, A.Name):
        return node.func.id
    if isinstance(node, (A.Binop, A.Unop)):
        return node.op
    return "this"


# ---------------------------------------------------------------- E3303
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
        mf = _model_field(res, env, e_arg.value, mname)
        good.append((u, call, e_arg, mf))
    if not uses:
        return [error("E3303", M.e3303_ids_unused(ids), item.span(si.ids.node.name_pos),
                      "never looked up").help(f"look the tokens up once, with `embedding({ids}, {mname}.E)`")]
    if len(uses) > 1:
        good_ids = {id(g[0]) for g in good if g[3] is not None}
        first_good = next((u for u in uses if id(u) in good_ids), uses[0])
        bad = next((u for u in uses if u is not first_good), uses[1])
        again = next((g for g in good if g[0] is bad), None)
        if again is not None:  # that second lookup's table read is part of this mistake
            layers.allowed.add(id(again[2].value))
        d = error("E3303", M.e3303_ids_twice(ids), item.span(bad.pos), "used again here")
        d.label(item.span(first_good.pos), "looked up here")
        if first_good in [g[0] for g in good]:
            g = next(g for g in good if g[0] is first_good)
            if g[3] is not None:
                layers.table = g[3][0]
                layers.allowed.add(id(g[2].value))
        return [d.help(f"use `{ids}` once, in `embedding({ids}, {mname}.E)`")]
    u = uses[0]
    if not good:
        return [error("E3303", M.e3303_ids_elsewhere(ids), item.span(u.pos),
                      f"`{ids}` must go straight into `embedding({ids}, {mname}.E)`")]
    _, call, e_arg, mf = good[0]
    if mf is None or not _table_shape_ok(mf[1], si.vocab):
        text = item.src(e_arg.value.pos)
        return [error("E3303", M.e3303_table_not_param(text, mname), item.span(e_arg.value.pos),
                      f"not a [{env.dims.render(si.vocab)} D] param of `{mname}`")]
    layers.table = mf[0]
    layers.allowed.add(id(e_arg.value))
    return []


def check_stray_reads(prog, fns: list, si, layers: Layers, skip: set, model_type: str) -> list:
    """E3303 at every read of the table or the output layer beyond their own uses."""
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
                msg = M.e3303_table(node.name) if table else M.e3303_output(node.name)
                out.append((r, node, msg, "read here" if table else "read here, outside the output layer"))
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
