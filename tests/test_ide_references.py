"""References, document highlight, rename and type definition, in the core.

A fixture is a source with `$0` for the cursor and every expected reference ⟦marked⟧;
the same fixture checks references, highlight and rename (each marked span becomes the
new name, and nothing else changes)."""
from __future__ import annotations

import os
import textwrap

import pytest

from ide_support import DIR, marks, spans, workspace
from shapescript_core.ide.references import document_highlight, references, type_definition
from shapescript_core.ide.rename import prepare_rename, rename
from shapescript_core.workspace import Workspace

CASES = {
    "dim": """\
        dim ⟦D⟧ = 64
        dim H = 4
        dim Dh = ⟦D⟧ / H

        model Attn:
            wq: [⟦D⟧ ⟦D⟧]

        fn attend(a: Attn, x: [b n ⟦$0D⟧]) -> [b n ⟦D⟧]:
            y = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh)
            return rms_norm(x, ones_like(x), over=⟦D⟧, eps=1e-5)
        """,
    # the dim a token type is an index into (`Index[V]`, in a parameter and a field) is the
    # dim: renamed with it, or the program would change (E0401 at the call)
    "dim of an index type": """\
        dim ⟦V⟧ = 1000
        dim D = 64

        model Lm:
            emb: [⟦V⟧ D]
            last: [] Index[⟦V⟧]

        fn forward(m: Lm, ids: [b n] Index[⟦$0V⟧]) -> [b n ⟦V⟧]:
            x = embedding(ids, m.emb)
            return linear(x, m.emb)
        """,
    "size variable": """\
        dim D = 64

        fn attend(x: [⟦b⟧ n D]) -> [⟦b⟧ n D]:
            y = x |> rearrange(⟦b⟧ n D -> n ⟦$0b⟧ D)
            return y |> rearrange(n ⟦b⟧ D -> ⟦b⟧ n D)

        fn other(x: [b n D]) -> [b n D]:
            return x
        """,
    "model": """\
        dim D = 64

        model ⟦Attn⟧:
            wq: [D D]

        model Net:
            attn: ⟦Attn⟧
            layers: [2] ⟦A$0ttn⟧

        fn attend(a: ⟦Attn⟧, x: [b n D]) -> [b n D]:
            return linear(x, a.wq)
        """,
    "field": """\
        dim D = 64

        model Attn:
            ⟦wq⟧: [D D]
            wk: [D D]

        model Net:
            attn: Attn
            layers: [2] Attn

        fn attend(a: Attn, x: [b n D]) -> [b n D]:
            return linear(x, a.⟦wq⟧) + linear(x, a.wk)

        fn net(m: Net, x: [b n D]) -> [b n D]:
            y = linear(x, m.attn.⟦w$0q⟧)
            for layer in m.layers:
                y = linear(y, layer.⟦wq⟧)
            return y
        """,
    "function": """\
        dim D = 64

        fn ⟦helper⟧(x: [b n D]) -> [b n D]:
            return x

        fn net(x: [b n D]) -> [b n D]:
            return ⟦help$0er⟧(x) |> ⟦helper⟧
        """,
    "parameter": """\
        dim D = 64

        fn helper(⟦x⟧: [b n D], gain: [] f32 = 1.0) -> [b n D]:
            ⟦x⟧ = ⟦x⟧ * gain
            return ⟦x$0⟧

        fn net(x: [b n D]) -> [b n D]:
            return helper(x, gain=2.0) + helper(⟦x⟧=x)
        """,
    "keyword argument": """\
        dim D = 64

        fn helper(x: [b n D], ⟦gain⟧: [] f32 = 1.0) -> [b n D]:
            return x * ⟦gain⟧

        fn net(x: [b n D]) -> [b n D]:
            gain = 2.0
            return helper(x, ⟦ga$0in⟧=gain)
        """,
    "local": """\
        dim D = 64

        model Net:
            layers: [2] Net2

        model Net2:
            w: [D D]

        fn net(m: Net, x: [b n D]) -> [b n D]:
            ⟦y⟧ = x + x
            for layer in m.layers:
                ⟦y⟧ = linear(⟦y⟧, layer.w)
            return ⟦$0y⟧

        fn other(y: [b n D]) -> [b n D]:
            return y
        """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_references_highlight_and_rename(name):
    text, expected = spans(CASES[name])
    ws, path, m = workspace(text)
    got = sorted((loc.start, loc.end) for loc in references(ws, path, m[0]))
    assert got == sorted(expected)
    assert sorted((h.start, h.end) for h in document_highlight(ws, path, m[0])) == sorted(expected)
    start, end, old = prepare_rename(ws, path, m[0])
    assert (start, end) in expected
    result = rename(ws, path, m[0], "renamed_1")
    assert result.error is None
    new_text = _apply(ws.file(path).text, result.edits[path])
    want = ws.file(path).text
    for s, e in sorted(expected, reverse=True):
        want = want[:s] + "renamed_1" + want[e:]
    assert new_text == want
    # the renamed program means the same: the same diagnostics, by code and line
    before = _codes(ws, path)
    ws.set_text(path, new_text)
    assert _codes(ws, path) == before


def _codes(ws, path):
    f = ws.file(path)
    return sorted((d.code, f.lines.line_of(d.span.abs_start)) for d in ws.diagnostics(path))


def _apply(text, edits):
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:e.start] + e.text + text[e.end:]
    return text


