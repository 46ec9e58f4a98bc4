"""Checking one function body: names, shapes, calls, patterns, returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..diagnostics import Diagnostic, debugging, internal_error
from ..syntax import ast as A
from . import ops
from .codes import (e0201, e0204, e0205, e0206, e0301, e0304, e0401, e0404, e0407, e0409, e0411, e0413,
                    similar, w0101)
from ..syntax.codes.e0101 import syntax as syntax_error
from .builtins import BUILTINS, REQUIRED, Bound, Builtin
from .env import Signature, dim_lookup, resolve_type
from .sizes import Size
from .suggest import closest
from .trampoline import run
from .types import (BOOL, DTYPE_NAMES, UNKNOWN, Axis, DType, DTypeValue, ModelT, ScalarT,
                    StackT, StringT, TensorT, TupleT, Type, is_unknown)


@dataclass
class Local:
    name: str
    type: Type
    pos: A.Pos
    used: bool = False
    is_param: bool = False


@dataclass
class CallInfo:
    """How a call resolved: a builtin or a user function, with its size-variable bindings."""

    target: str
    builtin: Optional[Builtin] = None
    sig: Optional[Signature] = None
    bindings: dict = field(default_factory=dict)  # callee size var -> caller Axis
    args: list = field(default_factory=list)  # [(param name, Arg node)] in parameter order
    arg_map: dict = field(default_factory=dict)  # param name -> Arg node


@dataclass(slots=True)
class FnResult:
    item: A.FnItem
    diags: list
    types: dict  # id(node) -> Type
    nodes: dict  # id(node) -> node
    calls: dict  # id(call) -> CallInfo
    callees: dict  # fn name -> [call pos]
    deps: dict  # name -> fingerprint used
    locals_at: list  # [(name, pos, Type)] for every binding (hover, inlay hints)
    svars: dict  # size variable -> Size
    patterns: dict  # id(call) -> Matcher
    ret: Type = UNKNOWN
    field_reads: set = field(default_factory=set)  # (model, field) read by this function
    static: set = field(default_factory=set)  # id(node) of each expression known at compile time
    loops: list = field(default_factory=list)  # [(For, stack count Size)] of each loop with an index
    _restore: Optional[tuple] = field(default=None, repr=False, compare=False)  # slim's (restore, arg)

    def slim(self, restore, arg=None) -> None:
        """Free the per-node detail (DETAIL: types, calls, locals, ... keyed by the body's
        nodes), keeping what the file's own checks read afterwards (the diagnostics, the
        callees, the field reads, the return type). `restore(result, arg)` checks the
        body again and gives a whole FnResult: the next read of a detail field takes its
        detail from it (the body's nodes may be new objects by then: FnItem.drop_body).
        One `restore` serves many results."""
        for k in DETAIL:
            try:
                delattr(self, k)
            except AttributeError:  # slimmed already
                pass
        self._restore = (restore, arg)

    @property
    def slimmed(self) -> bool:
        return self._restore is not None

    def __getattr__(self, name):  # only for an unset slot: a slimmed detail field
        if name not in DETAIL:
            raise AttributeError(name)
        restore = self._restore
        if restore is None:
            raise AttributeError(name)
        full = restore[0](self, restore[1])
        self._restore = None
        for k in DETAIL:
            setattr(self, k, getattr(full, k))
        return getattr(self, name)


# the fields of an FnResult that FnResult.slim frees (its __getattr__ restores them)
DETAIL = ("types", "nodes", "calls", "deps", "locals_at", "svars", "patterns", "static", "loops")


class FnChecker:
    def __init__(self, item: A.FnItem, env):
        self.item = item
        self.env = env
        self.diags: list = []
        self.types: dict = {}
        self.nodes: dict = {}
        self.calls: dict = {}
        self.callees: dict = {}
        self.deps: dict = {}
        self.locals: dict[str, Local] = {}
        self.locals_at: list = []
        self.svars: dict[str, Size] = {}
        self.svar_pos: dict[str, A.Pos] = {}
        self.pattern_info: dict = {}
        self.all_locals: list[Local] = []
        self.field_reads: set = set()
        self.static: set = set()  # id(node) of each expression known at compile time (v0.2)
        self.static_names: set = set()  # the locals that hold compile-time values now
        self.loops: list = []

    # ------------------------------------------------------------ utilities
    def add(self, d: Diagnostic) -> Diagnostic:
        """Report a diagnostic made by one of the code modules' constructors (check/codes/)."""
        self.diags.append(d)
        return d

    def span(self, pos):
        return self.item.span(pos)

    def src(self, pos) -> str:
        return self.item.src(pos)

    def suggest(self, d: Diagnostic, name, what: str, pos):
        """Help naming the closest known name, and a fix that writes it (unsafe: it
        guesses the intent, so `--fix` leaves it to the user)."""
        if not name:
            return
        similar.similar(d, what, name)
        d.fix(similar.replace_with(self.item.span(pos), name))

    def name(self, s: Size) -> str:
        return self.env.dims.render(s)

    def size_text(self, s: Size, numeric: bool = False) -> str:
        if numeric:
            v = self.evaluate(s)
            if v is not None and v.denominator == 1:
                return str(v.numerator)
        return self.name(s)

    def evaluate(self, s: Size):
        return s.evaluate(self.env.dims.values)

    def is_static(self, node) -> bool:
        """Whether a checked expression is a compile-time value (LANGUAGE.md §5)."""
        return id(node) in self.static

    def dim_value(self, name: str):
        """A dim's integer value, or None (no value, or not a dim)."""
        d = self.env.dim(name)
        v = self.evaluate(d) if d is not None else None
        return int(v) if v is not None and v.denominator == 1 else None

    def render(self, t: Type, dtype: bool = False) -> str:
        return self.env.render(t, dtype)

    def dtype_text(self, d: DType) -> str:
        return d.render(self.name)

    def kind_word(self, t: Type) -> str:
        if isinstance(t, ModelT):
            return f"model `{t.name}`"
        if isinstance(t, StackT):
            return f"a stack of `{t.model}`"
        if isinstance(t, TupleT):
            return f"a tuple of {len(t.items)}"
        if isinstance(t, TensorT):
            return self.render(t)
        if isinstance(t, ScalarT):
            return "a number"
        if isinstance(t, DTypeValue):
            return f"the dtype `{t.dtype.name}`"
        if isinstance(t, StringT):
            return "a string"
        return "something else"

    def call_name(self, call: A.Call) -> str:
        return call.func.id if isinstance(call.func, A.Name) else self.src(call.func.pos)

    def bind_svar(self, name: str, size: Size, pos):
        self.svars[name] = size
        self.svar_pos.setdefault(name, pos)

    def axis_of_value(self, node, size: Size) -> Axis:
        """The axis a size written as a value stands for (`arange(n)` is over `n`)."""
        if isinstance(node, A.Name):
            d = self.env.dim(node.id)
            if d is not None:
                return Axis(d, d)
            if node.id in self.svars:
                return Axis(Size.sym(node.id), self.svars[node.id])
        return Axis(size, size)

    def axis_name(self, node, tensor: Optional[TensorT] = None) -> Optional[Size]:
        """An axis name written in `over=` / masks: a dim or a size variable. With the
        tensor it reduces, a name that is neither is that tensor's missing axis (E0404)."""
        if isinstance(node, A.Name):
            d = self.env.dim(node.id)
            if d is not None:
                return d
            if node.id in self.svars:
                return Size.sym(node.id)
            if self.env.dims.is_dim(node.id) or self.env.is_broken_name(node.id):
                return None  # a dim whose value is in error: reported at the dim
            if tensor is not None:
                d = self.add(e0404.not_an_axis(self.span(node.pos), node.id, self.render(tensor)))
                sug = closest(node.id, [self.name(a.name) for a in tensor.axes])
                self.suggest(d, sug, "an axis", node.pos)
                return None
            d = self.add(e0201.undefined(self.span(node.pos), node.id, "not a dim or size variable"))
            sug = closest(node.id, list(self.svars) + self.env.dim_names())
            self.suggest(d, sug, "an axis", node.pos)
            return None
        self.add(e0404.axis_names_only(self.span(node.pos), "over=", self.src(node.pos)))
        return None

    def over_axes(self, call, b: Bound, t: TensorT):
        """The axis names of `over=` (all axes when absent: []); None after an error."""
        node = b.n("over")
        if node is None:
            return []
        items = node.items if isinstance(node, A.TupleExpr) else [node]
        names = []
        for it in items:
            n = self.axis_name(it, t)
            if n is None:
                return None
            if t.index_of(n) < 0:
                self.add(e0404.not_an_axis(self.span(it.pos), self.src(it.pos), self.render(t))).help(
                    e0404.NAME_ONE_OF_ITS_AXES)
                return None
            names.append(n)
        self.types[id(node)] = UNKNOWN
        return names

    # ------------------------------------------------------------ entry
    def check(self, sig: Signature) -> FnResult:
        item = self.item
        for p in sig.params:
            self.locals[p.name] = Local(p.name, p.type, p.node.name_pos, is_param=True)
            self.locals_at.append((p.name, p.node.name_pos, p.type))
            if isinstance(p.type, TensorT) and not p.type.axes:
                # a scalar parameter is a compile-time value at a call that passes one
                # (LANGUAGE.md §5); the call's value is checked where it is computed
                self.static_names.add(p.name)
        self.sig = sig
        self.param_svars = _param_svars(sig)
        for v in sorted(sig.svars):  # sorted: suggestions must not depend on set order
            if self._svar_in_params(v):  # a return-only variable is bound by its first use
                self.svars[v] = Size.sym(v)
        for p in sig.params:
            if p.node.default is not None:
                self.expr(p.node.default)
        self.sig = sig
        if item.syntax_errors:  # a body that didn't parse: its syntax error says it all
            return self._result()
        run(self.block(item.body))
        self._check_returns(item.body)
        for loc in self.all_locals:
            if not loc.used and not loc.name.startswith("_"):
                self.diags.append(w0101.never_used(item.span(loc.pos), loc.name))
        return self._result()

    def _result(self) -> FnResult:
        return FnResult(self.item, self.diags, self.types, self.nodes, self.calls, self.callees, self.deps,
                        self.locals_at, self.svars, self.pattern_info, self.sig.ret, self.field_reads,
                        self.static, self.loops)

    def _check_returns(self, body):
        rets = [s for s in A.walk_stmts(body) if isinstance(s, A.Return)]
        if not rets:
            self.add(e0409.never_returns(self.span(self.item.name_pos), self.item.name, self.render(self.sig.ret)))
            return
        last = body[-1] if body else None
        for r in rets:
            if r is not last:
                self.add(syntax_error(self.span(r.pos), "`return` as the function's last statement", "it earlier",
                                  "a function has one `return`, at its end"))
                return

    # ------------------------------------------------------------ statements
    def block(self, stmts):
        """Check statements in order: a step driven by trampoline.run, so that `for`
        bodies inside `for` bodies nest without recursion."""
        for s in stmts:
            if isinstance(s, A.Assign):
                t = self.expr(s.value)
                if s.annotation is not None:
                    t = self._annotated(s, t)
                self._bind(s.target, s.target_pos, t, id(s.value) in self.static)
            elif isinstance(s, A.TupleAssign):
                t = self.expr(s.value)
                if isinstance(t, TupleT):
                    if len(t.items) != len(s.targets):
                        what = self.call_name(s.value) if isinstance(s.value, A.Call) else "the value"
                        self.add(e0411.destructure(self.span(s.pos), f"`{what}`", len(s.targets), f"{len(s.targets)} names",
                                                   gives=len(t.items))).help(e0411.names_help(len(t.items)))
                        t = UNKNOWN
                elif not is_unknown(t):
                    self.add(e0411.destructure(self.span(s.value.pos), "a single value", len(s.targets),
                                               f"this is {self.kind_word(t)}"))
                    t = UNKNOWN
                for k, (n, pos) in enumerate(s.targets):
                    self._bind(n, pos, t.items[k] if isinstance(t, TupleT) else UNKNOWN)
            elif isinstance(s, A.Return):
                t = self.expr(s.value)
                self._check_return(s, t)
            elif isinstance(s, A.For):
                yield from self._for(s)

    def _bind(self, name, pos, t, static: bool = False):
        if static:
            self.static_names.add(name)
        else:
            self.static_names.discard(name)
        loc = Local(name, t, pos)
        self.locals[name] = loc
        self.all_locals.append(loc)
        self.locals_at.append((name, pos, t))

    def _annotated(self, s: A.Assign, t: Type) -> Type:
        want = self.resolve_local_type(s.annotation)
        if not is_unknown(want) and not is_unknown(t) and not self.same_shape(want, t):
            self.add(e0401.shape(self.span(s.value.pos), self.render(want), self.render(t), f"this is {self.render(t)}"))
            return want
        return want if not is_unknown(want) else t

    def resolve_local_type(self, texpr) -> Type:
        def on_free(name, node):
            if name in self.svars:
                return Size.sym(name), self.svars[name]
            self.bind_svar(name, Size.sym(name), node.pos)
            return Size.sym(name), Size.sym(name)
        lookup = dim_lookup(self.env.dims, self.item, self.diags, on_free)
        return resolve_type(texpr, self.item, self.env.dims, self.env.model_names(), lookup, self.diags)

    def same_shape(self, a: Type, b: Type) -> bool:
        if isinstance(a, TensorT) and isinstance(b, TensorT):
            return [x.size for x in a.axes] == [x.size for x in b.axes] and (
                a.dtype == b.dtype or (a.dtype.is_int and b.dtype.name == "Index"))
        return a == b

    def _check_return(self, s: A.Return, t: Type):
        want = self.sig.ret
        if is_unknown(want) or is_unknown(t):
            return
        if isinstance(want, TensorT) and isinstance(t, TensorT) and len(want.axes) == len(t.axes):
            # a size variable seen only in the return type is bound here
            for wa, ta in zip(want.axes, t.axes):
                v = wa.size.single_symbol()
                if v is not None and v in self.sig.svars and not self._svar_in_params(v):
                    self.svars.setdefault(v, ta.size)
            ret_only = self._ret_only()
            want = TensorT(tuple(Axis(a.name, a.size.subst(ret_only)) for a in want.axes), want.dtype)
        if not self.same_shape(want, t):
            show_dtype = isinstance(t, TensorT) and isinstance(want, TensorT) and t.dtype != want.dtype
            self.add(e0409.returns(self.span(s.value.pos), self.item.name, self.render(t, show_dtype),
                                   self.render(want, show_dtype), f"this is {self.render(t)}")).label(
                self.item.span(self.item.ret.pos), "the signature's return type")

    def _svar_in_params(self, v: str) -> bool:
        return v in self.param_svars

    def _ret_only(self) -> dict:
        return {v: s for v, s in self.svars.items() if v in self.sig.svars and v not in self.param_svars}

    def _for(self, s: A.For):
        it = self.expr(s.iter)
        if isinstance(it, StackT):
            var_t: Type = ModelT(it.model)
        else:
            if not is_unknown(it):
                self.add(e0301.kind(self.span(s.iter.pos), "a stack", self.kind_word(it), "`for` runs over a stack of models"))
            var_t = UNKNOWN
        before = {n: l.type for n, l in self.locals.items()}
        if s.index is not None:  # the copy's index: a compile-time integer (v0.2)
            self._bind(s.index, s.index_pos, ScalarT("int"), static=True)
            if isinstance(it, StackT):
                self.loops.append((s, it.count))
        self._bind(s.var, s.var_pos, var_t)
        yield self.block(s.body)
        for st in s.body:
            if isinstance(st, A.Assign) and st.target in before:
                old, new = before[st.target], self.locals[st.target].type
                if not is_unknown(old) and not is_unknown(new) and not self.same_shape(old, new):
                    self.add(e0401.shape(self.span(st.value.pos), self.render(old), self.render(new),
                                         f"`{st.target}` changes type in the loop")).help(e0401.LOOP_KEEPS_TYPE)
                    self.locals[st.target].type = old  # one mistake, one diagnostic

    # ------------------------------------------------------------ expressions
    def expr(self, e) -> Type:
        """The type of e. The operands it will check are checked first, deepest first,
        from an explicit stack: each rule then finds its operands' types already made,
        so no depth of nesting (a 1,000-term sum, a 300-step pipe) recurses."""
        types = self.types
        t = types.get(id(e))
        if t is not None:
            return t
        if isinstance(e, _LEAVES):
            return self._expr_one(e)
        order = _operands_first(e, types)
        for n in order:
            self._expr_one(n)
        return types[id(e)]

    def _expr_one(self, e) -> Type:
        t = self._expr(e)
        self.types[id(e)] = t
        self.nodes[id(e)] = e
        if self._is_static(e, t):
            self.static.add(id(e))
        return t

    def _is_static(self, e, t) -> bool:
        """Whether e is a compile-time value (LANGUAGE.md §5, v0.2): literals, dims, loop
        indices, scalar parameters, locals bound to one, and operators, conditionals and
        scalar builtins over those. Its operands were checked first."""
        if not (isinstance(t, ScalarT) or (isinstance(t, TensorT) and not t.axes)):
            return False
        if isinstance(e, (A.Number, A.Const)):
            return True
        if isinstance(e, A.Name):
            if e.id in self.locals:
                return e.id in self.static_names
            return self.env.dim(e.id) is not None
        if isinstance(e, A.Call):
            info = self.calls.get(id(e))
            if info is None or info.builtin is None or not isinstance(t, ScalarT):
                return False
            return all(a is not None and id(a.value) in self.static for _, a in info.args)
        if isinstance(e, (A.Unop, A.Binop, A.IfExpr)):
            return all(id(k) in self.static for k in _operands(e))
        return False

    def _expr(self, e) -> Type:
        if isinstance(e, A.Name):
            return self._name(e)
        if isinstance(e, A.Number):
            return ScalarT("int" if e.is_int else "float")
        if isinstance(e, A.String):
            return StringT(e.value)
        if isinstance(e, A.Const):
            return ScalarT("bool") if e.value in ("true", "false") else ScalarT("float")
        if isinstance(e, A.Unop):
            return self._unop(e)
        if isinstance(e, A.Binop):
            return self._binop(e)
        if isinstance(e, A.Call):
            return self._call(e)
        if isinstance(e, A.FieldRead):
            return self._field(e)
        if isinstance(e, A.Mask):
            return self._mask(e)
        if isinstance(e, A.TupleExpr):
            return TupleT(tuple(self.expr(x) for x in e.items))
        if isinstance(e, A.IfExpr):
            return self._if(e)
        return UNKNOWN

    def _if(self, e: A.IfExpr) -> Type:
        """`A if C else B`: C known at compile time (E0413); A and B two scalars, or two
        tensors of one type (E0401)."""
        ct, at, bt = self.expr(e.cond), self.expr(e.then), self.expr(e.other)
        if not is_unknown(ct):
            if not (isinstance(ct, ScalarT) or (isinstance(ct, TensorT) and not ct.axes)):
                self.add(e0413.condition_not_static(self.span(e.cond.pos), f"this is {self.kind_word(ct)}"))
                return UNKNOWN
            if id(e.cond) not in self.static:
                self.add(e0413.condition_not_static(self.span(e.cond.pos), "computed when the model runs"))
                return UNKNOWN
        if is_unknown(at) or is_unknown(bt) or is_unknown(ct):
            return UNKNOWN
        if isinstance(at, ScalarT) and isinstance(bt, ScalarT):
            return ScalarT("float" if "float" in (at.num, bt.num) else at.num)
        if isinstance(at, TensorT) and isinstance(bt, TensorT) and self.same_shape(at, bt):
            return at
        scalar = (ScalarT, TensorT)
        if isinstance(at, scalar) and isinstance(bt, scalar) and all(
                isinstance(x, ScalarT) or not x.axes for x in (at, bt)):
            return at if isinstance(at, TensorT) else bt  # a number and a scalar tensor
        self.add(e0401.shape(self.span(e.other.pos), self.kind_word(at), self.kind_word(bt),
                             "both branches must have one type"))
        return UNKNOWN

    def _name(self, e: A.Name) -> Type:
        loc = self.locals.get(e.id)
        if loc is not None:
            loc.used = True
            return loc.type
        d = self.env.dim(e.id)
        if d is not None:
            return ScalarT("int", d)
        if self.env.is_broken_name(e.id) or self.env.dims.is_dim(e.id):
            return UNKNOWN  # a dim whose value is in error: reported at the dim
        if e.id in self.svars:
            return ScalarT("int", self.svars[e.id])
        if e.id in DTYPE_NAMES:
            return DTypeValue(DType(e.id))
        if self.env.model(e.id) is not None:
            self.add(e0301.kind(self.span(e.pos), "a value", f"model `{e.id}`", "a model is a type"))
            return UNKNOWN
        if self.env.sig(e.id) is not None or e.id in BUILTINS:
            self.add(e0301.kind(self.span(e.pos), "a value", f"function `{e.id}`", "call it with `(…)`"))
            return UNKNOWN
        d = self.add(e0201.undefined(self.span(e.pos), e.id, "not found in this scope"))
        sug = closest(e.id, list(self.locals) + self.env.dim_names())
        self.suggest(d, sug, "a name", e.pos)
        return UNKNOWN

    def _unop(self, e: A.Unop) -> Type:
        t = self.expr(e.operand)
        if is_unknown(t):
            return UNKNOWN
        if e.op == "!":
            if isinstance(t, TensorT) and t.dtype != BOOL:
                self.add(e0304.must_be(self.span(e.operand.pos), ops.operand_text(self, e.operand), "bool",
                                       self.dtype_text(t.dtype), "`!` negates a mask"))
                return UNKNOWN
            return t
        if isinstance(t, (TensorT, ScalarT)):
            if isinstance(t, TensorT) and not ops.arithmetic_ok(self, e.operand, t):
                return UNKNOWN
            return t
        self.add(e0301.not_a_tensor(self.span(e.operand.pos), self.kind_word(t)))
        return UNKNOWN

    def _binop(self, e: A.Binop) -> Type:
        lt, rt = self.expr(e.left), self.expr(e.right)
        if is_unknown(lt) or is_unknown(rt):
            return UNKNOWN
        if e.op == "@":
            return ops.matmul(self, "@", e.pos, e.left, e.right, lt, rt)
        if e.op in ("and", "or"):
            return ops.align(self, e.op, e.left, e.right, lt, rt, e.pos)
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            r = ops.align(self, e.op, e.left, e.right, lt, rt, e.pos)
            return ops.as_bool(r) if isinstance(r, TensorT) else (ScalarT("bool") if isinstance(r, ScalarT) else r)
        for t, n in ((lt, e.left), (rt, e.right)):
            if not ops.arithmetic_ok(self, n, t):
                return UNKNOWN
        return ops.align(self, e.op, e.left, e.right, lt, rt, e.pos)

    def _field(self, e: A.FieldRead) -> Type:
        t = self.expr(e.obj)
        if is_unknown(t):
            return UNKNOWN
        if not isinstance(t, ModelT):
            self.add(e0301.kind(self.span(e.obj.pos), "a model", self.kind_word(t), "only models have fields"))
            return UNKNOWN
        m = self.env.model(t.name)
        if m is None:
            return UNKNOWN
        self.deps[("model", t.name)] = m.fingerprint
        self.field_reads.add((t.name, e.name))
        f = m.fields.get(e.name)
        if f is None:
            d = self.add(e0204.no_field(self.span(e.name_pos), t.name, e.name))
            sug = closest(e.name, list(m.fields))
            self.suggest(d, sug, "a field", e.name_pos)
            return UNKNOWN
        return f.type

    def _mask(self, e: A.Mask) -> Type:
        if not (isinstance(e.obj, A.Name) and e.obj.id == "causal"):
            self.add(e0205.is_not(self.span(e.obj.pos), self.src(e.obj.pos), "a mask", "only `causal[a b]` is a mask"))
            return UNKNOWN
        if len(e.axes) != 2:
            self.add(e0407.causal_rank(self.span(e.pos), len(e.axes)))
            return UNKNOWN
        axes = []
        for a in e.axes:
            if isinstance(a, A.SName):
                n = self.axis_name(A.Name(a.name, a.pos))
                if n is None:
                    return UNKNOWN
                size = self.env.dim(a.name) if self.env.dim(a.name) is not None else self.svars[a.name]
                axes.append(Axis(n, size))
            else:
                self.add(e0404.axis_names_only(self.span(a.pos), "causal", self.src(a.pos)))
                return UNKNOWN
        return TensorT(tuple(axes), BOOL)

    # ------------------------------------------------------------ calls
    def _call(self, call: A.Call) -> Type:
        if not isinstance(call.func, A.Name):
            for a in call.args:
                self.expr(a.value)
            self.add(e0205.is_not(self.span(call.func.pos), self.src(call.func.pos), "a function", "not a function"))
            return UNKNOWN
        name = call.func.id
        b = BUILTINS.get(name)
        if name in self.locals and b is None:
            for a in call.args:
                self.expr(a.value)
            self.add(e0205.is_not(self.span(call.func.pos), name, "a function", f"`{name}` is a local value"))
            return UNKNOWN
        if b is not None:
            return self._builtin_call(call, b)
        sig = self.env.sig(name)
        if sig is None:
            for a in call.args:
                self.expr(a.value)
            if self.env.is_broken_name(name):
                return UNKNOWN
            d = self.add(e0205.is_not(self.span(call.func.pos), name, "a function", "no function with this name"))
            sug = closest(name, list(BUILTINS) + self.env.fn_names())
            self.suggest(d, sug, "a function", call.func.pos)
            return UNKNOWN
        return self._user_call(call, sig)

    def _arity_error(self, call, fname, lo, hi, got):
        self.add(e0206.takes(self.span(A.op_pos(call)), fname, e0206.arity_text(lo, hi), got, f"{got} arguments"))

    def _builtin_call(self, call: A.Call, b: Builtin) -> Type:
        bound = Bound()
        info = CallInfo(b.name, builtin=b)
        self.calls[id(call)] = info
        names = [p for p, _ in b.params]
        by_position = b.positional
        positional = [a for a in call.args if a.name is None]
        keywords = [a for a in call.args if a.name is not None]
        ok = True
        if b.variadic:
            for a in positional:
                bound.rest.append((a.value, self.expr(a.value)))
                info.args.append((None, a))
        else:
            if len(positional) > len(by_position):
                for a in call.args:
                    self.expr(a.value)
                lo = sum(1 for _, d in b.params if d is REQUIRED)
                self._arity_error(call, b.name, lo, len(by_position), len(call.args))
                return UNKNOWN
            for p, a in zip(by_position, positional):
                bound.nodes[p] = a.value
        for a in keywords:
            if a.name not in names:
                self.expr(a.value)
                d = self.add(e0206.no_parameter(self.span(a.pos), b.name, a.name))
                sug = closest(a.name, names)
                self.suggest(d, sug, "a parameter", (a.pos[0], a.pos[0] + len(a.name)))
                ok = False
                continue
            if a.name in bound.nodes:
                self.expr(a.value)
                self.add(e0206.given_twice(self.span(a.pos), b.name, a.name))
                ok = False
                continue
            bound.nodes[a.name] = a.value
        arg_nodes = {id(a.value): a for a in call.args}
        for p in names:
            if p in bound.nodes:
                info.args.append((p, arg_nodes.get(id(bound.nodes[p]))))
                info.arg_map[p] = arg_nodes.get(id(bound.nodes[p]))
        if not ok:
            for p, n in bound.nodes.items():
                if p not in b.axis_params:
                    self.expr(n)
            return UNKNOWN
        missing = [p for p, d in b.params if d is REQUIRED and p not in bound.nodes]
        for p, n in bound.nodes.items():
            if p in b.axis_params:
                continue
            bound.types[p] = self.expr(n)
        if missing:
            if not b.variadic and len(missing) and all(p not in b.axis_params for p in missing):
                lo = sum(1 for _, d in b.params if d is REQUIRED)
                self._arity_error(call, b.name, lo, len(by_position), len(call.args))
            else:
                self.add(e0206.missing_argument(self.span(A.op_pos(call)), b.name, missing[0]))
            return UNKNOWN
        if any(is_unknown(t) for t in bound.types.values()) or any(is_unknown(t) for _, t in bound.rest):
            return UNKNOWN  # an argument in error: reported where it is
        return b.rule(self, call, bound)

    def _user_call(self, call: A.Call, sig: Signature) -> Type:
        self.deps[("fn", sig.name)] = sig.fingerprint
        self.callees.setdefault(sig.name, []).append(call.func.pos)
        info = CallInfo(sig.name, sig=sig)
        self.calls[id(call)] = info
        params = sig.params
        positional = [a for a in call.args if a.name is None]
        keywords = [a for a in call.args if a.name is not None]
        argt = {}
        for a in call.args:
            argt[id(a)] = self.expr(a.value)
        if sig.broken:
            return UNKNOWN
        lo = sum(1 for p in params if not p.has_default)
        if len(positional) > len(params):
            self._arity_error(call, sig.name, lo, len(params), len(call.args))
            return UNKNOWN
        given = {p.name: a for p, a in zip(params, positional)}
        for a in keywords:
            if a.name not in {p.name for p in params}:
                d = self.add(e0206.no_parameter(self.span(a.pos), sig.name, a.name))
                sug = closest(a.name, [p.name for p in params])
                self.suggest(d, sug, "a parameter", (a.pos[0], a.pos[0] + len(a.name)))
                return UNKNOWN
            if a.name in given:
                self.add(e0206.given_twice(self.span(a.pos), sig.name, a.name))
                return UNKNOWN
            given[a.name] = a
        missing = [p.name for p in params if not p.has_default and p.name not in given]
        if missing:
            self._arity_error(call, sig.name, lo, len(params), len(call.args))
            return UNKNOWN
        bind: dict[str, Axis] = {}
        info.bindings = bind
        info.args = [(p.name, given.get(p.name)) for p in params]
        info.arg_map = {p.name: given.get(p.name) for p in params}
        failed = unknown_arg = False
        for p in params:
            a = given.get(p.name)
            if a is None:
                continue
            t = argt[id(a)]
            if is_unknown(t) or is_unknown(p.type):
                unknown_arg = unknown_arg or is_unknown(t)
                continue
            if not self._bind_arg(p, a, t, bind, sig):
                failed = True
        if failed or is_unknown(sig.ret) or (unknown_arg and _unbound_sizes(sig.ret, bind, sig)):
            return UNKNOWN  # (an argument already in error left a size of the result unknown)
        return self.subst_type(sig.ret, bind, sig)

    def _bind_arg(self, p, a: A.Arg, t: Type, bind: dict, sig: Signature) -> bool:
        want = p.type
        if isinstance(want, ModelT):
            if t != want:
                self.add(e0301.kind(self.span(a.value.pos), f"model `{want.name}`", self.kind_word(t),
                                    f"`{p.name}` is a `{want.name}`"))
                return False
            return True
        if isinstance(want, TensorT):
            if isinstance(t, ScalarT) and not want.axes:
                return True
            if not isinstance(t, TensorT):
                self.add(e0301.not_a_tensor(self.span(a.value.pos), self.kind_word(t), f"`{p.name}` is a tensor"))
                return False
            if len(t.axes) != len(want.axes):
                self._arg_shape(a, want, t, bind, sig)
                return False
            # bind single-variable axes first, then compare the rest
            for wa, ta in zip(want.axes, t.axes):
                v = wa.size.single_symbol()
                if v is not None and v in sig.svars and v not in bind:
                    bind[v] = ta
            sizes = {v: ax.size for v, ax in bind.items()}
            for wa, ta in zip(want.axes, t.axes):
                if any(s in sig.svars and s not in sizes for s in wa.size.symbols()):
                    continue
                if wa.size.subst(sizes) != ta.size:
                    self._arg_shape(a, want, t, bind, sig)
                    return False
            wd, td = want.dtype, t.dtype
            if wd.name == "Index":
                ok = td.name == "Index" and (wd.index is None or
                                             wd.index.subst(sizes) == td.index)
                if td.name == "Index" and not ok and wd.index is not None:
                    v = wd.index.single_symbol()
                    if v in sig.svars and v not in bind:
                        ok = True
            else:
                ok = wd == td or (wd.is_int and td.name == "Index")
            if not ok:
                self.add(e0304.must_be(self.span(a.value.pos), ops.operand_text(self, a.value),
                                       self.dtype_text(DType(wd.name, wd.index.subst(sizes) if wd.index else None)),
                                       self.dtype_text(td), f"`{p.name}` is {self.dtype_text(wd)}"))
                return False
            return True
        return True

    def _arg_shape(self, a: A.Arg, want, t, bind: dict, sig: Signature):
        """E0401 for an argument: the parameter's type with what is bound so far."""
        self.add(e0401.shape(self.span(a.value.pos), self.render(self.subst_type(want, bind, sig, partial=True)),
                             self.render(t), f"this is {self.render(t)}"))

    def subst_type(self, t: Type, bind: dict, sig: Signature, partial: bool = False) -> Type:
        if not isinstance(t, TensorT):
            return t
        names = {v: ax.name for v, ax in bind.items()}
        sizes = {v: ax.size for v, ax in bind.items()}
        axes = []
        for a in t.axes:
            v = a.size.single_symbol()
            if v is not None and v in bind:
                axes.append(bind[v])
            else:
                axes.append(Axis(a.name.subst(names), a.size.subst(sizes)))
        dt = t.dtype
        if dt.index is not None:
            dt = DType(dt.name, dt.index.subst(sizes))
        return TensorT(tuple(axes), dt)


def _unbound_sizes(t: Type, bind: dict, sig: Signature) -> bool:
    """Does the result type t name a size variable of the callee that no argument bound?"""
    return isinstance(t, TensorT) and any(v in sig.svars and v not in bind for a in t.axes for v in a.size.symbols())


_LEAVES = (A.Name, A.Number, A.String, A.Const, A.Mask)  # no operands to check first


def _operands(e) -> list:
    """The sub-expressions that checking e checks (the same ones its rule asks for)."""
    if isinstance(e, A.Call) and isinstance(e.func, A.Name):
        b = BUILTINS.get(e.func.id)
        if b is not None:
            return _builtin_operands(e, b)
    return A.children(e, A.OPERANDS)  # none for names, literals, masks (their axes are not expressions)


def _builtin_operands(call: A.Call, b: Builtin) -> list:
    """The arguments `_builtin_call` checks as values: all but the axis names."""
    names = [p for p, _ in b.params]
    positional = [a for a in call.args if a.name is None]
    if not b.variadic and len(positional) > len(b.positional):
        return [a.value for a in call.args]  # an arity error: every argument is checked
    checked = set()
    bound = {}
    if b.variadic:
        checked.update(id(a) for a in positional)
    else:
        bound = {p: a for p, a in zip(b.positional, positional)}
    for a in call.args:
        if a.name is None:
            continue
        if a.name not in names or a.name in bound:
            checked.add(id(a))  # an unknown or repeated keyword: checked, then reported
        else:
            bound[a.name] = a
    checked.update(id(a) for p, a in bound.items() if p not in b.axis_params)
    return [a.value for a in call.args if id(a) in checked]


def _operands_first(e, types: dict) -> list:
    """e and the unchecked expressions under it, each after its operands (post-order)."""
    out = []
    stack = [(e, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            out.append(n)
            continue
        stack.append((n, True))
        for c in reversed(_operands(n)):
            if id(c) not in types:
                stack.append((c, False))
    return out


def _param_svars(sig: Signature) -> frozenset:
    """The size variables that the parameters' types bind (axes and Index[V] dtypes)."""
    out: set = set()
    for p in sig.params:
        if isinstance(p.type, TensorT):
            for a in p.type.axes:
                out |= a.size.symbols()
            if p.type.dtype.index is not None:
                out |= p.type.dtype.index.symbols()
    return frozenset(out)


def check_function(item: A.FnItem, sig: Signature, env) -> FnResult:
    ck = FnChecker(item, env)
    try:
        return ck.check(sig)
    except Exception as exc:  # noqa: BLE001 - a checker bug is shown, never a clean function
        if debugging():
            raise
        ck.diags.append(internal_error(f"the check of `{item.name}`", item.span(item.name_pos), exc))
        return FnResult(item, ck.diags, ck.types, ck.nodes, ck.calls, ck.callees, ck.deps,
                        ck.locals_at, ck.svars, ck.pattern_info, static=ck.static, loops=ck.loops)
