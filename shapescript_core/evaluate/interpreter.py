"""Running a checked function, statement by statement and operation by operation.

The interpreter reads the checked program only: each function's syntax tree and the
checker's results for it (the type of every expression, how every call resolved, what
every pattern name was bound to). A tensor's dimensions are always, in order, the axes
of its expression's type, so combining values by axis name is a matter of reading the
two types (`axes.align`). What each builtin computes is in `semantics.py`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..check.builtins import BUILTINS
from ..check.sizes import Size
from ..check.types import DTypeValue, ModelT, ScalarT, StackT, TensorT
from ..dtypes import TABLE
from ..syntax import ast as A
from .axes import PatternRun, align
from .semantics import matmul_values, semantics

TORCH_DTYPE_NAMES = {**{d.name: d.torch for d in TABLE if d.language}, "Index": "int64"}


class EvaluateError(Exception):
    """The program can't be evaluated: it does not check, or an input is missing or wrong."""


@dataclass(frozen=True)
class ModelRef:
    """A model value: its model's name and its params' path prefix (`layers.3`)."""
    name: str
    prefix: str

    def path(self, field: str) -> str:
        return f"{self.prefix}.{field}" if self.prefix else field


@dataclass(frozen=True)
class StackRef:
    model: str
    prefix: str
    count: int


def torch_dtype(name: str, float64: bool = False):
    """The torch dtype of a ShapeScript dtype; f32 as float64 in a float64 evaluation."""
    import torch  # torch is not a dependency of the core: imported only when evaluating
    return getattr(torch, "float64" if float64 and name == "f32" else TORCH_DTYPE_NAMES[name])


class Frame:
    """One running function: its locals and the sizes its size variables have."""

    def __init__(self, fn, sizes: dict):
        self.fn = fn  # Function
        self.locals: dict = {}
        self.sizes = sizes  # base symbol (dims and size variables) -> int

    def size(self, s: Size) -> int:
        v = s.evaluate(self.sizes)
        if v is None or v.denominator != 1:
            raise EvaluateError(f"the size `{s}` is not known when `{self.fn.name}` runs")
        return int(v)


@dataclass
class Function:
    name: str
    res: object  # FnResult
    sig: object  # Signature
    env: object  # FileEnv


class Call:
    """A builtin call's arguments as `semantics` reads them."""

    def __init__(self, ev, frame: Frame, call: A.Call, info, values: dict, rest: list):
        self.ev, self.frame, self.call, self.info = ev, frame, call, info
        self.values, self.rest = values, rest
        types = frame.fn.res.types
        self.types = {p: types.get(id(a.value)) for p, a in info.arg_map.items() if a is not None}
        self.rest_types = [types.get(id(a.value)) for p, a in info.args if p is None]
        self.out = types.get(id(call))

    def v(self, name):
        if name in self.values:
            return self.values[name]
        for p, d in BUILTINS[self.info.target].params:
            if p == name:
                return d
        return None

    def t(self, name):
        return self.types.get(name)

    def size(self, s: Size) -> int:
        return self.frame.size(s)

    def float_dtype(self):
        """The dtype of f32 values: float32, or float64 in a float64 evaluation."""
        return torch_dtype("f32", self.ev.float64)

    def over(self):
        """The canonical axis names of `over=`, or None when the call has none."""
        a = self.info.arg_map.get("over")
        if a is None:
            return None
        items = a.value.items if isinstance(a.value, A.TupleExpr) else [a.value]
        env = self.frame.fn.env
        return [env.dim(i.id) if env.dim(i.id) is not None else Size.sym(i.id) for i in items]

    def pattern_info(self):
        return self.call.pattern

    def pattern(self) -> PatternRun:
        frame = self.frame
        bind = frame.fn.res.patterns[id(self.call)].bind

        def size_of(name):
            if name in frame.sizes:
                return frame.sizes[name]
            d = frame.fn.env.dim(name)
            if d is not None:
                return frame.size(d)
            a = bind.get(name)
            if a is not None:
                v = a.size.evaluate(frame.sizes)
                if v is not None and v.denominator == 1:
                    return int(v)
            return None
        run = PatternRun(size_of)
        self.ev.after_pattern.append((frame, run))
        return run


