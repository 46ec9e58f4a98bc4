"""An edit costs what it touches: a body is re-checked when its own text changed or a name
it reads changed meaning, never because an unrelated item stopped parsing; the caches
hold entries only for the items that exist; the incremental result equals a fresh check,
help texts and fixes included (SHAPESCRIPT_PROPERTY_EXAMPLES=1000 runs more examples)."""
import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapescript_core.syntax import ast as A
from shapescript_core.workspace import Cancelled, Workspace

SRC = """dim D = 64
dim F = 128

model Mlp:
    w_up: [F D]
    w_down: [D F]

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    h = linear(x, p.w_up) |> relu
    return h |> linear(p.w_down)

fn twice(p: Mlp, x: [b n D]) -> [b n D]:
    return mlp(p, mlp(p, x))

fn other(x: [b n D]) -> [b n D]:
    y = x * 2.0
    return y + x

fn third(x: [b n D]) -> [b n D]:
    return softmax(x, over=D)
"""
P = "/tmp/shapescript-test/deps.ss"


def results(ws, text):
    ws.set_text(P, text)
    return dict(ws.analyze(P).fns)


def rechecked(before: dict, after: dict) -> set:
    """The functions whose result is not the cached object of before."""
    return {n for n, r in after.items() if before.get(n) is not r}


def edit(text: str, needle: str, new: str, at_end: bool = False) -> str:
    i = text.index(needle) + (len(needle) if at_end else 0)
    return text[:i] + new + text[i:]


@pytest.mark.parametrize("what,needle,new,at_end", [
    ("typing (", "y + x", "(", False),
    ("typing [", "y + x", "[", False),
    ("typing ,", "x * 2.0", ",", False),
    ("typing :", "    return y", ":", True),
    ("typing an operator", "y + x", "@", False),
    ("commenting a line out", "    y = x * 2.0", "# ", False),
    ("Enter inside an expression", "x * ", "\n", True),
])
def test_breaking_a_body_rechecks_no_other_body(what, needle, new, at_end):
    ws = Workspace()
    before = results(ws, SRC)
    broken = edit(SRC, needle, new, at_end)
    during = results(ws, broken)
    assert rechecked(before, during) <= {"other"}, what  # broken: `other` is not checked at all
    undone = results(ws, SRC)
    assert rechecked(during, undone) == {"other"}, what


def test_breaking_a_called_functions_body_rechecks_that_function_only():
    """Its header still parses, so its callers see the same signature: a half-typed
    body is its own error, not its callers' (docs/architecture.md)."""
    ws = Workspace()
    before = results(ws, SRC)
    during = results(ws, edit(SRC, "h |> linear", "("))
    assert rechecked(before, during) == {"mlp"}
    assert not ws.analyze(P).env.is_broken_name("mlp") and "mlp" in ws.analyze(P).env.sigs
    assert [d.code for d in ws.diagnostics(P)] == ["E0104"]  # `(` never closed
    undone = results(ws, SRC)
    assert rechecked(during, undone) == {"mlp"}


@pytest.mark.parametrize("what,change", [
    ("a pasted line", lambda t: edit(t, "    return y + x", "    _p = x * 3.0\n")),
    ("a deleted line", lambda t: t.replace("    y = x * 2.0\n", "", 1).replace("y + x", "x + x")),
    ("a blank line", lambda t: edit(t, "    return y + x", "\n")),
    ("a letter", lambda t: t.replace("y + x", "yy + x")),
])
def test_an_edit_in_one_body_rechecks_that_body(what, change):
    ws = Workspace()
    before = results(ws, SRC)
    after = results(ws, change(SRC))
    assert rechecked(before, after) == {"other"}, what
    assert rechecked(after, results(ws, SRC)) == {"other"}, what


def test_a_dim_change_rechecks_the_readers_of_that_dim():
    ws = Workspace()
    before = results(ws, SRC)
    # D's value: only `third` names D in its body (`over=D`); the others see `[b n D]`
    # through signatures, whose types are the same
    t1 = SRC.replace("dim D = 64", "dim D = 32")
    after = results(ws, t1)
    assert rechecked(before, after) == {"third"}
    # an unparseable dim is still a dim, of no known size: Mlp's fields change, so `mlp`,
    # which reads them, is checked again; `twice` only calls mlp, whose signature stays
    t2 = t1.replace("dim F = 128", "dim F = (128")
    broken = results(ws, t2)
    assert rechecked(after, broken) == {"mlp"}
    assert describe(ws.diagnostics(P)) == describe(fresh(t2))


def test_a_new_name_reaches_the_bodies_that_reported_it_unknown():
    ws = Workspace()
    src = SRC.replace("y + x", "y + w")
    before = results(ws, src)
    assert [d.code for d in ws.diagnostics(P) if d.severity == 1] == ["E0201"]
    # a function named `w`: `other` reads the name `w`, so it is checked again
    after = results(ws, src + "\nfn w(x: [b n D]) -> [b n D]:\n    return x\n")
    assert rechecked(before, after) == {"other", "w"}
    assert "expected a value, found function `w`" in [d.message for d in ws.diagnostics(P)]


def test_suggestions_follow_the_names_they_choose_from():
    """A help text lists the closest dim: a body whose error suggests a dim depends on the
    whole set of dims, so a new dim that is closer changes its help."""
    ws = Workspace()
    src = SRC.replace("over=D", "over=Dx")
    ws.set_text(P, src)
    src2 = src.replace("dim F = 128", "dim F = 128\ndim Dxy = 4")
    ws.set_text(P, src2)
    assert describe(ws.diagnostics(P)) == describe(fresh(src2))


