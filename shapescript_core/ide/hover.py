"""Hover: the type of the name or expression under the cursor, a builtin's signature and
doc, a dim's value, a model's fields, a function's signature; and on a diagnostic, its
code's explanation and docs link. The text is Markdown."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from .. import explain
from ..check import rope_scaling
from ..check.builtins import BUILTINS
from ..check.mixture_routing import RoutingFacts, describe, routing
from ..check.static import loop_values, value as static_value
from ..check.types import DTYPE_NAMES, ModelT, TensorT, is_unknown
from ..diagnostics import doc_url
from ..syntax import ast as A
from ..targets import TARGETS, decorator_targets, export_decorator
from .locate import binding_of, chain, fn_result, inside, item_at


@dataclass
class Hover:
    markdown: str
    start: int  # absolute offsets of what the hover is about
    end: int


def hover(ws, path: str, offset: int) -> Optional[Hover]:
    path = ws.norm(path)
    a = ws.analyze(path)
    if a is None:
        return None
    parts: list = []
    span = None
    item = item_at(a.file, offset)
    if item is not None:
        found = _item_hover(a, item, offset - item.offset)
        if found is not None:
            text, pos = found
            parts.append(text)
            span = (item.offset + pos[0], item.offset + pos[1])
    for d in diagnostics_at(a.diags, path, offset):
        parts.append(diagnostic_markdown(d))
        if span is None:
            span = (d.span.abs_start, d.span.abs_end)
    if not parts:
        return None
    return Hover("\n\n---\n\n".join(parts), span[0], span[1])


def diagnostics_at(diags, path: str, offset: int) -> list:
    return [d for d in diags if d.path == path and d.span.abs_start <= offset <= d.span.abs_end]


def code_summary(code: str) -> tuple[str, str]:
    """(title, first paragraph) of a code's docs page; empty strings when it has none."""
    page = explain.page(code) or ""
    lines = page.splitlines()
    title = ""
    if lines and lines[0].startswith("#"):
        title = lines[0].lstrip("#").strip()
        lines = lines[1:]
    para: list = []
    for ln in lines:
        if not ln.strip():
            if para:
                break
            continue
        if ln.startswith("#"):
            break
        para.append(ln.strip())
    return title, " ".join(para)


def diagnostic_markdown(d) -> str:
    url = doc_url(d.code)
    _, summary = code_summary(d.code)
    link = "Serving engines" if "serving-engines" in url else f"{d.code} in the error index"
    out = [f"**{d.severity.word}[{d.code}]**: {d.message}"]
    if summary:
        out.append(summary)
    out.append(f"[{link}]({url})")
    return "\n\n".join(out)


# ---------------------------------------------------------------- pieces
def _code(text: str) -> str:
    return f"```shapescript\n{text}\n```"


def render_type(env, t) -> str:
    if t is None or is_unknown(t):
        return "?"
    return env.render(t, dtype=isinstance(t, TensorT))


def dim_markdown(env, name: str, here: str = "") -> Optional[str]:
    item = env.dims.items.get(name)
    if item is None:
        return None
    head = item.text.strip().splitlines()[0] if item.text.strip() else f"dim {name}"
    out = [_code(head)]
    info = env.dims.info.get(name)
    if info is not None and info.value is not None:
        if name in env.dims.overrides:
            out.append(f"`{name} = {info.value}`, set by the settings")
        elif not isinstance(getattr(item, "value", None), A.SInt):
            out.append(f"`{name} = {info.value}`")
    if item.path != here:
        out.append(f"from `{os.path.basename(item.path)}`")
    if item.doc:
        out.append(item.doc)
    return "\n\n".join(out)


def model_markdown(env, name: str, here: str = "") -> Optional[str]:
    m = env.models.get(name)
    if m is None:
        return None
    lines = [f"model {name}:"] + [f"    {fn}: {render_type(env, fi.type)}" for fn, fi in m.fields.items()]
    out = [_code("\n".join(lines))]
    if m.item.path != here:
        out.append(f"from `{os.path.basename(m.item.path)}`")
    if m.item.doc:
        out.append(m.item.doc)
    return "\n\n".join(out)


def fn_header(item) -> str:
    """`fn name(params) -> ret`, on one line."""
    if isinstance(item, A.FnItem) and item.header_pos != (0, 0):
        text = item.src(item.header_pos)
    else:
        lines = item.text.strip().splitlines()
        text = next((ln for ln in lines if ln.startswith("fn")), lines[0] if lines else "")
    return " ".join(text.split()).rstrip(":")


def fn_markdown(item, here: str = "") -> str:
    out = [_code(fn_header(item))]
    if item.path != here:
        out.append(f"from `{os.path.basename(item.path)}`")
    if item.doc:
        out.append(item.doc)
    return "\n\n".join(out)