class Evaluator:
    def __init__(self, ws, weights: dict, float64: bool = False, noise=None):
        self.ws = ws
        self.weights = weights
        self.float64 = float64  # f32 values computed in float64: a reference for rounding
        self.noise = noise  # (relative size, torch.Generator): every float result moved that much (`rounded`)
        self.semantics = semantics()
        self.after_pattern: list = []

    # ------------------------------------------------------------ functions
    def function(self, item) -> Function:
        an = self.ws.analyze(item.path)
        res = an.fns.get(item.name) if an is not None else None
        sig = an.env.sig(item.name) if an is not None else None
        if res is None or sig is None or item.syntax_errors:  # (a body that didn't parse)
            raise EvaluateError(f"`{item.name}` did not check")
        return Function(item.name, res, sig, an.env)

    def run(self, fn: Function, args: dict):
        """fn called with `args` (parameter name -> value; a missing one takes its default)."""
        import torch  # torch is not a dependency of the core: imported only when evaluating
        sizes = dict(fn.env.dims.values)
        frame = Frame(fn, sizes)
        for p in fn.sig.params:
            if p.name in args and args[p.name] is not None:
                v = args[p.name]
            elif p.node.default is not None:
                v = self.expr(frame, p.node.default)
            else:
                raise EvaluateError(f"`{fn.name}` needs its parameter `{p.name}`")
            if isinstance(p.type, TensorT) and isinstance(v, torch.Tensor):
                if v.dim() != len(p.type.axes):
                    raise EvaluateError(f"`{p.name}` of `{fn.name}` has {v.dim()} axes, its type "
                                        f"{len(p.type.axes)}")
                for a, n in zip(p.type.axes, v.shape):
                    sym = a.size.single_symbol()
                    if sym is not None and sym not in fn.env.dims.values:
                        sizes.setdefault(sym, int(n))
            frame.locals[p.name] = v
        return self.block(frame, fn.res.item.body)

    def block(self, frame: Frame, stmts):
        for s in stmts:
            if isinstance(s, A.Assign):
                frame.locals[s.target] = self.expr(frame, s.value)
            elif isinstance(s, A.TupleAssign):
                values = self.expr(frame, s.value)
                for (name, _), v in zip(s.targets, values):
                    frame.locals[name] = v
            elif isinstance(s, A.Return):
                return self.expr(frame, s.value)
            elif isinstance(s, A.For):
                stack = self.expr(frame, s.iter)
                for i in range(stack.count):
                    if s.index is not None:
                        frame.locals[s.index] = i  # the copy's index: a compile-time integer
                    frame.locals[s.var] = ModelRef(stack.model, f"{stack.prefix}.{i}")
                    self.block(frame, s.body)
        return None

    # ------------------------------------------------------------ expressions
    def type_of(self, frame: Frame, e):
        return frame.fn.res.types.get(id(e))

    def expr(self, frame: Frame, e):
        if isinstance(e, A.Name):
            return self.name(frame, e)
        if isinstance(e, A.Number):
            return int(e.value) if e.is_int else float(e.value)
        if isinstance(e, A.Const):
            return {"true": True, "false": False, "inf": float("inf")}[e.value]
        if isinstance(e, A.String):
            return e.value
        if isinstance(e, A.Unop):
            return self.unop(frame, e)
        if isinstance(e, A.Binop):
            return self.binop(frame, e)
        if isinstance(e, A.FieldRead):
            return self.field(frame, e)
        if isinstance(e, A.Mask):
            return self.mask(frame, e)
        if isinstance(e, A.TupleExpr):
            return tuple(self.expr(frame, i) for i in e.items)
        if isinstance(e, A.IfExpr):
            return self.if_expr(frame, e)
        if isinstance(e, A.Call):
            return self.call(frame, e)
        raise EvaluateError(f"can't evaluate `{frame.fn.res.item.src(e.pos)}`")

    def name(self, frame: Frame, e: A.Name):
        if e.id in frame.locals:
            return frame.locals[e.id]
        t = self.type_of(frame, e)
        if isinstance(t, ScalarT) and t.size is not None:
            return frame.size(t.size)
        if isinstance(t, DTypeValue):
            return torch_dtype(t.dtype.name, self.float64)
        raise EvaluateError(f"`{e.id}` has no value")

    def unop(self, frame: Frame, e: A.Unop):
        import torch  # torch is not a dependency of the core: imported only when evaluating
        v = self.expr(frame, e.operand)
        if e.op == "-":
            return -v
        return ~v if isinstance(v, torch.Tensor) else not v

    def binop(self, frame: Frame, e: A.Binop):
        import torch  # torch is not a dependency of the core: imported only when evaluating
        lv, rv = self.expr(frame, e.left), self.expr(frame, e.right)
        lt, rt, out = self.type_of(frame, e.left), self.type_of(frame, e.right), self.type_of(frame, e)
        if e.op == "@":
            return matmul_values(lv, rv, lt, rt, out)
        names = [a.name for a in out.axes] if isinstance(out, TensorT) else []
        if isinstance(lt, TensorT):
            lv = align(lv, [a.name for a in lt.axes], names)
        if isinstance(rt, TensorT):
            rv = align(rv, [a.name for a in rt.axes], names)
        tensors = isinstance(lv, torch.Tensor) or isinstance(rv, torch.Tensor)
        op = e.op
        if op == "+":
            r = lv + rv
        elif op == "-":
            r = lv - rv
        elif op == "*":
            r = lv * rv
        elif op == "/":
            r = lv / rv
        elif op == "**":
            r = lv ** rv
        elif op == "//":
            r = lv // rv
        elif op == "%":
            r = lv % rv
        elif op == "==":
            r = lv == rv
        elif op == "!=":
            r = lv != rv
        elif op == "<":
            r = lv < rv
        elif op == "<=":
            r = lv <= rv
        elif op == ">":
            r = lv > rv
        elif op == ">=":
            r = lv >= rv
        elif op == "and":
            r = (lv & rv) if tensors else (lv and rv)
        elif op == "or":
            r = (lv | rv) if tensors else (lv or rv)
        else:
            raise EvaluateError(f"can't evaluate the operator `{op}`")
        if isinstance(out, TensorT) and isinstance(r, torch.Tensor) and r.dim() == len(out.axes):
            shape = [frame.size(a.size) for a in out.axes]
            if list(r.shape) != shape:
                r = r.expand(shape)
        return self.rounded(r)

    def rounded(self, v):
        """A float tensor as computed, or (a rounding probe, `noise`) each value moved by a
        random few units of its last place: how far another order of the same operations
        could move it."""
        if self.noise is None or not hasattr(v, "is_floating_point") or not v.is_floating_point():
            return v
        eps, g = self.noise
        import torch  # torch is not a dependency of the core: imported only when evaluating
        return v * (1 + eps * torch.randn(v.shape, generator=g, dtype=v.dtype))

    def if_expr(self, frame: Frame, e: A.IfExpr):
        """`A if C else B`: C is a compile-time value (a number, or a scalar parameter's
        tensor); only the chosen branch is computed."""
        import torch  # torch is not a dependency of the core: imported only when evaluating
        c = self.expr(frame, e.cond)
        if isinstance(c, torch.Tensor):
            c = bool(c.item())
        return self.expr(frame, e.then if c else e.other)

    def field(self, frame: Frame, e: A.FieldRead):
        obj = self.expr(frame, e.obj)
        t = self.type_of(frame, e)
        path = obj.path(e.name)
        if isinstance(t, ModelT):
            return ModelRef(t.name, path)
        if isinstance(t, StackT):
            return StackRef(t.model, path, frame.size(t.count))
        if path not in self.weights:
            raise EvaluateError(f"the weights have no `{path}`")
        return self.weights[path]

    def mask(self, frame: Frame, e: A.Mask):
        import torch  # torch is not a dependency of the core: imported only when evaluating
        t = self.type_of(frame, e)
        rows, cols = (frame.size(a.size) for a in t.axes)
        i = torch.arange(rows).unsqueeze(1)
        j = torch.arange(cols).unsqueeze(0)
        return j <= i

    def call(self, frame: Frame, e: A.Call):
        info = frame.fn.res.calls.get(id(e))
        if info is None:
            raise EvaluateError(f"the call `{frame.fn.res.item.src(e.func.pos)}` did not check")
        if info.builtin is None:
            callee = self.function(frame.fn.env.sig(info.target).item)
            args = {p: self.expr(frame, a.value) for p, a in info.args if a is not None}
            return self.run(callee, args)
        b = info.builtin
        values, rest = {}, []
        for p, a in info.args:
            if a is None or p in b.axis_params:
                continue
            if p is None:
                rest.append(self.expr(frame, a.value))
            else:
                values[p] = self.expr(frame, a.value)
        out = self.semantics[b.name](Call(self, frame, e, info, values, rest))
        out = tuple(self.rounded(o) for o in out) if isinstance(out, tuple) else self.rounded(out)
        while self.after_pattern:  # names a pattern binds are size variables from here on
            f, run = self.after_pattern.pop()
            for name, n in run.sizes.items():
                if n is not None:
                    f.sizes.setdefault(name, int(n))
        return out
