"""Axis patterns (LANGUAGE.md §5.1): rearrange, split, repeat, einsum.

Matching binds a side's items to an operand's axes by position. A name that is one of the
operand's axis names must stand at that axis's position (E0408); any other name renames
the axis at its position (a new name becomes a size variable of the function).
"""
from __future__ import annotations

from fractions import Fraction

from ..syntax import ast as A
from .codes import e0206, e0301, e0401, e0405, e0406, e0407, e0408, e0410
from .ops import operand_text
from .sizes import ONE, Size
from .types import UNKNOWN, Axis, TensorT, TupleT, is_unknown

class PatternError(Exception):
    """Raised inside matching once a diagnostic has been reported."""


def side_text(side: A.PSide) -> str:
    return " ".join(item_text(i) for i in side.items)


def item_text(i) -> str:
    """A pattern item as written: `H`, `3`, `(3 H Dh)` (nested groups too, no recursion)."""
    if isinstance(i, A.PName):
        return i.name
    if isinstance(i, A.PInt):
        return str(i.value)
    parts = ["("]
    open_groups = [iter(i.items)]  # the groups being written, innermost last
    first = [True]
    while open_groups:
        x = next(open_groups[-1], None)
        if x is None:
            open_groups.pop()
            first.pop()
            parts.append(")")
            continue
        if not first[-1]:
            parts.append(" ")
        first[-1] = False
        if isinstance(x, A.PGroup):
            parts.append("(")
            open_groups.append(iter(x.items))
            first.append(True)
        else:
            parts.append(x.name if isinstance(x, A.PName) else str(x.value))
    return "".join(parts)


def flat_names(items) -> list:
    return [i for i in A.pattern_leaves(items) if isinstance(i, A.PName)]


