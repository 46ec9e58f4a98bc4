"""What keeps checking linear in the program (bench/scale.py measures it): the simple
`dim` fast path builds the very item the parser builds, dims' own symbols are made
only when asked for and still name themselves, and the params' walk of a long stack
keeps only the path (it was quadratic)."""
import re

import pytest

from shapescript_core.check.sizes import Size
from shapescript_core.syntax import ast as A
from shapescript_core.syntax import parser
from shapescript_core.workspace import Workspace

DIMS = ["dim X = 2\n", "dim X=2\n", "dim  Ab_3 =  007   # a comment\n\n\n", "dim X = 1\n", "dim in = 3\n",
        "dim X = 2.5\n", "dim X = 2 3\n", "dim X\n", "dim X = " + "9" * 5000 + "\n", "dim X = ٣\n",
        "dim X = 4\r\n", "dim _ = 1", "dim X = 0\n"]


def _shape(item):
    v = getattr(item, "value", None)
    return (type(item).__name__, item.name, item.name_pos, item.pos, item.doc,
            v and (type(v).__name__, getattr(v, "value", None), v.pos),
            [(d.code, d.message, d.span.start, d.span.end) for d in item.syntax_errors],
            [(d.code, d.message) for d in item.layout_errors])


@pytest.mark.parametrize("text", DIMS)
def test_the_simple_dim_path_builds_the_parsers_item(text, monkeypatch):
    fast = parser.parse_item(text, "/x.ss", 0)
    monkeypatch.setattr(parser, "_SIMPLE_DIM", re.compile(r"(?!)"))  # the lexer and the LALR parser only
    slow = parser.parse_item(text, "/x.ss", 0)
    assert _shape(fast) == _shape(slow)


def test_a_simple_dim_keeps_no_dict_no_tuple_and_no_node_of_its_own():
    """What a million dims cost (bench/scale.py dims): a dim's attributes are slots (no
    dict at all), its name's span is found when asked, and its literal stays in the text
    until asked for: then one node, kept, whose span is one shared tuple."""
    a = parser.parse_item("dim X1 = 10\n", "/x.ss", 0)
    b = parser.parse_item("dim X2 = 20\n", "/x.ss", 12)
    assert not hasattr(a, "__dict__") and not hasattr(b, "__dict__")
    assert a._value is A.LITERAL_IN_TEXT and a.plain and a.literal_size() == 10
    assert (a.name, a.name_pos, a.pos) == ("X1", (4, 6), (0, 11))
    assert a.value.pos == (9, 11) and a.value.pos is b.value.pos
    assert a.value is a.value and a.value.value == 10 and a.literal_size() == 10
    a.doc = "the doc"
    assert (a.doc, b.doc, a.layout_errors) == ("the doc", "", ())


@pytest.mark.parametrize("text, plain", [("dim X = 1\n", True), ("dim X\n", True), ("dim X = 0\n", False),
                                         ("dim X = 999999999999999999\n", True),
                                         ("dim X = 1000000000000000000\n", False), ("dim X = 2 * 3\n", False)])
def test_only_a_valid_literal_or_no_value_is_plain(text, plain):
    fast = parser.parse_item(text, "/x.ss", 0)
    assert fast.plain is plain


def test_plain_dims_get_no_dim_info_until_asked_and_the_table_reads_as_before():
    ws = Workspace({"Z": 9})
    ws.set_text("/s.ss", "dim Y = X + 1\ndim A = 3\ndim X = 4\ndim B\nmodel M:\n    w: [A]\n"
                         "dim Z = 5\ndim C = 0\ndim M = 2\n")
    a = ws.analyze("/s.ss")
    dims = a.env.dims
    # resolved up front: a dim with a value to evaluate, its dependencies, an override, a bad literal
    assert list(dims._info) == ["X", "Y", "Z", "C"]
    assert list(dims.items) == ["Y", "A", "X", "B", "Z", "C"]  # `M` is the model's
    assert list(dims.info) == ["X", "Y", "A", "B", "Z", "C"]  # each dim after those it names
    assert dims.values == {"X": 4, "A": 3, "Z": 9} and list(dims.values) == ["X", "A", "Z"]
    assert [dims.info[n].value for n in "YB"] == [5, None] and dims.info["C"].canon is None
    assert dims.is_dim("B") and not dims.is_dim("M") and "M" not in dims.info
    assert [d.code for d in a.diags] == ["E0203", "E0208"]  # `M` twice, `C` not positive


