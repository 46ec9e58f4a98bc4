"""E3304: which axes are token axes, followed through the whole program.

Every value carries, per axis, the set of the exported signature's token axes it *is*
(`Val.tags`), and whether it comes out of an operation already reported (`tainted`: one
diagnostic per chain). The flow follows assignments, loops over stacks (to a fixpoint),
patterns (a renamed axis keeps its tags) and calls: a callee is analysed once per
calling context, the tags and taint of its arguments, and its result flows back.
Elementwise operations align axes by name, as the language does, so an axis of a result
takes the tags of the operands' axes of that name. The rules themselves are in
e3304_rules.py, the values in e3304_values.py, the fix for attention written by hand in
e3304_hand_attention.py; this module words the diagnostic (message, help) and holds the
fix of an attention's mask.

The flow follows the user's program as deep as it goes (calls into calls, expressions in
expressions): its steps are generators driven from an explicit stack (check/trampoline.py),
where a step that needs a sub-result yields the sub-step.
"""
from __future__ import annotations

from ..check.trampoline import run
from ..check.types import ScalarT, TensorT, TupleT
from ..diagnostics import Edit, Fix
from ..syntax import ast as A
from . import edits as ED
from .places import placed_error
from .e3304_rules import PATTERNS, REDUCERS, SDPA, TokenRules
from .e3304_values import CLEAN, NONE, Ctx, Origin, Site, Val, fit, join, tag_at


def message(axis: str) -> str:
    return f"a serving engine can't run this: this works along `{axis}`, which mixes its positions"


def help_text(n: str) -> str:
    return (f"Write attention as scaled_dot_product_attention(q, k, v, attn_mask=causal[{n} {n}]), "
            f"and take positions as a parameter.")


