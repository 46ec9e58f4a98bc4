"""E3304: which axes are token axes, followed through the whole program.

Every value carries, per axis, the set of the exported signature's token axes it *is*
(`Val.tags`), and whether it comes out of an operation already reported (`tainted`: one
diagnostic per chain). The flow follows assignments, loops over stacks (to a fixpoint),
patterns (a renamed axis keeps its tags) and calls: a callee is analysed once per
calling context, the tags and taint of its arguments, and its result flows back.
Elementwise operations align axes by name, as the language does, so an axis of a result
takes the tags of the operands' axes of that name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.patterns import flat_names
from ..check.sizes import Size
from ..check.types import ScalarT, TensorT, TupleT
from ..syntax import ast as A
from . import fixes, messages as M
from .program import op_pos, placed_error

NONE = frozenset()
REDUCERS = ("sum", "mean", "max", "min", "logsumexp", "argmax", "softmax", "log_softmax",
            "rms_norm", "layer_norm")
PATTERNS = ("rearrange", "split", "repeat", "einsum")
SDPA = "scaled_dot_product_attention"


@dataclass(frozen=True)
class Val:
    tags: tuple = ()  # per axis: frozenset of exported token axis names
    tainted: bool = False
    items: Optional[tuple] = None  # a tuple's values


CLEAN = Val()


@dataclass(frozen=True)
class Origin:
    """How a local axis name came to stand for a token axis."""

    kind: str  # "param" or "rename"
    line: int
    callee: str = ""


class Ctx:
    """One function analysed in one calling context."""

    def __init__(self, res, env, names: dict, stack: tuple):
        self.res = res
        self.item = res.item
        self.env = env
        self.names = names  # size variable -> (tags, Origin or None)
        self.stack = stack  # ((caller item, call node), ...) from the exported function
        self.ret = CLEAN

    def size_tags(self, size: Size) -> frozenset:
        out = NONE
        for s in size.symbols():
            if s in self.names:
                out = out | self.names[s][0]
        return out

    def key(self, name: str) -> Size:
        d = self.env.dim(name)
        return d if d is not None else Size.sym(name)

    def render(self, size: Size) -> str:
        return self.env.dims.render(size)


@dataclass
class Site:
    """A scaled_dot_product_attention reached in some context (for E3305)."""

    ctx: Ctx
    call: A.Call
    types: tuple  # q, k, v
    vals: tuple
    args: tuple  # q, k, v Arg nodes


def tag_at(v: Val, i: int) -> frozenset:
    try:
        return v.tags[i]
    except IndexError:
        return NONE


def _fit(v: Val, t) -> Val:
    """v with one tag per axis of t."""
    if isinstance(t, TensorT):
        if len(v.tags) != len(t.axes):
            return Val(tuple(NONE for _ in t.axes), v.tainted)
        return v
    if isinstance(t, TupleT):
        return v
    return Val((), v.tainted) if v.tags else v


def _join(a: Optional[Val], b: Val) -> Val:
    if a is None or a == b:
        return b
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        return Val(items=tuple(_join(x, y) for x, y in zip(a.items, b.items)), tainted=a.tainted or b.tainted)
    if len(a.tags) == len(b.tags):
        return Val(tuple(x | y for x, y in zip(a.tags, b.tags)), a.tainted or b.tainted)
    return Val(b.tags, a.tainted or b.tainted)


class TokenFlow:
    def __init__(self, prog, si, skip: set = frozenset()):
        self.prog = prog
        self.si = si
        self.order = (si.b, si.n)
        self.reports: dict = {}  # (id(item), pos) -> Diagnostic
        self.sites: list = []
        self.memo: dict = {}
        self.skip = skip  # ids of operations E3302 already speaks for

    # ------------------------------------------------------------ entry
    def run_exported(self, res, env):
        si = self.si
        names = {si.b: (frozenset((si.b,)), None), si.n: (frozenset((si.n,)), None)}
        ctx = Ctx(res, env, names, ())
        sig = env.sig(res.item.name)
        vals = {}
        for p in sig.params:
            t = p.type
            vals[p.name] = Val(tuple(ctx.size_tags(a.name) for a in t.axes)) if isinstance(t, TensorT) else CLEAN
        self._run(ctx, vals)
        return list(self.reports.values())

    def _run(self, ctx: Ctx, vals: dict) -> Val:
        self.block(ctx, ctx.item.body, vals)
        return ctx.ret

    # ------------------------------------------------------------ statements
    def block(self, ctx, stmts, vals):
        for s in stmts:
            if isinstance(s, A.Assign):
                vals[s.target] = self.expr(ctx, s.value, vals)
            elif isinstance(s, A.TupleAssign):
                v = self.expr(ctx, s.value, vals)
                for k, (name, _) in enumerate(s.targets):
                    vals[name] = v.items[k] if v.items and k < len(v.items) else Val(tainted=v.tainted)
            elif isinstance(s, A.Return):
                ctx.ret = self.expr(ctx, s.value, vals)
            elif isinstance(s, A.For):
                self.expr(ctx, s.iter, vals)
                state = dict(vals)
                for _ in range(4):  # a stack's iterations, to a fixpoint
                    cur = dict(state)
                    cur[s.var] = CLEAN
                    self.block(ctx, s.body, cur)
                    new = dict(state)
                    for k, v in cur.items():
                        new[k] = _join(state.get(k), v)
                    if new == state:
                        break
                    state = new
                vals.clear()
                vals.update(state)

    # ------------------------------------------------------------ expressions
    def expr(self, ctx, e, vals) -> Val:
        t = ctx.res.types.get(id(e))
        return _fit(self._expr(ctx, e, vals, t), t)

    def _expr(self, ctx, e, vals, t) -> Val:
        if isinstance(e, A.Name):
            if e.id in vals:
                return vals[e.id]
            if isinstance(t, ScalarT) and t.size is not None:
                tags = ctx.size_tags(t.size)
                if tags:
                    self.report(ctx, e.pos, tags, e.id, f"the size of `{e.id}` used as a value")
                    return Val(tainted=True)
            return CLEAN
        if isinstance(e, A.Unop):
            return self.expr(ctx, e.operand, vals)
        if isinstance(e, A.Binop):
            lv, rv = self.expr(ctx, e.left, vals), self.expr(ctx, e.right, vals)
            lt, rt = ctx.res.types.get(id(e.left)), ctx.res.types.get(id(e.right))
            tainted = lv.tainted or rv.tainted
            if e.op == "@" and not tainted and isinstance(lt, TensorT) and isinstance(rt, TensorT) and rt.axes:
                tainted = self._contraction(ctx, e, (lt, lv, -1), (rt, rv, -2 if len(rt.axes) > 1 else 0))
            return self.by_name(ctx, t, [(lt, lv), (rt, rv)], tainted)
        if isinstance(e, A.Call):
            return self.call(ctx, e, vals, t)
        if isinstance(e, A.FieldRead):
            self.expr(ctx, e.obj, vals)
            return CLEAN
        if isinstance(e, A.Mask):
            return Val(tuple(ctx.size_tags(ctx.key(a.name)) if isinstance(a, A.SName) else NONE for a in e.axes))
        if isinstance(e, A.TupleExpr):
            items = tuple(self.expr(ctx, x, vals) for x in e.items)
            return Val(items=items, tainted=any(v.tainted for v in items))
        return CLEAN

    def by_name(self, ctx, t, inputs, tainted: bool) -> Val:
        if isinstance(t, TupleT):
            one = self.by_name(ctx, t.items[0], inputs, tainted) if t.items else CLEAN
            return Val(items=tuple(one for _ in t.items), tainted=tainted)
        if not isinstance(t, TensorT):
            return Val(tainted=tainted)
        tags = []
        for ax in t.axes:
            found, hit = NONE, False
            for it, iv in inputs:
                if isinstance(it, TensorT):
                    for j, a in enumerate(it.axes):
                        if a.name == ax.name:
                            found, hit = found | tag_at(iv, j), True
            tags.append(found if hit else ctx.size_tags(ax.name))
        return Val(tuple(tags), tainted)

    # ------------------------------------------------------------ calls
    def call(self, ctx, e: A.Call, vals, t) -> Val:
        info = ctx.res.calls.get(id(e))
        if info is None:
            for a in e.args:
                self.expr(ctx, a.value, vals)
            return CLEAN
        if info.sig is not None:
            return self.user_call(ctx, e, info, vals, t)
        name = info.target
        b = info.builtin
        over = info.arg_map.get("over") if "over" in b.axis_params else None
        argvals = {}
        for a in e.args:
            if a is over or (name == "arange" and a is info.arg_map.get("n")):
                continue
            argvals[id(a)] = self.expr(ctx, a.value, vals)
        types = ctx.res.types
        inputs = [(types.get(id(a.value)), argvals[id(a)]) for a in e.args if id(a) in argvals]
        tainted = any(v.tainted for _, v in inputs)
        arg = lambda p: info.arg_map.get(p)  # noqa: E731
        val = lambda a: argvals.get(id(a), CLEAN) if a is not None else CLEAN  # noqa: E731
        typ = lambda a: types.get(id(a.value)) if a is not None else None  # noqa: E731
        if name == "arange":
            return self._arange(ctx, e, arg("n"), vals, t)
        if name == SDPA:
            self.sites.append(Site(ctx, e, tuple(typ(arg(p)) for p in "qkv"), tuple(val(arg(p)) for p in "qkv"),
                                   tuple(arg(p) for p in "qkv")))
        reported = False
        if not tainted and id(e) not in self.skip:
            if name in REDUCERS:
                reported = self._reduce(ctx, e, name, arg("x"), over, typ, val)
            elif name == "linear" and arg("x") is not None and arg("W") is not None:
                reported = self._contraction(ctx, e, (typ(arg("x")), val(arg("x")), -1),
                                             (typ(arg("W")), val(arg("W")), 1))
            elif name == "matmul" and arg("x") is not None and arg("w") is not None:
                wt = typ(arg("w"))
                reported = self._contraction(ctx, e, (typ(arg("x")), val(arg("x")), -1),
                                             (wt, val(arg("w")), -2 if isinstance(wt, TensorT) and len(wt.axes) > 1 else 0))
            elif name == SDPA:
                reported = self._sdpa(ctx, e, info, typ, val)
            elif name == "concat":
                reported = self._concat(ctx, e, over, inputs)
            elif name == "einsum":
                reported = self._einsum(ctx, e, inputs)
            if name in PATTERNS and not reported:
                reported = self._pattern_check(ctx, e, inputs)
        if name in PATTERNS:
            return self._pattern_result(ctx, e, inputs, t, tainted or reported)
        return self.by_name(ctx, t, inputs, tainted or reported)

    def user_call(self, ctx, e, info, vals, t) -> Val:
        argvals = {id(a): self.expr(ctx, a.value, vals) for a in e.args}
        inputs = [(ctx.res.types.get(id(a.value)), argvals[id(a)]) for a in e.args]
        tainted = any(v.tainted for _, v in inputs)
        sig = info.sig
        callee = self.prog.fn(sig.item)
        cenv = self.prog.env_of(sig.item)
        if callee is None or cenv is None:
            return self.by_name(ctx, t, inputs, tainted)
        line = self.prog.line(ctx.item, e.func.pos)
        names: dict = {}
        params = []
        for p in sig.params:
            a = info.arg_map.get(p.name)
            v = _fit(argvals[id(a)] if a is not None else CLEAN, p.type)
            if isinstance(p.type, TensorT):
                for i, ax in enumerate(p.type.axes):
                    s = ax.size.single_symbol()
                    if s in sig.svars and tag_at(v, i):
                        prev = names.get(s, (NONE, None))[0]
                        names[s] = (prev | tag_at(v, i), Origin("param", line, sig.name))
            params.append((p.name, v))
        key = (id(callee.item), tuple(params))
        ret = self.memo.get(key)
        if ret is None:
            self.memo[key] = Val(tainted=True)  # a guard; recursion is an error already
            cctx = Ctx(callee, cenv, names, ctx.stack + ((ctx.item, e),))
            ret = self._run(cctx, dict(params))
            self.memo[key] = ret
        if isinstance(t, TensorT) and len(ret.tags) == len(t.axes):
            return ret
        return Val(tuple(NONE for _ in t.axes), ret.tainted) if isinstance(t, TensorT) else Val(tainted=ret.tainted)

    # ------------------------------------------------------------ the rules
    def _reduce(self, ctx, e, name, xarg, over, typ, val) -> bool:
        if xarg is None:
            return False
        xt, xv = typ(xarg), val(xarg)
        if not isinstance(xt, TensorT):
            return False
        if over is None:
            axes = [(i, ctx.render(a.name)) for i, a in enumerate(xt.axes)]
        else:
            nodes = over.value.items if isinstance(over.value, A.TupleExpr) else [over.value]
            axes = []
            for n in nodes:
                if isinstance(n, A.Name):
                    i = xt.index_of(ctx.key(n.id))
                    if i >= 0:
                        axes.append((i, n.id))
        for i, local in axes:
            tags = tag_at(xv, i)
            if tags:
                fix = fixes.hand_attention(self.prog, ctx, e) if name == "softmax" else None
                self.report(ctx, op_pos(e), tags, local, f"`{name}` over `{local}`", fix)
                return True
        return False

    def _contraction(self, ctx, e, left, right) -> bool:
        for t, v, i in (left, right):
            if isinstance(t, TensorT) and t.axes:
                tags = tag_at(v, i)
                if tags:
                    local = ctx.render(t.axes[i].name)
                    self.report(ctx, op_pos(e), tags, local, f"contracts `{local}`")
                    return True
        return False

    def _sdpa(self, ctx, e, info, typ, val) -> bool:
        qa, ka = info.arg_map.get("q"), info.arg_map.get("k")
        qt, kt = typ(qa), typ(ka)
        if not (isinstance(qt, TensorT) and isinstance(kt, TensorT) and len(qt.axes) >= 2 and len(kt.axes) >= 2):
            return False
        tags = tag_at(val(qa), -2) or tag_at(val(ka), -2)
        if not tags:
            return False
        x = qt.axes[-2].name
        xs = ctx.render(x)
        mask = info.arg_map.get("attn_mask")
        if mask is not None and _is_causal(ctx, mask.value, x):
            return False
        if mask is None:
            label = "this attention has no mask"
        elif isinstance(mask.value, A.Name):
            label = f"the mask must be written in the call, as `causal[{xs} {xs}]`"
        else:
            label = f"this mask isn't `causal[{xs} {xs}]`"
        self.report(ctx, op_pos(e), tags, xs, label, fixes.causal_mask(ctx, e, info, xs), plain=True)
        return True

    def _einsum(self, ctx, e, inputs) -> bool:
        if self._pattern_inputs(e, inputs) is None:
            return False
        nt = self._name_tags(ctx, e, inputs)
        kept = {x.name for x in flat_names(e.pattern.output.items)}
        for side in e.pattern.inputs:
            for x in flat_names(side.items):
                if x.name not in kept and nt.get(x.name):
                    self.report(ctx, op_pos(e), nt[x.name], x.name, f"sums over `{x.name}`")
                    return True
        return False

    def _concat(self, ctx, e, over, inputs) -> bool:
        if over is None or not isinstance(over.value, A.Name) or not inputs:
            return False
        t0, v0 = inputs[0]
        if not isinstance(t0, TensorT):
            return False
        i = t0.index_of(ctx.key(over.value.id))
        tags = tag_at(v0, i) if i >= 0 else NONE
        if tags:
            self.report(ctx, op_pos(e), tags, over.value.id, f"concatenates along `{over.value.id}`")
            return True
        return False

    def _arange(self, ctx, e, narg, vals, t) -> Val:
        node = narg.value if narg is not None else None
        tags = NONE
        if isinstance(node, A.Name) and node.id not in vals:
            st = ctx.res.types.get(id(node))
            if isinstance(st, ScalarT) and st.size is not None:
                tags = ctx.size_tags(st.size)
        elif node is not None:
            self.expr(ctx, node, vals)
        if tags and id(e) not in self.skip:
            self.report(ctx, op_pos(e), tags, node.id, f"positions computed from `{node.id}`")
        return Val(tuple(tags for _ in t.axes) if isinstance(t, TensorT) else (), bool(tags))

    # ------------------------------------------------------------ patterns
    def _pattern_inputs(self, e, inputs):
        return inputs if e.pattern is not None and len(e.pattern.inputs) == len(inputs) else None

    def _name_tags(self, ctx, e, inputs) -> dict:
        m = ctx.res.patterns.get(id(e))
        out = {}
        if m is None:
            return out
        for p, (i, pos) in m.origin.items():
            if i >= len(inputs):
                continue
            tags = tag_at(inputs[i][1], pos)
            item = e.pattern.inputs[i].items[pos] if pos < len(e.pattern.inputs[i].items) else None
            known = ctx.names.get(p)
            if isinstance(item, A.PGroup) and known is not None and known[0] and tags:
                tags = known[0]
            out[p] = tags
            # a rename keeps the tags: remember where, for the labels
            it = inputs[i][0]
            renamed = isinstance(it, TensorT) and pos < len(it.axes) and it.axes[pos].name != ctx.key(p)
            if tags and renamed and (known is None or not known[0]):
                pn = next((x for x in flat_names([item]) if x.name == p), None) if item is not None else None
                line = self.prog.line(ctx.item, pn.pos if pn is not None else e.pattern.pos)
                ctx.names[p] = (tags, Origin("rename", line))
        return out

    def _pattern_check(self, ctx, e, inputs) -> bool:
        if self._pattern_inputs(e, inputs) is None:
            return False
        nt = self._name_tags(ctx, e, inputs)
        for i, side in enumerate(e.pattern.inputs):
            for pos, item in enumerate(side.items):
                if not isinstance(item, A.PGroup):
                    continue
                tags = tag_at(inputs[i][1], pos)
                if not tags:
                    continue
                parts = [ctx.names.get(x.name, (NONE, None))[0] if isinstance(x, A.PName) else NONE
                         for x in item.items]
                if all(parts) and _disjoint(parts) and frozenset().union(*parts) == tags:
                    continue
                it = inputs[i][0]
                local = ctx.render(it.axes[pos].name) if isinstance(it, TensorT) else "?"
                self.report(ctx, op_pos(e), tags, local, f"splits `{local}` into {_text(item)}")
                return True
        for item in e.pattern.output.items:
            if not isinstance(item, A.PGroup):
                continue
            parts = [(x, nt.get(x.name, ctx.size_tags(ctx.key(x.name))) if isinstance(x, A.PName) else NONE)
                     for x in item.items]
            tok = next(((x, tg) for x, tg in parts if tg), None)
            if tok is None:
                continue
            tagsets = [tg for _, tg in parts]
            if all(tagsets) and _disjoint(tagsets):
                continue
            other = next((x for x, tg in parts if x is not tok[0] and (not tg or tg & tok[1])), None)
            local = tok[0].name
            otext = _text(other) if other is not None else "another axis"
            self.report(ctx, op_pos(e), tok[1], local, f"groups `{local}` with `{otext}`")
            return True
        return False

    def _pattern_result(self, ctx, e, inputs, t, tainted) -> Val:
        if self._pattern_inputs(e, inputs) is None or ctx.res.patterns.get(id(e)) is None:
            return self.by_name(ctx, t, inputs, tainted)
        nt = self._name_tags(ctx, e, inputs)

        def tags_of(x):
            if isinstance(x, A.PName):
                return nt.get(x.name, ctx.size_tags(ctx.key(x.name)))
            if isinstance(x, A.PGroup):
                return frozenset().union(*[tags_of(y) for y in x.items]) if x.items else NONE
            return NONE

        one = Val(tuple(tags_of(x) for x in e.pattern.output.items), tainted)
        if isinstance(t, TupleT):
            return Val(items=tuple(one for _ in t.items), tainted=tainted)
        return one

    # ------------------------------------------------------------ reporting
    def axis_text(self, tags) -> str:
        names = [n for n in self.order if n in tags]
        return " ".join(names) if names else "?"

    def local_token_name(self, ctx, tag: str) -> str:
        """What the function where an operation is calls a token axis."""
        for name, (tags, origin) in ctx.names.items():
            if tags == frozenset((tag,)) and (origin is None or origin.kind == "param"):
                return name
        return tag

    def report(self, ctx, pos, tags, local, kind_label, fix=None, plain=False):
        key = (id(ctx.item), tuple(pos))
        if key in self.reports:
            return
        exported = self.axis_text(tags)
        label = kind_label
        if not plain and local != exported:
            origin = ctx.names.get(local, (None, None))[1]
            if origin is not None and origin.kind == "rename":
                label = f"`{local}` is `{exported}`, renamed at line {origin.line}"
            elif origin is not None:
                label = f"`{local}` is `{exported}`, passed to `{origin.callee}` at line {origin.line}"
            else:
                label = f"{kind_label}, which is `{exported}`"
        d = placed_error(self.prog, ctx.item, pos, ctx.stack, "E3304", M.e3304(exported), label)
        d.help(M.e3304_help(self.local_token_name(ctx, self.si.n)))
        if fix is not None:
            d.fix(fix)
        self.reports[key] = d


def _is_causal(ctx, node, x: Size) -> bool:
    return (isinstance(node, A.Mask) and isinstance(node.obj, A.Name) and node.obj.id == "causal"
            and len(node.axes) == 2
            and all(isinstance(a, A.SName) and ctx.key(a.name) == x for a in node.axes))


def _disjoint(sets) -> bool:
    seen = set()
    for s in sets:
        if seen & s:
            return False
        seen |= s
    return True


def _text(item) -> str:
    if isinstance(item, A.PName):
        return item.name
    if isinstance(item, A.PInt):
        return str(item.value)
    return "(" + " ".join(_text(x) for x in item.items) + ")"