def test_a_dims_own_symbol_names_it_and_a_dim_defined_as_it_does_not_take_its_name():
    ws = Workspace()
    ws.set_text("/s.ss", "dim X = 4\ndim Y = X\ndim Z = 2*X\ndim W\n")
    dims = ws.analyze("/s.ss").env.dims
    assert dims.canon("X") == Size.sym("X") == dims.canon("Y")
    assert [dims.render(dims.canon(n)) for n in "XYZW"] == ["X", "X", "Z", "W"]
    assert dims.values == {"X": 4} and [dims.info[n].value for n in "YZW"] == [4, 8, None]
    ws.set_text("/s.ss", "dim X = 4\ndim Y = X\ndim Z = 2*X\ndim W\n")
    assert ws.analyze("/s.ss").env.dims.fingerprint == dims.fingerprint
    ws.set_text("/s.ss", "dim X = 5\ndim Y = X\ndim Z = 2*X\ndim W\n")
    assert ws.analyze("/s.ss").env.dims.fingerprint != dims.fingerprint


def test_the_params_of_a_long_stack_come_in_order(tmp_path):
    from shapescript_core.weights.specs import find_function, resolve
    src = tmp_path / "lm.ss"
    src.write_text("dim D = 4\ndim L = 2\nmodel Attn:\n    w: [D D]\nmodel Block:\n    n: [D] = ones\n"
                   "    attn: Attn\nmodel Lm:\n    layers: [L] Block\n    out: [D D]\n\n"
                   "@export(hf)\nfn forward(m: Lm, x: [b D]) -> [b D]:\n    for layer in m.layers:\n"
                   "        x = linear(x, layer.attn.w)\n    return linear(x, m.out)\n")
    ws = Workspace({"L": 20_000})
    ws.set_text(str(src), src.read_text())
    specs = resolve(ws.program, str(src), find_function(ws.program, str(src), None, "hf")).specs
    assert len(specs) == 40_001
    assert [s.path for s in specs[:3]] == ["layers.0.n", "layers.0.attn.w", "layers.1.n"]
    assert [s.path for s in specs[-2:]] == ["layers.19999.attn.w", "out"]
    assert specs[1].shape == specs[-2].shape == (4, 4) and specs[0].init == ("ones",)


def test_a_simple_dims_text_is_the_files_and_follows_its_edits():
    """A fast-path dim keeps no string of its own: its text is a slice of the file's text,
    and after an edit every dim points at the new text (no older version kept alive)."""
    import pickle
    ws = Workspace()
    text = "dim A = 1\ndim B = 2 * A\n\ndim C = 3  # c\n"
    ws.set_text("/s.ss", text)
    f = ws.file("/s.ss")
    a, b, c = f.items
    assert [it.text for it in f.items] == ["dim A = 1\n", "dim B = 2 * A\n", "dim C = 3  # c\n"]
    assert a._src.text is f.text and c._src is a._src and b._src == b.text  # the parser's own dim keeps its text
    ws.set_text("/s.ss", "dim Z = 7\n" + text.replace("dim C = 3", "dim C = 4"))
    f = ws.file("/s.ss")
    assert f.items[1] is a and a.offset == 10 and a.text == "dim A = 1\n" and a._src.text is f.text
    assert [it.text for it in f.items] == ["dim Z = 7\n", "dim A = 1\n", "dim B = 2 * A\n", "dim C = 4  # c\n"]
    assert all(it._src.text is f.text for it in f.items if it is not f.items[2])
    assert [d.code for d in ws.diagnostics("/s.ss")] == []
    copy = pickle.loads(pickle.dumps(a))
    assert copy._src == "dim A = 1\n" and copy.text == a.text and copy.offset == a.offset


