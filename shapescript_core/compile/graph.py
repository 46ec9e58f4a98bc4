"""The op graph: checked functions lowered to nodes that carry the checker's resolved types.

Two views of one program, both built from the checker's results (types per node,
resolved calls, pattern bindings), never by re-checking:

- `build_program(db, path, fn_name)` gives a `Program`: one `FnGraph` per function the
  exported function reaches. A `FnGraph` keeps the source's statements (bindings, `for`
  loops over stacks, the return) so that code generation can mirror the source, one
  method per function and one line of code per statement.
- `trace(db, path, fn_name)` gives a `Trace`: the exported function fully inlined
  (calls inlined, stacks unrolled, model fields resolved to param paths such as
  `layers.0.attn.wq`), nodes in topological order. Architecture matchers (GGUF) read it:
  it does not depend on how the source is split into functions or what things are named.

Node ops:
  "input"    a parameter of the exported function (attrs: name)            [trace only]
  "param"    a model param read (attrs: path, field, model)               [trace only]
  "local"    a read of a local variable (attrs: name)                     [FnGraph only]
  "field"    `obj.name` (inputs: [obj]; attrs: name)                       [FnGraph only]
  "call"     a user function call (attrs: fn, args {param: Node|None})     [FnGraph only]
  "const"    a number or `inf`/`true`/`false` (attrs: value)
  "size"     a dim or size variable used as a value (attrs: name, size: Size)
  "dtype"    a dtype written as a value (attrs: dtype)
  "string"   a string literal (attrs: value)
  "causal_mask"  `causal[a b]` (attrs: axes, the two Axis of its type)
  "tuple"    a tuple of values; "getitem" picks one (attrs: index)         [getitem: trace]
  operators  "add" "sub" "mul" "div" "pow" "matmul" "neg" "not" "and" "or"
             "eq" "ne" "lt" "le" "gt" "ge" "floordiv" "mod"
  "if"       `A if C else B` (inputs: [C, A, B]); a trace keeps only the chosen branch
  builtins   the builtin's name ("linear", "rms_norm", "rope", "einsum", ...); attrs:
             args {param: Node} (positional and keyword arguments bound to the
             builtin's parameters), rest [Node] (variadic tensors), over [Size] (the
             canonical axis names of `over=`), over_names [str], pattern (a
             `PatternInfo`, for rearrange / split / repeat / einsum), and the values
             of scalar keywords (eps, theta, style, scale) where they are known at
             export: a literal in a FnGraph; in a trace, any expression of literals,
             dims and the scalar parameters its calls pass (`fold`).

Every node has `type` (the checker's Type: TensorT with Axis(name, size) per axis, in
the order the tensor holds them) and `where` (path, 1-based line). In a trace, `axes`
gives each axis's display name and `shape` its integer size where the dims fix it
(None for a size variable such as the token axes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..check.builtins import BUILTINS
from ..check.codes.e0413 import compile_error_text as e0413_text
from ..check.patterns import flat_names
from ..check.rope_scaling import KEYWORDS as ROPE_KEYWORDS, SCALINGS
from ..check.sizes import Size
from ..check.static import FUNCTIONS as STATIC_FUNCTIONS, OPERATORS as STATIC_OPERATORS
from ..check.types import ModelT, ScalarT, StackT, TensorT, TupleT
from ..post_order import bottom_up
from ..syntax import ast as A
from ..targets import exported
from .reach import Reach

BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow", "@": "matmul",
          "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
          "and": "and", "or": "or", "//": "floordiv", "%": "mod"}
OP_SOURCE = {op: src for src, op in BINOPS.items()}  # graph op -> its source operator
SCALAR_KEYWORDS = ("eps", "theta", "style", "scale", "value", "window", "softcap", "c", "scaling",
                   "rotary_dims") + ROPE_KEYWORDS


class CompileError(Exception):
    """The program can't be compiled (a construct the code generator does not support)."""

    def __init__(self, message: str, where: tuple = ("", 0)):
        super().__init__(message)
        self.where = where


