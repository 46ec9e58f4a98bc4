"""What a file sees: dims (canonical sizes and values), models, function signatures."""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Optional

from ..diagnostics import Diagnostic
from ..syntax import ast as A
from ..syntax.names import NameMap, without_simple_dims
from .graphs import components, reached, shortest_path
from .codes import e0201, e0202, e0203, e0208, similar
from .codes.e0211 import model_contains_itself
from ..syntax.codes.e0101 import syntax as syntax_error
from .sizes import Size
from .types import DTYPE_NAMES, UNKNOWN, Axis, DType, ModelT, StackT, TensorT, Type
from .suggest import closest


MAX_DIM = 2 ** 63 - 1  # the largest size: an int64, as torch, safetensors and GGUF count


def dim_value_problem(value) -> Optional[str]:
    """Why `value` can't be a dim's value (an override from --dim, the settings or the
    editor), or None: the one rule, shared by every caller."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "takes a positive integer"
    if value <= 0:
        return "takes a positive integer"
    if value > MAX_DIM:
        return f"is at most 2^63 − 1 ({MAX_DIM})"
    return None


_SYM = object()  # DimInfo's canon "the dim's own symbol", made only when asked for


class DimInfo:
    """A dim's canonical size and value. A dim declared with a literal (or no value) is its
    own base symbol: that Size is made when first asked for, so a file of a million
    `dim X = 1` lines holds no million Sizes (nor a reverse entry for each)."""

    __slots__ = ("name", "item", "_canon", "value")

    def __init__(self, name: str, item, canon=None, value: Optional[int] = None):
        self.name = name
        self.item = item
        self._canon = canon  # None when broken
        self.value = value

    @property
    def canon(self) -> Optional[Size]:
        c = self._canon
        return Size.sym(self.name) if c is _SYM else c


def _same_items(a: "DimsFingerprint", b: "DimsFingerprint") -> bool:
    """Whether two tables over NameMaps are made of the same items in the same order (the
    same objects, or simple dims of the same line: ast.DimItem) but for dims of the same
    name and meaning, with the same overrides: then every name is first declared at the
    same place and means the same (False: not known so; DimsFingerprint.__eq__ then
    compares name by name). A file of a million simple dims, parsed again after an edit
    above them, is compared without reading a name."""
    la, lb = a.names._items, b.names._items
    if len(la) != len(lb) or a.overrides != b.overrides:
        return False
    compact, ra, rb = A.DimItem, a.resolved, b.resolved
    for x, y in zip(la, lb):
        if x is y or (type(x) is compact and type(y) is compact and x.text == y.text):
            continue
        if not (is_dim_item(x) and is_dim_item(y)):
            return False
        n = x.name
        if n != y.name:
            return False
        (va, ca), (vb, cb) = _meaning(ra, n, x), _meaning(rb, n, y)
        if va != vb or (ca is not cb and ca != cb):
            return False
    return True


class DimsFingerprint:
    """What every dim means (canonical size, value), compared in one pass over the table,
    without a tuple per dim."""

    __slots__ = ("names", "items", "resolved", "overrides")

    def __init__(self, table: "DimTable"):  # its parts, not the table: no reference cycle
        self.names, self.items, self.resolved, self.overrides = table.names, table.items, table._info, table.overrides

    def __eq__(self, other):
        if not isinstance(other, DimsFingerprint):
            return NotImplemented
        a, b = self, other
        if a is b or (a.names is b.names and a.overrides == b.overrides):
            return True  # the same names map (never changed but for items of the same text)
        if len(a.items) != len(b.items):
            return False
        if isinstance(a.names, NameMap) and isinstance(b.names, NameMap) and _same_items(a, b):
            return True
        b_items, ra, rb = b.items, a.resolved, b.resolved
        for n, x in a.items.pairs():
            y = b_items.get(n)
            if y is None:
                return False
            if x is y and n not in ra and n not in rb:
                continue  # the same plain dim
            (va, ca), (vb, cb) = _meaning(ra, n, x), _meaning(rb, n, y)
            if va != vb or (ca is not cb and ca != cb):
                return False
        return True

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(len(self.items))  # equal tables have the same names


@dataclass
class FieldInfo:
    name: str
    type: Type
    node: A.Field
    item: A.ModelItem


@dataclass
class ModelInfo:
    name: str
    item: A.Item
    fields: dict = field(default_factory=dict)  # name -> FieldInfo
    fingerprint: tuple = ()


@dataclass
class ParamInfo:
    name: str
    type: Type
    has_default: bool
    node: A.Param


@dataclass
class Signature:
    name: str
    item: A.Item
    params: list
    ret: Type
    svars: set
    fingerprint: tuple = ()
    broken: bool = False


def is_dim_item(it) -> bool:
    """A dim's item: one that parsed, or one that didn't (still a dim, of unknown size)."""
    return type(it) is A.DimItem or isinstance(it, A.DimItem) or \
        (isinstance(it, A.BrokenItem) and it.declared_kind == "dim")


def _plain(name: str, item, overrides: dict) -> bool:
    """A dim whose DimInfo needs no resolving: one that didn't parse, or one with no
    value or a valid literal and no override."""
    if type(item) is not A.DimItem and not isinstance(item, A.DimItem):
        return True  # broken: of unknown size
    return name not in overrides and item.plain


def _plain_info(name: str, item) -> DimInfo:
    if isinstance(item, A.DimItem):
        return DimInfo(name, item, _SYM, item.literal_size())
    return DimInfo(name, item, None, None)


def _meaning(resolved: dict, name: str, item) -> tuple:
    """(value, canon) of a dim, as DimsFingerprint compares them."""
    d = resolved.get(name)
    if d is not None:
        return d.value, d._canon
    if isinstance(item, A.DimItem):
        return item.literal_size(), _SYM
    return None, None


class DimItems(Mapping):
    """name -> item of the dims among a map of visible names (the first item of each
    name, of any kind): a view, no second million-entry map."""

    __slots__ = ("_names", "_len")

    def __init__(self, names: Mapping):
        self._names = names
        self._len: Optional[int] = None

    def __getitem__(self, name):
        it = self._names[name]
        if is_dim_item(it):
            return it
        raise KeyError(name)

    def get(self, name, default=None):
        it = self._names.get(name)
        return it if it is not None and is_dim_item(it) else default

    def __contains__(self, name) -> bool:
        it = self._names.get(name)
        return it is not None and is_dim_item(it)

    def pairs(self):
        """(name, item) of each dim, in order."""
        return ((n, it) for n, it in self._names.items() if is_dim_item(it))

    def __iter__(self):
        return (n for n, it in self._names.items() if is_dim_item(it))

    def __len__(self) -> int:
        if self._len is None:  # the names map changes only by items of the same declaration
            names = self._names
            if isinstance(names, NameMap):  # every simple dim is one: the others counted
                self._len = len(names) - sum(1 for it in names.others().values() if not is_dim_item(it))
            else:
                self._len = sum(1 for _ in self.pairs())
        return self._len


class DimInfos(Mapping):
    """name -> DimInfo of every dim: the resolved ones (`DimTable._info`), and a plain
    dim's (no value, or a valid literal, no override) made when asked. In the order the
    dims were resolved: each dim after the dims its value names."""

    __slots__ = ("_items", "_info", "_overrides")

    def __init__(self, items: DimItems, resolved: dict, overrides: dict):
        self._items, self._info, self._overrides = items, resolved, overrides

    def get(self, name, default=None):
        d = self._info.get(name)
        if d is not None:
            return d
        it = self._items.get(name)
        if it is None or not _plain(name, it, self._overrides):  # not a dim, or one not resolved yet
            return default
        return _plain_info(name, it)

    def __getitem__(self, name):
        d = self.get(name)
        if d is None:
            raise KeyError(name)
        return d

    def __contains__(self, name) -> bool:
        return self.get(name) is not None

    def __iter__(self):
        # resolution order: a resolved dim's block of `_info` (the dims its value named
        # first) comes where the dim is declared; a plain dim comes where it is declared,
        # unless an earlier dim named it (then it is in `_info` already)
        resolved, overrides = self._info, self._overrides
        computed = iter(resolved)
        passed: set = set()
        for n, it in self._items.pairs():
            if n in resolved:
                if n in passed:
                    continue
                for k in computed:
                    passed.add(k)
                    yield k
                    if k == n:
                        break
            elif _plain(n, it, overrides):
                yield n

    def __len__(self) -> int:
        return len(self._items)


class DimValues(Mapping):
    """name -> value of each dim that is its own symbol and has a value (a literal, or
    an override): what a size is evaluated with."""

    __slots__ = ("_infos",)

    def __init__(self, infos: DimInfos):
        self._infos = infos

    def get(self, name, default=None):
        d = self._infos.get(name)
        return d.value if d is not None and d._canon is _SYM and d.value is not None else default

    def __getitem__(self, name):
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __contains__(self, name) -> bool:
        return self.get(name) is not None

    def __iter__(self):
        infos = self._infos
        for n in infos:
            d = infos.get(n)
            if d._canon is _SYM and d.value is not None:
                yield n

    def __len__(self) -> int:
        return sum(1 for _ in self)


class DimTable:
    """Canonical forms and values of every visible dim; E0208 for bad arithmetic.

    Built over the file's map of visible names (`names`: name -> the first item of each
    name) without copying it: `items`, `info` and `values` are views. Only the dims that
    need evaluating are resolved up front (`_info`); a plain dim (no value, or a valid
    literal, and no override) is its own symbol, and its DimInfo is made when asked for,
    so a file of a million `dim X = 1` lines keeps no DimInfo nor a map entry per dim."""

    def __init__(self, names, overrides: dict | None = None):
        if not isinstance(names, Mapping):  # a list of dim items: the first of each name
            names = NameMap(list(names))
        self.names = names
        self.items = DimItems(names)
        self._info: dict[str, DimInfo] = {}
        self.overrides = overrides or {}
        self.info = DimInfos(self.items, self._info, self.overrides)
        self.values = DimValues(self.info)
        self.diags: dict[int, list] = {}  # id(item) -> diagnostics
        # a simple dim (ast.DimItem) is plain unless overridden: without overrides only
        # the other dims are looked at (a million simple dims: no name read)
        todo = self.items.pairs() if self.overrides else \
            ((n, it) for n, it in without_simple_dims(names).items() if is_dim_item(it))
        for name, it in todo:
            if name not in self._info and not self.plain(name, it):
                self._resolve(name)
        # a size's name for messages and code; a dim's own symbol names itself (name_of)
        self.reverse: dict[Size, str] = {}
        for name, d in self._info.items():
            if d._canon is not None and d._canon is not _SYM:
                self.reverse.setdefault(d._canon, name)
        self.fingerprint = DimsFingerprint(self)

    def plain(self, name: str, item) -> bool:
        return _plain(name, item, self.overrides)

    def rebind(self, names):
        """Read the dims from `names`, a newer version of the names map this table was
        built over with the very same dim items (the caller checks that): the views and
        the fingerprint follow, and the older map is no longer kept alive by them."""
        self.names = self.items._names = self.fingerprint.names = names

    def _diag(self, item, d: Diagnostic):
        self.diags.setdefault(id(item), []).append(d)

    def _deps(self, name: str) -> list:
        """The dims a dim's value names, left to right (those that are declared)."""
        item = self.items[name]
        if isinstance(item, A.BrokenItem) or item.value is None:
            return []
        return [e.name for e in A.size_post_order(item.value)
                if isinstance(e, A.SName) and e.name in self.items]

    def _resolve(self, root: str):
        """Resolve a dim and every dim it depends on, depth first on an explicit stack
        (a chain of a thousand dims recurses nowhere). A dim found again while its own
        value is being resolved closes a cycle: E0208 at every dim on it."""
        if root in self._info or root not in self.items:
            return
        path = [root]  # the dims being resolved, outermost first
        on_path = {root}
        work = [iter(self._deps(root))]
        while work:
            dep = next(work[-1], None)
            if dep is not None:
                if dep in on_path:
                    self._cycle(path[path.index(dep):] + [dep])
                elif dep not in self._info:
                    path.append(dep)
                    on_path.add(dep)
                    work.append(iter(self._deps(dep)))
                continue
            work.pop()
            name = path.pop()
            on_path.discard(name)
            item = self.items[name]
            if isinstance(item, A.BrokenItem):
                info = DimInfo(name, item, None, None)
            else:
                info = self._compute(name, item)
            self._info.setdefault(name, info)  # a dim on a cycle keeps its E0208

    def _cycle(self, cycle: list):
        for n in cycle[:-1]:
            if n in self._info:
                continue
            it = self.items[n]
            k = cycle.index(n)
            path = cycle[k:-1] + cycle[:k] + [n]
            self._diag(it, e0208.dim_cycle(it.span(it.name_pos), n, path))
            self._info[n] = DimInfo(n, it, None, None)

    def _compute(self, name: str, item: A.DimItem) -> DimInfo:
        v = item.value
        if v is None or isinstance(v, A.SInt):
            val = v.value if isinstance(v, A.SInt) else None
            if name in self.overrides:
                val = self.overrides[name]
            if val is not None and abs(val) > MAX_DIM:
                self._diag(item, e0208.dim_too_large(item.span(v.pos if v is not None else item.name_pos), name,
                                                     item.src(v.pos) if v is not None else str(val)))
                return DimInfo(name, item, None, None)
            if val is not None and val <= 0:
                self._diag(item, e0208.dim_not_positive(item.span(v.pos), name, val))
                return DimInfo(name, item, None, None)
            return DimInfo(name, item, _SYM, val)
        res = self._eval(item, v)
        if res is None:
            return DimInfo(name, item, None, None)
        canon, val = res
        if name in self.overrides:
            # an override makes the dim a base symbol of that value
            return DimInfo(name, item, _SYM, self.overrides[name])
        if val is not None and val <= 0:
            self._diag(item, e0208.dim_not_positive(item.span(v.pos), name, val, item.src(v.pos)))
            return DimInfo(name, item, None, None)
        return DimInfo(name, item, canon, int(val) if val is not None else None)

    def _eval(self, item, root):
        """(canonical, numeric value or None), or None after a diagnostic."""
        out: dict = {}
        for e in A.size_post_order(root):
            out[id(e)] = self._eval_one(item, e, out)
        return out[id(root)]

    def _eval_one(self, item, e, out: dict):
        got = self._eval_op(item, e, out)
        if got is not None and got[1] is not None and abs(got[1]) > MAX_DIM:
            # no value past int64, intermediate ones included (and no number too long to print)
            self._diag(item, e0208.dim_too_large(item.span(e.pos), item.name, item.src(item.value.pos)))
            return None
        return got

    def _eval_op(self, item, e, out: dict):
        if isinstance(e, A.SInt):
            if e.value > MAX_DIM:
                return None, Fraction(e.value)  # reported by _eval_one
            return Size.const(e.value), Fraction(e.value)
        if isinstance(e, A.SName):
            if e.name not in self.items:
                sug = closest(e.name, list(self.items))
                self._diag(item, similar.similar(e0201.undefined(item.span(e.pos), e.name, "not a dim"), "a dim", sug))
                return None
            info = self.info.get(e.name)  # resolved before this dim (see _resolve)
            if info is None or info.canon is None:
                return None
            return info.canon, (Fraction(info.value) if info.value is not None else None)
        l, r = out[id(e.left)], out[id(e.right)]
        if l is None or r is None:
            return None
        (lc, lv), (rc, rv) = l, r
        if e.op == "+":
            return lc + rc, (lv + rv if lv is not None and rv is not None else None)
        if e.op == "-":
            return lc - rc, (lv - rv if lv is not None and rv is not None else None)
        if e.op == "*":
            return lc * rc, (lv * rv if lv is not None and rv is not None else None)
        # division must be exact
        if lv is not None and rv is not None:
            if rv == 0 or (lv / rv).denominator != 1:
                self._diag(item, e0208.dim_inexact(item.span(e.pos), f"{item.name} = {item.src(item.value.pos)}",
                                                   _num(lv), _num(rv)))
                return None
            return lc / rc, lv / rv
        return lc / rc, None

    # ---- queries
    def canon(self, name: str) -> Optional[Size]:
        d = self.info.get(name)
        return d.canon if d is not None else None

    def is_dim(self, name: str) -> bool:
        return name in self.items

    def name_of(self, s: Size) -> Optional[str]:
        """The dim that names a size (the first declared with it), or None. Ask this, not
        `reverse`: a dim that is its own symbol is not in `reverse`."""
        t = s.terms
        if len(t) == 1 and t[0][1] == 1 and len(t[0][0]) == 1 and t[0][0][0][1] == 1:
            # a single symbol: the dim whose own symbol it is names it (it comes before
            # every dim defined as it: `dim Y = X` resolves X first)
            info = self.info.get(t[0][0][0][0])
            if info is not None and info._canon is _SYM:
                return info.name
        return self.reverse.get(s)

    def render(self, s: Size) -> str:
        n = self.name_of(s)
        return n if n is not None else str(s)