def builtin_markdown(name: str) -> Optional[str]:
    b = BUILTINS.get(name)
    if b is None:
        return None
    return _code(b.signature) + "\n\n" + b.doc


# ---------------------------------------------------------------- the item under the cursor
def _item_hover(a, item, rel: int):
    env = a.env
    here = a.path
    if item.name and inside(item.name_pos, rel):
        text = _definition_markdown(a, item)
        return (text, item.name_pos) if text else None
    if isinstance(item, A.ImportItem) and inside(item.target_pos, rel):
        target = os.path.normpath(os.path.join(os.path.dirname(item.path), item.target))
        return (f"imports `{target}`", item.target_pos)
    res = fn_result(a, item)
    nodes = chain(item, rel)
    for k in range(len(nodes) - 1, -1, -1):
        node = nodes[k]
        parent = nodes[k - 1] if k > 0 else None
        found = _node_hover(a, env, here, item, res, node, parent, rel)
        if found is not None:
            return found
    return None


def _definition_markdown(a, item) -> Optional[str]:
    env, here = a.env, a.path
    if isinstance(item, A.DimItem):
        return dim_markdown(env, item.name, here)
    if isinstance(item, A.ModelItem):
        return model_markdown(env, item.name, here)
    if isinstance(item, A.FnItem):
        return fn_markdown(item, here)
    if isinstance(item, A.BrokenItem):
        return f"`{item.declared_kind} {item.name}` (it has a syntax error)"
    return None


def _local_markdown(env, name: str, t) -> str:
    return _code(f"{name}: {render_type(env, t)}")


def _local_type(res, pos):
    if res is None:
        return None
    for n, p, t in res.locals_at:
        if p == pos:
            return t
    return None


def _static_note(env, res, name: str, pos) -> str:
    """For a compile-time local bound at `pos` (a loop index, or a local bound to a
    compile-time value): its value, per layer where it varies (LANGUAGE.md §4-5)."""
    if res is None:
        return ""
    binding = _static_binding(res, pos)
    if binding is None:
        return ""

    def dim_value(n):
        d = env.dim(n)
        v = d.evaluate(env.dims.values) if d is not None else None
        return int(v) if v is not None and v.denominator == 1 else None
    for loop, count in res.loops:
        if loop.pos[0] <= pos[0] <= loop.pos[1]:
            n = count.evaluate(env.dims.values)
            if n is None or n.denominator != 1 or not 0 < n <= MAX_LAYERS_SHOWN:
                return ""
            if isinstance(binding, A.For):
                return f"\n\ncompile-time value: the layer's index, `0` … `{int(n) - 1}`"
            values = loop_values(res, loop, int(n), dim_value, pos)
            return _per_layer(name, values)
    if isinstance(binding, A.Assign):  # before any loop: one value
        v = static_value(binding.value, _names_before(res, binding, dim_value), dim_value)
        return f"\n\ncompile-time value: `{name} = {_shown(v)}`" if v is not None else ""
    return ""


MAX_LAYERS_SHOWN = 4096  # a hover lists the layers of a stack up to this many


def _static_binding(res, pos):
    """The For (index) or Assign that binds a compile-time local at pos, else None."""
    for s in A.walk_stmts(res.item.body):
        if isinstance(s, A.For) and s.index is not None and s.index_pos == pos:
            return s
        if isinstance(s, A.Assign) and s.target_pos == pos and id(s.value) in res.static:
            return s
    return None


def _names_before(res, stop, dim_value) -> dict:
    names: dict = {}
    for s in res.item.body:
        if s is stop:
            break
        if isinstance(s, A.Assign):
            if id(s.value) in res.static:
                names[s.target] = static_value(s.value, names, dim_value)
            else:
                names.pop(s.target, None)
    return names


