"""The syntax tree. Every node carries its exact span, relative to its item's start."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields as _dataclass_fields
from typing import Optional, Union

from ..diagnostics import Anchor, Span

Pos = tuple[int, int]  # (start, end) relative to the item
_DIM_NAME = re.compile(r"dim[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
_DIM_LITERAL = re.compile(r"dim[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*([0-9]+)")
_SHARED_POS: dict = {}


SHARED_POS_LIMIT = 65_536  # spans in the table at most (a few MB): past that, new ones are not shared


def shared_pos(pos: Pos) -> Pos:
    """One tuple for each span (relative to its item): a million dims keep no million
    position tuples (a dim's value sits at one of a few dozen places on its line), and
    items written alike (the layers of a model, the blocks of a generated file) share
    their nodes' spans. The table stops growing at SHARED_POS_LIMIT."""
    got = _SHARED_POS.get(pos)
    if got is not None:
        return got
    if len(_SHARED_POS) < SHARED_POS_LIMIT:
        _SHARED_POS[pos] = pos
    return pos


class Node:
    __slots__ = ()
    pos: Pos

    def __reduce__(self):
        # pickled as its class and its fields, made again by the class itself
        # (parse_cache.py): the dataclass default (a state list, set field by field)
        # leaves its temporaries between the nodes it builds, about 20 MB of
        # half-empty allocator arenas after a 10,000-line file is loaded
        return (type(self), tuple(map(self.__getattribute__, self.__dataclass_fields__)))


# ---- sizes (in types, dims, masks)
@dataclass(eq=False, slots=True)
class SName(Node):
    name: str
    pos: Pos


@dataclass(eq=False, slots=True)
class SInt(Node):
    value: int
    pos: Pos


@dataclass(eq=False, slots=True)
class SBin(Node):
    op: str
    left: "SizeExpr"
    right: "SizeExpr"
    pos: Pos


SizeExpr = Union[SName, SInt, SBin]


# ---- types
@dataclass(eq=False, slots=True)
class DtypeExpr(Node):
    name: str
    index: Optional[SizeExpr]
    pos: Pos


@dataclass(eq=False, slots=True)
class TensorTypeExpr(Node):
    axes: list
    dtype: Optional[DtypeExpr]
    pos: Pos
    axes_pos: Pos = (0, 0)


@dataclass(eq=False, slots=True)
class NamedTypeExpr(Node):
    name: str
    index: Optional[SizeExpr]
    pos: Pos


TypeExpr = Union[TensorTypeExpr, NamedTypeExpr]


# ---- patterns
@dataclass(eq=False, slots=True)
class PName(Node):
    name: str
    pos: Pos


@dataclass(eq=False, slots=True)
class PInt(Node):
    value: int
    pos: Pos


@dataclass(eq=False, slots=True)
class PGroup(Node):
    items: list
    pos: Pos


@dataclass(eq=False, slots=True)
class PSide(Node):
    items: list
    pos: Pos


@dataclass(eq=False, slots=True)
class Pattern(Node):
    inputs: list  # list[PSide]
    output: PSide
    pos: Pos


# ---- expressions
@dataclass(eq=False, slots=True)
class Name(Node):
    id: str
    pos: Pos


@dataclass(eq=False, slots=True)
class Number(Node):
    value: float
    is_int: bool
    text: str
    pos: Pos


@dataclass(eq=False, slots=True)
class String(Node):
    value: str
    pos: Pos


@dataclass(eq=False, slots=True)
class Const(Node):
    value: str  # true false inf
    pos: Pos


@dataclass(eq=False, slots=True)
class Unop(Node):
    op: str
    operand: "Expr"
    pos: Pos


@dataclass(eq=False, slots=True)
class Binop(Node):
    op: str
    left: "Expr"
    right: "Expr"
    pos: Pos
    op_pos: Pos = (0, 0)


@dataclass(eq=False, slots=True)
class Arg(Node):
    name: Optional[str]
    value: "Expr"
    pos: Pos


@dataclass(eq=False, slots=True)
class Call(Node):
    func: "Expr"
    args: list  # list[Arg]; a piped value is the first
    pattern: Optional[Pattern]
    pos: Pos
    piped: bool = False  # written as `x |> f(...)`
    args_pos: Pos = (0, 0)  # inside the parentheses (empty when `|> f`)


@dataclass(eq=False, slots=True)
class FieldRead(Node):
    obj: "Expr"
    name: str
    name_pos: Pos
    pos: Pos


@dataclass(eq=False, slots=True)
class Mask(Node):
    obj: "Expr"
    axes: list  # list[SizeExpr]
    pos: Pos


@dataclass(eq=False, slots=True)
class TupleExpr(Node):
    items: list
    pos: Pos


@dataclass(eq=False, slots=True)
class IfExpr(Node):
    """`then if cond else other` (v0.2): cond must be known at compile time (E0413)."""
    then: "Expr"
    cond: "Expr"
    other: "Expr"
    pos: Pos


Expr = Union[Name, Number, String, Const, Unop, Binop, Call, FieldRead, Mask, TupleExpr, IfExpr]


# ---- statements
@dataclass(eq=False, slots=True)
class Assign(Node):
    target: str
    target_pos: Pos
    annotation: Optional[TypeExpr]
    value: Expr
    pos: Pos


@dataclass(eq=False, slots=True)
class TupleAssign(Node):
    targets: list  # list[(name, pos)]
    value: Expr
    pos: Pos


@dataclass(eq=False, slots=True)
class Return(Node):
    value: Expr
    pos: Pos


@dataclass(eq=False, slots=True)
class For(Node):
    var: str
    var_pos: Pos
    iter: Expr
    body: list
    pos: Pos
    index: Optional[str] = None  # `for i, layer in m.layers:` binds i, the copy's index (v0.2)
    index_pos: Pos = (0, 0)


Stmt = Union[Assign, TupleAssign, Return, For]


# ---- items
@dataclass(eq=False, slots=True)
class Field(Node):
    name: str
    name_pos: Pos
    type: TypeExpr
    init: Optional[Expr]
    pos: Pos


@dataclass(eq=False, slots=True)
class Param(Node):
    name: str
    name_pos: Pos
    type: TypeExpr
    default: Optional[Expr]
    pos: Pos


@dataclass(eq=False, slots=True)
class Decorator(Node):
    name: str
    args: list  # list[(name, pos)]
    pos: Pos


class Item(Anchor):
    """A top-level item: the anchor of every span inside it."""

    # slots for what every item has (a file of a million `dim` lines holds no million
    # instance dicts); the rest are class-level defaults, set on an item only when it has
    # its own: no million empty lists. Models, functions, imports and broken items keep
    # their path, text, name and other attributes in a dict (and can be weakly referred
    # to); a dim has no dict (see DimItem)
    __slots__ = ("offset",)
    kind = "item"
    cheap = False  # DimItem.cheap
    doc = ""
    syntax_errors = ()  # Diagnostics (a list when there are some)
    layout_errors = ()
    _name_pos = None  # the name's span when the parser gave it (else derived)

    def __init__(self, text: str, path: str, offset: int):
        self.text = text
        self.path = path
        self.offset = offset
        self.name: Optional[str] = None

    @property
    def pos(self) -> Pos:
        """The whole item but its trailing blank lines (computed: no tuple kept per item)."""
        return (0, len(self.text.rstrip()))

    @property
    def name_pos(self) -> Pos:
        p = self._name_pos
        return self._derived_name_pos() if p is None else p

    @name_pos.setter
    def name_pos(self, value: Pos):
        self._name_pos = value

    def _derived_name_pos(self) -> Pos:
        return (0, 0)

    def span(self, pos: Pos) -> Span:
        return Span(self, pos[0], pos[1])

    def src(self, pos: Pos) -> str:
        return self.text[pos[0]:pos[1]]

    @property
    def broken(self) -> bool:
        return bool(self.syntax_errors)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name} @{self.path}:{self.offset}>"


