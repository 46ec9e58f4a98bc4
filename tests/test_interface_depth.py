"""Interface depth: a file read for what it declares (an import nobody opened, or an open
document waiting for its check) has its functions' headers parsed, not their bodies; a
body is parsed when something reads it. A function whose header parses is a function
whatever its body holds: a body that doesn't parse is that function's own error, and its
callers still see its signature. Both depths give the same items and the same
diagnostics: a property over random texts, and `shapescript check`."""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapescript_core.compile.graph import CompileError, build_program
from shapescript_core.syntax import ast as A
from shapescript_core.syntax.parser import parse_file, parse_interface, parse_item
from shapescript_core.workspace import Workspace
from test_workspace_reuse import F0, F1

LIB, MAIN = F0, F1  # f0.ss: a dim, a model, `helper` and `other`; main.ss imports it, calls `helper`


def write(root, name: str, text: str) -> str:
    path = os.path.join(str(root), name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def fns(ws, path: str) -> dict:
    return {it.name: it for it in ws.file(path).items if isinstance(it, A.FnItem)}


def codes(ws, path: str) -> list:
    return [(d.code, d.span.abs_start) for d in ws.diagnostics(path)]


def test_an_import_nobody_opened_has_no_function_body_parsed(tmp_path):
    lib, main = write(tmp_path, "f0.ss", LIB), write(tmp_path, "main.ss", MAIN)
    ws = Workspace()
    ws.set_text(main, MAIN)
    assert codes(ws, main) == []
    items = fns(ws, lib)
    assert sorted(items) == ["helper", "other"]
    assert [it.body_loaded for it in items.values()] == [False, False]
    assert items["helper"].params[0].name == "x"  # the header is parsed
    # the importer's own functions are checked whole
    assert all(it.body_loaded for it in fns(ws, main).values())
    # a read of a body parses it, as the whole parse would have
    whole = {it.name: it for it in parse_file(LIB, lib) if isinstance(it, A.FnItem)}
    assert repr(items["other"].body) == repr(whole["other"].body)
    assert items["other"].body_loaded and not items["helper"].body_loaded


def test_a_body_that_does_not_parse_is_its_functions_error_and_callers_keep_the_signature(tmp_path):
    broken_lib = LIB.replace("return x * 2.0", "return x * (2.0")
    lib = write(tmp_path, "f0.ss", broken_lib)
    main = write(tmp_path, "main.ss", MAIN.replace("[b n D]", "[b D]"))
    ws = Workspace()
    ws.set_text(main, open(main, encoding="utf-8").read())
    # the call passes [b D] to a [b n D] parameter: found through the signature of a
    # function whose body doesn't parse
    assert [d.code for d in ws.diagnostics(main)] == ["E0401"]
    assert not fns(ws, lib)["helper"].body_loaded  # and the importer read no body for it
    ws.set_text(lib, broken_lib)
    assert [(d.code, d.message) for d in ws.diagnostics(lib)] == [("E0104", "`(` is never closed")]
    helper = fns(ws, lib)["helper"]
    assert type(helper) is A.FnItem and not helper.broken and helper.body == []


def test_an_edit_that_breaks_a_body_rechecks_no_importer(tmp_path):
    lib, main = write(tmp_path, "f0.ss", LIB), write(tmp_path, "main.ss", MAIN)
    ws = Workspace()
    ws.set_text(lib, LIB)
    ws.set_text(main, MAIN)
    ws.analyze(lib), ws.analyze(main)
    before = ws.work_counts()[ws.norm(main)]["analyses"]
    ws.set_text(lib, LIB.replace("return x * 2.0", "return x * 2.0 +"))
    assert [d.code for d in ws.diagnostics(lib)] == ["E0101"]
    assert codes(ws, main) == []
    assert ws.work_counts()[ws.norm(main)]["analyses"] == before


def test_an_export_that_reaches_a_body_that_does_not_parse_is_refused(tmp_path):
    write(tmp_path, "f0.ss", LIB.replace("return x * 2.0", "return x * (2.0"))
    text = MAIN.replace("fn uses_helper", "@export(hf)\nfn uses_helper")
    main = write(tmp_path, "main.ss", text)
    ws = Workspace()
    ws.set_text(main, text)
    assert [d.code for d in ws.diagnostics(main) if d.code.startswith("E")] == []
    with pytest.raises(CompileError, match="`helper` did not check"):
        build_program(ws.program, main, "uses_helper")


def test_a_missing_body_and_a_broken_header():
    only_header = parse_item("fn f(x: [b D]) -> [b D]:\n", "/a.ss", 0)
    assert type(only_header) is A.FnItem and only_header.name == "f"
    assert [d.code for d in only_header.syntax_errors] == ["E0101"]
    no_colon = parse_item("fn f(x: [b D]) -> [b D]\n    return x\n", "/a.ss", 0)
    assert type(no_colon) is A.BrokenItem and no_colon.declared_kind == "fn"
    assert type(parse_interface("fn f(x: [b D]) -> [b D]\n    return x\n", "/a.ss", 0)) is A.BrokenItem


def summary(item) -> tuple:
    """What a parse gives of an item: kind, name, header, body, errors (with spans)."""
    errs = [(d.code, d.message, d.span.start, d.span.end) for d in item.syntax_errors]
    lay = [(d.code, d.message, d.span.start, d.span.end) for d in item.layout_errors]
    if isinstance(item, A.FnItem):
        return ("fn", item.name, repr(item.decorators), repr(item.params), repr(item.ret), item.header_pos,
                item.params_pos, repr(item.body), errs, lay)
    return (type(item).__name__, item.name, item.broken, errs, lay)


PIECES = st.sampled_from([
    " ", "\n", "\n    ", "\t", "#", "x", "(", ")", "[", "]", ":", ",", "->", "=", "\"", "@export(hf)\n",
    "fn f(x: [b D]) -> [b D]:\n    return x\n", "fn g(", "return ", "y = x * 2.0\n    ", "[b D]", "D", "1"])


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=12).map("".join), st.integers(0, 60), st.lists(PIECES, max_size=3).map("".join))
def test_both_depths_give_the_same_items(noise, at, extra):
    base = "@export(hf)\nfn f(x: [b D], w: [D D]) -> [b D]:  # c\n    y = x @ w\n    return y\n"
    at = min(at, len(base))
    text = base[:at] + noise + extra + base[at:]  # a function, a body error, or a broken item
    whole = parse_item(text, "/a.ss", 0)
    lazy = parse_interface(text, "/a.ss", 0)
    assert summary(lazy) == summary(whole)


