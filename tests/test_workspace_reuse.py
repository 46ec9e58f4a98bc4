"""Across files, an edit costs what it changes: each file's analysis is reused while its
items and its imports' interfaces stay the same (early cutoff), and an interface change
re-checks only the items that read a changed name. Counted in work (`work_counts`), not
time; and the incremental results equal `shapescript check` on the same texts."""
import contextlib
import io
import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapescript_core import cli
from shapescript_core.render import to_json_line
from shapescript_core.ide.hover import hover
from shapescript_core.syntax import ast as A, parse_cache
from shapescript_core.workspace import RECENT, Workspace

F0 = """dim D = 64
dim F = 128

model Mlp:
    w_up: [F D]
    w_down: [D F]

fn helper(x: [b n D]) -> [b n D]:
    return x * 2.0

fn other(x: [b n D]) -> [b n D]:
    y = x * 3.0
    return y + x
"""
F1 = """import "f0.ss"

fn uses_helper(p: Mlp, x: [b n D]) -> [b n D]:
    return helper(linear(x, p.w_up) |> linear(p.w_down))
"""
F2 = """import "f1.ss"

fn mid(x: [b n D]) -> [b n D]:
    return other(x)
"""
F3 = """import "f2.ss"

fn last(x: [b n D]) -> [b n D]:
    return mid(x) + x
"""
TEXTS = [F0, F1, F2, F3]


def chain(root: str, texts=TEXTS) -> tuple:
    ws = Workspace()
    paths = [os.path.join(root, f"f{k}.ss") for k in range(len(texts))]
    for p, t in zip(paths, texts):
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(t)
        ws.set_text(p, t)
    return ws, [ws.norm(p) for p in paths]


def analyze_all(ws, paths) -> dict:
    for p in paths:
        ws.analyze(p)
    return ws.work_counts()


def delta(before: dict, after: dict, kind: str) -> list:
    return [after.get(p, {}).get(kind, 0) - before.get(p, {}).get(kind, 0) for p in sorted(after)]


def test_a_body_edit_in_an_import_rechecks_no_importer(tmp_path):
    ws, paths = chain(str(tmp_path))
    before = analyze_all(ws, paths)
    assert all(before[p]["analyses"] == 1 for p in paths)
    ws.set_text(paths[0], F0.replace("y = x * 3.0", "y = x * 4.0"))
    after = analyze_all(ws, paths)
    assert delta(before, after, "analyses") == [1, 0, 0, 0]
    assert delta(before, after, "items") == [2, 0, 0, 0]  # the edited function (a new item), nothing else


def test_a_comment_or_blank_lines_between_items_recheck_nothing_else(tmp_path):
    ws, paths = chain(str(tmp_path))
    before = analyze_all(ws, paths)
    ws.set_text(paths[0], F0.replace("fn helper", "# a note\n\n\nfn helper"))
    after = analyze_all(ws, paths)
    assert delta(before, after, "analyses") == [1, 0, 0, 0]
    assert delta(before, after, "items")[1:] == [0, 0, 0]


def test_renaming_a_used_function_rechecks_exactly_its_users(tmp_path):
    ws, paths = chain(str(tmp_path))
    before = analyze_all(ws, paths)
    ws.set_text(paths[0], F0.replace("fn helper", "fn helped"))
    after = analyze_all(ws, paths)
    # f0: the renamed function's signature and body; f1: the one body that calls it;
    # f2 and f3 see the new name but read neither: their items are not checked again
    assert delta(before, after, "items") == [2, 1, 0, 0]
    assert [d.code for d in ws.diagnostics(paths[1])] == ["E0205"]
    assert ws.diagnostics(paths[2]) == [] and ws.diagnostics(paths[3]) == []