FINITE_KEYWORDS = ("eps", "theta", "scale")
UNFOLDED = "not known at export"  # a scalar keyword whose value the trace can't fold  # `value` may be ±inf (masked_fill), written float("inf")


def finite_scalar(name: str, value, where):
    """A scalar keyword's value, checked finite: a generated file holds finite numbers only."""
    if name in FINITE_KEYWORDS and isinstance(value, float) and not math.isfinite(value):
        raise CompileError(f"`{name}` is {value}, not a finite number (a literal too large for a float?)", where)
    return value


@dataclass(eq=False)
class Node:
    op: str
    inputs: list
    attrs: dict
    type: object
    where: tuple = ("", 0)
    ast: object = None
    axes: list = field(default_factory=list)  # display names (trace)
    shape: tuple = ()  # ints or None (trace)

    def __repr__(self):
        return f"<{self.op} {self.attrs.get('name') or self.attrs.get('path') or ''}@{self.where[1]}>"


@dataclass
class PatternInfo:
    """A pattern call's sides and what each name was bound to (checker's Matcher)."""

    inputs: list  # [A.PSide]
    output: A.PSide
    bind: dict  # pattern name -> Axis
    split_k: Optional[int] = None

    @staticmethod
    def side_items(side: A.PSide) -> list:
        """A side as plain data: names (str), ints, and groups (lists of those)."""
        def item(i):
            if isinstance(i, A.PName):
                return i.name
            if isinstance(i, A.PInt):
                return i.value
            return [item(x) for x in i.items]
        return [item(i) for i in side.items]

    def as_data(self) -> dict:
        return {"inputs": [self.side_items(s) for s in self.inputs], "output": self.side_items(self.output)}


@dataclass
class Bind:
    targets: list  # [str]; one name, or several for a destructuring
    value: Node
    line: int
    src: str
    node: object = None


@dataclass
class Loop:
    var: str
    iter: Node
    body: list
    line: int
    src: str
    index: Optional[str] = None  # `for i, layer in …`: the copy's index (v0.2)


@dataclass
class Ret:
    value: Node
    line: int
    src: str


@dataclass
class FnGraph:
    name: str
    item: A.FnItem
    res: object  # FnResult
    sig: object  # Signature
    env: object  # FileEnv
    params: list  # [(name, Type, default Node or None)]
    body: list  # [Bind | Loop | Ret]
    ret: object = None  # the return Type

    @property
    def path(self) -> str:
        return self.item.path

    @property
    def model_param(self) -> Optional[str]:
        """The first parameter when it is a model: the function is then that model's method."""
        if self.params and isinstance(self.params[0][1], ModelT):
            return self.params[0][0]
        return None


@dataclass
class Program:
    db: object
    path: str
    entry: FnGraph
    fns: dict  # name -> FnGraph
    env: object  # the entry file's FileEnv
    dims: dict  # dim name -> int value (None when it has none)
    _values: dict = field(default_factory=dict, repr=False)  # value_of's memo

    def model(self, name: str):
        for g in [self.entry] + list(self.fns.values()):
            m = g.env.model(name)
            if m is not None:
                return m
        return None

    def value_of(self, s: Size) -> Optional[int]:
        """A size's value with the dims' values (memoized: a traced stack of 100,000
        layers asks the same few sizes at every node, and evaluating one is Fractions)."""
        memo = self._values
        got = memo.get(s, memo)
        if got is not memo:
            return got
        v = s.evaluate(self.env.dims.values)
        got = None if v is None or v.denominator != 1 else int(v)
        memo[s] = got
        return got


