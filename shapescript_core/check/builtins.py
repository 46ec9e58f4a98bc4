"""The one builtin table: each builtin's parameters, shape rule, docs and lowering.

It drives the checker (`rule`), hover and signature help (`signature`, `doc`),
completion (the names) and PyTorch code generation (`lower`, a function of
`builtin_lowering.py` that codegen calls with itself as the `Emitter`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..syntax import ast as A
from . import builtin_lowering as L, ops, rope_scaling
from .codes import e0206, e0301, e0304, e0401, e0402, e0404, e0412
from .keyword_rules import rotary_dims_ok, scalar_keyword_ok, scaling_ok
from .patterns import check_pattern_call
from .sizes import Size
from .static import value as static_value
from .types import (BOOL, F32, I64, UNKNOWN, Axis, DType, DTypeValue, ScalarT, TensorT, TupleT,
                    is_unknown)

REQUIRED = object()


@dataclass
class Builtin:
    name: str
    params: list  # [(name, default or REQUIRED)]
    rule: Callable
    doc: str
    torch: str = ""  # the PyTorch call, as hover and the docs show it
    lower: Optional[Callable] = None  # the lowering (builtin_lowering.py): lower(emitter, node) -> code
    variadic: bool = False  # takes any number of tensors before the keywords
    axis_params: tuple = ("over",)  # parameters that take axis names, not values
    pattern: bool = False
    keyword_only: tuple = ()  # parameters a call names (`scaling=`): never bound by position

    @property
    def positional(self) -> list:
        """The names of the parameters a call may pass by position, in order."""
        return [n for n, _ in self.params if n not in self.keyword_only]

    @property
    def parts(self) -> list:
        """[(parameter, text)] as the signature writes them, for hover, completion and
        signature help alike: "*" stands for a variadic builtin's tensors, "->" for the
        axis pattern."""
        parts = []
        if self.variadic:
            parts.append(("*", "a, b, …"))
        for n, d in self.params:
            if d is REQUIRED and n in self.keyword_only:  # named where used: `k=K`
                parts.append((n, f"{n}={n.upper()}"))
            elif d is REQUIRED:
                parts.append((n, f"{n}=A" if n in self.axis_params else n))
            elif d is None and n in self.keyword_only:  # named where used, never defaulted
                parts.append((n, f"{n}=…"))
            else:
                parts.append((n, f"{n}={_default_text(d)}"))
        if self.pattern:
            parts.append(("->", "La, Lb, … -> R" if self.variadic else "L -> R"))
        return parts

    @property
    def signature(self) -> str:
        return signature_label(self.name, self.parts)[0]


def signature_label(name: str, parts: list, ret: str = "") -> tuple[str, list]:
    """`name(p1, p2, …) ret` and the (start, end) of each part in it. A pattern after a
    variadic builtin's tensors follows a `:`, as calls write it: `einsum(a, b: … -> R)`."""
    label = name + "("
    ranges = []
    for k, (pname, text) in enumerate(parts):
        if k:
            label += ": " if pname == "->" and parts[k - 1][0] == "*" else ", "
        ranges.append((len(label), len(label) + len(text)))
        label += text
    return label + ")" + ret, ranges


def _default_text(d) -> str:
    if d is None:
        return "None"
    if isinstance(d, str):
        return f'"{d}"'
    return str(d)


class Bound:
    """Arguments of a builtin call bound to its parameters: nodes and types."""

    def __init__(self):
        self.nodes: dict = {}
        self.types: dict = {}
        self.rest: list = []  # variadic (node, type)

    def has(self, name):
        return name in self.nodes

    def t(self, name):
        return self.types.get(name, UNKNOWN)

    def n(self, name):
        return self.nodes.get(name)


# ---------------------------------------------------------------- rules
def _tensor(ck, b: Bound, name: str, allow_scalar=False):
    t = b.t(name)
    if is_unknown(t):
        return None
    if isinstance(t, TensorT) or (allow_scalar and isinstance(t, ScalarT)):
        return t
    ck.add(e0301.not_a_tensor(ck.span(b.n(name).pos), ck.kind_word(t)))
    return None


def _elementwise(ck, call, b: Bound):
    t = b.t("x")
    if isinstance(t, ScalarT):
        return ScalarT("float")
    t = _tensor(ck, b, "x")
    if t is None:
        return UNKNOWN
    if not ops.arithmetic_ok(ck, b.n("x"), t):
        return UNKNOWN
    return t