def test_an_interface_change_looks_only_at_the_changed_names_in_each_importer(tmp_path):
    """Cutoff by name: an importer takes every imported model and signature but the
    changed names' from its last analysis, and its own too while its items are the same:
    its work is the changed names, not every name it and its imports declare."""
    ws, paths = chain(str(tmp_path))
    before = analyze_all(ws, paths)
    tables = [ws.analyze(p).env.dims for p in paths]
    # a whole analysis builds its own models and signatures, and of the six it sees from
    # its imports only those it reads (declarations.py): f1 `Mlp` and `helper`, f2 `other`,
    # f3 `mid`
    assert delta({}, before, "declarations") == [3, 3, 2, 2]
    ws.set_text(paths[0], F0.replace("fn helper", "fn helped"))
    after = analyze_all(ws, paths)
    # f0: its own three; each importer: `helped` only (`helper` is gone; its own
    # declarations are the same items, reading names that mean the same)
    assert delta(before, after, "declarations") == [3, 1, 1, 1]
    assert delta(before, after, "items") == [2, 1, 0, 0]
    # the same dims: each importer keeps its dim table (one comparison for every read of all dims)
    assert [ws.analyze(p).env.dims is t for p, t in zip(paths, tables)] == [False, True, True, True]
    # ... read over this analysis's map of names, not the last one's (which it would keep alive)
    assert all(ws.analyze(p).env.dims.names is ws.analyze(p).visible for p in paths[1:])
    fresh, _ = chain(str(tmp_path), [F0.replace("fn helper", "fn helped"), F1, F2, F3])
    for name in ("sigs", "models"):  # in the order a whole analysis gives them
        assert list(getattr(ws.analyze(paths[3]).env, name)) == list(getattr(fresh.analyze(paths[3]).env, name))
    ws.set_text(paths[0], F0)
    back = analyze_all(ws, paths)
    ws.set_text(paths[0], F0.replace("return x * 2.0", "return x * 2.0 +"))  # `helper`'s body stops parsing
    again = analyze_all(ws, paths)
    # its header still parses: the same signature for its callers, so no importer looks again
    assert delta(back, again, "analyses") == [1, 0, 0, 0]
    assert [d.code for d in ws.diagnostics(paths[0])] == ["E0101"]
    assert [d.code for d in ws.diagnostics(paths[1])] == []
    assert "helper" in ws.analyze(paths[3]).env.sigs


def test_a_changed_dim_declares_every_importer_again(tmp_path):
    """A dim's size is read by every declaration: no cutoff by name then."""
    ws, paths = chain(str(tmp_path))
    before = analyze_all(ws, paths)
    tables = [ws.analyze(p).env.dims for p in paths]
    ws.set_text(paths[0], F0.replace("dim F = 128", "dim F = 256"))
    after = analyze_all(ws, paths)
    assert delta(before, after, "declarations") == [3, 3, 2, 2]  # what each reads, as a whole analysis
    assert not any(ws.analyze(p).env.dims is t for p, t in zip(paths, tables))


def test_a_body_edit_keeps_navigation_on_the_current_items(tmp_path):
    ws, paths = chain(str(tmp_path))
    analyze_all(ws, paths)
    ws.set_text(paths[0], F0.replace("y = x * 3.0", "y = x * 5.0"))
    a3 = ws.analyze(paths[3])
    current = next(it for it in ws.files[paths[0]].items if it.name == "other")
    assert a3.visible["other"] is current


def test_a_file_changed_on_disk_reaches_its_importers(tmp_path):
    ws, paths = chain(str(tmp_path))
    ws.close(paths[0])  # read from disk now
    analyze_all(ws, paths)
    with open(paths[0], "w", encoding="utf-8") as fh:
        fh.write(F0.replace("fn other", "fn others"))
    os.utime(paths[0], ns=(1, 1))
    assert [d.code for d in ws.diagnostics(paths[2])] == ["E0205"]


# ---------------------------------------------------------------- memory: trim

def fn_items(ws, path) -> dict:
    return {it.name: it for it in ws.files[path].items if it.kind == "fn"}


def test_trim_slims_the_files_not_edited_lately_and_keeps_the_last_ones_whole(tmp_path):
    assert RECENT == 1
    ws, paths = chain(str(tmp_path))  # set in order: f3 was changed last
    analyze_all(ws, paths)
    assert ws.trim() == 4  # helper and other of f0, uses_helper of f1, mid of f2
    for p in paths[:3]:
        for name, it in fn_items(ws, p).items():
            assert not it.body_loaded and ws.analyze(p).fns[name].slimmed
    for p in paths[3:]:
        for name, it in fn_items(ws, p).items():
            assert it.body_loaded and not ws.analyze(p).fns[name].slimmed
    assert ws.trim() == 0  # each analysis is trimmed once


def test_a_trimmed_file_is_not_checked_again_and_says_the_same(tmp_path):
    ws, paths = chain(str(tmp_path), [F0, F1.replace("p.w_down", "p.w_nope"), F2, F3])
    before = analyze_all(ws, paths)
    diags = {p: [(d.code, d.span.abs_start) for d in ws.diagnostics(p)] for p in paths}
    assert [c for c, _ in diags[paths[1]]] == ["E0204"]  # an error in a body of a file trimmed next
    ws.trim()
    after = analyze_all(ws, paths)
    assert delta(before, after, "analyses") == [0, 0, 0, 0]
    assert {p: [(d.code, d.span.abs_start) for d in ws.diagnostics(p)] for p in paths} == diags
    assert not any(it.body_loaded for it in fn_items(ws, paths[0]).values())  # no body was needed


