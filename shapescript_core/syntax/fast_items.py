"""The commonest declarations built without the lexer and the LALR parser: a model whose
fields each fit on one line, and a function's header on one line (decorators above it
allowed), with plain types: tensor types whose axes are names, numbers and `* / + -` of
them, named types, a name as a field's initializer.

They are what an import is read for (its interface: parser.parse_interface) and most of
what a file declares, and they cost a fifth of the general path's time. Each builds the
very item the general path builds, spans included (tests/test_fast_items.py compares the
two on every item of the examples, the conformance cases and the benchmarks' files, and
on random texts). Anything else (a comment inside a header, a default value, brackets
over several lines, a tab, a keyword where a name goes) is None here: the general path
parses it, and reports what is wrong with it.
"""
from __future__ import annotations

import re
import sys

from . import ast as A
from .lexer import CONTEXTUAL, KEYWORDS, int_literal

_shared = A.shared_pos
_intern = sys.intern
_NOT_NAMES = frozenset(KEYWORDS) | frozenset(CONTEXTUAL)
_N = r"[A-Za-z_][A-Za-z0-9_]*"

# characters the general path's lexer treats in ways this module does not follow
_UNUSUAL = re.compile(r"[\t\r\f\ufeff\\\"]")

_SIZE_PART = re.compile(rf"[ ]*(?:({_N})|([0-9]+)|([-+*/]))")
_AXIS = re.compile(r"[^ \]]+")
_TENSOR = re.compile(r"\[([^\[\]\n#]*)\]")
_AFTER_AXES = re.compile(rf"[ ]*({_N})(?:\[([^\[\]\n#]*)\])?")
_NAMED = re.compile(rf"({_N})(?:\[([^\[\]\n#]*)\])?")

_MODEL_HEAD = re.compile(rf"model[ ]+({_N})[ ]*:[ ]*(?:#[^\n]*)?\n")
_SKIP_LINE = re.compile(r"[ ]*(?:#[^\n]*)?(?:\n|\Z)")
_FIELD_HEAD = re.compile(rf"([ ]+)({_N})[ ]*:[ ]*")
_FIELD_END = re.compile(rf"[ ]*(?:=[ ]*({_N}))?[ ]*(?:#[^\n]*)?(?:\n|\Z)")

_DECORATOR = re.compile(rf"@({_N})(?:[ ]*\(([^()\n#]*)\))?[ ]*(?:#[^\n]*)?\n")
_FN_HEAD = re.compile(rf"fn[ ]+({_N})[ ]*\([ ]*")
_PARAM_HEAD = re.compile(rf"({_N})[ ]*:[ ]*")
_PARAM_SEP = re.compile(r"[ ]*(?:(,)[ ]*)?")
_ARROW = re.compile(r"[ ]*->[ ]*")
_HEADER_END = re.compile(r"[ ]*:[ ]*(?:#[^\n]*)?(?:\n|\Z)")
_NAME_LIST = re.compile(rf"[ ]*({_N})[ ]*(?:,|\Z)")


def _name(s: str):
    return None if s in _NOT_NAMES else _intern(s)


def _size(text: str, lo: int, hi: int):
    """The size expression text[lo:hi] (atoms and operators, spaces between allowed), as
    the grammar's `size` builds it (products bind tighter, both left to right), or None."""
    atoms: list = []
    ops: list = []
    pos = lo
    want_atom = True
    while pos < hi:
        m = _SIZE_PART.match(text, pos, hi)
        if m is None or m.end() == pos:
            if text[pos:hi].strip(" "):
                return None
            break
        name, digits, op = m.groups()
        if want_atom:
            if name is not None:
                n = _name(name)
                if n is None:
                    return None
                atoms.append(A.SName(n, _shared(m.span(1))))
            elif digits is not None:
                atoms.append(A.SInt(int_literal(digits), _shared(m.span(2))))
            else:
                return None
        elif op is not None:
            ops.append(op)
        else:
            return None
        want_atom = not want_atom
        pos = m.end()
    if want_atom:  # empty, or it ends with an operator
        return None
    terms, signs = [], []
    cur = atoms[0]
    for op, atom in zip(ops, atoms[1:]):
        if op in "*/":
            cur = A.SBin(op, cur, atom, _shared((cur.pos[0], atom.pos[1])))
        else:
            terms.append(cur)
            signs.append(op)
            cur = atom
    terms.append(cur)
    out = terms[0]
    for op, t in zip(signs, terms[1:]):
        out = A.SBin(op, out, t, _shared((out.pos[0], t.pos[1])))
    return out


def _index(text: str, m):
    """The size in the brackets after a name (`m`'s second group), None without brackets,
    False when they hold no size."""
    if m.group(2) is None:
        return None
    size = _size(text, m.start(2), m.end(2))
    return False if size is None else size