class ImportItem(Item):
    kind = "import"
    target: str = ""
    target_pos: Pos = (0, 0)


LITERAL_IN_TEXT = False  # FullDim.value not built yet: a literal the parser checked, in the text


class FileText:
    """A version of a file's text and its path: what the DimItems of that version share."""

    __slots__ = ("text", "path")

    def __init__(self, text: str, path: str):
        self.text, self.path = text, path


class DimItem(Item):
    """`dim NAME` or `dim NAME = size`: every dim is one (`isinstance`); an object of this
    class itself is the commonest, a line `dim NAME = 123` (a plain literal: 1 to 18
    digits, not 0, no doc comment above it) that the parser's fast path left in the
    file's text. It keeps two slots and nothing else (48 bytes; a file of a million
    dims): its offset and the file's text and path (`_src`, a FileText shared by the
    dims of the file, which `parser.rebase` points at each new version of it). Its text
    (its line), name, name span and value are read from that text when asked: no
    string, tuple, node or int per dim (its value's node is made at each ask). It can't
    be weakly referred to. The other dims (a value to evaluate, a doc, a literal out
    of range, layout problems) are `FullDim`s."""

    __slots__ = ("_src",)
    kind = "dim"
    plain = True  # a valid literal: its own symbol, needing no evaluation
    cheap = True  # parsed again as fast as it unpickles (parse_cache.py doesn't keep it)

    @classmethod
    def in_source(cls, src: FileText, start: int) -> "DimItem":
        """The item of the line of src at `start` (the caller checked it: a `dim NAME =
        literal` line for which `plain` holds)."""
        item = cls.__new__(cls)
        item._src, item.offset = src, start
        return item

    @property
    def path(self) -> str:
        return self._src.path

    @property
    def text(self) -> str:
        s, a = self._src.text, self.offset
        e = s.find("\n", a)
        return s[a:] if e < 0 else s[a:e + 1]

    @property
    def name(self) -> str:
        # `dim`, blanks, the name, blanks, `=` (the parser's fast path matched the line)
        s, a = self._src.text, self.offset
        return s[a + 3:s.find("=", a)].strip(" \t")

    def __reduce_ex__(self, protocol):
        # a copy holds its own text, not the file's (a pickled item never holds the whole file)
        return _full_dim, (self.text, self.path, self.offset, self.name)

    @property
    def value(self) -> Optional[SizeExpr]:
        a = self.offset
        m = _DIM_LITERAL.match(self._src.text, a)
        return SInt(int(m.group(1)), shared_pos((m.start(1) - a, m.end(1) - a)))

    def literal_size(self) -> Optional[int]:
        """A plain dim's value (None when it has none), without building a node."""
        return int(_DIM_LITERAL.match(self._src.text, self.offset).group(1))

    def _derived_name_pos(self) -> Pos:
        m = _DIM_NAME.match(self._src.text, self.offset)
        a = self.offset
        return (m.start(1) - a, m.end(1) - a)


