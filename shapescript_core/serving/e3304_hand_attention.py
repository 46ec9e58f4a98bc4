"""E3304's fix for causal attention written by hand (e3304_token_axes.py reports it):

    s = einsum(q, k: X n d, X m d -> X n m)      # the scores
        |> scale(c)  or  * c  or  / c            # optional, any order with the mask
        |> masked_fill(!causal[n m], -inf)       # optional
        |> softmax(over=m)                       # where E3304 is reported
    o = einsum(s, v: X n m, X m e -> X n e)

becomes `scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])`, with `scale=c`
when c is not 1/sqrt(d). Locals that only carried the chain are removed with it.
"""
from __future__ import annotations

import math

from ..check.patterns import flat_names
from ..check.types import ScalarT, TensorT
from ..diagnostics import Edit, Fix, debugging, log
from ..syntax import ast as A
from . import edits as ED


def hand_attention(prog, ctx, softmax: A.Call):
    try:
        return _build(prog, ctx, softmax)
    except (KeyError, IndexError, AttributeError, ValueError):  # a bug: no fix, and said in the log
        if debugging():
            raise
        log.exception("the hand-written attention fix of %s failed", ctx.item.name)
        return None


def _builtin(res, node, name=None):
    info = res.calls.get(id(node)) if isinstance(node, A.Call) else None
    if info is None or info.builtin is None or (name is not None and info.target != name):
        return None
    return info


def _names(side) -> list | None:
    if not all(isinstance(x, A.PName) for x in side.items):
        return None
    return [x.name for x in side.items]


def _single_def(item, name: str):
    defs = ED.assignments(item, name)
    if len(defs) == 1 and isinstance(defs[0], A.Assign) and len(ED.name_uses(item, name)) == 1:
        return defs[0]
    return None


def _build(prog, ctx, softmax):
    res, item, env = ctx.res, ctx.item, ctx.env
    sm = _builtin(res, softmax, "softmax")
    over = sm.arg_map.get("over")
    if over is None or not isinstance(over.value, A.Name):
        return None
    m = over.value.id
    removed = []
    scale = None  # (node, divides)
    mask = False
    node = sm.arg_map["x"].value
    while True:
        if isinstance(node, A.Name):
            d = _single_def(item, node.id)
            if d is None:
                return None
            removed.append(d)
            node = d.value
            continue
        if isinstance(node, A.Binop) and node.op in ("*", "/") and scale is None:
            lt = res.types.get(id(node.left))
            if isinstance(lt, TensorT):
                scale, node = (node.right, node.op == "/"), node.left
            elif node.op == "*":
                scale, node = (node.left, False), node.right
            else:
                return None
            continue
        info = _builtin(res, node)
        if info is None:
            return None
        if info.target == "einsum":
            break
        if info.target == "scale" and scale is None:
            scale, node = (info.arg_map["s"].value, False), info.arg_map["x"].value
            continue
        if info.target == "masked_fill" and not mask:
            if not _causal_fill(info, m):
                return None
            mask, node = True, info.arg_map["x"].value
            continue
        return None
    scores = node
    sides = scores.pattern
    q_arg, k_arg = [a for a in scores.args if a.name is None]
    qn, kn, on = _names(sides.inputs[0]), _names(sides.inputs[1]), _names(sides.output)
    if not (qn and kn and on) or len(qn) < 3:
        return None
    batch, n, d = qn[:-2], qn[-2], qn[-1]
    if kn != batch + [m, d] or on != batch + [n, m] or n == m:
        return None
    # the consumer: the einsum taking the probabilities
    holder = softmax
    found = _stmt_with_value(item, softmax)
    if found is not None and isinstance(found, A.Assign) and found.value is softmax:
        d_att = _single_def(item, found.target)
        if d_att is None:
            return None
        removed.append(d_att)
        holder = ED.name_uses(item, found.target)[0]
    consumer = _parent_call(item, holder)
    cinfo = _builtin(res, consumer, "einsum")
    if cinfo is None or consumer.pattern is None or len(consumer.pattern.inputs) != 2:
        return None
    cargs = [a for a in consumer.args if a.name is None]
    if len(cargs) != 2 or holder not in (cargs[0].value, cargs[1].value):
        return None
    ia = 0 if cargs[0].value is holder else 1
    v_arg = cargs[1 - ia]
    an, vn, outn = (_names(consumer.pattern.inputs[ia]), _names(consumer.pattern.inputs[1 - ia]),
                    _names(consumer.pattern.output))
    if not (an and vn and outn) or an != batch + [n, m]:
        return None
    e = vn[-1]
    if vn != batch + [m, e] or outn != batch + [n, e]:
        return None
    render = env.dims.render
    qt, vt = res.types.get(id(q_arg.value)), res.types.get(id(v_arg.value))
    if not (isinstance(qt, TensorT) and isinstance(vt, TensorT)):
        return None
    if [render(a.name) for a in qt.axes] != qn or render(vt.axes[-1].name) != e:
        return None
    scale_text = _scale_text(res, env, scale, qt.axes[-1].size, item) if scale is not None else ""
    if scale_text is None:
        return None
    # nothing the chain used may change between the scores and the consumer
    span = (min(scores.pos[0], consumer.pos[0]), max(scores.pos[1], consumer.pos[1]))
    for a in (q_arg, k_arg, v_arg):
        for nm in (x.id for x in A.walk_expr(a.value) if isinstance(x, A.Name)):
            if any(span[0] < s.pos[0] < span[1] for s in ED.assignments(item, nm) if s not in removed):
                return None
    # the key axis `m` must be used by nothing else
    gone = [consumer.pos] + [s.pos for s in removed]
    if any(not any(a <= p[0] and p[1] <= b for a, b in gone) for p in _axis_uses(res, item, m)):
        return None
    new = (f"scaled_dot_product_attention({item.src(q_arg.value.pos)}, {item.src(k_arg.value.pos)}, "
           f"{item.src(v_arg.value.pos)}, attn_mask=causal[{n} {n}]{scale_text})")
    edits = [Edit(item.span(consumer.pos), new)] + ED.delete_statements(prog, item, removed)
    return Fix.safe("Use scaled_dot_product_attention with causal mask", *edits)


