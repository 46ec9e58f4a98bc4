"""One list of a node's children (syntax/ast.py `children`), used by every walk: the
expression walk (`walk_expr`), the IDE's syntax walk (ide/locate.py), the checker's
operands (check/function.py), compile-time values (check/static.py) and the compiler's
lowering (compile/graph.py). And one rule for where a top-level item starts (parser.py
`ITEM_START`, `_START_LINE` its form at each line's start)."""
import glob
import os

import pytest

from checkout import PROGRAMS, ROOT
from shapescript_core.check import function as F
from shapescript_core.check import static as S
from shapescript_core.compile import graph as G
from shapescript_core.ide import locate as L
from shapescript_core.syntax import ast as A
from shapescript_core.syntax import parser as P
from shapescript_core.syntax.parser import parse_file, split_items

SOURCE = """\
dim D = 4

fn f(x: [n D], w: [D D], local: bool) -> [n D]:
    a = -x + w.t * 2
    b = linear(x, w, bias=x)
    c = x |> relu
    d = x |> rearrange(n D -> D n)
    e = x[n D]
    g = (a, b)
    h = a if local else b
    k = einsum(x, w: n D, D E -> n E)
    return h
"""


def _values(src: str = SOURCE) -> dict:
    """The value of each assignment of f, by target name."""
    fn = next(it for it in parse_file(src, "t.ss") if it.name == "f")
    return {s.target: s.value for s in fn.body if isinstance(s, A.Assign)}


def _same(got, want) -> bool:
    return len(got) == len(want) and all(g is w for g, w in zip(got, want))


def test_children_of_sample_expressions():
    v = _values()
    a = v["a"]  # (-x) + ((w.t) * 2)
    assert isinstance(a, A.Binop) and a.op == "+"
    neg, prod = a.left, a.right
    assert _same(A.children(a), [neg, prod])
    assert isinstance(neg, A.Unop) and _same(A.children(neg), [neg.operand])
    read = prod.left
    assert isinstance(read, A.FieldRead) and _same(A.children(read), [read.obj])
    assert A.children(read.obj) == [] and A.children(prod.right) == []  # a name, a number

    b = v["b"]
    assert isinstance(b, A.Call) and [x.name for x in b.args] == [None, None, "bias"]
    values = [x.value for x in b.args]
    assert _same(A.children(b), [b.func] + values)
    assert _same(A.children(b, A.OPERANDS), values)  # the function is a name, not a value
    assert _same(A.children(b, A.SYNTAX), [b.func] + b.args)  # the Arg nodes themselves
    assert _same(A.children(b.args[2], A.SYNTAX), [b.args[2].value])

    c = v["c"]  # `x |> relu`: the function is still listed first
    assert isinstance(c, A.Call) and c.piped
    assert _same(A.children(c), [c.func, c.args[0].value])
    assert [type(n).__name__ for n in A.children(c)] == ["Name", "Name"]
    assert [n.id for n in A.children(c)] == ["relu", "x"]

    d = v["d"]  # a pattern: a syntax child, not an expression
    assert isinstance(d.pattern, A.Pattern)
    assert _same(A.children(d), [d.func, d.args[0].value])
    assert _same(A.children(d, A.SYNTAX), [d.func, d.args[0], d.pattern])
    assert _same(A.children(d.pattern, A.SYNTAX), d.pattern.inputs + [d.pattern.output])

    e = v["e"]
    assert isinstance(e, A.Mask) and len(e.axes) == 2
    assert _same(A.children(e), [e.obj])
    assert A.children(e, A.OPERANDS) == []
    assert _same(A.children(e, A.SYNTAX), [e.obj] + e.axes)

    g = v["g"]
    assert isinstance(g, A.TupleExpr) and _same(A.children(g), g.items)
    assert [n.id for n in A.children(g)] == ["a", "b"]

    h = v["h"]  # `a if local else b`: source order, or the condition first
    assert isinstance(h, A.IfExpr)
    assert [n.id for n in A.children(h)] == ["a", "local", "b"]
    assert [n.id for n in A.children(h, A.OPERANDS)] == ["local", "a", "b"]

    k = v["k"]
    assert isinstance(k.pattern, A.Pattern)
    assert _same(A.children(k, A.SYNTAX), [k.func] + k.args + [k.pattern])