class FullDim(DimItem):
    """A dim with its own text (`_src`) and room for what the commonest (`DimItem`)
    hasn't: its name, its value's node, and the rare doc comment, layout problems and
    name span in one slot (`_more`, a dict, or None). The parser's fast path may still
    leave a plain literal in the text (`value` is LITERAL_IN_TEXT until asked for)."""

    __slots__ = ("path", "_name", "_value", "_more", "__weakref__")

    def __init__(self, text: str, path: str, offset: int):
        super().__init__(text, path, offset)
        self._value: object = None
        self._more: Optional[dict] = None

    @property
    def text(self) -> str:
        return self._src

    @text.setter
    def text(self, text: str):
        self._src = text

    @property
    def name(self) -> Optional[str]:
        return self._name

    @name.setter
    def name(self, name: Optional[str]):
        self._name = name

    __reduce_ex__ = object.__reduce_ex__  # its slots (__getstate__), not a DimItem's copy

    def __getstate__(self):
        return None, {"path": self.path, "offset": self.offset, "_name": self._name, "_src": self._src,
                      "_value": self._value, "_more": self._more}

    @property
    def value(self) -> Optional[SizeExpr]:
        v = self._value
        if v is LITERAL_IN_TEXT:
            m = _DIM_LITERAL.match(self._src)
            v = self._value = SInt(int(m.group(1)), shared_pos(m.span(1)))
        return v

    @value.setter
    def value(self, v):
        self._value = v

    @property
    def plain(self) -> bool:
        """No value, or a literal that is a valid size (1 to 10^18 − 1): a dim that is its
        own symbol, needing no evaluation. Known without building the literal's node."""
        v = self._value
        return v is LITERAL_IN_TEXT or v is None or (type(v) is SInt and 0 < v.value < 10 ** 18)

    @property
    def cheap(self) -> bool:
        """Made by the parser's fast path, its literal still in the text: parsing it again
        costs what reading it back would (parse_cache.py doesn't keep it)."""
        return self._value is LITERAL_IN_TEXT and self._name_pos is None

    def literal_size(self) -> Optional[int]:
        """A plain dim's value (None when it has none), without building a node."""
        v = self._value
        if v is LITERAL_IN_TEXT:
            return int(_DIM_LITERAL.match(self._src).group(1))
        return v.value if type(v) is SInt else None

    def _derived_name_pos(self) -> Pos:
        # the parser's fast path for `dim NAME = 123` leaves the name's span to be found here
        m = _DIM_NAME.match(self._src)
        return m.span(1) if m else (0, 0)

    def _extra(self, key: str, default):
        more = self._more
        return default if more is None else more.get(key, default)

    def _set_extra(self, key: str, value):
        if self._more is None:
            self._more = {}
        self._more[key] = value

    doc = property(lambda self: self._extra("doc", ""), lambda self, v: self._set_extra("doc", v))
    layout_errors = property(lambda self: self._extra("layout_errors", ()),
                             lambda self, v: self._set_extra("layout_errors", v))
    _name_pos = property(lambda self: self._extra("name_pos", None),
                         lambda self, v: self._set_extra("name_pos", v))


