"""The reference evaluator: run a checked ShapeScript function on torch tensors.

    from shapescript_core.evaluate import load
    prog = load(path="model.ss", dims={"L": 2})
    weights = prog.random_weights("forward", seed=0)
    logits = prog.run("forward", weights, ids=ids, pos=pos)

or in one call: `evaluate(source_text, "forward", weights=None, seed=0, ids=ids, pos=pos)`.

It computes what the checked program means, op by op from the syntax tree and the
checker's types, without generating code: slow, and written to be obviously right. The
exporters are tested against it (tests/test_differential.py). torch is not a dependency
of the core: it is imported when a function runs. See docs/evaluate.md.
"""
from __future__ import annotations

import os
import zlib
from typing import Optional

from ..check.types import ModelT, StackT, TensorT
from ..diagnostics import Severity
from ..syntax.ast import Name as A_Name
from ..render import render_human
from ..workspace import Workspace
from .interpreter import EvaluateError, Evaluator, ModelRef, torch_dtype

__all__ = ["load", "evaluate", "Program", "EvaluateError"]


class Program:
    """A checked source, ready to run any of its functions."""

    def __init__(self, ws: Workspace, path: str):
        self.ws = ws
        self.path = path
        an = ws.analyze(path)
        errors = [d for d in ws.diagnostics(path) if d.severity == Severity.ERROR] if an is not None else []
        if an is None:
            raise EvaluateError(f"can't read `{path}`")
        if errors:
            shown = "\n".join(render_human(d, lambda p: ws.file(p).lines) for d in errors)
            raise EvaluateError(f"`{os.path.basename(path)}` does not check:\n{shown}")
        self.analysis = an

    def _item(self, fn: str):
        sig = self.analysis.env.sig(fn)
        if sig is None:
            raise EvaluateError(f"no function `{fn}` in `{os.path.basename(self.path)}`")
        return sig.item

    def model_of(self, fn: str) -> Optional[str]:
        """The model a function takes first, if it takes one."""
        sig = self.analysis.env.sig(fn)
        first = sig.params[0].type if sig is not None and sig.params else None
        return first.name if isinstance(first, ModelT) else None

    def params(self, model: str) -> list:
        """[(path, shape, dtype name, field)] of every param of a model, in field order."""
        env = self.analysis.env
        dims = env.dims.values
        out = []
        todo = [(model, "")]
        while todo:
            name, prefix = todo.pop(0)
            m = env.model(name)
            if m is None:
                raise EvaluateError(f"no model `{name}`")
            for fname, f in m.fields.items():
                path = f"{prefix}.{fname}" if prefix else fname
                if isinstance(f.type, ModelT):
                    todo.append((f.type.name, path))
                elif isinstance(f.type, StackT):
                    todo.extend((f.type.model, f"{path}.{i}") for i in range(_int(f.type.count, dims, path)))
                elif isinstance(f.type, TensorT):
                    out.append((path, tuple(_int(a.size, dims, path) for a in f.type.axes), f.type.dtype.name, f))
        return out

    def random_weights(self, fn: str, seed: int = 0, std: Optional[float] = None) -> dict:
        """Random weights for the model `fn` takes, each param from a stream of its own
        (seeded by `seed` and its path): each param drawn as its field's
        initializer says (`ones`, `zeros`, `normal(STD)`, default normal(0.02)), or
        every float param from normal(std) when `std` is given (tests want weights
        far from ones, so that a mix-up shows)."""
        import torch  # torch is not a dependency of the core: imported only when evaluating
        model = self.model_of(fn)
        if model is None:
            return {}
        out = {}
        for path, shape, dtype, f in self.params(model):
            # each param from its own stream: a param's values do not depend on the others
            g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(path.encode()))
            if dtype not in ("f16", "bf16", "f32", "f64"):
                out[path] = torch.zeros(shape, dtype=torch_dtype(dtype))
                continue
            init = f.node.init
            if std is not None:
                t = torch.randn(shape, generator=g) * std
            elif isinstance(init, A_Name) and init.id in ("ones", "zeros"):
                t = (torch.ones if init.id == "ones" else torch.zeros)(shape)
            else:
                s = 0.02
                if init is not None and init.args and hasattr(init.args[0].value, "value"):
                    s = float(init.args[0].value.value)
                t = torch.randn(shape, generator=g) * s
            out[path] = t.to(torch_dtype(dtype))
        return out

    def run(self, fn: str, weights: Optional[dict] = None, *, float64: bool = False, noise=None, **inputs):
        """Call `fn` with the model's `weights` (param path -> tensor) and its other
        parameters by name (tensors, or numbers for scalar parameters). Returns what it
        returns: a tensor whose axes are in the order of its return type, or a tuple.
        `float64`: compute every f32 value in float64 (give float64 weights and inputs),
        the value f32 computations approximate. `noise` (relative size, torch.Generator):
        a rounding probe, every float result of an operation moved by about that much."""
        ev = Evaluator(self.ws, dict(weights or {}), float64, noise)
        f = ev.function(self._item(fn))
        args = dict(inputs)
        model = self.model_of(fn)
        if model is not None:
            args[f.sig.params[0].name] = ModelRef(model, "")
        return ev.run(f, args)


def load(source: Optional[str] = None, *, path: Optional[str] = None, dims: Optional[dict] = None) -> Program:
    """Check a source (its text, or the file at `path`, whose imports are read beside
    it) with `dims` overriding dims' values, as `--dim` does; EvaluateError if it does
    not check."""
    if (source is None) == (path is None):
        raise EvaluateError("give the source text or a path, one of the two")
    ws = Workspace(dict(dims or {}))
    if path is not None:
        p = ws.norm(path)
        if ws.file(p) is None:
            raise EvaluateError(f"can't read `{path}`")
    else:
        p = ws.norm(os.path.join(os.getcwd(), "<source>.ss"))
        ws.set_text(p, source)
    return Program(ws, p)


def evaluate(source: Optional[str], fn: str, weights: Optional[dict] = None, *, path: Optional[str] = None,
             seed: int = 0, dims: Optional[dict] = None, **inputs):
    """`load(source or path, dims).run(fn, weights, **inputs)`; without weights, random
    ones from the fields' initializers drawn with `seed`."""
    prog = load(source, path=path, dims=dims)
    if weights is None:
        weights = prog.random_weights(fn, seed)
    return prog.run(fn, weights, **inputs)


def _int(s, dims, path) -> int:
    v = s.evaluate(dims)
    if v is None or v.denominator != 1:
        raise EvaluateError(f"`{path}` has a size without a value: give it with dims={{...}}")
    return int(v)