def _by_name2(ck, call, b: Bound):
    return ops.align(ck, ck.call_name(call), b.n("a"), b.n("b"), b.t("a"), b.t("b"), A.op_pos(call))


def _where(ck, call, b: Bound):
    c = b.t("cond")
    if isinstance(c, TensorT) and c.dtype != BOOL:
        ck.add(e0304.must_be(ck.span(b.n("cond").pos), ops.operand_text(ck, b.n("cond")), "bool", ck.dtype_text(c.dtype),
                             "not a mask"))
        return UNKNOWN
    ab = ops.align(ck, "where", b.n("a"), b.n("b"), b.t("a"), b.t("b"), A.op_pos(call))
    if is_unknown(ab) or is_unknown(c):
        return UNKNOWN
    if isinstance(ab, ScalarT):
        return ab if not isinstance(c, TensorT) else TensorT(c.axes, F32)
    if isinstance(c, TensorT):
        r = ops.broadcast(ck, ab, TensorT(c.axes, ab.dtype), A.op_pos(call))
        return r
    return ab


def _reduce(ck, call, b: Bound, keep=False, arg=False):
    t = _tensor(ck, b, "x")
    if t is None:
        return UNKNOWN
    if ck.call_name(call) not in ("max", "min", "argmax") and not ops.arithmetic_ok(ck, b.n("x"), t):
        return UNKNOWN
    names = ck.over_axes(call, b, t)
    if names is None:
        return UNKNOWN
    if keep:
        return t
    if not names:
        return TensorT((), t.dtype)
    r = ops.reduce_axes(t, names)
    if arg:
        size = t.axes[t.index_of(names[0])].size
        return TensorT(r.axes, DType("Index", size))
    return r


def _norm(ck, call, b: Bound, with_bias=False):
    t = _tensor(ck, b, "x")
    if t is None:
        return UNKNOWN
    names = ck.over_axes(call, b, t)
    if names is None:
        return UNKNOWN
    want = TensorT(tuple(t.axes[t.index_of(n)] for n in names), t.dtype)
    for p in ("w", "b") if with_bias else ("w",):
        w = _tensor(ck, b, p)
        if w is None:
            return UNKNOWN
        if [a.size for a in w.axes] != [a.size for a in want.axes]:
            ck.add(e0401.shape(ck.span(b.n(p).pos), ck.render(want), ck.render(w),
                               f"the {'weight' if p == 'w' else 'bias'} must span the normalized axes"))
            return UNKNOWN
    return t


def _linear(ck, call, b: Bound):
    x, w = _tensor(ck, b, "x"), _tensor(ck, b, "W")
    if x is None or w is None:
        return UNKNOWN
    if len(w.axes) != 2:
        ck.add(e0401.shape(ck.span(b.n("W").pos), "a weight [O I]", ck.render(w), "a weight has 2 axes"))
        return UNKNOWN
    wt = TensorT((w.axes[1], w.axes[0]), w.dtype)  # linear is x @ Wᵀ
    r = ops.matmul(ck, "linear", A.op_pos(call), b.n("x"), b.n("W"), x, wt)
    if is_unknown(r):
        return r
    if b.has("b") and b.n("b") is not None and not isinstance(b.n("b"), A.Const):
        bias = _tensor(ck, b, "b")
        if bias is None:
            return UNKNOWN
        if [a.size for a in bias.axes] != [w.axes[0].size]:
            ck.add(e0401.shape(ck.span(b.n("b").pos), f"[{ck.name(w.axes[0].name)}]", ck.render(bias),
                               "the bias must have the weight's output axis"))
            return UNKNOWN
    return r


def _matmul(ck, call, b: Bound):
    return ops.matmul(ck, "matmul", A.op_pos(call), b.n("x"), b.n("w"), b.t("x"), b.t("w"))


