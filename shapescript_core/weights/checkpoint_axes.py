"""How a source param's shape and axes relate to its checkpoint tensor's, through the
GGUF plan's layout steps (source -> llama.cpp): the one rule both the dims read from a
checkpoint and the E3315 that a contradicted dim gets use."""
from __future__ import annotations

from ..arch.plan import Gather, Transpose


def forward_shape(shape: tuple, steps) -> tuple:
    """The shape a param of `shape` has in llama.cpp's layout after `steps`."""
    shape = list(shape)
    for s in steps:
        if isinstance(s, Transpose):
            shape.reverse()
        elif isinstance(s, Gather) and s.take is not None:
            shape[s.axis] //= s.shape[s.take[0]]
    return tuple(shape)


def source_axis(i: int, ndim: int, steps) -> tuple:
    """(the param's axis, factor) for the checkpoint tensor's axis `i`: the param's size at
    that axis is the tensor's size times the factor (a slice of a fused param)."""
    flips = sum(isinstance(s, Transpose) for s in steps) % 2
    axis = ndim - 1 - i if flips and ndim == 2 else i
    factor = 1
    for s in steps:
        if isinstance(s, Gather) and s.take is not None and s.axis == i:
            factor = s.shape[s.take[0]]
    return axis, factor