def _full_dim(text: str, path: str, offset: int, name: str) -> FullDim:
    """A DimItem's copy (pickle), its text its own."""
    item = FullDim(text, path, offset)
    item.name, item.value = name, LITERAL_IN_TEXT
    return item


class Unbuilt:
    """An attribute of a model (its fields) or of a function's header (its decorators,
    parameters, return type) that an interface-depth parse left unbuilt (the item's
    `unbuilt` flag: fast_items.deferred): all of them are built when one is first read.
    An attribute in the item's dict is read as a plain attribute; without one, the
    class's default."""

    def __init__(self, name: str, default):
        self.name = name
        self.default = default

    def __get__(self, item, owner=None):
        if item is None:
            return self
        d = item.__dict__
        if d.get("unbuilt"):
            unbuilt_builder(item)
            return d.get(self.name, self.default)
        return self.default


unbuilt_builder = None  # (item) -> None: builds a deferred item's attributes; fast_items.py sets it


class ModelItem(Item):
    kind = "model"
    fields = Unbuilt("fields", [])


class _Body:
    """`FnItem.body` when the item's own is not in its dict: none ([]), or, when it was
    dropped (`drop_body`) or never parsed (an interface-depth parse, `parse_interface`),
    its statements parsed from the item's text (by the parser that registered
    `body_parser`: the same text, so the same statements at the same spans, as new
    objects). A body in the item's dict is read as a plain attribute."""

    def __get__(self, item, owner=None):
        if item is None:
            return self
        d = item.__dict__
        if not d.get("body_dropped"):
            return []
        if body_parser is None:
            raise RuntimeError("a dropped function body is read before any parser is loaded")
        body_parser(item)
        del d["body_dropped"]
        parsed_again.append(item)
        return d["body"]


class _BodyErrors:
    """`FnItem.syntax_errors` / `.layout_errors` when not in the item's dict: none, or,
    for a function parsed at interface depth, those its body's parse finds (read then)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, item, owner=None):
        if item is None or not item.__dict__.get("errors_unknown"):
            return ()
        item.body  # noqa: B018 - parses it, and sets its errors
        return item.__dict__.get(self.name, ())


body_parser = None  # (FnItem) -> None: its body (and unknown errors) parsed from its text; parser.py sets it
parsed_again: list = []  # the items whose dropped body was read since Workspace.trim last looked


class FnItem(Item):
    """A function: its header parsed; its body's statements, or its body's syntax error
    (`syntax_errors`, with no statements: the header still declares it)."""

    kind = "fn"
    decorators = Unbuilt("decorators", [])
    params = Unbuilt("params", [])
    params_pos = Unbuilt("params_pos", (0, 0))
    ret = Unbuilt("ret", None)
    body = _Body()
    syntax_errors = _BodyErrors("syntax_errors")
    layout_errors = _BodyErrors("layout_errors")
    header_pos: Pos = (0, 0)

    @property
    def broken(self) -> bool:
        """Never: a function's header parsed, so it declares its signature; a syntax
        error in its body is the body's own (it reads no body)."""
        return False

    def drop_body(self) -> bool:
        """Free the body's statements (most of a function's syntax tree); the next read
        of `body` parses them again from the text. Only for an item that parsed whole
        (its syntax and layout errors stay as they are); whether it dropped one."""
        d = self.__dict__
        if "body" not in d or self.syntax_errors or self.layout_errors:
            return False
        del d["body"]
        d["body_dropped"] = True
        return True

    @property
    def body_loaded(self) -> bool:
        """Whether the body's statements are in memory (not dropped, not yet parsed)."""
        return not self.__dict__.get("body_dropped")


class BrokenItem(Item):
    """An item that did not parse: it still defines its name, with an unknown type."""

    kind = "broken"
    declared_kind: str = ""


def op_pos(node) -> Pos:
    """The span of an operation itself: a piped call starts at its function's name, so
    `x\n    |> linear(w)` is reported on the line of `linear`."""
    if isinstance(node, Call) and node.piped:
        return (node.func.pos[0], node.pos[1])
    return node.pos