def _code_end_line_by_line(text, start, limit):
    """The parser's item end as it was found before: one line at a time, from the end."""
    end = limit
    while end > start:
        line_start = text.rfind("\n", start, end - 1) + 1 if end - 1 > start else start
        line = text[max(line_start, start):end]
        if line.strip() and not line.startswith("#"):
            return end
        end = max(line_start, start)
    return start


def test_an_items_end_skips_blank_lines_a_chunk_at_a_time_to_the_same_place(monkeypatch):
    """Twenty million blank lines took 30 s one at a time; the chunked skip (tiny chunks
    here, so that lines cross them) ends every item where the line-by-line walk did."""
    import random
    monkeypatch.setattr(parser, "_BLANK_CHUNK", 3)
    rng = random.Random(16)
    pieces = ["\n", " ", "\t", "a", "#", "\r\n", "x\n", "  \n", "\u00a0", "\r", "\x0b", "\u2028"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        a = rng.randint(0, len(text))
        b = rng.randint(a, len(text))
        assert parser._code_end(text, a, b) == _code_end_line_by_line(text, a, b), (text, a, b)


def test_line_starts_take_four_bytes_a_line():
    from shapescript_core.syntax.source import LineIndex, shifted
    starts = LineIndex("a\n" * 1000).starts
    assert starts.itemsize == 4 and len(starts) == 1001 and starts[-1] == 2000
    moved = shifted(starts, 1, 2 ** 32)  # offsets past 4 GiB take eight bytes
    assert moved.itemsize == 8 and list(moved[:3]) == [0, 2 ** 32 + 2, 2 ** 32 + 4]


def test_a_simple_dim_is_two_slots_and_a_copy_has_its_own_text():
    """A million simple dims (bench/scale.py dims): each is 48 bytes, its offset and the
    file's shared text; no dict, no weak reference, and its name, text and value are read
    from the file's text. A dim with a doc comment or a literal out of range is a FullDim."""
    import pickle
    items = parser.parse_file("dim A = 1\n# the doc\ndim B = 2\ndim C = 0\ndim  D\t=  12 # d\ndim E = 3", "/x.ss")
    a, b, c, d, e = items
    assert [type(it).__name__ for it in items] == ["DimItem", "FullDim", "FullDim", "DimItem", "DimItem"]
    assert A.DimItem.__basicsize__ == 32 and not hasattr(a, "__dict__")  # two slots (48 bytes with the collector's)
    with pytest.raises(TypeError):
        __import__("weakref").ref(a)
    assert a._src is d._src is e._src and a.path == "/x.ss" and b.doc == "the doc"
    assert [(it.name, it.text, it.name_pos, it.pos, it.literal_size()) for it in (a, d, e)] == [
        ("A", "dim A = 1\n", (4, 5), (0, 9), 1), ("D", "dim  D\t=  12 # d\n", (5, 6), (0, 16), 12),
        ("E", "dim E = 3", (4, 5), (0, 9), 3)]
    assert (d.value.value, d.value.pos) == (12, (10, 12)) and c.value.value == 0
    copy = pickle.loads(pickle.dumps(d))
    assert type(copy) is A.FullDim and copy.plain and copy.cheap  # its literal still in its text
    assert _shape(copy)[1:] == _shape(d)[1:] and copy.offset == d.offset
    assert copy.text == d.text and copy._src == d.text


def test_a_reused_simple_dim_given_a_doc_comment_becomes_a_full_dim():
    ws = Workspace()
    ws.set_text("/s.ss", "dim A = 1\ndim B = 2\n")
    ws.set_text("/s.ss", "# A's doc\ndim A = 1\ndim B = 2\n")
    f = ws.file("/s.ss")
    assert [type(it).__name__ for it in f.items] == ["FullDim", "DimItem"]
    assert (f.items[0].doc, f.items[0].offset, f.items[1].offset) == ("A's doc", 10, 20)
    assert ws.diagnostics("/s.ss") == []


def _first_of_each(items) -> dict:
    out: dict = {}
    for it in items:
        if it.name is not None:
            out.setdefault(it.name, it)
    return out


def test_the_name_map_answers_as_a_dict_of_the_first_item_of_each_name():
    """NameMap keeps no string per simple dim (a table of positions, names compared in the
    text): on random files of dims (simple or not), models, functions, imports and broken
    items, many names declared twice (and tables small enough for their slots to collide),
    it answers every question as the dict built item by item does."""
    import random
    from shapescript_core.syntax.names import NameMap, without_simple_dims
    rng = random.Random(16)
    names = ["A", "B", "C", "Xy", "X_1", "in2", "D" * 40]
    lines = ["dim {} = 3\n", "dim {}\n", "dim {} = 2 * 3\n", "dim {} = 0\n", "# doc\ndim {} = 5\n",
             "model {}:\n    w: [A]\n", "fn {}(x: [A]) -> [A]:\n    return x\n", "dim {} = = 1\n",
             'import "other.ss"\n', "model {}:\n  bad bad\n"]
    for _ in range(300):
        text = "".join(rng.choice(lines).format(rng.choice(names)) for _ in range(rng.randint(0, 14)))
        items = parser.parse_file(text, "/x.ss")
        want, got = _first_of_each(items), NameMap(items)
        assert list(got) == list(want) and len(got) == len(want), text
        assert list(got.items()) == list(want.items()) and list(got.values()) == list(want.values())
        for n in names + ["nope", "", None]:
            assert got.get(n) is want.get(n) and (n in got) == (n in want), (text, n)
        for i, it in enumerate(items):
            first = want.get(it.name) if it.name is not None else None
            assert got.earlier(i, it) is (first if first is not it else None), (text, i)
        assert list(without_simple_dims(got).items()) == [
            (n, it) for n, it in want.items() if type(it) is not A.DimItem]


def test_dims_fingerprints_compare_items_in_order_then_by_name():
    """Two versions of a file's simple dims compare item by item (a doc comment added, a
    comment changed: the same meaning; a value changed, a dim renamed or moved: compared
    by name), as the name-by-name comparison decides."""
    from shapescript_core.check.env import DimTable
    from shapescript_core.syntax.names import NameMap

    def fp(text, overrides=None):
        return DimTable(NameMap(parser.parse_file(text, "/s.ss")), overrides).fingerprint

    base = fp("dim A = 1\ndim B = 2\nmodel M:\n    w: [A]\ndim C = A * 2\n")
    assert base == fp("# doc\ndim A = 1\ndim B = 2 # c\nmodel M:\n    w: [A]\ndim C = A * 2\n")
    assert base == fp("dim B = 2\ndim A = 1\nmodel M:\n    w: [A]\ndim C = A * 2\n")  # moved: by name
    assert base == fp("dim A = 1\ndim B = 2\nmodel M:\n    w: [B]\ndim C = 2 * A\n")  # C still 2
    assert base != fp("dim A = 1\ndim B = 3\nmodel M:\n    w: [A]\ndim C = A * 2\n")
    assert base != fp("dim A = 2\ndim B = 2\nmodel M:\n    w: [A]\ndim C = A * 2\n")
    assert base != fp("dim A = 1\ndim D = 2\nmodel M:\n    w: [A]\ndim C = A * 2\n")
    assert base != fp("dim A = 1\ndim B = 2\nmodel M:\n    w: [A]\ndim C = A * 2\n", {"B": 5})