def test_the_same_diagnostics_whichever_depth_read_the_imports(tmp_path):
    text = LIB.replace("return x * 2.0", "return x * (2.0").replace("y = x * 3.0", "y = x * q")
    lib, main = write(tmp_path, "f0.ss", text), write(tmp_path, "main.ss", MAIN)
    read = Workspace()  # lib read from disk at interface depth
    read.set_text(main, MAIN)
    opened = Workspace()  # lib opened: parsed whole
    opened.set_text(lib, text)
    opened.set_text(main, MAIN)
    assert codes(read, main) == codes(opened, main)
    assert codes(read, lib) == codes(opened, lib) and [c for c, _ in codes(read, lib)] == ["E0104", "E0201"]


def test_a_body_read_in_an_import_nobody_opened_is_dropped_again_by_trim(tmp_path):
    lib, main = write(tmp_path, "f0.ss", LIB), write(tmp_path, "main.ss", MAIN)
    ws = Workspace()
    ws.set_text(main, MAIN)
    ws.analyze(main)
    other = fns(ws, lib)["other"]
    assert len(other.body) == 2 and other.body_loaded  # read (a search, a hover)
    ws.trim()
    assert not other.body_loaded and all(it.body_loaded for it in fns(ws, main).values())
    assert len(other.body) == 2  # and read again when asked


def test_files_nobody_opened_are_indexed_at_interface_depth_when_a_search_asks(tmp_path):
    from shapescript_core.ide.navigation import workspace_symbols
    from shapescript_core.ide.references import references
    lib = write(tmp_path, "f0.ss", LIB)
    user = write(tmp_path, "user.ss", MAIN.replace("fn uses_helper", "fn user"))
    main = write(tmp_path, "main.ss", MAIN)
    ws = Workspace()
    ws.set_roots([str(tmp_path)])
    ws.set_text(main, MAIN)
    assert ws.norm(lib) not in ws._disk and ws.norm(user) not in ws._disk  # nothing read before a query
    found = sorted((s.name, os.path.basename(s.path)) for s in workspace_symbols(ws, "help"))
    assert found == [("helper", "f0.ss"), ("uses_helper", "main.ss")]
    assert ws.norm(user) in ws._disk
    assert not any(it.body_loaded for it in fns(ws, lib).values())  # names come from the headers
    assert not any(it.body_loaded for it in fns(ws, user).values())
    text = ws.file(lib).text
    at = text.index("fn helper") + 3
    found = sorted((os.path.basename(loc.path), loc.start) for loc in references(ws, lib, at))
    assert [name for name, _ in found] == ["f0.ss", "main.ss", "user.ss"]


def test_an_import_closure_takes_the_editor_texts_it_is_given(tmp_path):
    """The open documents a document imports that wait for their first check: their
    editor texts, read at interface depth when the walk reaches them, not the files on disk."""
    lib, other = write(tmp_path, "f0.ss", LIB), write(tmp_path, "other.ss", "dim Q = 3\n")
    mid = write(tmp_path, "mid.ss", 'import "f0.ss"\n')
    main = write(tmp_path, "main.ss", 'import "mid.ss"\n\nfn f(x: [Q]) -> [Q]:\n    return x\n')
    ws = Workspace()
    ws.set_text(main, open(main, encoding="utf-8").read())
    edited = 'import "other.ss"\n\nfn g(x: [Q]) -> [Q]:\n    return x\n'  # the editor's mid.ss
    assert ws.import_closure(main, {mid: (edited, 3)}) == [mid, other]
    assert ws.file(mid).text == edited and ws.file(mid).version == 3
    assert not ws.file(mid).items[1].body_loaded and lib not in ws.files
    assert codes(ws, main) == []  # `Q` comes from other.ss, which the editor's mid.ss imports