# ---------------------------------------------------------------- building
class _Lowerer:
    def __init__(self, res, env, item, line0: int = 0):
        self.res = res
        self.env = env
        self.item = item
        self.line0 = line0  # 0-based line of the item's start in its file

    def line(self, pos) -> int:
        return self.item.text.count("\n", 0, pos[0]) + 1 + self.line0

    def where(self, pos) -> tuple:
        return (self.item.path, self.line(pos))

    def src_line(self, pos) -> str:
        return " ".join(self.item.src(pos).split())

    # -- statements
    def body(self, stmts) -> list:
        out = []
        for s in stmts:
            if isinstance(s, A.Assign):
                out.append(Bind([s.target], self.expr(s.value), self.line(s.pos), self.src_line(s.pos), s))
            elif isinstance(s, A.TupleAssign):
                out.append(Bind([n for n, _ in s.targets], self.expr(s.value), self.line(s.pos),
                                self.src_line(s.pos), s))
            elif isinstance(s, A.Return):
                out.append(Ret(self.expr(s.value), self.line(s.pos), self.src_line(s.pos)))
            elif isinstance(s, A.For):
                head = self.src_line((s.pos[0], s.iter.pos[1])) + ":"  # one line: it becomes a comment
                out.append(Loop(s.var, self.expr(s.iter), self.body(s.body), self.line(s.pos), head, s.index))
        return out

    # -- expressions (iterative: a 1,000-term sum must not exhaust the stack)
    def expr(self, e) -> Node:
        return bottom_up(e, _operands, self._node)

    def _t(self, e):
        return self.res.types.get(id(e))

    def _node(self, e, done) -> Node:
        t = self._t(e)
        w = self.where(e.pos)
        if isinstance(e, A.Name):
            return self._name(e, t, w)
        if isinstance(e, A.Number):
            return Node("const", [], {"value": int(e.value) if e.is_int else float(e.value)}, t, w, e)
        if isinstance(e, A.Const):
            v = {"true": True, "false": False, "inf": float("inf")}[e.value]
            return Node("const", [], {"value": v}, t, w, e)
        if isinstance(e, A.String):
            return Node("string", [], {"value": e.value}, t, w, e)
        if isinstance(e, A.Unop):
            inner = done[id(e.operand)]
            if e.op == "-" and inner.op == "const" and isinstance(inner.attrs["value"], (int, float)) \
                    and not isinstance(inner.attrs["value"], bool):
                return Node("const", [], {"value": -inner.attrs["value"]}, t, w, e)
            return Node("neg" if e.op == "-" else "not", [inner], {}, t, w, e)
        if isinstance(e, A.Binop):
            return Node(BINOPS[e.op], [done[id(e.left)], done[id(e.right)]], {}, t, w, e)
        if isinstance(e, A.FieldRead):
            return Node("field", [done[id(e.obj)]], {"name": e.name}, t, w, e)
        if isinstance(e, A.Mask):
            axes = list(t.axes) if isinstance(t, TensorT) else []
            return Node("causal_mask", [], {"axes": axes}, t, w, e)
        if isinstance(e, A.TupleExpr):
            return Node("tuple", [done[id(x)] for x in e.items], {}, t, w, e)
        if isinstance(e, A.IfExpr):
            return Node("if", [done[id(e.cond)], done[id(e.then)], done[id(e.other)]], {}, t, w, e)
        if isinstance(e, A.Call):
            return self._call(e, t, w, done)
        raise CompileError(f"can't compile `{self.item.src(e.pos)}`", w)

    def _name(self, e: A.Name, t, w) -> Node:
        if isinstance(t, ScalarT) and t.size is not None and not self._is_local(e):
            return Node("size", [], {"name": e.id, "size": t.size}, t, w, e)
        if t is not None and getattr(t, "kind", "") == "dtype":
            return Node("dtype", [], {"dtype": t.dtype.name}, t, w, e)
        return Node("local", [], {"name": e.id}, t, w, e)

    def _is_local(self, e: A.Name) -> bool:
        return any(n == e.id for n, _, _ in self.res.locals_at)

    def _call(self, call: A.Call, t, w, done) -> Node:
        info = self.res.calls.get(id(call))
        if info is None:
            raise CompileError(f"can't compile the call `{self.item.src(call.func.pos)}`", w)
        if info.builtin is None:
            args = {}
            for pname, arg in info.args:
                args[pname] = done[id(arg.value)] if arg is not None else None
            inputs = [n for n in args.values() if n is not None]
            return Node("call", inputs, {"fn": info.target, "args": args}, t, w, call)
        b = info.builtin
        args, rest, attrs = {}, [], {}
        for pname, arg in info.args:
            if arg is None:
                continue
            if pname is None:
                rest.append(done[id(arg.value)])
            elif pname in b.axis_params:
                names, shown = self._axes(arg.value)
                attrs["over"], attrs["over_names"] = names, shown
            else:
                n = done[id(arg.value)]
                args[pname] = n
                if pname in SCALAR_KEYWORDS and n.op in ("const", "string"):
                    attrs[pname] = finite_scalar(pname, n.attrs["value"], w)
        attrs["args"] = args
        attrs["rest"] = rest
        if b.pattern:
            m = self.res.patterns.get(id(call))
            if m is None or call.pattern is None:
                raise CompileError(f"can't compile `{b.name}`: its pattern did not check", w)
            attrs["pattern"] = PatternInfo(list(call.pattern.inputs), call.pattern.output, dict(m.bind), m.split_k)
        inputs = list(args.values()) + rest
        return Node(b.name, inputs, attrs, t, w, call)

    def _axes(self, node):
        items = node.items if isinstance(node, A.TupleExpr) else [node]
        names, shown = [], []
        for it in items:
            if not isinstance(it, A.Name):
                raise CompileError("`over=` takes axis names", self.where(it.pos))
            d = self.env.dim(it.id)
            names.append(d if d is not None else Size.sym(it.id))
            shown.append(it.id)
        return names, shown


