"""Sliding-window attention in a language model's export (v0.2): the window of each
attention slot of the KV cache, in the order of its layer indices, as the export's trace
folds each call's `window=` (`graph.Trace.attention_windows`), and what transformers and
vLLM read of it (`sliding_window`, `layer_types`).

A layer is `full_attention` when its attention has no window, or a window at least the
longest sequence the model takes (positions `Index[P]` and a window >= P drop no key:
how a source writes the global layers of Gemma 2/3 next to their sliding ones); it is
`sliding_attention` otherwise. transformers' config holds one `sliding_window` per model,
so sliding layers with different windows are refused, never run with another window.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..check.rope_scaling import hf_rope_parameters
from ..check.types import ModelT, StackT, TensorT
from .graph import UNFOLDED, CompileError

SLIDING, FULL = "sliding_attention", "full_attention"


@dataclass
class WindowPlan:
    windows: list  # per KV-cache layer (layer_idx order): the window, or None (full attention)
    sliding_window: int  # the one window of the sliding layers

    @property
    def layer_types(self) -> list:
        return [SLIDING if w is not None else FULL for w in self.windows]


def attention_slots(gen) -> list:
    """(owner path, attention node) for each KV-cache layer, in layer_idx order: a model's
    own attentions first, then its fields in order, a stack's copies one after another
    (as modules.class_lines numbers them)."""
    out: list = []
    work = [(gen.plan.root, "")]
    while work:
        model, prefix = work.pop()
        out += [(prefix, site) for site in gen.classes[model].sites]
        later = []
        for fname, f in gen.prog.model(model).fields.items():
            path = f"{prefix}.{fname}" if prefix else fname
            if isinstance(f.type, ModelT):
                later.append((f.type.name, path))
            elif isinstance(f.type, StackT):
                later += [(f.type.model, f"{path}.{i}") for i in range(gen.prog.value_of(f.type.count) or 0)]
        work += reversed(later)
    return out


def window_plan(gen, trace) -> Optional[WindowPlan]:
    """The windows of a language model's attentions, or None when none has one."""
    slots = attention_slots(gen)
    longest = _longest_sequence(gen)
    windows = []
    for owner, site in slots:
        w = trace.attention_windows.get((id(site.ast), owner))
        if w is UNFOLDED or (w is not None and (isinstance(w, bool) or not isinstance(w, (int, float))
                                                or w != int(w) or w <= 0)):
            shown = "a value not known at export" if w is UNFOLDED else repr(w)
            where = f"`{owner}`" if owner else "the model"
            raise CompileError(f"the window of the attention at line {site.where[1]} on {where} is {shown}, but "
                               f"a window is a positive integer known at export (LANGUAGE.md §6): write it with "
                               f"literals, dims and the layer index", site.where)
        if w is not None and longest is not None and w >= longest:
            w = None  # it drops no key of any sequence the model takes: full attention
        windows.append(int(w) if w is not None else None)
    sliding = sorted({w for w in windows if w is not None})
    if not sliding:
        return None
    if len(sliding) > 1:
        site = next(s for (_, s), w in zip(slots, windows) if w == sliding[1])
        raise CompileError(f"transformers and vLLM hold one sliding window per model (`sliding_window` in "
                           f"config.json), but the layers use windows {', '.join(map(str, sliding))}: give "
                           f"every sliding layer one window (a layer with a window of at least the positions' "
                           f"bound is full attention)", site.where)
    return WindowPlan(windows, sliding[0])


def _longest_sequence(gen) -> Optional[int]:
    """P when the positions are `Index[P]`: no sequence is longer."""
    lm = gen.lm
    if lm is None or not lm.positions:
        return None
    t = next((t for n, t, _ in gen.prog.entry.params if n == lm.positions), None)
    if isinstance(t, TensorT) and t.dtype.name == "Index" and t.dtype.index is not None:
        return gen.prog.value_of(t.dtype.index)
    return None


def rope_parameters(gen, trace, plan: Optional[WindowPlan]) -> Optional[dict]:
    """config.json's `rope_parameters` as transformers writes them: theta, rope_type and its
    fields (and `partial_rotary_factor` where the ropes rotate part of each head), one for
    the model, or one per layer type (Gemma 3: 1e4 on sliding layers, 1e6 on full ones).
    None when the ropes are not one setting per layer type known at export."""
    settings = trace.rope_settings
    if not settings:
        return None
    slots = attention_slots(gen)
    types = plan.layer_types if plan is not None else [FULL] * len(slots)
    per_type: dict = {}
    for owner, here in settings.items():
        kind = _layer_type_of(owner, slots, types)
        if kind is None:
            return None
        per_type.setdefault(kind, set()).update(here)
    if any(len(v) != 1 for v in per_type.values()):
        return None
    one = {k: _hf_rope(next(iter(v)), gen.head_dim()) for k, v in per_type.items()}
    if any(v is None for v in one.values()):
        return None
    if len({repr(v) for v in one.values()}) == 1:
        return next(iter(one.values()))
    return dict(sorted(one.items()))


def _hf_rope(setting: tuple, head_dim: Optional[int]) -> Optional[dict]:
    """One rope setting (graph.rope_setting) in transformers' spelling, or None where a
    value is not known at export."""
    theta, kind, values, dims = setting
    if theta is UNFOLDED or dims is UNFOLDED or any(v is UNFOLDED or isinstance(v, str) for _, v in values):
        return None
    return hf_rope_parameters(theta, kind, dict(values), dims, head_dim)


def _copy_of(owner: str) -> str:
    """The path of the stack copy (or model) a node runs on: up to its last index."""
    parts = owner.split(".")
    for k in range(len(parts) - 1, -1, -1):
        if parts[k].isdigit():
            return ".".join(parts[:k + 1])
    return ""


def _layer_type_of(owner: str, slots: list, types: list) -> Optional[str]:
    """The layer type of the slot whose stack copy holds `owner` (None: none, or two)."""
    layer = _copy_of(owner)
    kinds = {t for (o, _), t in zip(slots, types) if _copy_of(o) == layer}
    return next(iter(kinds)) if len(kinds) == 1 else None
