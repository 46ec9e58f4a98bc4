"""A mixture of experts' routing (v0.3, LANGUAGE.md §6.2): the one rule that names it,
from what the source computes around its `topk`. Read by hover (ide/hover.py, on the
syntax) and the exporters (compile/mixtures.py, on the traced graph).

A program means what it computes: the routing is a name for the numbers, never a choice.
Mixtral's softmax over the K chosen logits and Qwen3-MoE's softmax over all E, top K,
divided by their sum, are the same numbers ("softmax_k"); without the division it is
another function ("softmax_e", `norm_topk_prob=False`); gpt-oss's router has a bias
("softmax_k_bias"). Anything else is "written": engines with a fused mixture can't run it.
"""
from __future__ import annotations

from dataclasses import dataclass

# key -> (words, transformers' norm_topk_prob, the families that route so)
ROUTINGS = {
    "softmax_k": ("the softmax of the K chosen router logits", True, "Mixtral; Qwen3-MoE with norm_topk_prob"),
    "softmax_k_bias": ("a router with a bias, then the softmax of the K chosen logits", True, "gpt-oss"),
    "softmax_e": ("the softmax over all E router logits, the K largest kept as they are", False,
                  "Qwen3-MoE with norm_topk_prob=False"),
    "written": ("as written (no fused routing an engine runs)", None, ""),
}


@dataclass(frozen=True)
class RoutingFacts:
    """What surrounds a `topk(…, over=E)`: the scores a softmax over E (`softmax(linear(x,
    router), over=E) |> topk`), the router with a bias, the chosen values then a softmax
    over K, or divided by their sum over K."""
    router: bool  # the scores are a linear of a router weight [E D] (behind the softmax, if any)
    softmax_e: bool
    bias: bool
    softmax_k: bool
    renormalised: bool


def routing(f: RoutingFacts) -> str:
    """The routing's key in ROUTINGS."""
    if not f.router:
        return "written"
    if f.softmax_e and not f.softmax_k:
        if f.bias:
            return "written"
        return "softmax_k" if f.renormalised else "softmax_e"
    if not f.softmax_e and f.softmax_k and not f.renormalised:
        return "softmax_k_bias" if f.bias else "softmax_k"
    return "written"


def describe(experts: str, used: str, key: str) -> str:
    """"a mixture of E = 8 experts, K = 2 per token; routing: …" (hover)."""
    words, _, families = ROUTINGS[key]
    return (f"a mixture of {experts} experts, {used} per token; routing: {words}"
            + (f" ({families})" if families else ""))