def _operands(e) -> list:
    """What _node reads of e: its operands' nodes, in the order they are lowered."""
    return A.children(e, A.OPERANDS)


def lower_function(res, sig, env, db=None) -> FnGraph:
    item = res.item
    f = db.file(item.path) if db is not None else None
    low = _Lowerer(res, env, item, f.lines.line_of(item.offset) if f is not None else 0)
    params = []
    for p in sig.params:
        default = low.expr(p.node.default) if p.node.default is not None else None
        params.append((p.name, p.type, default))
    return FnGraph(item.name, item, res, sig, env, params, low.body(item.body), sig.ret)


def find_exported(db, path: str, fn_name: Optional[str]):
    """The exported function's FnItem: `fn_name`, else the file's first exported one
    (targets.py's rule, explicit requests left out)."""
    an = db.analyze(path)
    if an is None:
        return None
    if fn_name:
        it = an.own.get(fn_name)
        return it if isinstance(it, A.FnItem) else None
    pairs = exported(an.own, an.env, db.inputs.default_targets)
    return pairs[0][0] if pairs else None


def build_program(db, path: str, fn_name: Optional[str] = None) -> Program:
    path = db.norm(path)
    an = db.analyze(path)
    if an is None:
        raise CompileError(f"can't read `{path}`")
    item = find_exported(db, path, fn_name)
    if item is None:
        raise CompileError(f"no function to export in {path}" if not fn_name else f"`{fn_name}` isn't a function")
    res = an.fns.get(item.name)
    reach = Reach(db, an)
    fns = reach.closure(res) if res is not None else None
    if fns is None:
        raise CompileError(f"`{item.name}` calls a function that did not check")
    graphs = {}
    for r in fns:
        env = reach.env_of(r.item)
        sig = env.sig(r.item.name)
        if sig is None or sig.broken or r.item.syntax_errors:
            raise CompileError(f"`{r.item.name}` did not check")
        graphs[r.item.name] = lower_function(r, sig, env, db)
    dims = {}
    for name, d in an.env.dims.info.items():
        dims[name] = None
        if d.canon is not None:
            v = d.canon.evaluate(an.env.dims.values)
            if v is not None and v.denominator == 1:
                dims[name] = int(v)
    return Program(db, path, graphs[item.name], graphs, an.env, dims)


