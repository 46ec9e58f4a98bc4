"""The canonical size algebra (LANGUAGE.md §3.1)."""
from fractions import Fraction

from shapescript_core.check.sizes import Size

from support import codes

D, H, Hkv = Size.sym("D"), Size.sym("H"), Size.sym("Hkv")
Dh, G = D / H, H / Hkv


def test_products_of_derived_dims_are_their_base_names():
    assert H * Dh == D
    assert Hkv * G == H
    assert Size.const(3) * H * Dh == Size.const(3) * D


def test_two_base_symbols_never_align_even_when_equal_in_value():
    F = Size.sym("F")
    assert D != F
    assert D.evaluate({"D": 64}) == F.evaluate({"F": 64})


def test_rendering():
    assert str(Size.const(3) * D) == "3*D"
    assert str(D / H) == "D/H"
    assert str(D + Size.const(1)) == "1+D"
    assert str(Size.const(4)) == "4"


def test_exact_division_and_values():
    assert (D / H).evaluate({"D": 768, "H": 12}) == 64
    assert (D / H).evaluate({"D": 768, "H": 10}) == Fraction(384, 5)
    assert (D / H).evaluate({"D": 768}) is None


def test_substitution():
    n, m = Size.sym("n"), Size.sym("m")
    assert (Size.const(2) * n).subst({"n": m}) == Size.const(2) * m
    assert (H * Dh).subst({"H": Size.const(4)}) == D


def test_division_by_a_sum_is_exact_only_for_multiples():
    s = D + Size.const(1)
    assert (s * Size.const(2)) / s == Size.const(2)
    assert D / s != D


def test_checker_uses_canonical_names():
    src = """dim D = 64
dim H = 4
dim Dh = D / H
dim Hkv = 2
dim G = H / Hkv

fn f(x: [b H*Dh], y: [b Hkv*G]) -> [b D]:
    return x

fn g(x: [b D]) -> [b H*Dh]:
    return f(x, x |> rearrange(b (H Dh) -> b H Dh) |> sum(over=Dh))
"""
    assert codes(src) == []


def test_equal_values_do_not_make_equal_axes():
    src = """dim D = 64
dim F = 64

fn f(x: [b D]) -> [b F]:
    return x
"""
    assert codes(src) == ["E0409"]


def test_dims_inexact_division_cycle_and_nonpositive():
    src = """dim D = 768
dim H = 10
dim Dh = D / H
dim A = B + 1
dim B = A * 2
dim Z = D - 768
"""
    assert codes(src) == ["E0208"] * 4


def test_dim_without_value_is_a_symbol():
    src = """dim V
dim D = 8

model M:
    e: [V D]

fn f(m: M, ids: [n] Index[V]) -> [n D]:
    return embedding(ids, m.e)
"""
    assert codes(src) == []