def _shown(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _per_layer(name: str, values: list) -> str:
    """`name` per layer: one value, or each value with the layers that have it."""
    if not values or any(v is None for v in values):
        return ""
    groups: dict = {}
    for i, v in enumerate(values):
        groups.setdefault(_shown(v), []).append(i)
    if len(groups) == 1:
        return f"\n\ncompile-time value: `{name} = {next(iter(groups))}` in every layer"
    lines = [f"- `{v}` in layer{'s' if len(ls) > 1 else ''} {_ranges(ls)}" for v, ls in groups.items()]
    return f"\n\n`{name}` per layer:\n\n" + "\n".join(lines)


def _ranges(ls: list) -> str:
    """0, 1, 2, 3, 5 -> `0–3, 5`."""
    parts, start = [], ls[0]
    for a, b in zip(ls, ls[1:] + [None]):
        if b != a + 1:
            parts.append(str(start) if start == a else f"{start}–{a}")
            start = b
    return ", ".join(parts)


def _node_hover(a, env, here, item, res, node, parent, rel):
    types = res.types if res is not None else {}
    if isinstance(node, A.Param) and inside(node.name_pos, rel):
        t = _local_type(res, node.name_pos)
        if t is None:
            sig = env.sig(item.name)
            p = next((p for p in sig.params if p.node is node), None) if sig and sig.item is item else None
            t = p.type if p else None
        return _local_markdown(env, node.name, t), node.name_pos
    if isinstance(node, A.Field) and inside(node.name_pos, rel):
        m = env.models.get(item.name)
        fi = m.fields.get(node.name) if m is not None and m.item is item else None
        return _code(f"{item.name}.{node.name}: {render_type(env, fi.type if fi else None)}"), node.name_pos
    if isinstance(node, A.Assign) and inside(node.target_pos, rel):
        return _local_markdown(env, node.target, _local_type(res, node.target_pos)) + \
            _static_note(env, res, node.target, node.target_pos), node.target_pos
    if isinstance(node, A.TupleAssign):
        for name, pos in node.targets:
            if inside(pos, rel):
                return _local_markdown(env, name, _local_type(res, pos)), pos
    if isinstance(node, A.For) and inside(node.var_pos, rel):
        return _local_markdown(env, node.var, _local_type(res, node.var_pos)), node.var_pos
    if isinstance(node, A.For) and node.index is not None and inside(node.index_pos, rel):
        return _local_markdown(env, node.index, _local_type(res, node.index_pos)) + \
            _static_note(env, res, node.index, node.index_pos), node.index_pos
    if isinstance(node, A.Arg) and node.name and rel <= node.pos[0] + len(node.name):
        pos = (node.pos[0], node.pos[0] + len(node.name))
        if isinstance(parent, A.Call) and isinstance(parent.func, A.Name):
            b = BUILTINS.get(parent.func.id)
            if b is not None:
                return f"argument `{node.name}` of\n\n" + builtin_markdown(b.name), pos
            sig = env.sig(parent.func.id)
            if sig is not None:
                p = next((p for p in sig.params if p.name == node.name), None)
                if p is not None:
                    return _code(f"{node.name}: {render_type(env, p.type)}") + \
                        f"\n\nparameter of `{sig.name}`", pos
        return None
    if isinstance(node, A.FieldRead):
        if inside(node.name_pos, rel):
            ot = types.get(id(node.obj))
            t = types.get(id(node))
            if isinstance(ot, ModelT):
                return _code(f"{ot.name}.{node.name}: {render_type(env, t)}"), node.name_pos
            return (_code(render_type(env, t)), node.name_pos) if t is not None else None
        t = types.get(id(node))
        return (_code(render_type(env, t)), node.pos) if t is not None else None
    if isinstance(node, A.Name):
        return _name_hover(a, env, here, res, node, parent, types)
    if isinstance(node, (A.SName, A.PName)):
        text = dim_markdown(env, node.name, here)
        if text is None and res is not None and node.name in res.svars:
            size = res.svars[node.name]
            shown = env.dims.render(size)
            text = f"size variable `{node.name}`" + (f", here `{shown}`" if shown != node.name else "")
        if text is None and isinstance(node, A.PName):
            text = f"axis `{node.name}`"
        return (text, node.pos) if text else None
    if isinstance(node, A.NamedTypeExpr):
        text = model_markdown(env, node.name, here)
        if text is None and (node.name in DTYPE_NAMES or node.name == "Index"):
            text = f"dtype `{node.name}`"
        return (text, node.pos) if text else None
    if isinstance(node, A.DtypeExpr):
        text = model_markdown(env, node.name, here) or f"dtype `{node.name}`"
        return text, node.pos
    if isinstance(node, A.Decorator):
        return decorator_markdown(item, node) + f"\n\n[Serving engines]({doc_url('E3301').split('#')[0]})", node.pos
    if isinstance(node, (A.Call, A.Binop, A.Unop, A.Number, A.Const, A.Mask, A.TupleExpr, A.String)):
        t = types.get(id(node))
        if t is not None:
            return _code(render_type(env, t)), node.pos
    return None


def _rope_rotation(a, call: A.Call) -> str:
    """What a rope call rotates by, as it writes it: its scaling (and keywords), its
    rotated features."""
    args = {x.name: x.value for x in call.args if x.name}

    def shown(node):
        if isinstance(node, A.Name):
            return node.id
        v = static_value(node, {}, lambda name: None)
        return "…" if v is None else rope_scaling.number_text(v)
    kind = args["scaling"].value if isinstance(args.get("scaling"), A.String) else "none"
    values = {k: shown(v) for k, v in args.items() if k in rope_scaling.KEYWORDS}
    out = f"scaling: `{rope_scaling.describe(kind, values)}`"
    if "rotary_dims" in args:
        out += f"; rotates the first `{shown(args['rotary_dims'])}` features of each head"
    return out


def _call_named(e, name: str) -> bool:
    return isinstance(e, A.Call) and isinstance(e.func, A.Name) and e.func.id == name


def _arg(call: A.Call, name: str, position: int):
    for k, x in enumerate(call.args):
        if x.name == name or (x.name is None and k == position):
            return x.value
    return None


def _over_name(call: A.Call):
    over = _arg(call, "over", -1)
    return over.id if isinstance(over, A.Name) else None


def _mixture_note(env, res, call: A.Call) -> str:
    """A `topk` that routes a mixture of experts, as one: E experts, K per token, the
    routing (check/mixture_routing.py's rule, on what the function writes around it)."""
    e_name, k_node = _over_name(call), _arg(call, "k", 1)
    if e_name is None or not isinstance(k_node, A.Name):
        return ""
    scores = _arg(call, "x", 0)
    softmax_e = _call_named(scores, "softmax") and _over_name(scores) == e_name
    lin = _arg(scores, "x", 0) if softmax_e else scores
    router = _call_named(lin, "linear") and isinstance(_arg(lin, "W", 1), A.FieldRead)
    bias = router and _arg(lin, "b", 2) is not None
    values = next((s.targets[0][0] for s in A.walk_stmts(res.item.body)
                   if isinstance(s, A.TupleAssign) and s.value is call and s.targets), None)
    k_name = k_node.id
    softmax_k = renorm = False
    for st in A.walk_stmts(res.item.body):
        for x in (A.walk_expr(st.value) if isinstance(getattr(st, "value", None), A.Node) else ()):
            if _call_named(x, "softmax") and _over_name(x) == k_name and \
                    isinstance(_arg(x, "x", 0), A.Name) and _arg(x, "x", 0).id == values:
                softmax_k = True
            if isinstance(x, A.Binop) and x.op == "/" and isinstance(x.left, A.Name) and x.left.id == values \
                    and _call_named(x.right, "sum") and _over_name(x.right) == k_name:
                renorm = True
    key = routing(RoutingFacts(router, softmax_e, bias, softmax_k, renorm))

    def shown(n: str) -> str:
        d = env.dim(n)
        v = d.evaluate(env.dims.values) if d is not None else None
        return f"`{n}`" + (f" = {int(v)}" if v is not None and v.denominator == 1 else "")
    return describe(shown(e_name), shown(k_name), key)


def decorator_markdown(item, d: A.Decorator) -> str:
    """What a decorator does, as the one rule (targets.py) says."""
    targets = decorator_targets(d)
    if targets is None:
        return f"`@{d.name}`: no decorator ShapeScript knows; it does not export the function (`@export` does)"
    if isinstance(item, A.FnItem) and export_decorator(item) is not d:
        return "`@export`: a second `@export` changes nothing; the function's first one names its targets"
    known = [t for t in TARGETS if t in targets]
    if not known:
        return "`@export`: exported for no target: none of its names is a target (E0212)"
    every = " (a bare `@export` is every target)" if not d.args else ""
    return f"`@export`: exported for {', '.join(known)}{every}"


def _name_hover(a, env, here, res, node: A.Name, parent, types):
    name = node.id
    if isinstance(parent, A.Call) and parent.func is node:
        text = builtin_markdown(name)
        if text is None:
            it = a.visible.get(name)
            text = fn_markdown(it, here) if isinstance(it, (A.FnItem, A.BrokenItem)) else None
        if text is None:
            return None
        t = types.get(id(parent))
        if t is not None and not is_unknown(t):
            text += f"\n\nhere: `{render_type(env, t)}`"
        if name == "rope" and name in BUILTINS:
            text += "\n\n" + _rope_rotation(a, parent)
        if name == "topk" and name in BUILTINS and res is not None:
            note = _mixture_note(env, res, parent)
            if note:
                text += "\n\n" + note
        return text, node.pos
    t = types.get(id(node))
    b = binding_of(res, name, node.pos[0])
    if b is not None:
        return _local_markdown(env, name, t if t is not None else b[2]) + _static_note(env, res, name, b[1]), node.pos
    text = dim_markdown(env, name, here)
    if text is None and res is not None and name in res.svars:
        text = f"size variable `{name}`"
    if text is None:
        text = model_markdown(env, name, here)
    if text is None and name in DTYPE_NAMES:
        text = f"dtype `{name}`"
    if text is None and t is not None and not is_unknown(t):
        text = _local_markdown(env, name, t)
    return (text, node.pos) if text else None