# ---------------------------------------------------------------- the inlined trace
@dataclass
class Trace:
    nodes: list  # topological order
    inputs: dict  # exported parameter name -> Node("input")
    output: Node
    program: Program
    params: dict = field(default_factory=dict)  # param path -> Node("param")
    # (id of an attention call's syntax, the path of the model whose method runs it) ->
    # how many times one forward runs it: a KV cache has one slot per such pair
    attention_runs: dict = field(default_factory=dict)
    # (id of an attention call's syntax, owner path) -> its `window=` folded (an int; None
    # without one; UNFOLDED when the call passes one not known at export)
    attention_windows: dict = field(default_factory=dict)
    rope_settings: dict = field(default_factory=dict)  # owner path -> {rope_setting(rope's attrs)}

    def users(self) -> dict:
        """id(node) -> [nodes that take it as an input]."""
        out: dict = {}
        for n in self.nodes:
            for i in n.inputs:
                out.setdefault(id(i), []).append(n)
        return out


class _Model:
    """A model instance during tracing: its type and its param path prefix."""

    def __init__(self, name: str, prefix: str):
        self.name = name
        self.prefix = prefix

    def path(self, field_name: str) -> str:
        return f"{self.prefix}.{field_name}" if self.prefix else field_name


class _Stack:
    def __init__(self, model: str, prefix: str, count: int):
        self.model = model
        self.prefix = prefix
        self.count = count


