"""Tensor parallelism for a mixture of experts in the native vLLM model (v0.3, §6.2): each
rank holds its share of every expert's width, as vLLM's own fused mixtures split them.

Found in each function's graph, by what it computes: a "down" einsum over
`take(W_down, e, over=E)` (W_down `[E D F]`, contracting F) whose other operand is made,
through elementwise ops and bindings, only of "in" einsums over `take(W, e, over=E)` (W
`[E F D]`, giving F), all gathered by the same index. Then each W holds F / ranks of its
rows (axis 1), W_down as many of its columns (axis 2): every rank computes its share of
each chosen expert's hidden units, and the ranks sum the down einsum's result (an
all-reduce), as Megatron splits an MLP. Anything else stays whole on every rank.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..check.types import ModelT
from .attention_plan import _straight
from .graph import Bind
from .plan import walk_nodes

ELEMENTWISE = {"mul", "add", "sub", "neg", "silu", "gelu", "gelu_tanh", "relu", "sigmoid", "tanh", "square"}


@dataclass
class ExpertSplits:
    axes: dict = field(default_factory=dict)    # (model, field) -> the axis each rank holds a share of
    reduced: set = field(default_factory=set)   # ids of the down einsums whose result the ranks sum


def expert_splits(prog, fused=frozenset()) -> ExpertSplits:
    """`fused`: the (model, field)s vLLM's fused mixture holds (split by vLLM itself)."""
    out = ExpertSplits()
    wanted: dict = {}
    for g in prog.fns.values():
        bound = [t for s in _straight(g.body) if isinstance(s, Bind) for t in s.targets]
        binds = {s.targets[0]: s.value for s in _straight(g.body) if isinstance(s, Bind) and len(s.targets) == 1
                 and bound.count(s.targets[0]) == 1}  # a name bound once: its value is the one every use reads
        order, _ = walk_nodes(g.body)
        for n in order:
            down = _expert_einsum(n)
            if down is None:
                continue
            ins = _inputs(down[2], binds)
            if not ins or any(i[1] is None or _same_index(i[3], down[3], binds) is False for i in ins):
                continue
            width = down[0].type.axes[2].name  # F
            if any(i[0].type.axes[1].name != width for i in ins):
                continue
            if down[1] in fused or any(i[1] in fused for i in ins):
                continue
            for _, key, _, _ in ins:
                wanted.setdefault(key, set()).add(1)
            wanted.setdefault(down[1], set()).add(2)
            out.reduced.add(id(n))
    out.axes = {k: next(iter(v)) for k, v in wanted.items() if len(v) == 1}
    if len(out.axes) != len(wanted):  # a param read both ways: nothing is split
        return ExpertSplits()
    return out


def _expert_einsum(n):
    """(the param's type node, its (model, field), the other operand, the index) of an
    `einsum(x, take(p.W, e, over=E))` with W a model's 3-D param taken along its first
    axis; None for any other node."""
    if n.op != "einsum" or len(n.attrs.get("rest", ())) != 2:
        return None
    takes = [x for x in n.attrs["rest"] if x.op == "take"]
    if len(takes) != 1:
        return None
    take = takes[0]
    other = next(x for x in n.attrs["rest"] if x is not take)
    t, idx = take.attrs["args"].get("t"), take.attrs["args"].get("idx")
    if t is None or t.op != "field" or not isinstance(t.inputs[0].type, ModelT) or len(t.type.axes) != 3 \
            or t.type.index_of(take.attrs["over"][0]) != 0:
        return None
    key = (t.inputs[0].type.name, t.attrs["name"])
    # the einsum contracts W's last axis with the other operand's last, and gives W's middle axis last
    if other.type.axes[-1].name != t.type.axes[2].name or n.type.axes[-1].name != t.type.axes[1].name:
        return None
    return t, key, other, idx


def _inputs(node, binds) -> list:
    """The "in" einsums an operand is made of through elementwise ops and bindings; [] when
    anything else reaches it."""
    found, stack, seen = [], [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op == "local" and n.attrs["name"] in binds:
            stack.append(binds[n.attrs["name"]])
            continue
        e = _expert_einsum(n)
        if e is not None:
            found.append(e)
            continue
        if n.op not in ELEMENTWISE or not n.inputs:
            return []
        stack.extend(n.inputs)
    return found


def _same_index(a, b, binds) -> bool:
    """Whether two index nodes are one value (the same local, or the same node)."""
    return a is b or (a.op == b.op == "local" and a.attrs["name"] == b.attrs["name"])
