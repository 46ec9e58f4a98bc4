"""A block's mixture of experts as llama.cpp runs it (v0.3, LANGUAGE.md §6.2): mixed into
the ArchMatcher beside the dense MLP (`sublayers.Sublayers.mlp`).

What it matches, by what the graph computes: `sum(y * w, over=K)` where the routed
weights w come from a `topk` over the router's logits `linear(h, router)` (their routing
named by check/mixture_routing.py's rule, through compile/mixtures.py), and
`y = einsum(silu(g) * u, take(W_down, e))`, `g = einsum(h, take(W_gate, e))`,
`u = einsum(h, take(W_up, e))`, each expert's weight `[E F D]` (down `[E D F]`): llama.cpp's
`ffn_gate_inp`, `ffn_{gate,up,down}_exps`, stacked experts first, as its converter writes
Mixtral's. llama.cpp's llama and qwen3moe route by the softmax over all E, the K largest,
divided by their sum (the softmax of the K chosen logits: Mixtral's, and Qwen3-MoE's with
norm_topk_prob); any other routing is a departure at the `topk`.
"""
from __future__ import annotations

from ..check.mixture_routing import ROUTINGS
from ..compile.mixtures import mixture_at
from .departure import Depart, line_of
from .plan import TensorPlan

EXPERT_ROLES = ("ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")
LLAMA_CPP_ROUTING = "softmax_k"  # llama.cpp's build_moe_ffn: softmax over E, top K, norm_w


def is_mixture(branch) -> bool:
    """`sum(… , over=K)` of a product: the shape a mixture's output has (the MLP's place)."""
    return branch.op == "sum" and len(branch.inputs) == 1 and branch.inputs[0].op == "mul"


class Experts:
    """Matcher methods for a mixture of experts (mixed into `match.ArchMatcher`)."""

    routings = (LLAMA_CPP_ROUTING,)  # the routings the engine runs (fused_experts.py: vLLM's)
    mixture = None  # the last mixture matched (compile/mixtures.py's Mixture)
    importing = False  # the importer's matching: any routing names the same roles (match.py)

    def experts(self, branch, h, hp, tensors, blk, features=frozenset()):
        self.first_mixture = self.first_mixture or branch
        mul = branch.inputs[0]
        y = next((x for x in mul.inputs if x.op == "einsum"), None)
        if y is None:
            self.depart(branch, "experts", "this sum over the experts doesn't weigh their outputs")
        w = next(x for x in mul.inputs if x is not y)
        act, down = self._expert_einsum(y, "down")
        if act.op != "mul":
            self.depart(act, "experts", f"the experts' activation is `{act.op}`")
        gate_act = next((x for x in act.inputs if x.op == "silu"), None)
        if gate_act is None:
            self.depart(act, "experts", "the experts' gate isn't silu")
        up_n = next(x for x in act.inputs if x is not gate_act)
        x_g, gate = self._expert_einsum(gate_act.inputs[0], "gate")
        x_u, up = self._expert_einsum(up_n, "up")
        for x in (x_g, x_u):
            if x is not h:
                self.depart(x, "experts", "the experts read another input than the block's norm")
        topks = {id(t.attrs["args"]["idx"].inputs[0]): t.attrs["args"]["idx"].inputs[0] for t in (gate, up, down)}
        if len(topks) != 1:
            self.depart(down, "experts", "the experts' weights are gathered by different choices")
        m = mixture_at(self.tr, next(iter(topks.values())))
        router = self.arg(m.topk, "x")
        if router.op == "softmax":
            router = self.arg(router, "x")
        if m.router is None or self.arg(router, "x") is not h:
            self.depart(m.topk, "experts", "the router doesn't read the block's norm through one linear")
        self.mixture = m
        hp.setdefault("routing", m.routing)
        if m.routing not in self.routings and not self.importing:
            words = ROUTINGS[m.routing][0]
            arch = "qwen3moe" if "qk_norm" in features else self.arch  # the family its attention names
            raise Depart(m.topk, f"the router's weights are {words}{line_of(m.topk)}, where llama.cpp's {arch} "
                                 f"routes by {ROUTINGS[LLAMA_CPP_ROUTING][0]} (Mixtral's; Qwen3-MoE's with "
                                 f"norm_topk_prob)")
        if not _weighs(w, m.topk):
            self.depart(w, "experts", "the experts' outputs are weighed by something else than the routed weights")
        E, K = m.experts, m.used
        F = gate.attrs["args"]["t"].shape[1]
        if hp.setdefault("experts", (E, K)) != (E, K):
            raise Depart(m.topk, f"this mixture has {E} experts, {K} per token{line_of(m.topk)}, where the first "
                                 f"has {hp['experts'][0]}, {hp['experts'][1]}: llama.cpp has one of each")
        self._ffn(hp, F, act)
        r = self.arg(router, "W")
        # the router stays f32 at every type, as llama.cpp's converter and quantizer keep it
        tensors.append(TensorPlan("ffn_gate_inp", blk, "weight", self.param(r, "router"), tuple(r.shape),
                                  kind="vector"))
        for role, t in (("ffn_gate_exps", gate), ("ffn_up_exps", up), ("ffn_down_exps", down)):
            p = t.attrs["args"]["t"]
            tensors.append(TensorPlan(role, blk, "weight", self.param(p, "experts' weight"), tuple(p.shape)))
        return {"experts"}

    def _expert_einsum(self, n, which: str):
        """(the other input, the `take`) of `einsum(x, take(W, e, over=E))`: W a param
        `[E O I]` taken along E, x's last axis contracted with I, the result's last O
        (llama.cpp's [E O I] per expert, as its converter stacks them)."""
        if n.op != "einsum" or len(n.attrs.get("rest", ())) != 2:
            self.depart(n, "experts", f"the experts' {which} projection is `{n.op}`")
        take = next((x for x in n.attrs["rest"] if x.op == "take"), None)
        x = next((x for x in n.attrs["rest"] if x is not take), None)
        if take is None or x is None:
            self.depart(n, "experts", f"the experts' {which} projection gathers no expert weights")
        p, idx = take.attrs["args"]["t"], take.attrs["args"]["idx"]
        if p.op != "param" or len(p.type.axes) != 3 or p.type.index_of(take.attrs["over"][0]) != 0:
            self.depart(take, "experts", f"the experts' {which} weights aren't one param [E O I] taken along E")
        if idx.op != "getitem" or idx.attrs["index"] != 1 or idx.inputs[0].op != "topk":
            self.depart(take, "experts", f"the experts' {which} weights are gathered by another index than a topk's")
        _, o, i = p.type.axes
        if x.type.axes[-1].name != i.name or n.type.axes[-1].name != o.name:
            self.depart(n, "experts", f"the experts' {which} weights are [E {self.prog.env.dims.render(i.name)} "
                                      f"{self.prog.env.dims.render(o.name)}] as the einsum reads them")
        return x, take


def _weighs(w, topk) -> bool:
    """w is the topk's values, or them after a softmax or divided by their sum."""
    if w.op == "getitem" and w.inputs[0] is topk and w.attrs["index"] == 0:
        return True
    if w.op in ("softmax", "div") and w.inputs:
        v = w.inputs[0]
        return v.op == "getitem" and v.inputs[0] is topk and v.attrs["index"] == 0
    return False