class _Tracer:
    def __init__(self, prog: Program, unroll: Optional[int] = None):
        self.prog = prog
        self.unroll = unroll  # at most this many iterations of each stack loop (None: all)
        rendered: dict = {}  # Size -> its name (a dim's, or the size written out): asked at every node

        def render(size, _dims=prog.env.dims):
            r = rendered.get(size)
            if r is None:
                r = rendered[size] = _dims.render(size)
            return r
        self._render = render
        self.nodes: list = []
        self.owners: list = [""]  # the path of the model whose method is running (the root: "")
        self.attention_runs: dict = {}
        self.attention_windows: dict = {}
        self.rope_settings: dict = {}
        self.params: dict = {}
        self.depth = 0

    def emit(self, n: Node) -> Node:
        self._annotate(n)
        self.nodes.append(n)
        return n

    def _annotate(self, n: Node):
        t = n.type
        if isinstance(t, TensorT):
            render = self._render
            n.axes = [render(a.name) for a in t.axes]
            n.shape = tuple(self.prog.value_of(a.size) for a in t.axes)

    def run(self, g: FnGraph, args: dict):
        """Inline g with its parameters bound to values; returns the returned value."""
        self.depth += 1
        if self.depth > 200:
            raise CompileError("the call graph is too deep to trace")
        env = dict(args)
        for name, _, default in g.params:
            if name not in env or env[name] is None:
                env[name] = self.value(default, env, g) if default is not None else None
        owner = env.get(g.model_param) if g.model_param else None  # a function on a model is its method
        self.owners.append(owner.prefix if isinstance(owner, _Model) else self.owners[-1])
        out = self.stmts(g.body, env, g)
        self.owners.pop()
        self.depth -= 1
        return out

    def stmts(self, body, env, g):
        for s in body:
            if isinstance(s, Bind):
                v = self.value(s.value, env, g)
                if len(s.targets) == 1:
                    env[s.targets[0]] = v
                else:
                    for k, name in enumerate(s.targets):
                        env[name] = self._item(v, k, s.value)
            elif isinstance(s, Loop):
                st = self.value(s.iter, env, g)
                if not isinstance(st, _Stack):
                    raise CompileError("`for` runs over a stack", s.iter.where)
                # a loop that binds the index may run each copy differently (its window, its
                # theta): every copy is traced; the others run the same statements each time
                whole = self.unroll is None or s.index is not None
                for i in range(st.count if whole else min(st.count, self.unroll)):
                    if s.index is not None:  # the copy's index, a compile-time integer
                        env[s.index] = Node("const", [], {"value": i}, ScalarT("int"), s.iter.where)
                    env[s.var] = _Model(st.model, f"{st.prefix}.{i}")
                    self.stmts(s.body, env, g)
            elif isinstance(s, Ret):
                return self.value(s.value, env, g)
        return None

    def _item(self, v, k, src: Node):
        if isinstance(v, list):
            return v[k]
        t = v.type.items[k] if isinstance(v.type, TupleT) else None
        return self.emit(Node("getitem", [v], {"index": k}, t, src.where))

    def value(self, root: Node, env, g):
        """The traced value of a FnGraph node (iterative over its inputs)."""
        return bottom_up(root, _traced_inputs, lambda n, done: self._one(n, done, env, g))

    def _one(self, n: Node, done, env, g):
        if n.op == "if":  # only the chosen branch is traced: its condition is known at export
            c = fold(done[id(n.inputs[0])], self.prog)
            if c is None or isinstance(c, str):
                raise CompileError(e0413_text(), n.where)
            return self.value(n.inputs[1] if c else n.inputs[2], env, g)
        if n.op == "local":
            if n.attrs["name"] not in env:
                raise CompileError(f"`{n.attrs['name']}` has no value here", n.where)
            return env[n.attrs["name"]]
        if n.op == "field":
            obj = done[id(n.inputs[0])]
            if not isinstance(obj, _Model):
                raise CompileError("only models have fields", n.where)
            m = self.prog.model(obj.name)
            f = m.fields[n.attrs["name"]]
            path = obj.path(n.attrs["name"])
            if isinstance(f.type, ModelT):
                return _Model(f.type.name, path)
            if isinstance(f.type, StackT):
                count = self.prog.value_of(f.type.count)
                if count is None:
                    raise CompileError(f"the stack `{path}` has no size", n.where)
                return _Stack(f.type.model, path, count)
            p = self.params.get(path)
            if p is None:
                p = self.params[path] = self.emit(
                    Node("param", [], {"path": path, "field": n.attrs["name"], "model": obj.name}, f.type, n.where))
            return p
        if n.op == "call":
            callee = self.prog.fns.get(n.attrs["fn"])
            if callee is None:
                raise CompileError(f"`{n.attrs['fn']}` is not compiled", n.where)
            args = {p: (self.value(a, env, g) if a is not None else None) for p, a in n.attrs["args"].items()}
            return self.run(callee, args)
        if n.op == "tuple":
            return [done[id(i)] for i in n.inputs]
        inputs = [done[id(i)] for i in n.inputs]
        attrs = dict(n.attrs)
        if "args" in attrs:
            attrs["args"] = {k: done[id(v)] for k, v in attrs["args"].items()}
            attrs["rest"] = [done[id(v)] for v in attrs["rest"]]
        if "args" in attrs:
            for k in SCALAR_KEYWORDS:
                v = fold(attrs["args"].get(k), self.prog)
                if v is not None:
                    attrs[k] = v
        out = Node(n.op, inputs, attrs, n.type, n.where, n.ast)
        if n.op == "scaled_dot_product_attention":
            key = (id(n.ast), self.owners[-1])
            self.attention_runs[key] = self.attention_runs.get(key, 0) + 1
            window = None
            if attrs["args"].get("window") is not None:
                window = attrs.get("window", UNFOLDED)
            self.attention_windows[key] = window
        elif n.op == "rope":
            self.rope_settings.setdefault(self.owners[-1], set()).add(rope_setting(attrs))
        return self.emit(out)


def rope_setting(attrs: dict) -> tuple:
    """(theta, scaling, ((keyword, value), …), rotary_dims) of a traced rope, each folded
    (UNFOLDED where the call passes one not known at export; rotary_dims None without it)."""
    args = attrs["args"]

    def folded(k, default):
        return attrs.get(k, UNFOLDED) if args.get(k) is not None else default
    kind = attrs.get("scaling", "none")
    values = tuple((k, folded(k, None)) for k in SCALINGS.get(kind, ()))
    theta = folded("theta", 10000.0)
    return (theta if theta is UNFOLDED else float(theta)), kind, values, folded("rotary_dims", None)