class TokenFlow(TokenRules):
    """The flow from one exported function: its E3304 reports and attention sites."""

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
        run(self._run(ctx, vals))
        return list(self.reports.values())

    def _run(self, ctx: Ctx, vals: dict):
        yield self.block(ctx, ctx.item.body, vals)
        return ctx.ret

    # ------------------------------------------------------------ statements
    def block(self, ctx, stmts, vals):
        for s in stmts:
            if isinstance(s, A.Assign):
                vals[s.target] = yield self.expr(ctx, s.value, vals)
            elif isinstance(s, A.TupleAssign):
                v = yield self.expr(ctx, s.value, vals)
                for k, (name, _) in enumerate(s.targets):
                    vals[name] = v.items[k] if v.items and k < len(v.items) else Val(tainted=v.tainted)
            elif isinstance(s, A.Return):
                ctx.ret = yield self.expr(ctx, s.value, vals)
            elif isinstance(s, A.For):
                yield self.expr(ctx, s.iter, vals)
                state = dict(vals)
                for _ in range(4):  # a stack's iterations, to a fixpoint
                    cur = dict(state)
                    cur[s.var] = CLEAN
                    if s.index is not None:
                        cur[s.index] = CLEAN  # the copy's index: a compile-time integer
                    yield self.block(ctx, s.body, cur)
                    new = dict(state)
                    for k, v in cur.items():
                        new[k] = join(state.get(k), v)
                    if new == state:
                        break
                    state = new
                vals.clear()
                vals.update(state)

    # ------------------------------------------------------------ expressions
    def expr(self, ctx, e, vals):
        t = ctx.res.types.get(id(e))
        return fit((yield from self._expr(ctx, e, vals, t)), t)

    def _expr(self, ctx, e, vals, t):
        if isinstance(e, A.Name):
            if e.id in vals:
                return vals[e.id]
            if isinstance(t, ScalarT) and t.size is not None:
                tags = ctx.size_tags(t.size)
                if tags and id(e) not in self.skip:
                    self.report(ctx, e.pos, tags, e.id, f"the size of `{e.id}` used as a value")
                    return Val(tainted=True)
            return CLEAN
        if isinstance(e, A.Unop):
            return (yield self.expr(ctx, e.operand, vals))
        if isinstance(e, A.Binop):
            lv = yield self.expr(ctx, e.left, vals)
            rv = yield self.expr(ctx, e.right, vals)
            lt, rt = ctx.res.types.get(id(e.left)), ctx.res.types.get(id(e.right))
            tainted = lv.tainted or rv.tainted
            if e.op == "@" and not tainted and id(e) not in self.skip and isinstance(lt, TensorT) and isinstance(rt, TensorT) and rt.axes:
                tainted = self._contraction(ctx, e, (lt, lv, -1), (rt, rv, -2 if len(rt.axes) > 1 else 0))
            return self.by_name(ctx, t, [(lt, lv), (rt, rv)], tainted)
        if isinstance(e, A.Call):
            return (yield from self.call(ctx, e, vals, t))
        if isinstance(e, A.FieldRead):
            yield self.expr(ctx, e.obj, vals)
            return CLEAN
        if isinstance(e, A.Mask):
            return Val(tuple(ctx.size_tags(ctx.key(a.name)) if isinstance(a, A.SName) else NONE for a in e.axes))
        if isinstance(e, A.TupleExpr):
            items = []
            for x in e.items:
                items.append((yield self.expr(ctx, x, vals)))
            items = tuple(items)
            return Val(items=items, tainted=any(v.tainted for v in items))
        if isinstance(e, A.IfExpr):
            # a compile-time choice (E0413 otherwise): some copy of a loop may take either
            # branch, so both are followed (their attentions, their token axes) and joined
            yield self.expr(ctx, e.cond, vals)
            then = yield self.expr(ctx, e.then, vals)
            other = yield self.expr(ctx, e.other, vals)
            return join(then, other)
        return CLEAN

    def by_name(self, ctx, t, inputs, tainted: bool) -> Val:
        widths = []  # a tuple's items take the first item's value, tuples in tuples too
        while isinstance(t, TupleT):
            widths.append(len(t.items))
            t = t.items[0] if t.items else None
        v = self._by_name_one(ctx, t, inputs, tainted)
        for n in reversed(widths):
            v = Val(items=tuple(v for _ in range(n)), tainted=tainted)
        return v

    def _by_name_one(self, ctx, t, inputs, tainted: bool) -> Val:
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
    def call(self, ctx, e: A.Call, vals, t):
        info = ctx.res.calls.get(id(e))
        if info is None:
            for a in e.args:
                yield self.expr(ctx, a.value, vals)
            return CLEAN
        if info.sig is not None:
            return (yield from self.user_call(ctx, e, info, vals, t))
        name = info.target
        b = info.builtin
        over = info.arg_map.get("over") if "over" in b.axis_params else None
        argvals = {}
        for a in e.args:
            if a is over or (name == "arange" and a is info.arg_map.get("n")):
                continue
            argvals[id(a)] = yield self.expr(ctx, a.value, vals)
        types = ctx.res.types
        inputs = [(types.get(id(a.value)), argvals[id(a)]) for a in e.args if id(a) in argvals]
        tainted = any(v.tainted for _, v in inputs)
        arg = lambda p: info.arg_map.get(p)  # noqa: E731
        val = lambda a: argvals.get(id(a), CLEAN) if a is not None else CLEAN  # noqa: E731
        typ = lambda a: types.get(id(a.value)) if a is not None else None  # noqa: E731
        if name == "arange":
            return (yield from self._arange(ctx, e, arg("n"), vals, t))
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
            elif name == "take":
                reported = self._take(ctx, e, over, arg("t"), typ, val)
            elif name == "einsum":
                reported = self._einsum(ctx, e, inputs)
            if name in PATTERNS and not reported:
                reported = self._pattern_check(ctx, e, inputs)
        if name in PATTERNS:
            return self._pattern_result(ctx, e, inputs, t, tainted or reported)
        return self.by_name(ctx, t, inputs, tainted or reported)

    def user_call(self, ctx, e, info, vals, t):
        argvals = {}
        for a in e.args:
            argvals[id(a)] = yield self.expr(ctx, a.value, vals)
        inputs = [(ctx.res.types.get(id(a.value)), argvals[id(a)]) for a in e.args]
        tainted = any(v.tainted for _, v in inputs)
        sig, callee = self.prog.callee(ctx.res, info)
        cenv = self.prog.env_of(callee.item) if callee is not None else None
        if callee is None or cenv is None:
            return self.by_name(ctx, t, inputs, tainted)
        line = self.prog.line(ctx.item, e.func.pos)
        names: dict = {}
        params = []
        for p in sig.params:
            a = info.arg_map.get(p.name)
            v = fit(argvals[id(a)] if a is not None else CLEAN, p.type)
            if isinstance(p.type, TensorT):
                for i, ax in enumerate(p.type.axes):
                    s = ax.size.single_symbol()
                    if s in sig.svars and tag_at(v, i):
                        prev = names.get(s, (NONE, None))[0]
                        names[s] = (prev | tag_at(v, i), Origin("param", line, sig.name))
            params.append((p.name, v))
        sizes = {v: ctx.resolve(ax.size) for v, ax in info.bindings.items()}
        key = (id(callee.item), tuple(params), tuple(sorted(sizes.items(), key=lambda kv: kv[0])))
        ret = self.memo.get(key)
        if ret is None:
            self.memo[key] = Val(tainted=True)  # a guard; recursion is an error already
            cctx = Ctx(callee, cenv, names, ctx.stack + ((ctx.item, e),), sizes)
            ret = yield self._run(cctx, dict(params))
            self.memo[key] = ret
        if isinstance(t, TensorT) and len(ret.tags) == len(t.axes):
            return ret
        return Val(tuple(NONE for _ in t.axes), ret.tainted) if isinstance(t, TensorT) else Val(tainted=ret.tainted)

    # ------------------------------------------------------------ reporting
    def axis_text(self, tags) -> str:
        names = [n for n in self.order if n in tags]
        return " ".join(names) if names else "?"

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
        d = placed_error(self.prog, ctx.item, pos, ctx.stack, "E3304", message(exported), label)
        d.help(help_text(self.si.n))
        if fix is not None:
            d.fix(fix)
        self.reports[key] = d

    # ------------------------------------------------------------ the mask's fix
    def causal_mask(self, ctx, call, info, xs: str) -> Fix | None:
        """`attn_mask=causal[n n]` in the attention's call: the mask replaced (its local
        removed when only the call read it), or added."""
        item = ctx.item
        text = f"causal[{xs} {xs}]"
        mask = info.arg_map.get("attn_mask")
        prog_edits = []
        if mask is not None:
            prog_edits.append(Edit(item.span(mask.value.pos), text))
            if isinstance(mask.value, A.Name):
                defs = ED.assignments(item, mask.value.id)
                if len(defs) == 1 and isinstance(defs[0], A.Assign) and len(ED.name_uses(item, mask.value.id)) == 1:
                    prog_edits += ED.delete_statements(self.prog, item, defs)
        else:
            v = info.arg_map.get("v")
            if v is None or (call.piped and v is call.args[0]):
                return None
            prog_edits.append(Edit.insertion(item.span((v.pos[1], v.pos[1])), f", attn_mask={text}"))
        return Fix.safe("Use the causal mask", *prog_edits)
