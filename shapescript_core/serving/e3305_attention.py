"""E3305: every attention a serving engine caches has one shape, [b H n Dh], and there is
at least one. Its check (over the attention sites E3304's flow found, e3304_token_axes.py),
its messages and help, and its fix (keys and values repeated to the queries' heads)."""
from __future__ import annotations

from ..check.types import TensorT
from ..diagnostics import Edit, Fix, error
from ..syntax import ast as A
from ..syntax.ast import op_pos
from . import edits as ED
from .e3304_values import tag_at
from .places import file_span, placed_error, stmt_of


def no_attention(fn: str) -> str:
    return f"`{fn}` has no attention"


HELP = "Repeat keys and values with fewer heads to H before attention."


def _is_dim(size, env) -> bool:
    syms = size.symbols()
    return bool(syms) and all(env.dims.is_dim(s) for s in syms)


def _shape_ok(site, t, v, si) -> bool:
    """[b H n Dh]: the token axes at 0 and 2, dims at 1 and 3."""
    env = site.ctx.env
    return (isinstance(t, TensorT) and len(t.axes) == 4
            and tag_at(v, 0) == frozenset((si.b,)) and tag_at(v, 2) == frozenset((si.n,))
            and _is_dim(site.ctx.resolve(t.axes[1].size), env) and _is_dim(site.ctx.resolve(t.axes[3].size), env))


def _heads(site, t: TensorT) -> tuple:
    """H and Dh, in the exported function's terms."""
    return (site.ctx.resolve(t.axes[1].size), site.ctx.resolve(t.axes[3].size))


def check_attention(prog, flow, res, si, e3304_reported: bool) -> list:
    item = res.item
    if not flow.sites:
        if e3304_reported:
            return []
        return [error("E3305", no_attention(item.name), item.span(item.name_pos),
                      "no scaled_dot_product_attention is reached from here").help(HELP)]
    out, seen, ref = [], set(), None
    for site in flow.sites:
        if id(site.call) in seen:
            continue
        d = _judge(prog, site, si, ref)
        if d is None:
            if ref is None:
                ref = site
            continue
        seen.add(id(site.call))
        out.append(d.help(HELP))
    return out


def _judge(prog, site, si, ref):
    ctx = site.ctx
    render = ctx.env.render
    (qt, kt, vt), (qv, kv, vv) = site.types, site.vals
    pos = op_pos(site.call)
    want = f"[{si.b} H {si.n} Dh]"
    if not _shape_ok(site, qt, qv, si):
        shown = render(qt) if isinstance(qt, TensorT) else "not a tensor"
        return placed_error(prog, ctx.item, pos, ctx.stack, "E3305",
                            f"this attention's queries are {shown}, but a serving engine's attention takes "
                            f"{want}", "queries, keys and values must be " + want)
    bad = [(w, t) for w, t, v in (("keys", kt, kv), ("values", vt, vv))
           if not (_shape_ok(site, t, v, si) and _heads(site, t) == _heads(site, qt))]
    if bad:
        if len(bad) == 2 and isinstance(kt, TensorT) and isinstance(vt, TensorT) and \
                [a.size for a in kt.axes] == [a.size for a in vt.axes]:
            what, shown = "keys and values", render(kt)
        else:
            what, t = bad[0]
            shown = render(t) if isinstance(t, TensorT) else "not a tensor"
        label = f"{what}: {shown}; queries: {render(qt)}"
        d = placed_error(prog, ctx.item, pos, ctx.stack, "E3305",
                         f"this attention's {what} are {shown}, but its queries are {render(qt)}", label)
        f = repeat_kv(prog, site)
        if f is not None:
            d.fix(f)
        return d
    if ref is not None and _heads(ref, ref.types[0]) != _heads(site, qt):
        rq = ref.ctx.env.render(ref.types[0])
        d = placed_error(prog, ctx.item, pos, ctx.stack, "E3305",
                         f"this attention's queries are {render(qt)}, but the first attention's are {rq}",
                         f"queries are {render(qt)}")
        if prog.local(ref.ctx.item):
            d.label(ref.ctx.item.span(op_pos(ref.call)), f"the first attention: queries {rq}")
        return d
    return None