def _type(text: str, pos: int):
    """(the type at `pos`, where it ends) or None."""
    m = _TENSOR.match(text, pos)
    if m is not None:
        axes = []
        for a in _AXIS.finditer(text, m.start(1), m.end(1)):
            s = a.group()
            if s.isidentifier():  # the commonest axis: a name
                if s in _NOT_NAMES or not s.isascii():
                    return None
                axes.append(A.SName(_intern(s), _shared(a.span())))
                continue
            if s[0] in "-+*/" or s[-1] in "-+*/":  # an operator spaced from its operand
                return None
            size = _size(text, a.start(), a.end())
            if size is None:
                return None
            axes.append(size)
        end = m.end()
        axes_pos = _shared(m.span())
        dt = None
        d = _AFTER_AXES.match(text, end)
        if d is not None:
            dname, index = _name(d.group(1)), _index(text, d)
            if dname is None or index is False:
                return None
            dt = A.DtypeExpr(dname, index, _shared((d.start(1), d.end())))
            end = d.end()
        t = A.TensorTypeExpr(axes, dt, _shared((pos, end)))
        t.axes_pos = axes_pos
        return t, end
    m = _NAMED.match(text, pos)
    if m is None:
        return None
    name, index = _name(m.group(1)), _index(text, m)
    if name is None or index is False:
        return None
    return A.NamedTypeExpr(name, index, _shared(m.span())), m.end()


def model(text: str, path: str, offset: int):
    """The ModelItem of a model item's text, or None (the general path reads it)."""
    m = _MODEL_HEAD.match(text)
    if m is None or _UNUSUAL.search(text):
        return None
    name = _name(m.group(1))
    if name is None:
        return None
    fields = []
    indent = None
    pos, end = m.end(), len(text)
    while pos < end:
        s = _SKIP_LINE.match(text, pos)
        if s is not None and s.end() > pos:
            pos = s.end()
            continue
        f = _FIELD_HEAD.match(text, pos)
        if f is None or (indent is not None and f.group(1) != indent):
            return None
        indent = f.group(1)
        fname = _name(f.group(2))
        got = _type(text, f.end()) if fname is not None else None
        if got is None:
            return None
        ftype, at = got
        e = _FIELD_END.match(text, at)
        if e is None:
            return None
        init = None
        if e.group(1) is not None:
            iname = _name(e.group(1))
            if iname is None:
                return None
            init = A.Name(iname, _shared(e.span(1)))
        last = init.pos if init is not None else ftype.pos
        fields.append(A.Field(fname, _shared(f.span(2)), ftype, init, _shared((f.start(2), last[1]))))
        pos = e.end()
    if not fields:
        return None
    item = A.ModelItem(text, path, offset)
    item.name, item.name_pos = name, _shared(m.span(1))
    item.fields = fields
    return item


def header(text: str, path: str, offset: int):
    """(the FnItem of a function's header, with no body in it, where the header ends:
    after the line break of its `:` line), or None (the general path reads it)."""
    pos = 0
    decorators = []
    while text.startswith("@", pos):
        d = _DECORATOR.match(text, pos)
        if d is None:
            return None
        dname = _name(d.group(1))
        if dname is None:
            return None
        args = []
        if d.group(2) is not None:
            i, stop = d.start(2), d.end(2)
            j = i
            while text[j:stop].strip(" "):
                a = _NAME_LIST.match(text, j, stop)
                if a is None:
                    return None
                aname = _name(a.group(1))
                if aname is None:
                    return None
                args.append((aname, _shared(a.span(1))))
                j = a.end()
            last = text.index(")", stop)
            span = (pos, last + 1)
        else:
            span = (pos, d.end(1))
        decorators.append(A.Decorator(dname, args, _shared(span)))
        pos = d.end()
    h = _FN_HEAD.match(text, pos)
    if h is None:
        return None
    line_end = text.find("\n", pos)
    line_end = len(text) if line_end < 0 else line_end
    if _UNUSUAL.search(text, 0, line_end):
        return None
    name = _name(h.group(1))
    if name is None:
        return None
    lpar = text.index("(", h.start(1))
    params = []
    at = h.end()
    while text[at:at + 1] != ")":
        p = _PARAM_HEAD.match(text, at, line_end)
        if p is None:
            return None
        pname = _name(p.group(1))
        got = _type(text, p.end()) if pname is not None else None
        if got is None:
            return None
        ptype, at = got
        params.append(A.Param(pname, _shared(p.span(1)), ptype, None, _shared((p.start(1), ptype.pos[1]))))
        s = _PARAM_SEP.match(text, at, line_end)
        at = s.end()
        if s.group(1) is None and text[at:at + 1] != ")":
            return None
    rpar_end = at + 1
    a = _ARROW.match(text, rpar_end, line_end)
    if a is None:
        return None
    got = _type(text, a.end())
    if got is None:
        return None
    ret, at = got
    e = _HEADER_END.match(text, at)
    if e is None or e.start() > line_end:
        return None
    colon = text.index(":", at)
    item = A.FnItem(text, path, offset)
    item.decorators = decorators
    item.name, item.name_pos = name, _shared(h.span(1))
    item.params = params
    item.params_pos = (lpar, rpar_end)
    item.ret = ret
    item.header_pos = (pos, colon + 1)
    return item, e.end()