def _embedding(ck, call, b: Bound):
    ids, e = b.t("ids"), _tensor(ck, b, "E")
    if is_unknown(ids) or e is None:
        return UNKNOWN
    if not isinstance(ids, TensorT) or ids.dtype.name != "Index":
        found = ck.dtype_text(ids.dtype) if isinstance(ids, TensorT) else ck.kind_word(ids)
        want = f"Index[{ck.name(e.axes[0].name)}]" if e.axes else "Index[V]"
        ck.add(e0304.must_be(ck.span(b.n("ids").pos), ops.operand_text(ck, b.n("ids")), want, found,
                             "token ids must be an Index tensor"))
        return UNKNOWN
    if len(e.axes) != 2:
        ck.add(e0401.shape(ck.span(b.n("E").pos), "a table [V D]", ck.render(e), "a table has 2 axes"))
        return UNKNOWN
    if ids.dtype.index != e.axes[0].size:
        ck.add(e0401.shape(ck.span(b.n("E").pos), f"[{ck.name(ids.dtype.index)} {ck.name(e.axes[1].name)}]",
                           ck.render(e), f"the ids index {ck.name(ids.dtype.index)} rows"))
        return UNKNOWN
    return TensorT(ids.axes + (e.axes[1],), e.dtype)


def _one_hot(ck, call, b: Bound):
    ids = b.t("ids")
    if is_unknown(ids):
        return UNKNOWN
    if not isinstance(ids, TensorT) or ids.dtype.name != "Index":
        ck.add(e0304.must_be(ck.span(b.n("ids").pos), ops.operand_text(ck, b.n("ids")), "Index[V]", ck.kind_word(ids),
                             "one_hot needs an Index tensor"))
        return UNKNOWN
    v = ids.dtype.index
    return TensorT(ids.axes + (Axis(v, v),), F32)


def _rope(ck, call, b: Bound):
    x, pos = _tensor(ck, b, "x"), _tensor(ck, b, "pos")
    if x is None or pos is None:
        return UNKNOWN
    if not pos.dtype.is_int:
        ck.add(e0304.must_be(ck.span(b.n("pos").pos), ops.operand_text(ck, b.n("pos")), "an integer tensor",
                             ck.dtype_text(pos.dtype), "positions are integers"))
        return UNKNOWN
    if len(x.axes) < 2:
        ck.add(e0401.shape(ck.span(b.n("x").pos), "[… n Dh]", ck.render(x), "rope needs a position and a head axis"))
        return UNKNOWN
    if not set(pos.names()) <= set(x.names()):
        ck.add(e0402.cannot_combine(ck.span(b.n("pos").pos), ck.render(pos), ck.render(x), e0402.NO_SUBSET,
                                    "the positions' axes must be axes of the tensor"))
        return UNKNOWN
    style = b.n("style")
    if isinstance(style, A.String) and style.value not in ("half", "interleaved"):
        ck.add(e0304.must_be(ck.span(style.pos), "style", '"half" or "interleaved"', f'"{style.value}"', "unknown style"))
        return UNKNOWN
    if b.has("rotary_dims") and not rotary_dims_ok(ck, b, x):
        return UNKNOWN
    if not scaling_ok(ck, call, b):
        return UNKNOWN
    return x


def _softcap(ck, call, b: Bound):
    """`softcap(x, c)` (v0.3): c·tanh(x/c), elementwise; c a positive compile-time number."""
    t = _elementwise(ck, call, b)
    if is_unknown(t) or not scalar_keyword_ok(ck, b, "c", "a positive compile-time number", positive=True):
        return UNKNOWN
    return t


def _along_one_axis(ck, call, b: Bound, tensor: str, other: str, verb: str) -> tuple:
    """(the tensor, [its `over` axis]) of topk and take (v0.3), or (None, None) after an
    error (E0404 when `over` names more than one axis)."""
    t = _tensor(ck, b, tensor)
    if t is None or is_unknown(b.t(other)):
        return None, None
    names = ck.over_axes(call, b, t)
    if names is None:
        return None, None
    if len(names) != 1:
        ck.add(e0404.one_axis(ck.span(b.n("over").pos if b.n("over") else A.op_pos(call)), ck.call_name(call), verb))
        return None, None
    return t, names


