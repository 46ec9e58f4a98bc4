"""The rules of v0.3's scalar keywords (LANGUAGE.md §6, §6.1): a compile-time number where
one is due, rope's `rotary_dims=`, and `scaling=` with its keywords (check/rope_scaling.py's
table), each error at the keyword. The builtin table's rules (builtins.py) call them."""
from __future__ import annotations

from ..syntax import ast as A
from . import rope_scaling
from .codes import e0206, e0304
from .static import value as static_value
from .types import ScalarT, TensorT


def rotary_dims_ok(ck, b, x: TensorT) -> bool:
    """`rotary_dims=R` (v0.3): an even compile-time integer, 0 < R <= Dh."""
    node = b.n("rotary_dims")
    width = ck.evaluate(x.axes[-1].size)
    shown = ck.size_text(x.axes[-1].size)
    most = f", at most {shown}" + (f" ({width})" if shown != str(width) else "") if width is not None else ""
    want = f"an even compile-time integer{most}"
    if not scalar_keyword_ok(ck, b, "rotary_dims", want, integer=True):
        return False
    v = static_value(node, {}, ck.dim_value)
    if v is None:
        return True
    if v <= 0 or v % 2 or (width is not None and v > width):
        why = ("rope rotates pairs of features" if v > 0 and v % 2 else
               "a head has no more features to rotate" if v > 0 else "rope rotates at least one pair")
        ck.add(e0304.must_be(ck.span(node.pos), "rotary_dims", want, str(v), why))
        return False
    return True


def scaling_ok(ck, call, b) -> bool:
    """`scaling=` and its keywords (v0.3, LANGUAGE.md §6.1): a scaling of the table, each of
    its keywords given (no defaults), none of another's."""
    node = b.n("scaling")
    kind = "none"
    if node is not None:
        if not isinstance(node, A.String) or node.value not in rope_scaling.SCALINGS:
            found = f'"{node.value}"' if isinstance(node, A.String) else f"`{ck.src(node.pos)}`"
            ck.add(e0304.must_be(ck.span(node.pos), "scaling", _SCALING_CHOICES, found,
                                 "written as a string: how rope's frequencies are scaled"))
            return False
        kind = node.value
    needed = rope_scaling.SCALINGS[kind]
    setting = f'scaling="{kind}"'
    ok = True
    for k in rope_scaling.KEYWORDS:
        if b.has(k) and k not in needed:
            ck.add(e0206.not_with(ck.span(b.n(k).pos), "rope", k, setting)).help(_scaling_help(kind))
            ok = False
    missing = [k for k in needed if not b.has(k)]
    if missing:
        ck.add(e0206.missing_argument(ck.span(A.op_pos(call)), "rope", missing[0])).help(_scaling_help(kind))
        return False
    for k in needed:
        integer = k in rope_scaling.INTEGER_KEYWORDS
        want = "a positive compile-time integer" if integer else "a positive compile-time number"
        ok = scalar_keyword_ok(ck, b, k, want, integer=integer, positive=True) and ok
    if ok and kind == "llama3":
        low, high = (static_value(b.n(k), {}, ck.dim_value) for k in ("low_freq_factor", "high_freq_factor"))
        if low is not None and high is not None and high <= low:
            ck.add(e0304.must_be(ck.span(b.n("high_freq_factor").pos), "high_freq_factor",
                                 f"greater than low_freq_factor ({rope_scaling.number_text(low)})",
                                 rope_scaling.number_text(high), "the wavelengths between the two are blended"))
            ok = False
    return ok


_SCALING_CHOICES = ", ".join(f'"{k}"' for k in list(rope_scaling.SCALINGS)[:-1]) + \
    f' or "{list(rope_scaling.SCALINGS)[-1]}"'


def _scaling_help(kind: str) -> str:
    needed = rope_scaling.SCALINGS[kind]
    if not needed:
        return 'rope without scaling takes none of the scaling keywords'
    return f'scaling="{kind}" takes ' + ", ".join(f"`{k}=`" for k in needed) + ", each required"


def scalar_keyword_ok(ck, b, name: str, want: str, integer: bool = False, positive: bool = False) -> bool:
    """A scalar keyword (v0.3's): a number (an integer where `integer`) the checker can
    compute at compile time (LANGUAGE.md §6: a literal, a dim, a loop index, a scalar
    parameter, arithmetic of these); positive where its value is known and must be."""
    node, t = b.n(name), b.t(name)
    number = (isinstance(t, ScalarT) and (t.num == "int" or not integer)) or (
        isinstance(t, TensorT) and not t.axes and t.dtype.name != "bool" and (t.dtype.is_int or not integer))
    if not number or not ck.is_static(node):
        v = static_value(node, {}, ck.dim_value) if ck.is_static(node) else None
        found = ("a value computed when the model runs" if number else
                 rope_scaling.number_text(v) if isinstance(v, (int, float)) else ck.kind_word(t))
        ck.add(e0304.must_be(ck.span(node.pos), name, want, found, f"`{name}` is fixed when the program compiles"))
        return False
    v = static_value(node, {}, ck.dim_value)
    if positive and v is not None and not v > 0:
        ck.add(e0304.must_be(ck.span(node.pos), name, want, rope_scaling.number_text(v),
                             f"`{name}` must be greater than 0"))
        return False
    return True
