"""The fast path for models and function headers (syntax/fast_items.py) builds the very
item the lexer and the LALR parser build, and its deferred form (an import's items at
interface depth: recognised, built when read) accepts exactly what it builds. Checked on
every model and function of the examples, the conformance cases, the test sources and
the benchmarks' generated files, and on random edits of them."""
import glob
import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkout import SHARED
from shapescript_core.syntax import ast as A
from shapescript_core.syntax import fast_items as F
from shapescript_core.syntax import parser as P
from shapescript_core.syntax.parser import iter_items, parse_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import workspace_scale  # noqa: E402  (the benchmark's generator)


def shape(x):
    """Everything a node or an item holds, spans included, as plain values."""
    if isinstance(x, A.Node):
        return (type(x).__name__,) + tuple(shape(getattr(x, f)) for f in x.__dataclass_fields__)
    if isinstance(x, (list, tuple)):
        return tuple(shape(y) for y in x)
    if isinstance(x, A.Item):
        return (type(x).__name__, x.offset, x.name, x.name_pos,
                tuple(sorted((k, shape(v)) for k, v in x.__dict__.items() if k not in ("body", "text", "path"))))
    return x


def general_model(text: str):
    """The lexer's and LALR parser's model item, or None (not a model, or with a problem)."""
    tokens, problems = P.tokenize(text)
    parsed, _ = P._parse_or_failure(tokens, problems)
    if parsed is None or problems or parsed[0] != "model":
        return None
    return P._build_item(*parsed, text, "p.ss", 0)


def general_header(text: str):
    """(the lexer's and LALR parser's function item of the header alone, where it ends)."""
    end = P.header_end(text)
    if end is None:
        return None
    head = text[:end] if text[end - 1:end] == "\n" else text[:end] + "\n"
    tokens, problems = P.tokenize(head + P._STAND_IN_BODY)
    parsed, _ = P._parse_or_failure(tokens, problems)
    if parsed is None or problems or parsed[0] != "fn":
        return None
    item = P._build_item(*parsed, text, "p.ss", 0)
    del item.__dict__["body"]
    return item, end


def agree(text: str) -> str:
    """Which path the text takes ("fast", "general", "-"), after asserting the fast one
    agrees with the general one and the deferred one with the fast one."""
    if text.startswith("model"):
        fast, general = F.model(text, "p.ss", 0), general_model(text)
        fast_shape = shape(fast) if fast is not None else None
        general_shape = shape(general) if general is not None else None
        attrs = ("fields",)
    elif text.startswith(("fn", "@")):
        fast, general = F.header(text, "p.ss", 0), general_header(text)
        fast_shape = (shape(fast[0]), fast[1]) if fast is not None else None
        general_shape = (shape(general[0]), general[1]) if general is not None else None
        fast = fast[0] if fast is not None else None
        attrs = ("decorators", "params", "params_pos", "ret", "header_pos")
    else:
        return "-"
    deferred = F.deferred(text, "p.ss", 0)
    assert (deferred is None) == (fast is None), text
    if fast is None:
        return "general"
    assert fast_shape == general_shape, text
    assert deferred.__dict__.get("unbuilt") and "params" not in deferred.__dict__ and "fields" not in deferred.__dict__
    assert (deferred.name, deferred.name_pos) == (fast.name, fast.name_pos)
    if isinstance(fast, A.FnItem):
        assert deferred.header_pos == fast.header_pos  # known before anything is built
    for a in attrs:
        assert shape(getattr(deferred, a)) == shape(getattr(fast, a)), (a, text)
    assert "unbuilt" not in deferred.__dict__
    return "fast"


def sources() -> list:
    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.ss"), recursive=True)
                   + glob.glob(os.path.join(ROOT, "tests", "**", "*.ss"), recursive=True)
                   + (glob.glob(os.path.join(SHARED, "conformance", "**", "*.ss"), recursive=True) if SHARED else []))
    texts = [open(p, encoding="utf-8", errors="replace").read() for p in paths]
    texts += [t for _, t in workspace_scale.workspace(2, 600)]
    return texts


ITEMS = [t[a:b] for t in sources() for a, b, _ in iter_items(t)]
DECLARATIONS = [t for t in ITEMS if t.startswith(("model", "fn", "@"))]


def test_every_model_and_header_found_builds_as_the_general_path_does():
    taken = [agree(t) for t in DECLARATIONS]
    assert len(DECLARATIONS) >= 100
    # the commonest shapes take it: nearly all of the examples' and the benchmarks'
    assert taken.count("fast") >= 0.9 * len(DECLARATIONS), taken.count("general")


def test_what_the_fast_path_leaves_to_the_general_one():
    for text in ("model M:\n    w: [D]  # ok\n    v: [(A+B) D]\n",  # parentheses in a size
                 "model M:\n    w: [D]\n      v: [D]\n",  # a deeper indentation: the parser's error
                 "model M:\n\tw: [D]\n",  # a tab
                 "model in:\n    w: [D]\n",  # a keyword as a name
                 "fn f(x: [D] = 1) -> [D]:\n    return x\n",  # a default value
                 "fn f(x: [D],\n      y: [D]) -> [D]:\n    return x\n",  # a header over two lines
                 "fn f(x: [2D]) -> [D]:\n    return x\n"):  # two axes without a space
        assert agree(text) == "general", text
    assert agree("@export(hf, vllm)\nfn f(x: [b 3*D] i64, m: Mlp, ids: [b n] Index[V - 1],) -> [b D]:  # c\n"
                 "    return x\n") == "fast"


EDITS = st.sampled_from(list("abxDFHnw_ \n()[]:=,.#-*+/@019\t\"\\") + [
    "in", "if", "else", "fn ", "model ", "    ", " i64", "Index[V]", "->", "é", "\r", "2e3", " = ones"])


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", 60)) * 20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DECLARATIONS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), EDITS), max_size=3))
def test_random_edits_of_them_agree(text, edits):
    for where, cut, piece in edits:
        at = int(where * len(text))
        text = text[:at] + piece + text[at + cut:]
    agree(text)


def test_an_import_at_interface_depth_builds_nothing_until_read():
    text = workspace_scale.workspace(2, 600)[1][1]
    items = parse_file(text, "/p/f1.ss", interface=True)
    deferred = [it for it in items if it.__dict__.get("unbuilt")]
    assert len(deferred) >= 0.9 * sum(isinstance(it, (A.ModelItem, A.FnItem)) for it in items)
    whole = {it.name: it for it in parse_file(text, "/p/f1.ss")}
    model = next(it for it in deferred if isinstance(it, A.ModelItem))
    fn = next(it for it in deferred if isinstance(it, A.FnItem))
    assert shape(model.fields) == shape(whole[model.name].fields)
    assert shape(fn.params) == shape(whole[fn.name].params) and shape(fn.ret) == shape(whole[fn.name].ret)
    assert repr(fn.body) == repr(whole[fn.name].body)  # and its body when read, as before