def test_an_edit_after_a_trim_costs_what_it_did_before(tmp_path):
    ws, paths = chain(str(tmp_path))
    analyze_all(ws, paths)
    ws.trim()
    before = ws.work_counts()
    ws.set_text(paths[0], F0.replace("y = x * 3.0", "y = x * 4.0"))
    after = analyze_all(ws, paths)
    assert delta(before, after, "analyses") == [1, 0, 0, 0]
    assert delta(before, after, "items") == [2, 0, 0, 0]
    # a renamed function: its user in f1 is checked again, its dropped body parsed again
    ws.set_text(paths[0], F0.replace("fn helper", "fn helpers"))
    ws.set_text(paths[3], F3 + "\n")  # f1 is not among the last edited
    ws.trim()
    codes = [d.code for d in ws.diagnostics(paths[1])]
    assert codes == ["E0205"]
    assert fn_items(ws, paths[1])["uses_helper"].body_loaded


def test_a_trimmed_function_hovers_as_a_whole_one(tmp_path):
    ws, paths = chain(str(tmp_path))
    analyze_all(ws, paths)
    (tmp_path / "whole").mkdir()
    whole, whole_paths = chain(str(tmp_path / "whole"))  # never trimmed
    analyze_all(whole, whole_paths)
    at = F0.index("y + x")  # `y`: its type comes from the body's check detail
    expected = hover(whole, whole_paths[0], at)
    ws.trim()
    res = ws.analyze(paths[0]).fns["other"]
    assert res.slimmed and not res.item.body_loaded
    got = hover(ws, paths[0], at)
    assert expected is not None and "[b n D]" in expected.markdown
    assert got is not None and got.markdown == expected.markdown
    assert (got.start, got.end) == (expected.start, expected.end)
    assert not res.slimmed and res.item.body_loaded  # restored by the hover


def test_an_exported_function_and_what_it_calls_stay_whole(tmp_path):
    text = F0 + """
fn inner(x: [b n D]) -> [b n D]:
    return helper(x)

@export(hf)
fn forward(m: Mlp, x: [b n D]) -> [b n D]:
    return inner(x) |> linear(m.w_up) |> linear(m.w_down)
"""
    ws, paths = chain(str(tmp_path), [text, F1, F2, F3])
    analyze_all(ws, paths)
    ws.trim()
    loaded = {n: it.body_loaded for n, it in fn_items(ws, paths[0]).items()}
    assert loaded == {"helper": True, "other": False, "inner": True, "forward": True}


def test_an_importers_item_errors_are_kept_across_an_interface_edit_and_follow_its_own(tmp_path):
    """A file's syntax errors and names defined twice are found once per version of its
    items: an interface edit of an import re-analyses the importer with the same list
    (the very same object), and an edit of the importer itself finds them again."""
    f1 = F1 + "\nfn uses_helper(x: [D]) -> [D]:\n    return x\n\nfn bad(x: [D]) -> [D]:\n    return x +\n"
    ws, paths = chain(str(tmp_path), [F0, f1])
    analyze_all(ws, paths)
    codes = sorted(d.code for d in ws.diagnostics(paths[1]))
    assert codes.count("E0203") == 1 and "E0101" in codes  # defined twice; a syntax error
    kept = ws._items_errors[paths[1]][2]
    ws.set_text(paths[0], F0.replace("fn helper", "fn helpxr"))  # an interface edit
    codes_after = sorted(d.code for d in ws.diagnostics(paths[1]))
    assert ws.work_counts()[paths[1]]["analyses"] == 2 and ws._items_errors[paths[1]][2] is kept
    assert "E0205" not in codes and "E0205" in codes_after  # `helper` unknown now
    assert codes_after.count("E0203") == 1 and "E0101" in codes_after
    ws.set_text(paths[1], f1.replace("fn bad", "fn good").replace("return x +", "return x"))
    codes_own = sorted(d.code for d in ws.diagnostics(paths[1]))
    assert "E0101" not in codes_own and codes_own.count("E0203") == 1
    assert ws._items_errors[paths[1]][2] is not kept