EXPRESSIONS, OPERANDS, SYNTAX = "expressions", "operands", "syntax"  # what children() lists


def children(n, of: str = EXPRESSIONS) -> list:
    """The nodes directly inside n, the one list of them every walk uses. `of`:

    - EXPRESSIONS (the default): the expressions inside the expression n, in source
      order (walk_expr): a call's function then its arguments' values (a piped call's
      function first too), a mask's object, a conditional's `then`, condition, `else`.
    - OPERANDS: the values the operation n is computed from, in the order they are
      computed (the checker checks them first, check/static.py and the compiler's
      lowering compute them first): a call's arguments' values without its function (a
      name, not a value), a conditional's condition first, nothing for a mask (its
      object is the mask rule's own; its axes are sizes, not expressions).
    - SYNTAX: every syntax node directly under n, of any kind (a statement, parameter,
      field, type, pattern, size or argument too), in its fields' order, as the IDE's
      walks use them (ide/locate.py): a call's `Arg` nodes (not their values) and
      pattern, a mask's axes; the fields in _NOT_CHILDREN are never looked in.
    """
    if isinstance(n, Binop):
        return [n.left, n.right]
    if isinstance(n, Call):
        if of == SYNTAX:
            kids = [n.func, *n.args]
            return kids if n.pattern is None else kids + [n.pattern]
        values = [a.value for a in n.args]
        return values if of == OPERANDS else [n.func, *values]
    if isinstance(n, Unop):
        return [n.operand]
    if isinstance(n, FieldRead):
        return [n.obj]
    if isinstance(n, TupleExpr):
        return list(n.items)
    if isinstance(n, IfExpr):
        return [n.cond, n.then, n.other] if of == OPERANDS else [n.then, n.cond, n.other]
    if isinstance(n, Mask):
        if of == OPERANDS:
            return []
        return [n.obj, *(a for a in n.axes if isinstance(a, Node))] if of == SYNTAX else [n.obj]
    return _syntax_children(n) if of == SYNTAX else []  # names, literals (not syntax: any other node)


# fields that hold no syntax node, or none an IDE walk looks in (a type's `index`, the V
# of `Index[V]`, is a size like an axis: rename, references and hover find the dim there)
_NOT_CHILDREN = frozenset({"pos", "name_pos", "target_pos", "var_pos", "index_pos", "axes_pos", "op_pos",
                           "args_pos", "name", "id", "op", "text", "is_int", "piped", "target"})
_CHILD_FIELDS: dict = {}  # node class -> the fields that may hold nodes


def _syntax_children(n) -> list:
    """children(n, SYNTAX) of a node that is no operation: its fields' nodes, in order."""
    names = _CHILD_FIELDS.get(type(n))
    if names is None:
        names = _CHILD_FIELDS[type(n)] = tuple(f.name for f in _dataclass_fields(n) if f.name not in _NOT_CHILDREN)
    out = []
    for name in names:
        v = getattr(n, name)
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Node))
    return out


def walk_expr(e):
    """Yield e and every expression inside it, depth first, in source order."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def walk_stmts(stmts):
    """Yield every statement, descending into `for` bodies (in source order)."""
    stack = [iter(stmts)]
    while stack:
        s = next(stack[-1], None)
        if s is None:
            stack.pop()
            continue
        yield s
        if isinstance(s, For):
            stack.append(iter(s.body))


def size_post_order(root) -> list:
    """The nodes of a size expression, each after its operands (no recursion)."""
    out = []
    stack = [(root, False)]
    while stack:
        e, expanded = stack.pop()
        if isinstance(e, SBin) and not expanded:
            stack += [(e, True), (e.right, False), (e.left, False)]
        else:
            out.append(e)
    return out


def pattern_leaves(items) -> list:
    """The names and numbers of a pattern side's items, groups opened, in source order."""
    out = []
    for i in items:  # the usual case: groups of names and numbers, one level deep
        if not isinstance(i, PGroup):
            out.append(i)
        elif not any(isinstance(x, PGroup) for x in i.items):
            out.extend(i.items)
        else:
            return _nested_leaves(items)
    return out


def _nested_leaves(items) -> list:
    out = []
    stack = [iter(items)]
    while stack:
        i = next(stack[-1], None)
        if i is None:
            stack.pop()
        elif isinstance(i, PGroup):
            stack.append(iter(i.items))
        else:
            out.append(i)
    return out