class PatternMatcher:
    """Matches pattern sides against operands within one function's checker."""

    def __init__(self, ck, call: A.Call, einsum: bool):
        self.ck = ck
        self.call = call
        self.einsum = einsum
        self.bind: dict[str, Axis] = {}  # pattern name -> axis
        self.origin: dict[str, tuple] = {}  # pattern name -> (input index, axis position)
        self.split_k = None

    # -- helpers
    def _known_size(self, name: str):
        """(axis name, size) for a dim or bound size variable, else None."""
        ck = self.ck
        d = ck.env.dim(name)
        if d is not None:
            return d, d
        if name in ck.svars:
            return Size.sym(name), ck.svars[name]
        return None

    def _axis_key(self, name: str) -> Size:
        d = self.ck.env.dim(name)
        return d if d is not None else Size.sym(name)

    def _bind_name(self, p: A.PName, size: Size, where: str):
        ck = self.ck
        prev = self.bind.get(p.name)
        if prev is not None:
            if prev.size != size:
                self._size_clash(p, prev.size, size)
            return
        known = self._known_size(p.name)
        if known is not None:
            if known[1] != size:
                self._size_clash(p, known[1], size, where)
            self.bind[p.name] = Axis(known[0], size)
            return
        ck.bind_svar(p.name, size, p.pos)
        self.bind[p.name] = Axis(Size.sym(p.name), size)

    def _size_clash(self, p: A.PName, a: Size, b: Size, where: str = ""):
        ck = self.ck
        if self.einsum:
            ck.add(e0410.einsum_sizes(ck.span(p.pos), p.name, ck.size_text(a, True), ck.size_text(b, True),
                                      f"`{p.name}` is {ck.size_text(a)} here, {ck.size_text(b)} {where or 'elsewhere'}"))
        else:
            ck.add(e0401.shape(ck.span(p.pos), f"`{p.name}` = {ck.size_text(a, True)}", ck.size_text(b, True),
                               f"this axis is {ck.size_text(b)}"))
        raise PatternError

    # -- matching one side against one operand
    def match(self, side: A.PSide, t: TensorT, node, index: int = 0):
        ck = self.ck
        text = operand_text(ck, node)
        if len(side.items) != len(t.axes):
            ck.add(e0407.pattern_rank(ck.span(side.pos), len(side.items), text, len(t.axes), f"`{text}` is {ck.render(t)}"))
            raise PatternError
        # E0408 first, for every name on the side: a known axis name in the wrong place
        for i, item in enumerate(side.items):
            if isinstance(item, A.PName):
                j = t.index_of(self._axis_key(item.name))
                if j >= 0 and j != i:
                    ck.add(e0408.axis_order(ck.span(side.pos), i + 1, item.name, j + 1, f"`{text}` is {ck.render(t)}"))
                    raise PatternError
        for i, (item, ax) in enumerate(zip(side.items, t.axes)):
            where = f"in `{text}`"
            if isinstance(item, A.PName):
                if t.index_of(self._axis_key(item.name)) == i:
                    prev = self.bind.get(item.name)
                    if prev is not None and prev.size != ax.size:
                        self._size_clash(item, prev.size, ax.size, where)
                    self.bind[item.name] = ax
                else:
                    self._bind_name(item, ax.size, where)
                self.origin.setdefault(item.name, (index, i))
            elif isinstance(item, A.PInt):
                if Size.const(item.value) != ax.size:
                    ck.add(e0406.group_mismatch(ck.span(item.pos), f"`{item.value}`", str(item.value), i + 1,
                                                ck.size_text(ax.size, True), f"`{text}` is {ck.render(t)}"))
                    raise PatternError
            else:
                self._match_group(item, ax, i, t, text, index)

    def _match_group(self, g: A.PGroup, ax: Axis, i: int, t: TensorT, text: str, index: int):
        ck = self.ck
        known: list = []
        unknown: list = []
        for k, it in enumerate(g.items):
            if isinstance(it, A.PInt):
                if k == 0 and self.split_k is None and it.value > 0:
                    self.split_k = it.value
                known.append((it, Size.const(it.value)))
            elif isinstance(it, A.PGroup):
                ck.add(e0406.nested_group(ck.span(it.pos)))
                raise PatternError
            else:
                ks = self.bind.get(it.name)
                ks = (None, ks.size) if ks is not None else self._known_size(it.name)
                if ks is None:
                    unknown.append(it)
                else:
                    known.append((it, ks[1]))
        prod = ONE
        for _, s in known:
            prod = prod * s
        gtext = item_text(g)
        if len(unknown) > 1:
            ck.add(e0406.unsized_names(ck.span(g.pos), gtext, unknown[0].name, unknown[1].name))
            raise PatternError
        if unknown:
            inferred = ax.size / prod
            num = ck.evaluate(ax.size)
            den = ck.evaluate(prod)
            if num is not None and den is not None and (den == 0 or Fraction(num) % Fraction(den) != 0):
                ck.add(e0406.group_cannot_divide(ck.span(g.pos), gtext, i + 1, num, den, f"`{text}` is {ck.render(t)}"))
                raise PatternError
            self._bind_name(unknown[0], inferred, f"in `{text}`")
        elif prod != ax.size and not (known and any(isinstance(it, A.PInt) for it, _ in known)
                                      and _same_value(ck, prod, ax.size)):
            # a group with a literal is compared by the dims' values (LANGUAGE.md §3.1)
            ck.add(e0406.group_mismatch(ck.span(g.pos), f"group {gtext}", ck.size_text(prod, True), i + 1,
                                        ck.size_text(ax.size, True), f"`{text}` is {ck.render(t)}"))
            raise PatternError
        for it in g.items:
            if isinstance(it, A.PName):
                if it.name not in self.bind:
                    ks = self._known_size(it.name)
                    self.bind[it.name] = Axis(ks[0], ks[1]) if ks else Axis(Size.sym(it.name), ONE)
                self.origin.setdefault(it.name, (index, i))

    # -- building the output side
    def build(self, side: A.PSide, allow_new_dims: bool = False) -> list:
        axes = []
        for item in side.items:
            if isinstance(item, A.PGroup):
                # an axis made by an operation is named by its size (§3.1): (H Dh) is D
                size = ONE
                for it in item.items:
                    size = size * self._out_axis(it, allow_new_dims).size
                axes.append(Axis(size, size))
            else:
                axes.append(self._out_axis(item, allow_new_dims))
        return axes

    def _out_axis(self, it, allow_new_dims: bool) -> Axis:
        ck = self.ck
        if isinstance(it, A.PInt):
            return Axis(Size.const(it.value), Size.const(it.value))
        if isinstance(it, A.PGroup):
            ck.add(e0406.nested_group(ck.span(it.pos)))
            raise PatternError
        a = self.bind.get(it.name)
        if a is not None:
            return a
        if allow_new_dims:
            d = ck.env.dim(it.name)
            if d is not None:
                return Axis(d, d)
        if self.einsum:
            ck.add(e0410.einsum_new_axis(ck.span(it.pos), it.name))
        elif allow_new_dims:
            ck.add(e0405.adds_axis(ck.span(it.pos), "repeat", it.name, "repeat can add only declared dims",
                                   ", which is not a dim with a value"))
        else:
            ck.add(e0405.adds_axis(ck.span(it.pos), ck.call_name(self.call), it.name, "this name is not on the left side"))
        raise PatternError