def test_the_declaration_is_a_write_and_can_be_left_out():
    text, expected = spans(CASES["local"])
    ws, path, m = workspace(text)
    writes = sorted((h.start, h.end) for h in document_highlight(ws, path, m[0]) if h.write)
    assert len(writes) == 2
    reads = references(ws, path, m[0], include_declaration=False)
    assert len(reads) == len(expected) - 2


LIB = """\
    dim D = 64

    model Attn:
        wq: [D D]

    fn helper(x: [b n D]) -> [b n D]:
        return x
    """
USER = """\
    import "lib.ss"

    fn net(a: Attn, x: [b n D]) -> [b n D]:
        return helper(linear(x, a.wq))
    """
UNRELATED = """\
    dim D = 8

    fn helper(x: [D]) -> [D]:
        return x
    """


@pytest.fixture
def project(tmp_path):
    """lib.ss, main.ss and sub/user.ss import it; other.ss defines the same names. Only
    main.ss is open: the others are read from disk."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "lib.ss").write_text(textwrap.dedent(LIB))
    (tmp_path / "sub" / "user.ss").write_text(textwrap.dedent(USER).replace('"lib.ss"', '"../lib.ss"'))
    (tmp_path / "other.ss").write_text(textwrap.dedent(UNRELATED))
    ws = Workspace()
    ws.set_roots([str(tmp_path)])
    text, m = marks(USER.replace("return helper(", "return hel$0per("))
    main = str(tmp_path / "main.ss")
    ws.set_text(main, text)
    return ws, tmp_path, main, m[0]


def test_rename_across_the_files_that_import_the_definition(project):
    ws, root, main, cursor = project
    result = rename(ws, main, cursor, "assist")
    assert result.error is None
    assert sorted(os.path.relpath(p, root) for p in result.edits) == ["lib.ss", "main.ss", os.path.join("sub", "user.ss")]
    lib = _apply(ws.file(str(root / "lib.ss")).text, result.edits[str(root / "lib.ss")])
    assert "fn assist(x: [b n D])" in lib
    user = _apply(ws.file(str(root / "sub" / "user.ss")).text, result.edits[str(root / "sub" / "user.ss")])
    assert "return assist(linear(x, a.wq))" in user
    # references from the definition's side find the same places
    lib_path = str(root / "lib.ss")
    refs = references(ws, lib_path, ws.file(lib_path).text.index("helper"))
    assert sorted({loc.path for loc in refs}) == sorted(result.edits)


def test_a_field_renamed_from_an_importing_file(project):
    ws, root, main, _ = project
    text = ws.file(main).text
    result = rename(ws, main, text.index("a.wq") + 3, "w_q")
    assert result.error is None
    assert sorted(os.path.relpath(p, root) for p in result.edits) == ["lib.ss", "main.ss", os.path.join("sub", "user.ss")]


REFUSED = [
    # (fixture, new name, the message's end)
    (CASES["dim"], "H", "`H` is already defined"),
    (CASES["dim"], "b", "`b` is already used in `attend`"),
    (CASES["size variable"], "D", "`D` is a dim: the size variable would become that dim"),
    (CASES["size variable"], "n", "`n` is already used in `attend`"),
    (CASES["field"], "wk", "`Attn` already has a field `wk`"),
    (CASES["function"], "net", "`net` is already defined"),
    (CASES["model"], "Net", "`Net` is already defined"),
    (CASES["local"], "x", "`x` is already used in `net`"),
    (CASES["parameter"], "gain", "`gain` is already used in `helper`"),
    (CASES["local"], "2y", "`2y` is not a name: a name is a letter or `_`, then letters, digits or `_`"),
    (CASES["local"], "return", "`return` is a keyword"),
    (CASES["local"], "linear", "`linear` is a builtin's name"),
    (CASES["local"], "f32", "`f32` is a builtin type"),
]


@pytest.mark.parametrize("src,new,message", REFUSED, ids=[f"{n}:{m[:20]}" for _, n, m in REFUSED])
def test_a_rename_that_would_change_the_meaning_is_refused(src, new, message):
    text, _ = spans(src)
    ws, path, m = workspace(text)
    result = rename(ws, path, m[0], new)
    assert result.edits == {}
    assert result.error is not None and result.error.endswith(message), result.error
    assert result.error.startswith("can't rename `")


def test_an_imported_name_collides_too(project):
    ws, root, main, cursor = project
    ws.set_text(str(root / "lib.ss"), textwrap.dedent(LIB) + "\ndim E = 2\n")
    result = rename(ws, main, cursor, "E")
    assert result.error == "can't rename `helper` to `E`: `E` is already defined"


NOT_SYMBOLS = """\
    dim D = 64

    fn helper(x: [b n D], gain: [] f32 = 1.0) -> [b n D]:
        return linear(x, ones_like(x)) * gain
    """


@pytest.mark.parametrize("at,message", [("lin$0ear(x", "`linear` is a builtin: it can't be renamed"),
                                        ("ret$0urn", "`return` is a keyword: it can't be renamed"),
                                        ("[] f$032", "`f32` is a builtin type: it can't be renamed"),
                                        ("1$0.0", "there is no name to rename here")])
def test_prepare_rename_refuses_what_is_not_a_symbol(at, message):
    ws, path, m = workspace(NOT_SYMBOLS.replace(at.replace("$0", ""), at, 1))
    assert prepare_rename(ws, path, m[0]) == message
    assert rename(ws, path, m[0], "z").error == message


TYPE_DEFS = [
    "fn net(m$0: Net, x: [b n D]) -> [b n D]:",  # a parameter
    "y = linear(x, m.at$0tn.wq)",  # a field read
    "for lay$0er in m.layers:",  # a loop variable over a stack
    "    a$0 = m.attn",  # a local
    "    layers$0: [2] Attn",  # a field declaration: its stack's model
]


@pytest.mark.parametrize("at", TYPE_DEFS)
def test_type_definition_goes_to_the_model(at):
    src = textwrap.dedent("""\
        dim D = 64

        model Attn:
            wq: [D D]

        model Net:
            attn: Attn
            layers: [2] Attn

        fn net(m: Net, x: [b n D]) -> [b n D]:
            a = m.attn
            y = linear(x, m.attn.wq)
            for layer in m.layers:
                y = linear(y, layer.wq)
            return linear(y, a.wq)
        """)
    plain = at.replace("$0", "")
    assert plain in src
    ws, path, m = workspace(src.replace(plain, at, 1))
    (loc,) = type_definition(ws, path, m[0])
    text = ws.file(path).text
    expected = "Net" if "m$0" in at else "Attn"
    assert text[loc.start:loc.end] == expected
    assert text[loc.start - len("model "):loc.start] == "model "


def test_type_definition_of_a_tensor_is_nothing():
    ws, path, m = workspace("dim D = 4\n\nfn f(x$0: [D]) -> [D]:\n    return x\n")
    assert type_definition(ws, path, m[0]) == []


# ---------------------------------------------------------------- a rename means the same program
from checkout import ROOT  # noqa: E402
from test_fuzz import EXAMPLES  # noqa: E402  (the examples and the tests' programs)

# what a rename may change on purpose: an unmarked `forward` is the one the export checks
# read, and a name starting with `_` is never "unused"
_MEANINGFUL = ("forward",)


@pytest.mark.parametrize("program", EXAMPLES, ids=lambda p: os.path.relpath(p, ROOT))
def test_renaming_each_dim_model_and_function_keeps_the_program_s_diagnostics(program):
    # every top-level name renamed where it is declared: the dim of an `Index[V]` was
    # missed (E0401 after the rename), and a call's result kept the callee's size names
    # when an argument was in error (E0402 after renaming the caller's)
    text = open(program, encoding="utf-8").read()
    path = f"{DIR}/prop.ss"
    ws = Workspace()
    ws.set_text(path, text)
    before = sorted(d.code for d in ws.diagnostics(path))
    if "E0203" in before:  # a name defined twice: renaming one of the two ends E0203
        return
    for item in list(ws.file(path).items):
        name = getattr(item, "name", None)
        if not name or name in _MEANINGFUL or name.startswith("_") or not getattr(item, "name_pos", None):
            continue
        result = rename(ws, path, item.offset + item.name_pos[0], "renamed_1")
        if result.error is not None:
            continue
        fresh = Workspace()
        fresh.set_text(path, _apply(text, result.edits.get(path, [])))
        assert sorted(d.code for d in fresh.diagnostics(path)) == before, name
