"""Positions from names: the torch code that lines tensors up by axis name.

A tensor's torch layout is the order of the axes in its checked type. Combining by name
(§3.2) therefore becomes a permutation and inserted axes (`x.permute(…)[:, None]`), and
a pattern becomes reshape / permute / expand / `torch.einsum`, all computed here from the
types. Every function returns Python source text.
"""
from __future__ import annotations

from ..check.types import TensorT
from ..syntax import ast as A
from .graph import CompileError


def match_positions(src_axes, dst_axes) -> list:
    """For each src axis, the position of the dst axis it aligns with (by name, the k-th
    repeat of a name with the k-th repeat in dst)."""
    used: dict = {}
    out = []
    for a in src_axes:
        k = used.get(a.name, 0)
        hits = [i for i, b in enumerate(dst_axes) if b.name == a.name]
        if k >= len(hits):
            raise CompileError("internal: axes don't align by name")
        out.append(hits[k])
        used[a.name] = k + 1
    return out


def permute_code(code: str, perm: list) -> str:
    if perm == sorted(perm) and perm == list(range(len(perm))):
        return code
    n = len(perm)
    diff = [i for i in range(n) if perm[i] != i]
    if len(diff) == 2 and perm[diff[0]] == diff[1] and perm[diff[1]] == diff[0]:
        return f"{code}.transpose({diff[0]}, {diff[1]})"
    return f"{code}.permute({', '.join(map(str, perm))})"


def align(code: str, t, dst_axes) -> str:
    """`code` (of type t) rearranged to broadcast against a tensor with `dst_axes`."""
    if not isinstance(t, TensorT) or not t.axes:
        return code
    pos = match_positions(t.axes, dst_axes)
    order = sorted(range(len(pos)), key=lambda i: pos[i])
    code = permute_code(code, order)
    placed = sorted(pos)
    if placed == list(range(len(dst_axes) - len(placed), len(dst_axes))):
        return code  # a suffix of dst: torch broadcasts it as it is
    first = placed[0]
    idx = [":" if i in placed else "None" for i in range(first, len(dst_axes))]
    while idx and idx[-1] == ":":
        idx.pop()
    if not idx:
        return code
    return f"{code}[{', '.join(idx)}]"


def positions(t: TensorT, names) -> list:
    """Positions in t of the axes named (canonical Sizes)."""
    out = []
    for n in names:
        i = t.index_of(n)
        if i < 0:
            raise CompileError("internal: axis not found")
        out.append(i)
    return out


def dims_arg(ps: list) -> str:
    return str(ps[0]) if len(ps) == 1 else "(" + ", ".join(map(str, ps)) + ")"


# ---------------------------------------------------------------- patterns
class _El:
    """An elementary axis of a pattern side: a name or an integer literal."""

    def __init__(self, name=None, value=None):
        self.name = name
        self.value = value

    @property
    def key(self):
        return self.name if self.name is not None else f"#{id(self)}"


def _elements(side: A.PSide) -> tuple:
    """(elementary axes, groups): groups[i] lists the elements of side item i."""
    els, groups = [], []
    for it in side.items:
        g = []
        for x in (it.items if isinstance(it, A.PGroup) else [it]):
            e = _El(name=x.name) if isinstance(x, A.PName) else _El(value=x.value)
            g.append(e)
            els.append(e)
        groups.append(g)
    return els, groups