# ---------------------------------------------------------------- the fix
def repeat_kv(prog, site) -> Fix | None:
    ctx = site.ctx
    item, env = ctx.item, ctx.env
    qt, kt, vt = site.types
    qa, ka, va = site.args
    if not all(isinstance(t, TensorT) and len(t.axes) == 4 for t in (qt, kt, vt)):
        return None
    if [a.size for a in kt.axes] != [a.size for a in vt.axes]:
        return None
    if any(qt.axes[i].size != kt.axes[i].size for i in (0, 2, 3)) or qt.axes[1].size == kt.axes[1].size:
        return None
    if not (isinstance(ka.value, A.Name) and isinstance(va.value, A.Name)):
        return None
    heads, kv_heads = qt.axes[1].size, kt.axes[1].size
    if not all(env.dims.is_dim(s) for s in heads.symbols() | kv_heads.symbols()):
        return None
    ratio = heads / kv_heads
    value = ratio.evaluate(env.dims.values)
    if value is not None and (value.denominator != 1 or value <= 1):
        return None
    h_name, kv_name = env.dims.render(heads), env.dims.render(kv_heads)
    axes = [env.dims.render(a.name) for a in kt.axes]
    if not all(ED.is_ident(s) for s in axes + [h_name, kv_name]):
        return None
    found = stmt_of(item.body, site.call.pos)
    if found is None:
        return None
    stmt, body = found
    names = [ka.value.id] + ([va.value.id] if va.value.id != ka.value.id else [])
    for n in names:
        if not _defined_before(item, body, stmt, n):
            return None
        if any(u.pos[0] > stmt.pos[1] for u in ED.name_uses(item, n)):
            return None
    text = ED.file_text(prog, item)
    edits = []
    g_name = env.dims.name_of(ratio)
    if g_name is None:
        g_name = _fresh_dim_name(prog, text, env)
        decl = _declare_dim(prog, item, env, g_name, f"{h_name} / {kv_name}", (h_name, kv_name))
        if decl is None:
            return None
        edits.append(decl)
    start = item.offset + stmt.pos[0]
    indent = ED.indent_at(text, start)
    left = " ".join(axes)
    right = " ".join(f"({kv_name} {g_name})" if i == 1 else s for i, s in enumerate(axes))
    lines = "".join(f"{indent}{n} = {n} |> repeat({left} -> {right})\n" for n in names)
    edits.append(Edit(file_span(item.path, ED.line_start(text, start), ED.line_start(text, start)), lines))
    return Fix.safe(f"Repeat keys and values to {h_name} heads", *edits)


def _defined_before(item, body, stmt, name: str) -> bool:
    idx = body.index(stmt)
    for s in body[:idx]:
        if isinstance(s, A.Assign) and s.target == name:
            return True
        if isinstance(s, A.TupleAssign) and any(n == name for n, _ in s.targets):
            return True
    return body is item.body and any(p.name == name for p in item.params)


def _fresh_dim_name(prog, text: str, env) -> str:
    for cand in ["G"] + [f"G{i}" for i in range(2, 20)]:
        if not ED.used_word(text, cand) and not env.dims.is_dim(cand):
            return cand
    return "Grp"


def _declare_dim(prog, item, env, name: str, value: str, after: tuple):
    """An insertion of `dim name = value`, after the latest of the dims it uses in item's file."""
    f = prog.db.file(item.path)
    if f is None:
        return None
    dims = [it for it in f.items if isinstance(it, A.DimItem)]
    anchors = [it for it in dims if it.name in after]
    anchor = max(anchors, key=lambda it: it.offset) if anchors else (dims[-1] if dims else None)
    text = f.text
    if anchor is None:
        at = 0
        first = ""
    else:
        at = ED.line_end(text, anchor.offset + anchor.pos[1] - 1) if anchor.pos[1] > 0 else anchor.offset
        first = text[anchor.offset:ED.line_end(text, anchor.offset)]
    eq = first.find("=")
    width = max(len(name), eq - len("dim ") - 1) if first.startswith("dim ") and eq > 0 else len(name)
    return Edit(file_span(item.path, at, at), f"dim {name.ljust(width)} = {value}\n")