def _topk(ck, call, b: Bound):
    """`topk(x, k=K, over=A)` (v0.3): `(values, indices)`, x's shape with A replaced by K;
    K a dim, at most A's size; the indices `Index[size of A]`."""
    x, names = _along_one_axis(ck, call, b, "x", "k", "chooses along")
    if x is None or not ops.arithmetic_ok(ck, b.n("x"), x):
        return UNKNOWN
    node, kt = b.n("k"), b.t("k")
    dim = ck.env.dim(node.id) if isinstance(node, A.Name) else None
    if dim is None:
        found = f"`{ck.src(node.pos)}`" if isinstance(kt, ScalarT) else ck.kind_word(kt)
        ck.add(e0304.must_be(ck.span(node.pos), "k", "a dim (`dim K = 2`)", found,
                             "the chosen values' axis is named by a dim"))
        return UNKNOWN
    i = x.index_of(names[0])
    a = x.axes[i]
    kv, av = ck.evaluate(dim), ck.evaluate(a.size)
    if kv is not None and av is not None and kv > av:
        ck.add(e0304.must_be(ck.span(node.pos), "k", f"at most the size of `{ck.name(names[0])}` "
                             f"({ck.size_text(a.size, numeric=True)})", f"{ck.size_text(dim, numeric=True)}",
                             "topk chooses K of the axis' values"))
        return UNKNOWN
    axes = list(x.axes)
    axes[i] = Axis(dim, dim)
    return TupleT((TensorT(tuple(axes), x.dtype), TensorT(tuple(axes), DType("Index", a.size))))


def _take(ck, call, b: Bound):
    """`take(t, idx, over=A)` (v0.3): `[idx's axes…, t's other axes in order]`, idx an
    `Index[size of A]` tensor."""
    t, names = _along_one_axis(ck, call, b, "t", "idx", "gathers along")
    if t is None:
        return UNKNOWN
    a = t.axes[t.index_of(names[0])]
    idx = b.t("idx")
    want = f"Index[{ck.name(a.size)}]"
    if not isinstance(idx, TensorT) or idx.dtype.name != "Index":
        found = ck.dtype_text(idx.dtype) if isinstance(idx, TensorT) else ck.kind_word(idx)
        ck.add(e0304.must_be(ck.span(b.n("idx").pos), ops.operand_text(ck, b.n("idx")), want, found,
                             f"take's indices pick along `{ck.name(names[0])}`"))
        return UNKNOWN
    if idx.dtype.index != a.size:
        ck.add(e0304.must_be(ck.span(b.n("idx").pos), ops.operand_text(ck, b.n("idx")), want,
                             ck.dtype_text(idx.dtype), f"take's indices pick along `{ck.name(names[0])}`"))
        return UNKNOWN
    rest = tuple(ax for j, ax in enumerate(t.axes) if j != t.index_of(names[0]))
    return TensorT(idx.axes + rest, t.dtype)


def _sdpa(ck, call, b: Bound):
    q, k, v = _tensor(ck, b, "q"), _tensor(ck, b, "k"), _tensor(ck, b, "v")
    if q is None or k is None or v is None:
        return UNKNOWN
    for name, t in (("q", q), ("k", k), ("v", v)):
        if len(t.axes) < 3:
            ck.add(e0401.shape(ck.span(b.n(name).pos), "[… H n Dh]", ck.render(t),
                               "attention needs heads, positions and features"))
            return UNKNOWN
    if q.axes[-1].size != k.axes[-1].size:
        ck.add(e0401.shape(ck.span(b.n("k").pos), f"keys with {ck.name(q.axes[-1].name)} features", ck.render(k),
                           f"queries are {ck.render(q)}"))
        return UNKNOWN
    if k.axes[-2].size != v.axes[-2].size or k.axes[-3].size != v.axes[-3].size:
        ck.add(e0401.shape(ck.span(b.n("v").pos), f"values like the keys {ck.render(k)}", ck.render(v),
                           "keys and values must have the same heads and positions"))
        return UNKNOWN
    hq, hk = q.axes[-3].size, k.axes[-3].size
    if hq != hk:
        ratio = hq / hk
        num = ck.evaluate(ratio)
        if (num is not None and num.denominator != 1) or (num is None and not _is_integral(ratio)):
            ck.add(e0401.shape(ck.span(b.n("k").pos), f"key heads that divide the {ck.size_text(hq)} query heads",
                               f"{ck.size_text(hk)}", f"keys are {ck.render(k)}"))
            return UNKNOWN
    qb, kb = q.axes[:-3], k.axes[:-3]
    if [a.name for a in qb] != [a.name for a in kb] or [a.name for a in kb] != [a.name for a in v.axes[:-3]]:
        ck.add(e0402.cannot_combine(ck.span(A.op_pos(call)), ck.render(q), ck.render(k), "their batch axes differ",
                                    "queries, keys and values need the same leading axes"))
        return UNKNOWN
    if b.has("attn_mask"):
        m = b.t("attn_mask")
        if isinstance(m, TensorT):
            if m.dtype != BOOL:
                ck.add(e0304.must_be(ck.span(b.n("attn_mask").pos), ops.operand_text(ck, b.n("attn_mask")), "bool",
                                     ck.dtype_text(m.dtype), "a mask is bool"))
                return UNKNOWN
            scores = TensorT(qb + (q.axes[-3], q.axes[-2], k.axes[-2]), q.dtype)
            if not ops.subset(m, scores):
                ck.add(e0412.mask_mismatch(ck.span(b.n("attn_mask").pos), ck.render(m), ck.render(scores),
                                           "the mask's axes must be the scores' axes"))
                return UNKNOWN
    if b.has("window") and not _window_ok(ck, call, b):
        return UNKNOWN
    if b.has("softcap") and not scalar_keyword_ok(ck, b, "softcap", "a positive compile-time number", positive=True):
        return UNKNOWN
    if b.has("sinks") and not _sinks_ok(ck, b, q):
        return UNKNOWN
    return TensorT(q.axes[:-1] + (v.axes[-1],), q.dtype)


