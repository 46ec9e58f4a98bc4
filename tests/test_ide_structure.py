"""Folding ranges, selection ranges, workspace symbols and the call hierarchy, in the core.
Fixtures mark the expected spans ⟦so⟧ and the cursor `$0`."""
from __future__ import annotations

import textwrap

import pytest

from ide_support import DIR, spans, workspace
from shapescript_core.ide import calls
from shapescript_core.ide.navigation import workspace_symbols
from shapescript_core.ide.structure import folding_ranges, selection_ranges
from shapescript_core.workspace import Workspace

SRC = """\
    # Sizes of the model.
    # Two lines: a comment block.
    dim D = 64

    model Attn:
        wq: [D D]
        wo: [D D]
        layers: [2] Attn

    fn helper(a: Attn, x: [b n D]) -> [b n D]:
        return linear(x, a.wq)

    fn net(a: Attn, x: [b n D]) -> [b n D]:
        y = x
            |> helper(a)
            |> linear(a.wo)
        for layer in a.layers:
            y = helper(layer, y)
        return helper(a, y)
    """


def _lines(text, fold):
    return text.count("\n", 0, fold.start), text.count("\n", 0, fold.end), fold.kind


def test_folding_ranges_cover_items_pipelines_loops_and_comment_blocks():
    ws, path, _ = workspace(SRC)
    text = ws.file(path).text
    got = [_lines(text, f) for f in folding_ranges(ws, path)]
    assert got == [
        (0, 1, "comment"),  # the comment block
        (4, 7, ""),  # model Attn
        (9, 10, ""),  # fn helper
        (12, 18, ""),  # fn net
        (13, 15, ""),  # the broken pipeline
        (16, 17, ""),  # the for loop (its body on its own line)
    ]


def test_imports_fold_together(tmp_path):
    ws = Workspace()
    p = str(tmp_path / "m.ss")
    ws.set_text(p, 'import "a.ss"\nimport "b.ss"\nimport "c.ss"\n\ndim D = 1\n')
    assert [_lines(ws.file(p).text, f) for f in folding_ranges(ws, p)] == [(0, 2, "imports")]


def test_selection_ranges_grow_from_the_name_to_the_file():
    ws, path, m = workspace(SRC.replace("return helper(a, y)", "return helper(a, $0y)"))
    text = ws.file(path).text
    (ranges,) = selection_ranges(ws, path, [m[0]])
    shown = [text[s:e] for s, e in ranges]
    assert shown[0] == "y"
    assert shown[1] == "helper(a, y)"
    assert shown[2] == "return helper(a, y)"
    assert shown[-2].startswith("fn net(") and shown[-2].endswith("return helper(a, y)")
    assert shown[-1] == text
    for inner, outer in zip(ranges, ranges[1:]):
        assert outer[0] <= inner[0] and inner[1] <= outer[1] and inner != outer


def test_selection_range_outside_every_item_is_the_file():
    ws, path, _ = workspace(SRC)
    (ranges,) = selection_ranges(ws, path, [0])
    assert ranges[-1] == (0, len(ws.file(path).text))


def test_workspace_symbols_match_letters_in_order_across_the_project(tmp_path):
    (tmp_path / "lib.ss").write_text("dim Width = 8\n\nmodel Attention:\n    w_query: [Width Width]\n")
    ws = Workspace()
    ws.set_roots([str(tmp_path)])
    main = str(tmp_path / "main.ss")
    ws.set_text(main, 'import "lib.ss"\n\nfn attend(a: Attention, x: [Width]) -> [Width]:\n    return x\n')
    got = [(s.name, s.kind, s.container, s.path.rsplit("/", 1)[-1]) for s in workspace_symbols(ws, "att")]
    assert got == [("attend", "fn", "", "main.ss"), ("Attention", "model", "", "lib.ss")]
    (q,) = workspace_symbols(ws, "wq")
    assert (q.name, q.kind, q.container) == ("w_query", "field", "Attention")
    text = ws.file(str(tmp_path / "lib.ss")).text
    assert text[q.start:q.end] == "w_query"
    assert len(workspace_symbols(ws, "")) == 4


CALLS = """\
    dim D = 64

    fn leaf(x: [b n D]) -> [b n D]:
        return x

    fn helper(x: [b n D]) -> [b n D]:
        return ⟦leaf⟧(x) + ⟦leaf⟧(x)

    fn net(x: [b n D]) -> [b n D]:
        return x |> ⟦helper⟧ |> softmax(over=D)
    """


def test_call_hierarchy_incoming_and_outgoing():
    text, marked = spans(CALLS)
    ws, path, _ = workspace(text)
    src = ws.file(path).text
    (item,) = calls.prepare(ws, path, src.index("fn helper") + 4)
    assert (item.name, item.detail) == ("helper", "(x: [b n D]) -> [b n D]")
    assert src[item.sel_start:item.sel_end] == "helper"
    (inc,) = calls.incoming(ws, item)
    assert inc.item.name == "net" and list(inc.ranges) == [marked[2]]
    (out,) = calls.outgoing(ws, item)
    assert out.item.name == "leaf" and list(out.ranges) == marked[:2]
    assert calls.outgoing(ws, out.item) == []
    # prepared from a call
    (again,) = calls.prepare(ws, path, marked[2][0] + 1)
    assert again == item


def test_incoming_calls_come_from_importing_files_on_disk(tmp_path):
    (tmp_path / "lib.ss").write_text("dim D = 4\n\nfn leaf(x: [D]) -> [D]:\n    return x\n")
    (tmp_path / "user.ss").write_text('import "lib.ss"\n\nfn twice(x: [D]) -> [D]:\n    return leaf(leaf(x))\n')
    (tmp_path / "other.ss").write_text("dim D = 4\n\nfn leaf(x: [D]) -> [D]:\n    return x\n\n"
                                       "fn caller(x: [D]) -> [D]:\n    return leaf(x)\n")
    ws = Workspace()
    ws.set_roots([str(tmp_path)])
    lib = str(tmp_path / "lib.ss")
    ws.set_text(lib, (tmp_path / "lib.ss").read_text())
    (item,) = calls.prepare(ws, lib, ws.file(lib).text.index("leaf"))
    (inc,) = calls.incoming(ws, item)
    assert (inc.item.name, inc.in_path.rsplit("/", 1)[-1], len(inc.ranges)) == ("twice", "user.ss", 2)


def test_nothing_to_prepare_off_a_function():
    ws, path, _ = workspace(CALLS.replace("⟦", "").replace("⟧", ""))
    assert calls.prepare(ws, path, 2) == []