def test_walk_expr_order():
    v = _values()
    assert [type(n).__name__ for n in A.walk_expr(v["a"])] == [
        "Binop", "Unop", "Name", "Binop", "FieldRead", "Name", "Number"]
    assert [getattr(n, "id", None) for n in A.walk_expr(v["h"])] == [None, "a", "local", "b"]


def test_each_caller_lists_its_subset():
    v = _values()
    # the compiler lowers, and compile-time values compute, what OPERANDS lists
    for e in v.values():
        assert _same(G._operands(e), A.children(e, A.OPERANDS))
    # compile-time values look only inside the operations they compute
    assert _same(S._kids(v["h"]), A.children(v["h"], A.OPERANDS))
    assert S._kids(v["g"]) == [] and S._kids(v["a"].right.left) == []
    # the checker: a builtin's axis arguments are not values to check first
    b = v["b"]
    assert _same(F._operands(b), A.children(b, A.OPERANDS))
    assert _same(F._operands(v["g"]), A.children(v["g"]))
    # the IDE walks the whole syntax tree
    for e in v.values():
        assert _same(L.children(e), A.children(e, A.SYNTAX))


def _sources() -> list:
    found = glob.glob(os.path.join(ROOT, "examples", "**", "*.ss"), recursive=True)
    found += glob.glob(os.path.join(PROGRAMS, "**", "*.ss"), recursive=True)
    return sorted(found)


def _walk_by_children(e) -> list:
    out = [e]
    for k in A.children(e):
        out.extend(_walk_by_children(k))
    return out


def _field_nodes(n) -> list:
    """The nodes in n's fields, by the rule SYNTAX follows for every node (not an operation's
    own listing): what A.children(n, A.SYNTAX) must equal for operations too."""
    out = []
    for f in n.__dataclass_fields__:
        if f in A._NOT_CHILDREN:
            continue
        x = getattr(n, f)
        if isinstance(x, A.Node):
            out.append(x)
        elif isinstance(x, list):
            out.extend(y for y in x if isinstance(y, A.Node))
    return out


def test_sources_found():
    assert len(_sources()) >= 20


@pytest.mark.parametrize("path", _sources(), ids=lambda p: os.path.relpath(p, ROOT))
def test_children_walk_is_walk_expr(path):
    with open(path, encoding="utf-8") as fh:
        items = parse_file(fh.read(), path)
    exprs = 0
    for it in items:
        for node in L.walk(it):
            assert _same(A.children(node, A.SYNTAX), _field_nodes(node))
            if not isinstance(node, (A.Name, A.Number, A.String, A.Const, A.Unop, A.Binop, A.Call,
                                     A.FieldRead, A.Mask, A.TupleExpr, A.IfExpr)):
                continue
            exprs += 1
            assert _same(_walk_by_children(node), list(A.walk_expr(node)))
            # OPERANDS: the same expressions but a call's function and a mask's object
            ops, kids = A.children(node, A.OPERANDS), A.children(node)
            assert {id(k) for k in ops} <= {id(k) for k in kids}
    if any(isinstance(it, A.FnItem) and it.body for it in items):
        assert exprs > 0


# ---- where an item starts
@pytest.mark.parametrize("line", ["dim D = 4", "dim D", "model M:", "fn f(x: [n]) -> [n]:", "fn f(",
                                  "@export", "@export(hf)", "import \"a.ss\"", "\fdim D = 4"])
def test_item_starts(line):
    text = "dim A = 1\n" + line + "\n"
    assert P._START_LINE.search(text, 1) is not None
    assert [s for s, _, _ in split_items(text)] == [0, len("dim A = 1\n")]
    if not line.startswith("\f"):
        assert P.ITEM_START.match(line)


@pytest.mark.parametrize("line", ["  x = 1", " dim D = 4", "\tfn f(", "fnord = 3", "dimension = 2", "models",
                                  "important", "# dim D = 4", "x = dim", "return fn"])
def test_not_item_starts(line):
    text = "dim A = 1\n" + line + "\n"
    assert P._START_LINE.search(text, 1) is None
    assert len(split_items(text)) == 1
    if line[:1] not in " \t":
        assert not P.ITEM_START.match(line)


def test_one_rule():
    """_START_LINE is ITEM_START's rule at a line's start (after form feeds)."""
    assert P._ITEM_HEAD in P.ITEM_START.pattern and P._ITEM_HEAD in P._START_LINE.pattern
    assert [s for s, _, _ in split_items("\ufeffdim A = 1\nfn f(\n")] == [1, len("\ufeffdim A = 1\n")]