def _sinks_ok(ck, b: Bound, q: TensorT) -> bool:
    """`sinks=Z` (v0.3, gpt-oss): `Z: [Hq]`, one more logit per query head."""
    z = _tensor(ck, b, "sinks")
    if z is None:
        return False
    hq = q.axes[-3]
    if len(z.axes) != 1 or z.axes[0].size != hq.size:
        ck.add(e0401.shape(ck.span(b.n("sinks").pos), f"[{ck.name(hq.name)}]", ck.render(z),
                           "one sink logit per query head"))
        return False
    return True


def _window_ok(ck, call, b: Bound) -> bool:
    """`window=W` (v0.2): beside `attn_mask=causal[…]`, W a positive compile-time integer."""
    if not b.has("attn_mask"):
        ck.add(e0206.missing_argument(ck.span(A.op_pos(call)), "scaled_dot_product_attention", "attn_mask")).help(
            e0206.WINDOW_NEEDS_MASK)
        return False
    mask = b.n("attn_mask")
    if not isinstance(mask, A.Mask):
        ck.add(e0304.must_be(ck.span(mask.pos), "attn_mask", "`causal[…]` beside `window=`",
                             f"`{ops.operand_text(ck, mask)}`", "a sliding window narrows the causal mask"))
        return False
    node, t = b.n("window"), b.t("window")
    # a number must be an integer; a scalar parameter (`window: []`) takes one at each call,
    # its value checked where the call is compiled
    integer = (isinstance(t, ScalarT) and t.num == "int") or (
        isinstance(t, TensorT) and not t.axes and t.dtype.name != "bool")
    if not integer or not ck.is_static(node):
        found = "a value computed when the model runs" if integer else ck.kind_word(t)
        ck.add(e0304.must_be(ck.span(node.pos), "window", "a positive compile-time integer", found,
                             "the window's width in positions"))
        return False
    v = static_value(node, {}, ck.dim_value)
    if v is not None and v <= 0:
        ck.add(e0304.must_be(ck.span(node.pos), "window", "a positive compile-time integer", str(v),
                             "a window holds at least the query itself"))
        return False
    return True


def _is_integral(s: Size) -> bool:
    return all(c.denominator == 1 and all(e > 0 for _, e in m) for m, c in s.terms)


def _masked_fill(ck, call, b: Bound):
    x, m = _tensor(ck, b, "x"), _tensor(ck, b, "mask")
    if x is None or m is None:
        return UNKNOWN
    if m.dtype != BOOL:
        ck.add(e0304.must_be(ck.span(b.n("mask").pos), ops.operand_text(ck, b.n("mask")), "bool", ck.dtype_text(m.dtype),
                             "a mask is bool"))
        return UNKNOWN
    if not ops.subset(m, x):
        ck.add(e0412.mask_mismatch(ck.span(b.n("mask").pos), ck.render(m), ck.render(x),
                                   "the mask's axes must be axes of the tensor"))
        return UNKNOWN
    return x


