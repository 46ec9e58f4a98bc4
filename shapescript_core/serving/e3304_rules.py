"""E3304, the rules of the token-axis flow (e3304_token_axes.py): the operations it reports,
and how patterns carry token axes. Mixed into TokenFlow, which words the report; the
fixes are the mask's (`TokenFlow.causal_mask`) and hand-written attention's
(e3304_hand_attention.py)."""
from __future__ import annotations

from ..check.patterns import flat_names, item_text
from ..check.sizes import Size
from ..check.types import ScalarT, TensorT, TupleT
from ..syntax import ast as A
from .e3304_hand_attention import hand_attention
from ..syntax.ast import op_pos
from .e3304_values import NONE, Origin, Val, tag_at

REDUCERS = ("sum", "mean", "max", "min", "logsumexp", "argmax", "softmax", "log_softmax",
            "rms_norm", "layer_norm", "topk")
PATTERNS = ("rearrange", "split", "repeat", "einsum")
SDPA = "scaled_dot_product_attention"


class TokenRules:
    """Mixed into TokenFlow: each rule reports through `self.report` and says if it did
    (the mask's fix: `self.causal_mask`)."""

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
                fix = hand_attention(self.prog, ctx, e) if name == "softmax" else None
                what = f"`{name}` over `{local}`" if over is not None else f"`{name}` over every axis"
                self.report(ctx, op_pos(e), tags, local, what, fix, plain=over is None)
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
        self.report(ctx, op_pos(e), tags, xs, label, self.causal_mask(ctx, e, info, xs), plain=True)
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

    def _take(self, ctx, e, over, targ, typ, val) -> bool:
        """`take(t, idx, over=n)` (v0.3) gathers along the token axis: a token reads others."""
        if over is None or targ is None or not isinstance(over.value, A.Name):
            return False
        t = typ(targ)
        i = t.index_of(ctx.key(over.value.id)) if isinstance(t, TensorT) else -1
        tags = tag_at(val(targ), i) if i >= 0 else NONE
        if tags:
            self.report(ctx, op_pos(e), tags, over.value.id, f"gathers along `{over.value.id}`")
            return True
        return False

    def _arange(self, ctx, e, narg, vals, t):
        """A step of the flow (a generator, see e3304_token_axes.py): the positions' value."""
        node = narg.value if narg is not None else None
        tags = NONE
        if isinstance(node, A.Name) and node.id not in vals:
            st = ctx.res.types.get(id(node))
            if isinstance(st, ScalarT) and st.size is not None:
                tags = ctx.size_tags(st.size)
        elif node is not None:
            yield self.expr(ctx, node, vals)
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
                self.report(ctx, op_pos(e), tags, local, f"splits `{local}` into {item_text(item)}")
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
            otext = item_text(other) if other is not None else "another axis"
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
                return frozenset().union(*[tags_of(y) for y in flat_names(x.items)])
            return NONE

        one = Val(tuple(tags_of(x) for x in e.pattern.output.items), tainted)
        if isinstance(t, TupleT):
            return Val(items=tuple(one for _ in t.items), tainted=tainted)
        return one


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

