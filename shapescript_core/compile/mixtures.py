"""The mixtures of experts of a trace (v0.3, §6.2), recognised around each `topk`: the
experts (E, the topk's axis), the experts used per token (K), the routing
(check/mixture_routing.py) and the router and expert weights where the mixture has the
usual shape (the exporters' configs, fused engines). Reads the trace only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.mixture_routing import RoutingFacts, routing


@dataclass
class Mixture:
    topk: object  # the topk node
    experts: Optional[int]  # E
    used: Optional[int]  # K
    routing: str  # a key of ROUTINGS
    router: Optional[str] = None  # the router weight's param path
    weights: tuple = ()  # the param paths `take` gathers from, in the order they run
    width: Optional[int] = None  # each expert's width F: the gathered weights' middle axis, where one


def mixtures(tr) -> list:
    users = tr.users()
    out = []
    for n in tr.nodes:
        if n.op == "topk":
            out.append(_mixture(tr, n, users))
    return out


def mixture_at(tr, topk) -> Mixture:
    """The mixture routed by this topk node of the trace."""
    users = tr.__dict__.get("_users")
    if users is None:  # asked once per block by the matcher: the users index, made once
        users = tr.__dict__["_users"] = tr.users()
    return _mixture(tr, topk, users)


def _mixture(tr, t, users) -> Mixture:
    scores = t.attrs["args"]["x"]
    x_t = scores.type
    over = t.attrs["over"][0]
    e_size = x_t.axes[x_t.index_of(over)].size
    k_size = t.type.items[0].axes[x_t.index_of(over)].size
    softmax_e = scores.op == "softmax" and scores.attrs.get("over") == [over]
    lin = scores.attrs["args"]["x"] if softmax_e else scores
    router = lin.op == "linear" and lin.attrs["args"]["W"].op == "param"
    bias = router and lin.attrs["args"].get("b") is not None
    values = [u for u in users.get(id(t), []) if u.op == "getitem" and u.attrs["index"] == 0]
    indices = [u for u in users.get(id(t), []) if u.op == "getitem" and u.attrs["index"] == 1]
    k_axis = t.type.items[0].axes[x_t.index_of(over)].name
    softmax_k = renorm = False
    for v in values:
        for u in users.get(id(v), []):
            if u.op == "softmax" and u.attrs.get("over") == [k_axis]:
                softmax_k = True
            if u.op == "div" and u.inputs[0] is v and u.inputs[1].op == "sum" \
                    and u.inputs[1].attrs.get("over") == [k_axis] and u.inputs[1].inputs[0] is v:
                renorm = True
    key = routing(RoutingFacts(router, softmax_e, bias, softmax_k, renorm))
    weights, widths = [], set()
    for i in indices:
        for u in users.get(id(i), []):
            p = u.attrs["args"]["t"] if u.op == "take" else None
            if p is not None and p.op == "param":
                weights.append(p.attrs["path"])
                if len(p.type.axes) == 3:  # [E F D] and [E D F]: F is the one that isn't the model's width
                    widths.add(frozenset(tr.program.value_of(a.size) for a in p.type.axes[1:]))
    width = None
    if len(widths) == 1 and len(next(iter(widths))) == 2:
        d = tr.program.value_of(lin.attrs["args"]["W"].type.axes[1].size) if router else None
        rest = [v for v in next(iter(widths)) if v != d]
        width = rest[0] if len(rest) == 1 else None
    return Mixture(t, tr.program.value_of(e_size), tr.program.value_of(k_size), key,
                   lin.attrs["args"]["W"].attrs["path"] if router else None, tuple(weights), width)