def _num(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else str(v)


_SIZE_OPS = {"+": Size.__add__, "-": Size.__sub__, "*": Size.__mul__, "/": Size.__truediv__}


def eval_size_expr(e, item, lookup: Callable, diags: list):
    """Evaluate a size expression in a type: (name, size) Sizes, or None on error.

    `lookup(name, node)` gives (name Size, size Size) for an identifier or None after a
    diagnostic.
    """
    if isinstance(e, A.SInt):
        c = Size.const(e.value)
        return c, c
    if isinstance(e, A.SName):
        return lookup(e.name, e)
    out: dict = {}
    for n in A.size_post_order(e):
        if isinstance(n, A.SBin):
            l, r = out[id(n.left)], out[id(n.right)]
            op = _SIZE_OPS[n.op]
            out[id(n)] = None if l is None or r is None else (op(l[0], r[0]), op(l[1], r[1]))
        else:
            out[id(n)] = eval_size_expr(n, item, lookup, diags)
    return out[id(e)]


def resolve_type(texpr, item, dims: DimTable, models: set, lookup: Callable, diags: list,
                 allow_stack: bool = False) -> Type:
    """The type a type expression denotes; unknown after a diagnostic."""
    if isinstance(texpr, A.NamedTypeExpr):
        if texpr.name in DTYPE_NAMES:
            return TensorT((), DType(texpr.name))
        if texpr.name == "Index" and texpr.index is not None:
            v = eval_size_expr(texpr.index, item, lookup, diags)
            return TensorT((), DType("Index", v[1])) if v else UNKNOWN
        if texpr.name in models:
            return ModelT(texpr.name)
        sug = closest(texpr.name, list(models) + list(DTYPE_NAMES))
        diags.append(similar.similar(e0201.undefined(item.span(texpr.pos), texpr.name, "not a model or dtype"), "a type", sug))
        return UNKNOWN
    dt = texpr.dtype
    if dt is not None and dt.name not in DTYPE_NAMES and dt.name != "Index":
        if allow_stack and dt.name in models and len(texpr.axes) == 1 and dt.index is None:
            n = eval_size_expr(texpr.axes[0], item, lookup, diags)
            return StackT(dt.name, n[1]) if n else UNKNOWN
        sug = closest(dt.name, list(DTYPE_NAMES) + (list(models) if allow_stack else []))
        diags.append(similar.similar(e0201.undefined(item.span(dt.pos), dt.name,
                                                     "not a dtype" if not allow_stack else "not a dtype or model"),
                               "a type", sug))
        return UNKNOWN
    axes = []
    ok = True
    for a in texpr.axes:
        r = eval_size_expr(a, item, lookup, diags)
        if r is None:
            ok = False
            continue
        axes.append(Axis(r[0], r[1]))
    dtype = DType("f32")
    if dt is not None:
        if dt.name == "Index":
            if dt.index is None:
                diags.append(syntax_error(item.span(dt.pos), "`[V]` after `Index`", "nothing", "write Index[V]"))
                return UNKNOWN
            v = eval_size_expr(dt.index, item, lookup, diags)
            if v is None:
                return UNKNOWN
            dtype = DType("Index", v[1])
        else:
            dtype = DType(dt.name)
    return TensorT(tuple(axes), dtype) if ok else UNKNOWN


def dim_lookup(dims: DimTable, item, diags: list, on_free: Callable):
    """A lookup for eval_size_expr: dims first, then `on_free(name, node)`."""
    def lookup(name, node):
        if dims.is_dim(name):
            c = dims.canon(name)
            return (c, c) if c is not None else None
        return on_free(name, node)
    return lookup


def unique_names(nodes, item, diags: list) -> list:
    """The fields or parameters with a name not seen before; E0203 for the others."""
    seen: dict = {}
    out = []
    for n in nodes:
        if n.name in seen:
            diags.append(e0203.defined_twice(item.span(n.name_pos), n.name, item.span(seen[n.name].name_pos)))
            continue
        seen[n.name] = n
        out.append(n)
    return out


def build_model(item: A.ModelItem, dims: DimTable, models: set) -> tuple[ModelInfo, list]:
    diags: list = []
    info = ModelInfo(item.name, item)

    def on_free(name, node):
        diags.append(e0202.free_name_in_field(item.span(node.pos), name))
        return None

    lookup = dim_lookup(dims, item, diags, on_free)
    for f in unique_names(item.fields, item, diags):
        t = resolve_type(f.type, item, dims, models, lookup, diags, allow_stack=True)
        info.fields[f.name] = FieldInfo(f.name, t, f, item)
    info.fingerprint = tuple((n, fi.type) for n, fi in info.fields.items())
    return info, diags


def held_models(start, model_of) -> list:
    """(name, model) of the models `start` names (None: no model) and of those their
    fields hold, directly or not, each once, depth first; `model_of(name)` is the model,
    or None (then it holds nothing)."""
    return reached([n for n in start if n is not None], model_of,
                   lambda m: [h for h in (held_model(f.type) for f in m.fields.values()) if h is not None])


def reachable_models(models, own) -> dict:
    """name -> ModelInfo of this file's models and the models their fields hold, directly
    or not (read by name from `models`: an import's is built only when reached), in the
    order of `models`: every cycle through a model of this file is among them."""
    seen = {n for n, _ in held_models([n for n in without_simple_dims(own) if n in models], models.get)}
    return {n: models.get(n) for n in models.keys() if n in seen}


def model_cycles(models: dict, own: dict) -> list:
    """E0211 at each field of this file's models that leads into a cycle of models (a
    model holding itself, directly, through a stack, or through other models).

    Linear in the models and fields: per strongly connected component, one breadth-first
    search from a root each way; the cycle shown for a field goes from the model it
    holds to the root and from the root back (the shortest way when the models form one
    ring), its first hops written out."""
    graph: dict = {}
    for name, m in models.items():
        graph[name] = {held_model(f.type) for f in m.fields.values()} & models.keys()
    comp = components(graph)
    trees: dict = {}  # component -> RootPaths
    out = []
    for name, it in without_simple_dims(own).items():
        m = models.get(name)
        if m is None or m.item is not it:
            continue
        for fname, f in m.fields.items():
            inner = held_model(f.type)
            if inner not in graph or comp[inner] != comp[name]:
                continue  # a field into another component is on no cycle
            paths = trees.get(comp[name])
            if paths is None:
                paths = trees[comp[name]] = RootPaths(graph, comp, comp[name])
            nodes, total = paths.cycle(name, inner, CYCLE_SHOWN)
            hops = [(a, _field_to(models[a], b)) for a, b in zip(nodes, nodes[1:])]
            hops[0] = (name, fname)
            out.append(model_contains_itself(it, f.node, hops, total))
    return out


CYCLE_SHOWN = 8  # hops of a cycle written out in E0211's headline


class RootPaths:
    """Shortest paths to and from one root in a strongly connected component: every
    node's next step towards the root, and the first hops of the root's path to it."""

    def __init__(self, graph: dict, comp: dict, cid):
        members = sorted(n for n in graph if comp[n] == cid)
        self.root = root = members[0]
        inside = set(members)
        back: dict = {n: [] for n in members}
        for n in members:
            for t in graph[n]:
                if t in inside:
                    back[t].append(n)
        self.next: dict = {root: None}  # towards the root
        self.to_root: dict = {root: 0}
        queue = deque([root])
        while queue:
            x = queue.popleft()
            for y in sorted(back[x]):
                if y not in self.next:
                    self.next[y], self.to_root[y] = x, self.to_root[x] + 1
                    queue.append(y)
        self.prefix: dict = {root: (root,)}  # the first nodes of the path root → n
        self.from_root: dict = {root: 0}
        queue = deque([root])
        while queue:
            x = queue.popleft()
            for y in sorted(graph[x] & inside):
                if y not in self.prefix:
                    p = self.prefix[x]
                    self.prefix[y] = p + (y,) if len(p) <= CYCLE_SHOWN else p
                    self.from_root[y] = self.from_root[x] + 1
                    queue.append(y)

    def cycle(self, v: str, u: str, shown: int) -> tuple[list, int]:
        """The first `shown` + 1 nodes of a cycle v → u → … → v, and its length in hops."""
        if u == v:
            return [v, v], 1
        nodes = [v]
        x = u
        while x is not None and len(nodes) <= shown:
            nodes.append(x)
            x = None if x == self.root else self.next[x]
        if v != self.root and len(nodes) <= shown:
            nodes += list(self.prefix[v][1:])[:shown + 1 - len(nodes)]
        total = 1 + self.to_root[u] + (self.from_root[v] if v != self.root else 0)
        return nodes, total


def held_model(t) -> Optional[str]:
    """The model a value of type t holds: a model's own name, a stack's model, or None."""
    if isinstance(t, ModelT):
        return t.name
    if isinstance(t, StackT):
        return t.model
    return None


def _field_to(m: ModelInfo, target: str) -> str:
    return next(n for n, f in sorted(m.fields.items()) if held_model(f.type) == target)


def build_signature(item: A.FnItem, dims: DimTable, models: set) -> tuple[Signature, list]:
    diags: list = []
    svars: set = set()

    def on_free(name, node):
        svars.add(name)
        s = Size.sym(name)
        return s, s

    lookup = dim_lookup(dims, item, diags, on_free)
    params = []
    for p in unique_names(item.params, item, diags):
        t = resolve_type(p.type, item, dims, models, lookup, diags, allow_stack=True)
        params.append(ParamInfo(p.name, t, p.default is not None, p))
    ret = resolve_type(item.ret, item, dims, models, lookup, diags) if item.ret is not None else UNKNOWN
    sig = Signature(item.name, item, params, ret, svars)
    sig.fingerprint = (tuple((p.name, p.type, p.has_default) for p in params), ret)
    return sig, diags
