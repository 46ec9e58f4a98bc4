"""E3305: every attention a serving engine caches has one shape, [b H n Dh]; at least one."""
from __future__ import annotations

from ..check.types import TensorT
from ..diagnostics import error
from . import fixes, serving_messages as M
from ..syntax.ast import op_pos
from .places import placed_error
from .token_axis_values import tag_at


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
        return [error("E3305", M.e3305_none(item.name), item.span(item.name_pos),
                      "no scaled_dot_product_attention is reached from here").help(M.E3305_HELP)]
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
        out.append(d.help(M.E3305_HELP))
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
        f = fixes.repeat_kv(prog, site)
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