# ---- the same shapes, recognised by one regular expression each, nothing built: an
# import's items at interface depth (`deferred`). Each accepts exactly the texts `model`
# and `header` above build (tests/test_fast_items.py)
_KW = "|".join(sorted(_NOT_NAMES))
_NV = rf"(?!(?:{_KW})(?![A-Za-z0-9_]))[A-Za-z_][A-Za-z0-9_]*"  # a name, not a keyword
_ATOM = rf"(?:{_NV}|[0-9]+(?![A-Za-z_]))"
_TIGHT = rf"{_ATOM}(?:[-+*/]{_ATOM})*"  # an axis: no space inside
_AXES_V = rf"[ ]*(?:{_TIGHT}(?:[ ]+{_TIGHT})*[ ]*)?"
_INDEX_V = rf"[ ]*{_ATOM}(?:[ ]*[-+*/][ ]*{_ATOM})*[ ]*"
_TYPE_V = rf"(?:\[{_AXES_V}\](?:[ ]*{_NV}(?:\[{_INDEX_V}\])?)?|{_NV}(?:\[{_INDEX_V}\])?)"
_FIELD_V = rf"{_NV}[ ]*:[ ]*{_TYPE_V}(?:[ ]*=[ ]*{_NV})?[ ]*(?:#[^\n]*)?(?:\n|\Z)"
_SKIP_V = r"[ ]*(?:#[^\n]*)?\n"
_MODEL_V = re.compile(rf"model[ ]+({_NV})[ ]*:[ ]*(?:#[^\n]*)?\n(?:{_SKIP_V})*([ ]+){_FIELD_V}"
                      rf"(?:{_SKIP_V}|\2{_FIELD_V})*(?:[ ]*(?:#[^\n]*)?)?\Z")
_PARAM_V = rf"{_NV}[ ]*:[ ]*{_TYPE_V}"
_DECORATOR_V = rf"@{_NV}(?:[ ]*\((?:[ ]*{_NV}[ ]*,)*(?:[ ]*{_NV}[ ]*)?[ ]*\))?[ ]*(?:#[^\n]*)?\n"
_HEADER_V = re.compile(rf"(?:{_DECORATOR_V})*(fn)[ ]+({_NV})[ ]*\([ ]*(?:{_PARAM_V}(?:[ ]*,[ ]*{_PARAM_V})*(?:[ ]*,)?[ ]*)?"
                       rf"\)[ ]*->[ ]*{_TYPE_V}[ ]*(:)[ ]*(?:#[^\n]*)?(?:\n|\Z)")


def deferred(text: str, path: str, offset: int):
    """A model or a function's header that `model` or `header` would build, with only its
    name (and a function's header span) set: the rest is built when first read
    (ast.Unbuilt, `build`). None for any other text."""
    if text.startswith("model"):
        m = _MODEL_V.match(text)
        if m is None or _UNUSUAL.search(text):
            return None
        item = A.ModelItem(text, path, offset)
    else:
        m = _HEADER_V.match(text)
        if m is None:
            return None
        line_end = text.find("\n", m.start(1))
        if _UNUSUAL.search(text, 0, len(text) if line_end < 0 else line_end):
            return None
        item = A.FnItem(text, path, offset)
        item.header_pos = (m.start(1), m.end(3))
    g = 1 if isinstance(item, A.ModelItem) else 2
    item.name, item.name_pos = _intern(m.group(g)), _shared(m.span(g))
    item.__dict__["unbuilt"] = True
    return item


def build(item) -> None:
    """The fields of a deferred model, or the header of a deferred function, built into it."""
    d = item.__dict__
    if isinstance(item, A.ModelItem):
        got = model(item.text, item.path, item.offset)
        names = ("fields",)
    else:
        got = header(item.text, item.path, item.offset)
        got = got[0] if got is not None else None
        names = ("decorators", "params", "params_pos", "ret")
    if got is None:  # `deferred` accepted what the builder does not: a bug of this module
        raise RuntimeError(f"the item at {item.path}:{item.offset} was deferred but does not build")
    del d["unbuilt"]
    src = got.__dict__
    for n in names:
        d[n] = src[n]


A.unbuilt_builder = build
