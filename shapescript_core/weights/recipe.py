"""How one source param is rebuilt from checkpoint tensors: the GGUF plan's layout steps
(source → llama.cpp) run backwards.

The architecture matcher (`arch.match`) says, for each tensor (by its role), which param it
is read from and which steps (`Transpose`, `Gather`, `RopePermute`) turn the param into
llama.cpp's layout. A checkpoint is first brought into that same layout (its reader's
`to_gguf` steps: GGUF files are in it already; Hugging Face's llama permutes Q/K rows,
GPT-2's Conv1D is transposed, Gemma's norm weights w become 1 + w); then the plan's
steps are undone (an `Offset` or a `Scale` by its opposite). A `Gather` that takes
one slice of a fused param (q, k, v out of one `w_qkv`) becomes a scatter into the
param's buffer: the param is the sum of its contributions, in the order its pattern
splits them.

No I/O here: `Recipe.build(read)` is given a function that reads a checkpoint tensor.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import math

import numpy as np

from ..arch.layout import gather_index, rope_permute
from ..arch.plan import Gather, Offset, RopePermute, Scale, Transpose


@dataclass(frozen=True)
class Take:
    """Re-order along an axis: arr.take(index, axis) (an inverted `Gather`)."""
    axis: int
    index: tuple


@dataclass(frozen=True)
class Rows:
    """Rows [start, end) of a tensor stacked from parts (gpt2's attn_qkv into q, k, v)."""
    start: int
    end: int


def run_steps(arr: np.ndarray, steps) -> np.ndarray:
    for s in steps:
        if isinstance(s, Transpose):
            arr = arr.T
        elif isinstance(s, RopePermute):
            arr = rope_permute(arr, s.heads, s.to, s.dims)
        elif isinstance(s, Take):
            arr = np.take(arr, np.asarray(s.index, dtype=np.int64), axis=s.axis)
        elif isinstance(s, Rows):
            arr = arr[s.start:s.end]
        elif isinstance(s, Offset):
            arr = np.asarray(arr, dtype=np.float32) + np.float32(s.value)
        elif isinstance(s, Scale):
            arr = np.asarray(arr, dtype=np.float32) * np.float32(s.factor)
        else:
            raise TypeError(f"unknown import step {s!r}")  # only this module makes them
    return arr


def row_step(step) -> bool:
    """Whether the step only re-orders or selects rows (axis 0): a row copy does it."""
    return isinstance(step, (RopePermute, Rows)) or (isinstance(step, Take) and step.axis == 0)


def step_shape(shape: tuple, steps) -> tuple:
    shape = tuple(shape)
    for s in steps:
        if isinstance(s, Transpose):
            shape = shape[::-1]
        elif isinstance(s, Rows):
            shape = (s.end - s.start,) + shape[1:]
    return shape


def inverse(step):
    if isinstance(step, Transpose):
        return step
    if isinstance(step, RopePermute):
        return RopePermute(step.heads, "half" if step.to == "interleaved" else "interleaved", step.dims)
    if isinstance(step, Offset):
        return Offset(-step.value)
    if isinstance(step, Scale):
        return Scale(1 / step.factor)
    if isinstance(step, Gather) and step.take is None:
        return Take(step.axis, tuple(int(i) for i in np.argsort(gather_index(step))))
    raise TypeError(f"can't invert {step!r}")  # a take Gather is a scatter, handled by the caller


def simplify(steps) -> tuple:
    """Drop adjacent pairs that undo each other (Hugging Face's Q/K permutation into
    llama.cpp's layout and the plan's permutation back, a transpose undone)."""
    out: list = []
    for s in steps:
        if out and _undoes(out[-1], s):
            out.pop()
        else:
            out.append(s)
    return tuple(out)


def _undoes(a, b) -> bool:
    if isinstance(a, Transpose) and isinstance(b, Transpose):
        return True
    if isinstance(a, Offset) and isinstance(b, Offset):
        return a.value + b.value == 0
    if isinstance(a, Scale) and isinstance(b, Scale):
        return math.isclose(a.factor * b.factor, 1.0, rel_tol=1e-9)
    return isinstance(a, RopePermute) and isinstance(b, RopePermute) and (a.heads, a.dims) == (b.heads, b.dims) \
        and a.to != b.to


@dataclass
class Part:
    """One checkpoint tensor's share of a param."""
    tensor: str                 # the checkpoint tensor by its role, "blk.0.attn_q.weight" (roles.tensor_key)
    steps: tuple                # applied to the checkpoint's array
    scatter: tuple | None = None  # (axis, indices) into the param's buffer, for a slice of a fused param


@dataclass
class Recipe:
    path: str                   # the param
    shape: tuple                # its shape
    parts: list = field(default_factory=list)
    post: tuple = ()            # applied to the buffer once every part is in
    buffer: tuple | None = None  # the buffer's shape when parts scatter into it

    @property
    def direct(self) -> str | None:
        """The checkpoint tensor this param is, unchanged; None when it is re-laid out."""
        if len(self.parts) == 1 and not self.parts[0].steps and self.parts[0].scatter is None and not self.post:
            return self.parts[0].tensor
        return None

    def build(self, read) -> np.ndarray:
        """The param's values (float), reading each checkpoint tensor with `read(name)`."""
        if self.buffer is None:
            p = self.parts[0]
            arr = run_steps(read(p.tensor), p.steps)
        else:
            arr = None
            for p in self.parts:
                x = run_steps(read(p.tensor), p.steps)
                if arr is None:
                    arr = np.empty(self.buffer, dtype=x.dtype)
                axis, idx = p.scatter
                index = [slice(None)] * arr.ndim
                index[axis] = np.asarray(idx, dtype=np.int64)
                arr[tuple(index)] = x
                del x
        arr = run_steps(arr, self.post)
        return np.ascontiguousarray(arr).reshape(self.shape)


def add_part(recipes: dict, path: str, shape: tuple, tensor: str, to_gguf: tuple, plan_steps: tuple,
             rows: Rows | None = None):
    """Record that `tensor` (brought into llama.cpp's layout by `to_gguf`, then cut to
    `rows` when it is stacked from parts) gives `path` through the plan's `plan_steps`."""
    take_at = next((i for i, s in enumerate(plan_steps) if isinstance(s, Gather) and s.take is not None), None)
    head = tuple(to_gguf) + ((rows,) if rows is not None else ())
    r = recipes.get(path)
    if r is None:
        r = recipes[path] = Recipe(path, tuple(shape))
    if take_at is None:
        r.parts.append(Part(tensor, simplify(head + tuple(inverse(s) for s in reversed(plan_steps)))))
        return
    pre, take, post = plan_steps[:take_at], plan_steps[take_at], plan_steps[take_at + 1:]
    steps = simplify(head + tuple(inverse(s) for s in reversed(post)))
    idx = gather_index(take)
    r.buffer = step_shape(shape, pre)
    r.post = simplify(tuple(inverse(s) for s in reversed(pre)))
    r.parts.append(Part(tensor, steps, (take.axis, tuple(int(i) for i in idx))))