def _scale(ck, call, b: Bound):
    return ops.align(ck, "scale", b.n("x"), b.n("s"), b.t("x"), b.t("s"), A.op_pos(call))


def _to(ck, call, b: Bound):
    x, d = _tensor(ck, b, "x"), b.t("dtype")
    if x is None or is_unknown(d):
        return UNKNOWN
    if not isinstance(d, DTypeValue):
        ck.add(e0304.must_be(ck.span(b.n("dtype").pos), ck.src(b.n("dtype").pos), "a dtype", ck.kind_word(d),
                             "write one of f16 bf16 f32 f64 i32 i64 bool"))
        return UNKNOWN
    return TensorT(x.axes, d.dtype)


def _concat(ck, call, b: Bound):
    ts = []
    for node, t in b.rest:
        if is_unknown(t):
            return UNKNOWN
        if not isinstance(t, TensorT):
            ck.add(e0301.not_a_tensor(ck.span(node.pos), ck.kind_word(t)))
            return UNKNOWN
        ts.append(t)
    if len(ts) < 2:
        ck.add(e0206.takes(ck.span(A.op_pos(call)), "concat", e0206.arity_text(2, None, "tensor"), len(ts)))
        return UNKNOWN
    first = ts[0]
    names = ck.over_axes(call, b, first)
    if names is None:
        return UNKNOWN
    if len(names) != 1:
        ck.add(e0404.one_axis(ck.span(b.n("over").pos if b.n("over") else A.op_pos(call)), "concat"))
        return UNKNOWN
    i = first.index_of(names[0])
    total = first.axes[i].size
    for (node, t) in b.rest[1:]:
        j = t.index_of(names[0])
        others_a = [a for a in first.axes if a.name != names[0]]
        others_b = [a for a in t.axes if a.name != names[0]]
        if j < 0 or others_a != others_b:
            ck.add(e0401.shape(ck.span(node.pos), f"{ck.render(first)} but for `{ck.name(names[0])}`", ck.render(t),
                               "other axes must be equal"))
            return UNKNOWN
        total = total + t.axes[j].size
    axes = list(first.axes)
    axes[i] = Axis(total, total)
    return TensorT(tuple(axes), first.dtype)


def _arange(ck, call, b: Bound):
    n = b.t("n")
    if is_unknown(n):
        return UNKNOWN
    if isinstance(n, ScalarT) and n.size is not None:
        ax = ck.axis_of_value(b.n("n"), n.size)
        return TensorT((ax,), I64)
    ck.add(e0304.must_be(ck.span(b.n("n").pos), ck.src(b.n("n").pos), "a size (a dim or a size variable)",
                         ck.kind_word(n), "`arange` counts up to a size"))
    return UNKNOWN


def _pattern_rule(ck, call, b: Bound):
    name = ck.call_name(call)
    if name == "einsum":
        tensors = b.rest
    else:
        tensors = [(b.n("x"), b.t("x"))] if b.has("x") else []
    return check_pattern_call(ck, call, name, tensors)


# elementwise builtins: name -> (doc, lowering)
_UNARY = {
    "exp": ("e to the power x", "torch.exp({x})"),
    "log": ("natural logarithm", "torch.log({x})"),
    "sqrt": ("square root", "torch.sqrt({x})"),
    "rsqrt": ("1 / sqrt(x)", "torch.rsqrt({x})"),
    "tanh": ("hyperbolic tangent", "torch.tanh({x})"),
    "sigmoid": ("1 / (1 + exp(-x))", "torch.sigmoid({x})"),
    "relu": ("max(x, 0)", "nn.functional.relu({x})"),
    "gelu": ("GELU (erf form)", "nn.functional.gelu({x})"),
    "gelu_tanh": ("GELU (tanh approximation)", "nn.functional.gelu({x}, approximate='tanh')"),
    "silu": ("x * sigmoid(x)", "nn.functional.silu({x})"),
    "abs": ("absolute value", "torch.abs({x})"),
    "neg": ("-x", "-({x})"),
    "square": ("x * x", "torch.square({x})"),
    "sin": ("sine", "torch.sin({x})"),
    "cos": ("cosine", "torch.cos({x})"),
}


