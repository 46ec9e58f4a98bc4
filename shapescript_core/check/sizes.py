"""The canonical size algebra (LANGUAGE.md §3.1).

A size is a polynomial with rational coefficients over base symbols (dims declared with
a literal or no value, and size variables), with integer exponents so that `D / H` is a
monomial. Canonical equality is structural: `H*Dh` equals `D` when `Dh = D / H`, and two
different base symbols are never equal, whatever their values.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Optional

Monomial = tuple  # tuple of (symbol, exponent), sorted
_SYMS: dict = {}
_MEMO: dict = {}  # (op, a, b) -> result: sizes are immutable and the same products recur


class Size:
    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict):
        # coefficients are ints where they can be (much faster than Fractions)
        if len(terms) == 1:
            (m, c), = terms.items()
            self.terms = ((m, _int(c)),) if c != 0 else ()
        else:
            self.terms = tuple(sorted((m, _int(c)) for m, c in terms.items() if c != 0))
        self._hash = hash(self.terms)

    # ---- constructors
    @staticmethod
    def const(v) -> "Size":
        return Size({(): Fraction(v)})  # normalized to int when whole

    @staticmethod
    def sym(name: str) -> "Size":
        s = _SYMS.get(name)
        if s is None:
            s = _SYMS[name] = Size({((name, 1),): 1})
        return s

    # ---- structure
    def __eq__(self, other):
        return isinstance(other, Size) and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def is_const(self) -> bool:
        return all(m == () for m, _ in self.terms)

    def const_value(self) -> Optional[Fraction]:
        if not self.terms:
            return Fraction(0)
        if self.is_const():
            return self.terms[0][1]
        return None

    def symbols(self) -> set:
        return {s for m, _ in self.terms for s, _ in m}

    def is_monomial(self) -> bool:
        return len(self.terms) == 1

    def single_symbol(self) -> Optional[str]:
        """The symbol when this size is exactly one base symbol."""
        if len(self.terms) == 1:
            m, c = self.terms[0]
            if c == 1 and len(m) == 1 and m[0][1] == 1:
                return m[0][0]
        return None

    # ---- arithmetic
    def __add__(self, other: "Size") -> "Size":
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return Size(d)

    def __sub__(self, other: "Size") -> "Size":
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) - c
        return Size(d)

    def __mul__(self, other: "Size") -> "Size":
        key = ("*", self, other)
        r = _MEMO.get(key)
        if r is None:
            r = _MEMO[key] = self._mul(other)
        return r

    def __truediv__(self, other: "Size") -> "Size":
        key = ("/", self, other)
        r = _MEMO.get(key)
        if r is None:
            r = _MEMO[key] = self._div(other)
        return r

    def _mul(self, other: "Size") -> "Size":
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = _mono_mul(m1, m2, 1)
                d[m] = d.get(m, 0) + c1 * c2
        return Size(d)

    def _div(self, other: "Size") -> "Size":
        if not other.terms:
            return Size.sym("(/0)")
        if other.is_monomial():
            m2, c2 = other.terms[0]
            return Size({_mono_mul(m1, m2, -1): Fraction(c1) / c2 for m1, c1 in self.terms})
        # division by a sum: exact when self is a constant multiple of other
        if self.terms and len(self.terms) == len(other.terms):
            ratio = Fraction(self.terms[0][1]) / other.terms[0][1]
            if all(m1 == m2 and c1 == ratio * c2 for (m1, c1), (m2, c2) in zip(self.terms, other.terms)):
                return Size.const(ratio)
        return Size.sym(f"({self})/({other})")

    def subst(self, env: Mapping[str, "Size"]) -> "Size":
        """Replace symbols by sizes."""
        if not any(s in env for s in self.symbols()):
            return self
        out = Size({})
        for m, c in self.terms:
            t = Size.const(c)
            for s, e in m:
                base = env.get(s, Size.sym(s))
                if e > 0:
                    for _ in range(e):
                        t = t * base
                else:
                    for _ in range(-e):
                        t = t / base
            out = out + t
        return out

    def evaluate(self, values: Mapping[str, int]) -> Optional[Fraction]:
        """The number this size stands for, when every symbol has a value."""
        total = Fraction(0)
        for m, c in self.terms:
            t = Fraction(c)
            for s, e in m:
                if s not in values:
                    return None
                v = Fraction(values[s])
                if v == 0 and e < 0:
                    return None
                t *= v ** e
            total += t
        return total

    # ---- rendering
    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in self.terms:
            parts.append(_mono_str(m, c))
        s = parts[0]
        for p in parts[1:]:
            s += ("-" + p[1:]) if p.startswith("-") else ("+" + p)
        return s

    def __repr__(self) -> str:
        return f"Size({self})"


def _int(c):
    if type(c) is int:
        return c
    return c.numerator if c.denominator == 1 else c


def _mono_mul(m1, m2, sign) -> Monomial:
    d = dict(m1)
    for s, e in m2:
        d[s] = d.get(s, 0) + sign * e
    return tuple(sorted((s, e) for s, e in d.items() if e != 0))


def _mono_str(m: Monomial, c: Fraction) -> str:
    num = [s if e == 1 else f"{s}**{e}" for s, e in m if e > 0]
    den = [s if e == -1 else f"{s}**{-e}" for s, e in m if e < 0]
    coef_num, coef_den = c.numerator, c.denominator
    pieces = []
    if abs(coef_num) != 1 or not num:
        pieces.append(str(abs(coef_num)))
    pieces += num
    s = "*".join(pieces)
    if coef_den != 1:
        den = [str(coef_den)] + den
    if den:
        s += "/" + ("/".join(den))
    return ("-" + s) if coef_num < 0 else s


ONE = Size.const(1)
