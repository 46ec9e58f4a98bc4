"""E3302: the logits come straight from the output layer, `linear(h, m.W)` with a
[V D] param of the model and no bias, returned as it is. Its check (on the exported
function's last statement), its message and help, and its fix (a cast after the output
layer moved before it). Also what E3303 (e3303_tables.py) builds on: `Layers`, the two
tables found, and how a table is read off the model."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..check.types import DTypeValue, ModelT, TensorT
from ..diagnostics import Edit, Fix, error
from ..syntax import ast as A
from ..syntax.ast import op_pos

MESSAGE = "a serving engine needs the logits to come from an output layer it can run"
HELP = "Return the output layer's result directly, and do anything else before it."


@dataclass
class Layers:
    """What E3302 and E3303 found: the tables' fields and the reads allowed to use them."""

    table: Optional[str] = None  # embedding field name
    output: Optional[str] = None  # output layer field name
    allowed: set = field(default_factory=set)  # ids of the FieldRead nodes of those two uses
    out_call: Optional[A.Call] = None  # the output layer's call, when found


def model_field(res, env, node, model_param: str):
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


def table_shape_ok(ftype, vocab) -> bool:
    return isinstance(ftype, TensorT) and len(ftype.axes) == 2 and ftype.axes[0].size == vocab


def check_output(prog, res, env, si, layers: Layers):
    """E3302 on the exported function's last statement; fills layers.output."""
    item = res.item
    last = item.body[-1] if item.body else None
    if not isinstance(last, A.Return):
        return None
    value = last.value
    capped = _final_softcap(res, value)
    if capped is not None:  # v0.3: `softcap(linear(h, m.W), c)`, which every engine runs natively
        value = capped
    mname = si.model.name
    found = _find_output_call(res, value)
    problem = None
    if found is None:
        problem = (value.pos, "this isn't the output layer, `linear(h, "
                              f"{mname}.W)`")
    else:
        info = res.calls[id(found)]
        w_arg, b_arg = info.arg_map.get("W"), info.arg_map.get("b")
        mf = model_field(res, env, w_arg.value, mname) if w_arg is not None else None
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
        elif not table_shape_ok(mf[1], si.vocab):
            problem = (w_arg.value.pos, f"`{item.src(w_arg.value.pos)}` is {env.render(mf[1])}, "
                                        f"not [{env.dims.render(si.vocab)} D]")
    if problem is None:
        return None
    if tuple(problem[0]) == tuple(value.pos):
        d = error("E3302", MESSAGE, item.span(value.pos), problem[1])
    else:
        d = error("E3302", MESSAGE, item.span(value.pos), "the logits come from here").label(item.span(problem[0]), problem[1])
    d.help(HELP)
    if found is not None and found is not value:
        f = move_cast(res, env, value, found)
        if f is not None:
            d.fix(f)
    return d


def _final_softcap(res, value):
    """The output layer's call inside a final `softcap(…, c)` (SERVING-ENGINES.md, E3302,
    v0.3), or None."""
    info = res.calls.get(id(value)) if isinstance(value, A.Call) else None
    if info is None or info.builtin is None or info.target != "softcap" or "x" not in info.arg_map:
        return None
    inner = info.arg_map["x"].value
    return inner if _is_linear(res, inner) else None


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


# ---------------------------------------------------------------- the fix
def move_cast(res, env, value, linear) -> Fix | None:
    """`linear(h, m.W) |> to(dt)` → `h |> to(dt) |> linear(m.W)`: the same when W is dt."""
    info = res.calls.get(id(value))
    if info is None or info.target != "to" or info.arg_map.get("x") is None:
        return None
    if info.arg_map["x"].value is not linear or info.arg_map.get("dtype") is None:
        return None
    dt = res.types.get(id(info.arg_map["dtype"].value))
    linfo = res.calls[id(linear)]
    x, w = linfo.arg_map.get("x"), linfo.arg_map.get("W")
    wt = res.types.get(id(w.value)) if w is not None else None
    if not isinstance(dt, DTypeValue) or not isinstance(wt, TensorT) or wt.dtype != dt.dtype or x is None:
        return None
    item = res.item
    xs, ws, ds = item.src(x.value.pos), item.src(w.value.pos), item.src(info.arg_map["dtype"].value.pos)
    new = (f"{xs} |> to({ds}) |> linear({ws})" if linear.piped else f"linear(to({xs}, {ds}), {ws})")
    return Fix.safe("Cast before the output layer", Edit(item.span(value.pos), new))