def _causal_fill(info, m: str) -> bool:
    mk, val = info.arg_map.get("mask"), info.arg_map.get("value")
    if mk is None or val is None:
        return False
    mv = mk.value
    if not (isinstance(mv, A.Unop) and mv.op == "!" and isinstance(mv.operand, A.Mask)):
        return False
    mask = mv.operand
    if not (isinstance(mask.obj, A.Name) and mask.obj.id == "causal" and len(mask.axes) == 2):
        return False
    if not (isinstance(mask.axes[1], A.SName) and mask.axes[1].name == m):
        return False
    v = val.value
    return isinstance(v, A.Unop) and v.op == "-" and isinstance(v.operand, A.Const) and v.operand.value == "inf"


def _scale_text(res, env, scale, head, item):
    """'' for the default scale 1/sqrt(head), else ', scale=…'; None when unsure."""
    node, divides = scale
    if _is_default(res, env, node, head, divides):
        return ""
    src = item.src(node.pos)
    if divides:
        simple = isinstance(node, (A.Name, A.Number, A.Call))
        src = f"1 / {src}" if simple else f"1 / ({src})"
    return f", scale={src}"


def _size_of(res, node):
    t = res.types.get(id(node))
    return t.size if isinstance(t, ScalarT) else None


def _is_default(res, env, node, head, divides: bool) -> bool:
    def sqrt_of_head(n):
        return (isinstance(n, A.Call) and isinstance(n.func, A.Name) and n.func.id == "sqrt"
                and len(n.args) == 1 and _size_of(res, n.args[0].value) == head)
    if divides:
        if sqrt_of_head(node):
            return True
    else:
        if isinstance(node, A.Binop) and node.op == "/" and isinstance(node.left, A.Number) \
                and node.left.value == 1 and sqrt_of_head(node.right):
            return True
        if isinstance(node, A.Call) and isinstance(node.func, A.Name) and node.func.id == "rsqrt" \
                and len(node.args) == 1 and _size_of(res, node.args[0].value) == head:
            return True
        if isinstance(node, A.Binop) and node.op == "**" and _size_of(res, node.left) == head \
                and isinstance(node.right, A.Unop) and isinstance(node.right.operand, A.Number) \
                and node.right.operand.value == 0.5:
            return True
    if isinstance(node, A.Number):
        hv = head.evaluate(env.dims.values)
        if hv is not None and hv > 0:
            want = math.sqrt(hv) if divides else 1 / math.sqrt(hv)
            return math.isclose(node.value, want, rel_tol=1e-6)
    return False


def _axis_uses(res, item, name: str) -> list:
    """Positions where a function body uses `name` as an axis: patterns, masks, `over=`,
    annotations, and the name's size as a value."""
    out = []

    def sizes(e):
        out.extend(n.pos for n in A.size_post_order(e) if isinstance(n, A.SName) and n.name == name)

    for s in A.walk_stmts(item.body):
        if isinstance(s, A.Assign) and isinstance(s.annotation, A.TensorTypeExpr):
            for ax in s.annotation.axes:
                sizes(ax)
        root = s.iter if isinstance(s, A.For) else s.value
        for n in A.walk_expr(root):
            if isinstance(n, A.Mask):
                for ax in n.axes:
                    sizes(ax)
            elif isinstance(n, A.Call):
                if n.pattern is not None:
                    sides = list(n.pattern.inputs) + [n.pattern.output]
                    out += [x.pos for side in sides for x in flat_names(side.items) if x.name == name]
                info = res.calls.get(id(n))
                over = info.arg_map.get("over") if info is not None and info.builtin is not None else None
                if over is not None:
                    items = over.value.items if isinstance(over.value, A.TupleExpr) else [over.value]
                    out += [x.pos for x in items if isinstance(x, A.Name) and x.id == name]
            elif isinstance(n, A.Name) and n.id == name and isinstance(res.types.get(id(n)), ScalarT):
                out.append(n.pos)
    return out


def _parent_call(item, node):
    for s in A.walk_stmts(item.body):
        root = s.iter if isinstance(s, A.For) else s.value
        for n in A.walk_expr(root):
            if isinstance(n, A.Call) and any(a.value is node for a in n.args):
                return n
    return None


def _stmt_with_value(item, node):
    """The statement whose value is node, if any."""
    for s in A.walk_stmts(item.body):
        if getattr(s, "value", None) is node:
            return s
    return None