def _build_table() -> dict:
    t: dict = {}

    def add(b: Builtin):
        t[b.name] = b

    for n, (d, lowering) in _UNARY.items():
        add(Builtin(n, [("x", REQUIRED)], _elementwise, f"Elementwise {d}; shape and dtype kept.", lowering,
                    lower=L.elementwise(n, lowering)))
    add(Builtin("maximum", [("a", REQUIRED), ("b", REQUIRED)], _by_name2,
                "Elementwise maximum, aligned by axis name.", "torch.maximum({a}, {b})",
                lower=L.minmax("maximum", "min")))
    add(Builtin("minimum", [("a", REQUIRED), ("b", REQUIRED)], _by_name2,
                "Elementwise minimum, aligned by axis name.", "torch.minimum({a}, {b})",
                lower=L.minmax("minimum", "max")))
    add(Builtin("where", [("cond", REQUIRED), ("a", REQUIRED), ("b", REQUIRED)], _where,
                "`a` where `cond` is true, else `b`; aligned by axis name.", "torch.where({cond}, {a}, {b})",
                lower=L.where))
    for n in ("sum", "mean", "max", "min", "logsumexp"):
        add(Builtin(n, [("x", REQUIRED), ("over", None)], _reduce,
                    f"`{n}` over the axes `over` (all axes without it); removes them.", f"torch.{n}",
                    lower=L.reduction(n)))
    add(Builtin("argmax", [("x", REQUIRED), ("over", REQUIRED)], lambda ck, c, b: _reduce(ck, c, b, arg=True),
                "Index of the largest value along `over`; removes it, dtype Index[size of over].", "torch.argmax",
                lower=L.method_over("argmax")))
    for n in ("softmax", "log_softmax"):
        add(Builtin(n, [("x", REQUIRED), ("over", REQUIRED)], lambda ck, c, b: _reduce(ck, c, b, keep=True),
                    f"`{n}` along `over`; shape kept.", f"torch.{n}",
                    lower=L.method_over(n)))
    add(Builtin("rms_norm", [("x", REQUIRED), ("w", REQUIRED), ("over", REQUIRED), ("eps", 1e-6)], _norm,
                "RMS normalization over `over`, scaled by `w: [over]`; shape kept.", "rms_norm",
                lower=L.rms_norm))
    add(Builtin("layer_norm", [("x", REQUIRED), ("w", REQUIRED), ("b", REQUIRED), ("over", REQUIRED), ("eps", 1e-5)],
                lambda ck, c, b: _norm(ck, c, b, with_bias=True),
                "Layer normalization over `over`, with weight and bias `[over]`; shape kept.", "F.layer_norm",
                lower=L.layer_norm))
    add(Builtin("linear", [("x", REQUIRED), ("W", REQUIRED), ("b", None)], _linear,
                "`x: [… I]`, `W: [O I]`, `b: [O]` → `[… O]` (PyTorch's layout).", "F.linear({x}, {W}, {b})",
                lower=L.linear))
    add(Builtin("matmul", [("x", REQUIRED), ("w", REQUIRED)], _matmul,
                "`[… K] @ [K N]` → `[… N]`; batch axes of both by name.", "torch.matmul({x}, {w})",
                lower=L.matmul))
    add(Builtin("embedding", [("ids", REQUIRED), ("E", REQUIRED)], _embedding,
                "`ids: [… ] Index[V]`, `E: [V D]` → `[… D]`: the rows of E.", "F.embedding({ids}, {E})",
                lower=L.embedding))
    add(Builtin("one_hot", [("ids", REQUIRED)], _one_hot, "`[…] Index[V]` → `[… V] f32`.", "F.one_hot",
                lower=L.one_hot))
    add(Builtin("rope", [("x", REQUIRED), ("pos", REQUIRED), ("theta", 10000.0), ("style", "half"),
                         ("rotary_dims", None), ("scaling", "none")] + [(k, None) for k in rope_scaling.KEYWORDS],
                _rope,
                "Rotary position embedding: `x: [… n Dh]`, integer `pos` with axes ⊆ x's; style \"half\" "
                "(rotate-half, as Hugging Face Llama) or \"interleaved\" (pairs, as GPT-J). "
                "`rotary_dims=R` rotates the first R features of each head and passes the rest through "
                "(GPT-NeoX, Phi). `scaling=` \"linear\" (`factor`), \"llama3\" (`factor`, `low_freq_factor`, "
                "`high_freq_factor`, `original_positions`) or \"yarn\" (`factor`, `original_positions`, "
                "`beta_fast`, `beta_slow`, `attention_factor`): transformers' rope_type of the same name, "
                "every keyword required.", "rope",
                keyword_only=("rotary_dims", "scaling") + rope_scaling.KEYWORDS, lower=L.rope))
    add(Builtin("scaled_dot_product_attention",
                [("q", REQUIRED), ("k", REQUIRED), ("v", REQUIRED), ("attn_mask", None), ("scale", None),
                 ("window", None), ("softcap", None), ("sinks", None)], _sdpa,
                "`q: [… Hq n Dh]`, `k: [… Hk m Dh]`, `v: [… Hk m Dv]` → `[… Hq n Dv]`; Hk may divide Hq "
                "(grouped-query); `attn_mask` a bool mask over n and m; default scale 1/sqrt(Dh); "
                "`window=W` with `attn_mask=causal[n n]`: a query at i sees the keys at i-W < j <= i; "
                "`softcap=C`: each score s becomes C·tanh(s/C) after scaling, before the mask (Gemma 2); "
                "`sinks=Z`, `Z: [Hq]`: one more logit per head whose probability is dropped (gpt-oss).",
                "F.scaled_dot_product_attention", keyword_only=("softcap", "sinks"),
                lower=L.scaled_dot_product_attention))
    add(Builtin("softcap", [("x", REQUIRED), ("c", REQUIRED)], _softcap,
                "`c·tanh(x/c)`, elementwise; shape and dtype kept; c a positive compile-time number "
                "(Gemma 2's final logits).", "{c} * torch.tanh({x} / {c})", lower=L.softcap))
    add(Builtin("topk", [("x", REQUIRED), ("k", REQUIRED), ("over", REQUIRED)], _topk,
                "`(values, indices)`: the K largest values along `over` (largest first; equal values: the "
                "lower index first), x's shape with `over` replaced by K; indices `Index[size of over]`. "
                "K a dim.", "torch.topk", keyword_only=("k",), lower=L.topk))
    add(Builtin("take", [("t", REQUIRED), ("idx", REQUIRED), ("over", REQUIRED)], _take,
                "Gathers along `over`: `t: [… A R…]`, `idx: [I…] Index[A]` → `[I… R…]` (t's other axes "
                "in order).", "t[idx]", lower=L.take))
    add(Builtin("masked_fill", [("x", REQUIRED), ("mask", REQUIRED), ("value", REQUIRED)], _masked_fill,
                "`value` where `mask` (bool, axes ⊆ x's) is true.", "{x}.masked_fill({mask}, {value})",
                lower=L.masked_fill))
    add(Builtin("scale", [("x", REQUIRED), ("s", REQUIRED)], _scale, "`x * s`.", "({x}) * ({s})", lower=L.scale))
    add(Builtin("to", [("x", REQUIRED), ("dtype", REQUIRED)], _to, "Cast to a dtype.", "{x}.to({dtype})", lower=L.to))
    add(Builtin("concat", [("over", REQUIRED)], _concat, "Join tensors along `over`; sizes add.", "torch.cat",
                variadic=True, lower=L.concat))
    add(Builtin("arange", [("n", REQUIRED)], _arange, "`[n] i64`: 0 … n-1.", "torch.arange", lower=L.arange))
    for n, d, lower in (("rearrange", "Reorder and regroup axes: `b n (H Dh) -> b H n Dh`.", L.rearrange),
                        ("split", "Split a group that starts with a count: `b n (3 H Dh) -> b H n Dh` gives 3 "
                                  "tensors.", L.split),
                        ("repeat", "Repeat along dims with a value: `b Hkv n Dh -> b (Hkv G) n Dh`.", L.repeat)):
        add(Builtin(n, [("x", REQUIRED)], _pattern_rule, d, "einops." + n, pattern=True, lower=lower))
    add(Builtin("einsum", [], _pattern_rule,
                "`einsum(a, b: La, Lb -> R)`: names shared between inputs are matched; names absent from R "
                "are summed over.", "torch.einsum", variadic=True, pattern=True,
                lower=L.einsum))
    return t


BUILTINS: dict[str, Builtin] = _build_table()
