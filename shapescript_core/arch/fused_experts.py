"""The functions vLLM's native model runs as one fused mixture of experts (v0.3, §6.2).

A function whose result is exactly a mixture (its model's router, `topk`, the gathered
experts' SwiGLU, the weighted sum over K: the same match as llama.cpp's, arch/experts.py,
on the function traced alone) is run by vLLM's fused MoE layer (`FusedMoEFactory`):
its router's logits in, each routing vLLM's fused layer has (the softmax over all E, the
K largest, divided by their sum or not: `renormalize`; a router bias is in the logits,
and the softmax of the K chosen biased logits is the same numbers). vLLM then splits the
experts across tensor-parallel ranks itself. Any other function is compiled as written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.mixture_routing import ROUTINGS
from ..check.types import ModelT, TensorT
from ..compile.graph import CompileError, trace_function
from ..compile.plan import walk_nodes
from .departure import Depart
from .experts import Experts, is_mixture


@dataclass(frozen=True)
class FusedMixture:
    fn: str
    model: str          # the model whose fields it reads
    x: str              # the function's tensor parameter
    router: str         # the router weight's field
    router_bias: Optional[str]
    gate: str
    up: str
    down: str
    experts: int
    used: int
    width: int          # each expert's width F
    hidden: int         # D
    renormalize: bool


class _Probe(Experts):
    """The matcher's mixture rules on one traced function."""

    routings = tuple(k for k in ROUTINGS if k != "written")

    def __init__(self, tr):
        self.tr, self.prog, self.arch, self.first_mixture = tr, tr.program, "llama", None

    def depart(self, node, place, what):
        raise Depart(node, what)

    def arg(self, n, name):
        return n.attrs.get("args", {}).get(name)

    def param(self, n, role):
        if n is None or n.op != "param":
            raise Depart(n, f"the {role} is computed")
        return n.attrs["path"]

    def _ffn(self, hp, F, node):
        hp["ffn"] = F


def fused_mixtures(prog) -> dict:
    """fn name -> FusedMixture, for each function vLLM runs as its fused mixture."""
    out = {}
    for g in prog.fns.values():
        if not any(n.op == "topk" for n in walk_nodes(g.body)[0]):
            continue
        found = _fused(prog, g)
        if found is not None:
            out[g.name] = found
    return out


def _fused(prog, g) -> Optional[FusedMixture]:
    params = [(n, t) for n, t, _ in g.params]
    if len(params) != 2 or not isinstance(params[0][1], ModelT) or not isinstance(params[1][1], TensorT):
        return None
    try:
        tr = trace_function(prog, g.name)
    except CompileError:
        return None
    out, x = tr.output, tr.inputs.get(params[1][0])
    if out is None or x is None or not is_mixture(out) or \
            [a.name for a in out.type.axes] != [a.name for a in x.type.axes]:
        return None
    probe, hp, tensors = _Probe(tr), {}, []
    try:
        probe.experts(out, x, hp, tensors, 0)
    except Depart:
        return None
    m = probe.mixture
    paths = {t.name: t.source for t in tensors}
    router = probe.arg(m.topk, "x")
    router = probe.arg(router, "x") if router.op == "softmax" else router
    bias = probe.arg(router, "b")
    if any("." in p for p in paths.values()) or (bias is not None and bias.op != "param"):
        return None  # a field of a submodel: not this model's own
    E, K = hp["experts"]
    return FusedMixture(g.name, params[0][1].name, params[1][0], paths["ffn_gate_inp"],
                        bias.attrs["path"] if bias is not None else None, paths["ffn_gate_exps"],
                        paths["ffn_up_exps"], paths["ffn_down_exps"], E, K, hp["ffn"],
                        x.shape[-1], bool(ROUTINGS[m.routing][1]))