def _same_value(ck, a: Size, b: Size) -> bool:
    va, vb = ck.evaluate(a), ck.evaluate(b)
    return va is not None and va == vb


def check_pattern_call(ck, call: A.Call, fname: str, tensors: list):
    """Check rearrange / split / repeat / einsum; `tensors` are (node, type) of inputs."""
    pat = call.pattern
    if pat is None:
        ck.add(e0206.needs_pattern(ck.span(A.op_pos(call)), fname))
        return UNKNOWN
    einsum = fname == "einsum"
    if einsum and len(pat.inputs) != len(tensors):
        ck.add(e0407.einsum_sides(ck.span(pat.pos), len(tensors), len(pat.inputs)))
        return UNKNOWN
    if not einsum and (len(tensors) != 1 or len(pat.inputs) != 1):
        ck.add(e0206.takes(ck.span(A.op_pos(call)), fname, "1 tensor and a pattern", len(tensors)))
        return UNKNOWN
    for node, t in tensors:
        if is_unknown(t):
            return UNKNOWN
        if not isinstance(t, TensorT):
            ck.add(e0301.not_a_tensor(ck.span(node.pos), ck.kind_word(t)))
            return UNKNOWN
    names = [p.name for side in pat.inputs + [pat.output] for p in flat_names(side.items)]
    if any(ck.env.dims.is_dim(n) and ck.env.dim(n) is None for n in names):
        return UNKNOWN  # a dim whose value is in error: reported at the dim
    m = PatternMatcher(ck, call, einsum)
    ck.pattern_info[id(call)] = m
    try:
        for i, ((node, t), side) in enumerate(zip(tensors, pat.inputs)):
            m.match(side, t, node, i)
        left = flat_names(pat.inputs[0].items) if not einsum else []
        if fname in ("rearrange", "split"):
            lnames = [p.name for p in left]
            rnames = [p.name for p in flat_names(pat.output.items)]
            for p in left:
                if p.name not in rnames:
                    ck.add(e0405.loses_axis(ck.span(p.pos), fname, p.name))
                    raise PatternError
            for p in flat_names(pat.output.items):
                if p.name not in lnames:
                    ck.add(e0405.adds_axis(ck.span(p.pos), fname, p.name))
                    raise PatternError
        if fname == "repeat":
            lnames = [p.name for p in left]
            for p in lnames:
                if p not in [q.name for q in flat_names(pat.output.items)]:
                    ck.add(e0405.loses_axis(ck.span(pat.output.pos), "repeat", p))
                    raise PatternError
        axes = m.build(pat.output, allow_new_dims=(fname == "repeat"))
    except PatternError:
        return UNKNOWN
    finally:
        m.ck = None  # the checker is done with it: no cycle kept in the results
    dtype = tensors[0][1].dtype
    out = TensorT(tuple(axes), dtype)
    if fname == "split":
        if not m.split_k:
            ck.add(e0405.split_without_count(ck.span(pat.inputs[0].pos)))
            return UNKNOWN
        return TupleT(tuple([out] * m.split_k))
    return out
