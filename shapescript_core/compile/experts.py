"""An einsum over `take(W, idx, over=E)` lowered without the dense gather (v0.3, §6.2).

`einsum(x, take(p.w_up, e, over=E): b n D, b n K F D -> b n K F)` means a gather of each
token's K chosen experts' weights, `[b n K F D]`, then a product: E times less memory is
the point of a mixture, so the export never builds that tensor. The lowering is the
prelude's `expert_einsum`: the call's slots (the idx's positions, here b·n·K) grouped by
the expert they chose, and for each expert with slots one einsum of its weight with those
slots' rows, as transformers' own Mixtral loops over the experts that have tokens. It
computes exactly the einsum's numbers (the same products, summed in the same order per
row), for any routing: it depends only on `take`'s meaning, not on how idx was chosen.

Used where it applies (one `take` among the einsum's inputs, written in the call; plain
axis names, every index axis kept in the output); any other einsum is lowered as written.
"""
from __future__ import annotations

from typing import Optional

from ..syntax import ast as A

SLOT = "\0slot"  # the letter of the slots' axis ("p"), never an axis name


def expert_einsum(e, n) -> Optional[str]:
    """The code of einsum node n through the prelude's `expert_einsum`, or None where the
    einsum is not one over a single `take`'s gather (then it is lowered as written)."""
    pat, rest = n.attrs["pattern"], n.attrs["rest"]
    takes = [i for i, r in enumerate(rest) if r.op == "take"]
    if len(takes) != 1 or len(pat.inputs) != len(rest):
        return None
    sides = [_names(s) for s in pat.inputs]
    out = _names(pat.output)
    if out is None or any(s is None for s in sides) or len(set(out)) != len(out):
        return None
    ti = takes[0]
    take = rest[ti]
    t, idx = take.attrs["args"].get("t"), take.attrs["args"].get("idx")
    if t is None or idx is None:
        return None
    k = len(idx.type.axes)
    slots, own = sides[ti][:k], sides[ti][k:]
    if k == 0 or len(set(slots)) != k or set(slots) & set(own) or not set(slots) <= set(out):
        return None
    if any(len(set(s)) != len(s) for s in sides):
        return None
    if not any(a in side for j, side in enumerate(sides) if j != ti for a in slots):
        return None  # no other input is per slot: each slot's result is its expert's alone (as written)
    letters = {SLOT: "p"}
    specs, operands = [], []
    for j, (side, node) in enumerate(zip(sides, rest)):
        if j == ti:
            continue
        present = [a for a in slots if a in side]
        others = [a for a in side if a not in slots]
        perm = [side.index(a) for a in present] + [side.index(a) for a in others]
        keep = [a in side for a in slots]
        specs.append(("p" if present else "") + "".join(_letter(letters, a) for a in others))
        operands.append(f"({e.atom(e.ex(node))}, {perm}, {keep})")
    specs.append("".join(_letter(letters, a) for a in own))
    kept = [a for a in out if a not in slots]
    equation = f"{','.join(specs)}->p{''.join(_letter(letters, a) for a in kept)}"
    d = t.type.index_of(take.attrs["over"][0])
    e.use_helper("expert_einsum")
    code = (f"expert_einsum(\"{equation}\", {e.ex(idx)}, {e.atom(e.ex(t))}, {d}, "
            f"[{', '.join(operands)}])")
    now = slots + kept
    perm = [now.index(a) for a in out]
    return code if perm == list(range(len(out))) else f"{code}.permute({', '.join(map(str, perm))})"


def _names(side) -> Optional[list]:
    """A pattern side's axis names, or None where it has groups, literals or `…`."""
    if not all(isinstance(x, A.PName) for x in side.items):
        return None
    return [x.name for x in side.items]


def _letter(letters: dict, name: str) -> str:
    if name not in letters:
        taken = set(letters.values())
        free = [c for c in "abcdefghijklmnoqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in taken]
        if not free:
            raise ValueError("einsum has too many axes")
        letters[name] = free[0]
    return letters[name]