def test_cancelled_analysis_stops_and_the_next_one_is_whole():
    ws = Workspace()
    ws.set_text(P, SRC)
    asked = []

    def cancelled():
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(Cancelled):
        ws.analyze(P, cancelled=cancelled)
    assert describe(ws.diagnostics(P)) == describe(fresh(SRC))


def test_caches_hold_only_the_items_that_exist():
    ws = Workspace()
    text = SRC
    ws.set_text(P, text)
    for k in range(300):
        text = text.replace("x * 2.0", "x * 3.0") if k % 2 == 0 else text.replace("x * 3.0", "x * 2.0")
        text = text.replace("dim F = 128", "dim F = (128") if k % 3 == 0 else text.replace("dim F = (128", "dim F = 128")
        ws.set_text(P, text)
        ws.diagnostics(P)
    items = ws.file(P).items
    sizes = ws.cache_sizes()
    assert sizes["bodies"] <= sum(isinstance(it, A.FnItem) for it in items)
    assert sizes["signatures"] <= sum(isinstance(it, A.FnItem) for it in items)
    assert sizes["models"] <= sum(isinstance(it, A.ModelItem) for it in items)
    ws.close(P)
    assert ws.cache_sizes() == {"models": 0, "signatures": 0, "bodies": 0}


def test_a_file_changed_on_disk_is_forgotten(tmp_path):
    lib, main = tmp_path / "lib.ss", tmp_path / "main.ss"
    lib.write_text("dim D = 4\n\nfn f(x: [b D]) -> [b D]:\n    return x\n")
    main.write_text('import "lib.ss"\n\nfn g(x: [b D]) -> [b D]:\n    return f(x)\n')
    ws = Workspace()
    ws.set_text(str(main), main.read_text())
    for k in range(20):
        lib.write_text(f"dim D = 4\n\nfn f(x: [b D]) -> [b D]:\n    return x * {k}.0\n")
        os.utime(lib, ns=(k * 10 ** 9, k * 10 ** 9))
        ws.invalidate()
        assert ws.diagnostics(str(main)) == []
    assert ws.cache_sizes()["signatures"] == 2  # f (lib.ss, as now on disk) and g


# ---------------------------------------------------------------- incremental = fresh

def describe(diags) -> list:
    """Everything a diagnostic shows: code, message, where, labels, helps, notes, fixes."""
    return sorted((d.code, d.message, d.span.abs_start, d.span.abs_end, tuple(d.helps), tuple(d.notes),
                   tuple((lb.message, lb.span.abs_start) for lb in d.labels),
                   tuple((f.title, tuple((e.span.abs_start, e.text) for e in f.edits)) for f in d.fixes))
                  for d in diags)


def fresh(text: str) -> list:
    ws = Workspace()
    ws.set_text(P, text)
    return ws.diagnostics(P)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = [SRC] + [open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.ss")))]
PIECES = st.sampled_from(list("abxDFHmnw_ \n()[]:=,.#|>-*/@0123") + [
    "fn ", "dim ", "model ", "    ", "return ", "linear(", " |> ", "over=", "x", "\n    ", "Mlp", "mlp",
    "dim Dx = 8\n", "fn w(x: [b D]) -> [b D]:\n    return x\n", "D", "F"])


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", 60)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(TEXTS) - 1),
       st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.lists(PIECES, max_size=4).map("".join)),
                min_size=1, max_size=10))
def test_incremental_equals_fresh_with_helps_and_fixes(which, edits):
    text = TEXTS[which]
    ws = Workspace()
    ws.set_text(P, text)
    ws.diagnostics(P)
    for where, cut, insert in edits:
        i = int(where * len(text))
        text = text[:i] + insert + text[i + cut:]
        ws.set_text(P, text)
        assert describe(ws.diagnostics(P)) == describe(fresh(text))


def test_a_cycle_made_and_unmade_by_edits():
    ws = Workspace()
    steps = [
        SRC.replace("return softmax(x, over=D)", "return other(x)"),  # third calls other: no cycle
        SRC.replace("return softmax(x, over=D)", "return other(x)").replace("return y + x", "return third(y)"),
        SRC.replace("return y + x", "return third(y)"),  # the cycle is broken again
        SRC.replace("return y + x", "return other(y)"),  # other calls itself
        SRC,
    ]
    cycles = []
    for text in steps:
        ws.set_text(P, text)
        got = ws.diagnostics(P)
        assert describe(got) == describe(fresh(text))
        cycles.append(sorted(d.message for d in got if d.code == "E0207"))
    assert cycles == [[], ["`other` calls itself: other → third → other", "`third` calls itself: third → other → third"],
                      [], ["`other` calls itself"], []]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\n\r é", max_size=40),
       st.lists(st.tuples(st.floats(0, 1), st.integers(0, 4), st.text(alphabet="xy\n\r é", max_size=3)),
                min_size=1, max_size=8))
def test_line_starts_kept_across_edits_equal_a_rescan(text, edits):
    from shapescript_core.syntax.source import LineIndex
    from shapescript_core.workspace import SourceFile
    f = SourceFile("/tmp/shapescript-test/lines.ss", text)
    for where, cut, insert in edits:
        i = int(where * len(text))
        text = text[:i] + insert + text[i + cut:]
        f.set_text(text)
        assert f.lines.starts == LineIndex(f.text).starts
        assert f.lines.text == f.text


def test_an_edit_leaves_no_cyclic_garbage():
    """What an analysis replaces is freed by reference counting at once, not left for the
    cycle collector while the next analysis allocates (which fragments memory)."""
    import gc
    ws = Workspace()
    text = SRC
    ws.set_text(P, text)
    ws.diagnostics(P)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for k in range(20):
            text = text.replace("x * 2.0", "x * 3.0") if k % 2 == 0 else text.replace("x * 3.0", "x * 2.0")
            ws.set_text(P, text)
            ws.diagnostics(P)
        gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert kinds == []