class PatternLowering:
    """Lowers one pattern call; `size(Size)` renders a size as code (or None)."""

    def __init__(self, pat, size_of_name, size_code, local=()):
        self.pat = pat
        self.size_of_name = size_of_name  # pattern name -> Size
        self.size_code = size_code
        # sizes a rank may hold a share of (a language model's head counts, split by
        # tensor parallelism): a reshape reads them from the tensor (-1), not a constant
        self.local = local

    def _size(self, e: _El, local: bool = False):
        if e.value is not None:
            return str(e.value)
        size = self.size_of_name(e.name)
        if local and size in self.local:
            return None
        return self.size_code(size)

    def _shape(self, sizes: list) -> str:
        if sum(1 for s in sizes if s is None) > 1:
            raise CompileError("can't compute the sizes of this pattern's groups")
        return ", ".join("-1" if s is None else s for s in sizes)

    def _sizes(self, groups: list) -> list:
        """Each group's size as code (None: -1), a head count as -1 where it is the only
        size so written."""
        for local in ((True, False) if self.local else (False,)):
            sizes = []
            for g in groups:
                parts = [self._size(e, local) for e in g]
                if any(p is None for p in parts):
                    sizes.append(None)
                elif len(parts) == 1:
                    sizes.append(parts[0])
                else:
                    sizes.append(" * ".join(parts))
            if sum(1 for s in sizes if s is None) <= 1:
                return sizes
        return sizes

    def split_groups(self, code: str, side: A.PSide) -> tuple:
        """Reshape an operand so that each element of its side is one axis."""
        els, groups = _elements(side)
        if all(len(g) == 1 for g in groups):
            return code, els
        sizes = self._sizes([[e] for e in els])
        return f"{code}.reshape({self._shape(sizes)})", els

    def merge_groups(self, code: str, side: A.PSide, present: int) -> str:
        """Reshape from one axis per element to the side's grouped axes."""
        els, groups = _elements(side)
        if all(len(g) == 1 for g in groups) and len(els) == present:
            return code
        return f"{code}.reshape({self._shape(self._sizes(groups))})"

    def rearrange(self, code: str) -> str:
        pat = self.pat
        code, left = self.split_groups(code, pat.inputs[0])
        right, _ = _elements(pat.output)
        rnames = [e.name for e in right if e.name is not None]
        perm = [self._index(left, n) for n in rnames]
        perm += [i for i, e in enumerate(left) if e.name is None]  # literal axes (size 1) go last
        code = permute_code(code, perm)
        if any(e.name is None for e in left + right):  # size-1 axes stand where the output has them
            return self.merge_groups(code, pat.output, -1)
        return self.merge_groups(code, pat.output, len(left))

    def repeat(self, code: str) -> str:
        pat = self.pat
        code, left = self.split_groups(code, pat.inputs[0])
        right, _ = _elements(pat.output)
        lnames = {e.name for e in left if e.name}
        kept = [e.name for e in right if e.name in lnames]
        ones = [i for i, e in enumerate(left) if e.name is None]  # size-1 axes go last
        code = permute_code(code, [self._index(left, n) for n in kept] + ones)
        idx, expand, new = [], [], False
        for e in right:
            if e.name is not None and e.name not in lnames:
                idx.append("None")
                expand.append(self._size(e) or "-1")
                new = True
            elif e.name is not None:
                idx.append(":")
                expand.append("-1")
        if new:
            while idx and idx[-1] == ":":
                idx.pop()
            expand += ["-1"] * len(ones)
            code = f"{code}[{', '.join(idx)}].expand({', '.join(expand)})"
        if ones or any(e.name is None for e in right):  # size-1 axes stand where the output has them
            return self.merge_groups(code, pat.output, -1)
        return self.merge_groups(code, pat.output, len(right))

    def split(self, code: str) -> str:
        pat = self.pat
        code, left = self.split_groups(code, pat.inputs[0])
        k = next((i for i, e in enumerate(left) if e.value is not None and e.value == pat.split_k), None)
        if k is None:
            raise CompileError("`split` needs a group that starts with the number of parts")
        right, groups = _elements(pat.output)
        rnames = [e.name for e in right if e.name is not None]
        perm = [k] + [self._index(left, n) for n in rnames]
        code = permute_code(code, perm)
        if any(len(g) > 1 for g in groups):
            sizes = [str(pat.split_k)]
            for g in groups:
                parts = [self._size(e) for e in g]
                sizes.append(None if any(p is None for p in parts) else " * ".join(parts))
            code = f"{code}.reshape({self._shape(sizes)})"
        return f"{code}.unbind(0)"

    def einsum(self, codes: list) -> str:
        pat = self.pat
        letters: dict = {}
        specs, args = [], []
        for c, side in zip(codes, pat.inputs):
            c, els = self.split_groups(c, side)
            # a size-1 axis (a literal 1) has a letter of its own, summed away
            specs.append("".join(self._letter(letters, e.key) for e in els))
            args.append(c)
        right, _ = _elements(pat.output)
        out = "".join(self._letter(letters, e.name) for e in right if e.name is not None)
        code = f"torch.einsum(\"{','.join(specs)}->{out}\", {', '.join(args)})"
        if any(e.name is None for e in right):  # size-1 axes stand where the output has them
            return self.merge_groups(code, pat.output, -1)
        return self.merge_groups(code, pat.output, len(right))

    @staticmethod
    def _letter(letters: dict, name: str) -> str:
        """The einsum letter of an axis: its name's initial where that is free
        ("bhnd,bhmd->bhnm"), else the first free letter."""
        if name not in letters:
            taken = set(letters.values())
            initial = name[0] if name[0].isalpha() and name[0].isascii() else ""
            free = [c for c in (initial.lower(), initial.upper()) if c and c not in taken]
            free += [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in taken]
            if not free:
                raise CompileError("einsum has too many axes")
            letters[name] = free[0]
        return letters[name]

    @staticmethod
    def _index(els: list, name: str) -> int:
        for i, e in enumerate(els):
            if e.name == name:
                return i
        raise CompileError(f"internal: `{name}` is not on the pattern's left side")