def test_opening_a_file_already_read_as_an_import_parses_only_what_differs(tmp_path):
    """An editor opens the file the user was in first (the last of the chain), whose
    check reads its imports from disk; opening those next takes the items read from
    disk: no item of the same text is parsed again, and the first file's analysis still
    holds."""
    ws, paths = chain(str(tmp_path))
    for p in paths[:-1]:
        ws.close(p)
    ws.analyze(paths[-1])
    read = {p: ws.file(p).items[:] for p in paths[:-1]}
    before = ws.work_counts()
    ws.set_text(paths[0], F0)  # the same text as on disk
    ws.set_text(paths[1], F1.replace("return helper(", "return helper(helper(") + ")")  # unsaved edit
    assert all(a is b for a, b in zip(ws.files[paths[0]].items, read[paths[0]]))
    again = [it for it in ws.files[paths[1]].items if any(it is old for old in read[paths[1]])]
    assert len(again) == len(read[paths[1]]) - 1  # all but the edited function
    ws.analyze(paths[-1])
    assert delta(before, ws.work_counts(), "analyses")[-1] == 0  # f3: its last analysis holds


def test_dropped_bodies_are_not_saved_and_the_reopened_file_parses_them_whole(tmp_path, monkeypatch):
    """A function whose body a trim dropped is left out of the parse cache: reading a
    dropped body parses the whole item again, so its kept header would save nothing. The
    reopened file parses it with the file (whole: no body is parsed a second time), and
    reuses the other items."""
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    ws, paths = chain(str(tmp_path), [F0.replace("y = x * 3.0", "y = x @ x")] + TEXTS[1:])
    analyze_all(ws, paths)
    expected = [(d.code, d.span.abs_start) for d in ws.diagnostics(paths[0])]
    assert expected  # the body's error
    ws.trim()
    assert not fn_items(ws, paths[0])["other"].body_loaded
    assert ws.save_parse_cache(paths[0])
    saved = {it.name for items in parse_cache.load(paths[0]).values() for it in items}
    assert "other" not in saved and "Mlp" in saved
    again = Workspace()
    again.use_parse_cache()
    del A.parsed_again[:]
    again.set_text(paths[0], ws.files[paths[0]].text)
    assert fn_items(again, paths[0])["other"].body_loaded  # parsed with the file
    assert [(d.code, d.span.abs_start) for d in again.diagnostics(paths[0])] == expected
    assert A.parsed_again == []  # no body parsed twice


# ---------------------------------------------------------------- incremental = `check`

def check_cli(root: str, paths: list) -> list:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["check", "--format", "json", *paths])
    return sorted(line for line in out.getvalue().splitlines() if line.strip())


def published(ws, paths) -> list:
    def lines(path):
        return ws.file(path).lines
    return sorted(to_json_line(d, lines) for p in paths for d in ws.diagnostics(p))


PIECES = st.sampled_from([
    " ", "\n", "#", "x", "D", "F", "2", "(", ")", ":", "\n    ", "helper", "other", "mid", "Mlp",
    "fn ", "dim ", "model ", "return ", "dim D = 32\n", "dim F = 8\n", "\nfn extra(x: [b D]) -> [b D]:\n    return x\n",
    "import \"f1.ss\"\n", "fn helper(x: [b n D]) -> [b n D]:\n    return x\n", "* 2.0"])


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 1), st.integers(0, 8), st.lists(PIECES, max_size=3).map("".join),
                          st.permutations(range(4)), st.booleans()),
                min_size=1, max_size=8))
def test_random_edits_across_files_publish_what_check_says(edits):
    root = tempfile.mkdtemp(prefix="ss-reuse-")
    try:
        texts = list(TEXTS)
        ws, paths = chain(root, texts)
        analyze_all(ws, paths)
        for k, where, cut, insert, order, trim in edits:
            i = int(where * len(texts[k]))
            texts[k] = texts[k][:i] + insert + texts[k][i + cut:]
            ws.set_text(paths[k], texts[k])
            ws.analyze(paths[k])  # the edited document first, then the others in any order
            for j in order:
                ws.analyze(paths[j])
            if trim:  # the files not edited lately keep less (their bodies parsed again when read)
                ws.trim()
        for p, t in zip(paths, texts):
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(t)
        assert published(ws, paths) == check_cli(root, paths)
    finally:
        shutil.rmtree(root, ignore_errors=True)



def test_bodies_read_after_a_trim_are_dropped_again_by_the_next(tmp_path):
    ws, paths = chain(str(tmp_path))
    analyze_all(ws, paths)
    ws.trim()
    items = fn_items(ws, paths[0])
    assert len(items["other"].body) == 2  # a walk over the bodies (references) parses them again
    assert items["other"].body_loaded and ws.analyze(paths[0]).fns["other"].slimmed
    assert ws.trim() == 0  # nothing newly slimmed, but the body goes again
    assert not items["other"].body_loaded
