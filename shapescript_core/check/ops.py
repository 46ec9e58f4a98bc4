"""Shape rules shared by operators and builtins: alignment by name, contraction."""
from __future__ import annotations

from collections import Counter

from .codes import e0301, e0302, e0303, e0401, e0402, e0403
from .types import BOOL, UNKNOWN, ScalarT, TensorT, Type, is_unknown


def operand_text(ck, node) -> str:
    t = ck.src(node.pos)
    return t if len(t) <= 24 and "\n" not in t else "the operand"


def arithmetic_ok(ck, node, t: Type, what: str = "arithmetic") -> bool:
    """Index and bool tensors take no arithmetic (E0303)."""
    if isinstance(t, TensorT) and t.dtype.name in ("Index", "bool"):
        holds = "indices" if t.dtype.name == "Index" else "booleans"
        ck.add(e0303.takes_no(ck.span(node.pos), operand_text(ck, node), holds, what,
                              f"this is {ck.render(t, dtype=True)}"))
        return False
    return True


def align(ck, op: str, lnode, rnode, lt: Type, rt: Type, pos) -> Type:
    """Combine two operands by axis name (§3.2); the result takes the larger's axes."""
    if is_unknown(lt) or is_unknown(rt):
        return UNKNOWN
    if isinstance(lt, ScalarT) and isinstance(rt, ScalarT):
        return ScalarT("float" if "float" in (lt.num, rt.num) else lt.num)
    for t, n in ((lt, lnode), (rt, rnode)):
        if not isinstance(t, (TensorT, ScalarT)):
            ck.add(e0301.not_a_tensor(ck.span(n.pos), ck.kind_word(t)))
            return UNKNOWN
    if isinstance(lt, ScalarT):
        return rt
    if isinstance(rt, ScalarT):
        return lt
    if lt.dtype != rt.dtype and lt.dtype.is_float and rt.dtype.is_float:
        ck.add(e0302.mixes(ck.span(pos), op, lt.dtype.name, rt.dtype.name, f"{lt.dtype.name} and {rt.dtype.name}")).help(
            e0302.cast_help(lt.dtype.name))
        return UNKNOWN
    return broadcast(ck, lt, rt, pos)


def subset(a: TensorT, b: TensorT) -> bool:
    """Every axis name of a is an axis name of b, counted with repeats."""
    ca, cb = Counter(a.names()), Counter(b.names())
    return all(cb[n] >= k for n, k in ca.items())


def broadcast(ck, lt: TensorT, rt: TensorT, pos):
    if subset(lt, rt):
        big, small = rt, lt
    elif subset(rt, lt):
        big, small = lt, rt
    else:
        ck.add(e0402.cannot_combine(ck.span(pos), ck.render(lt), ck.render(rt), e0402.NO_SUBSET,
                                    "these shapes don't align by name")).help(e0402.SUBSET_HELP)
        return UNKNOWN
    for a in small.axes:
        b = big.axes[big.index_of(a.name)]
        if a.size != b.size:
            ck.add(e0402.cannot_combine(ck.span(pos), ck.render(lt), ck.render(rt), f"axis `{ck.name(a.name)}` has two sizes",
                                        "these shapes don't align"))
            return UNKNOWN
    dtype = big.dtype if big.dtype.is_float or not small.dtype.is_float else small.dtype
    return TensorT(big.axes, dtype)


def matmul(ck, opname: str, pos, lnode, rnode, lt: Type, rt: Type) -> Type:
    """`[… K] @ [K N]` → `[… N]`; batch axes of both by name."""
    if is_unknown(lt) or is_unknown(rt):
        return UNKNOWN
    for t, n in ((lt, lnode), (rt, rnode)):
        if not isinstance(t, TensorT):
            ck.add(e0301.not_a_tensor(ck.span(n.pos), ck.kind_word(t)))
            return UNKNOWN
        if not arithmetic_ok(ck, n, t, "contraction"):
            return UNKNOWN
        if not t.axes:
            ck.add(e0401.shape(ck.span(n.pos), "a tensor with axes", ck.render(t), "a scalar"))
            return UNKNOWN
    k = lt.axes[-1]
    if len(rt.axes) == 1:
        kr, out, rbatch = rt.axes[0], [], []
    else:
        kr, out, rbatch = rt.axes[-2], [rt.axes[-1]], list(rt.axes[:-2])
    if k.size != kr.size:
        ck.add(e0403.contracts(ck.span(pos), opname, ck.name(k.name), ck.name(kr.name),
                               f"{ck.size_text(k.size)} against {ck.size_text(kr.size)}"))
        return UNKNOWN
    if lt.dtype != rt.dtype and lt.dtype.is_float and rt.dtype.is_float:
        ck.add(e0302.mixes(ck.span(pos), opname, lt.dtype.name, rt.dtype.name, "dtypes differ"))
        return UNKNOWN
    lbatch = list(lt.axes[:-1])
    batch = lbatch
    if rbatch:
        bt = broadcast(ck, TensorT(tuple(lbatch), lt.dtype), TensorT(tuple(rbatch), lt.dtype), pos)
        if is_unknown(bt):
            return UNKNOWN
        batch = list(bt.axes)
    return TensorT(tuple(batch + out), lt.dtype)


def reduce_axes(t: TensorT, names) -> TensorT:
    return TensorT(tuple(a for a in t.axes if a.name not in names), t.dtype)


def as_bool(t: TensorT) -> TensorT:
    return TensorT(t.axes, BOOL)