_FOLD_BINOPS = {op: STATIC_OPERATORS[src] for op, src in OP_SOURCE.items() if src in STATIC_OPERATORS}
_FOLD_FUNCTIONS = STATIC_FUNCTIONS


def fold(node, prog) -> Optional[object]:
    """The value of a traced scalar expression known at export (literals, dims and the
    arithmetic and scalar functions of those), or None: a string stays itself."""
    if node is None:
        return None
    if node.op in ("const", "string"):
        return node.attrs["value"]
    if node.op == "size":
        return prog.value_of(node.attrs["size"])
    if not isinstance(node.type, ScalarT) and not (isinstance(node.type, TensorT) and not node.type.axes):
        return None  # a tensor with axes: known only when the model runs
    if node.op == "if":
        c = fold(node.inputs[0], prog)
        return None if c is None or isinstance(c, str) else fold(node.inputs[1] if c else node.inputs[2], prog)
    vals = [fold(i, prog) for i in node.inputs]
    if any(v is None or isinstance(v, str) for v in vals):
        return None
    if any(isinstance(v, bool) for v in vals) and node.op not in ("and", "or", "not", "eq", "ne"):
        return None
    try:
        if node.op == "not" and len(vals) == 1:
            return not vals[0]
        if node.op in _FOLD_BINOPS and len(vals) == 2:
            return _FOLD_BINOPS[node.op](*vals)
        if node.op == "neg" and len(vals) == 1:
            return -vals[0]
        if node.op in _FOLD_FUNCTIONS and len(vals) == 1:
            return _FOLD_FUNCTIONS[node.op](vals[0])
    except (ArithmeticError, ValueError):
        return None  # 1/0 or sqrt(-1): left to run time, where it means what PyTorch says
    return None


def trace(db, path: str, fn_name: Optional[str] = None, dims: Optional[dict] = None,
          unroll: Optional[int] = None) -> Trace:
    """The exported function fully inlined. `dims` are applied by the workspace (its
    dim overrides); the argument is accepted for symmetry with the export request.
    `unroll` caps each stack loop's iterations (every iteration runs the same statements:
    the checker's E3313 traces two, the GGUF writer all); a loop that binds its index
    (`for i, layer in …`) is traced whole, its copies may differ."""
    return trace_program(build_program(db, path, fn_name), unroll)


def trace_program(prog: Program, unroll: Optional[int] = None) -> Trace:
    """The trace of a program already built (see `trace`)."""
    tr = _Tracer(prog, unroll)
    g = prog.entry
    args, inputs = {}, {}
    for k, (name, t, _) in enumerate(g.params):
        if k == 0 and isinstance(t, ModelT):
            args[name] = _Model(t.name, "")
        else:
            args[name] = inputs[name] = tr.emit(Node("input", [], {"name": name}, t, (g.path, g.item and 0)))
    out = tr.run(g, args)
    return Trace(tr.nodes, inputs, out, prog, tr.params, tr.attention_runs, tr.attention_windows, tr.rope_settings)


def trace_function(prog: Program, fn_name: str) -> Trace:
    """One function of a program traced on its own: its model parameter (the first, if
    any) at the param prefix "" (its fields' paths are their names), its other
    parameters as inputs."""
    tr = _Tracer(prog, unroll=1)
    g = prog.fns[fn_name]
    args, inputs = {}, {}
    for k, (name, t, _) in enumerate(g.params):
        if k == 0 and isinstance(t, ModelT):
            args[name] = _Model(t.name, "")
        else:
            args[name] = inputs[name] = tr.emit(Node("input", [], {"name": name}, t, (g.path, 0)))
    out = tr.run(g, args)
    return Trace(tr.nodes, inputs, out, prog, tr.params, tr.attention_runs, tr.attention_windows, tr.rope_settings)


def _traced_inputs(n: Node) -> list:
    """The inputs a traced node's value needs first: none of a call (it traces its own
    body), only the condition of an `if` (the chosen branch is traced once it is known)."""
    return [] if n.op == "call" else n.inputs[:1] if n.op == "if" else n.inputs
