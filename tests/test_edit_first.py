"""An edit typed while a file's first check runs (Analyzer._early): the edited function
checked first and what is known then handed over before the rest of the check; nothing
early once every body has been checked, or when the edit changed no function."""
from __future__ import annotations

import pytest

from shapescript_core.workspace import Cancelled, Workspace

N = 40
PATH = "/tmp/edit_first/main.ss"


def _source(bad: dict) -> str:
    """N functions, each `return x`, but `return NAME` in function k for {k: NAME}."""
    out = ["dim D = 4\n"]
    for k in range(N):
        out.append(f"fn f{k}(x: [D]) -> [D]:\n    return {bad.get(k, 'x')}\n")
    return "\n".join(out)


def _codes(diags) -> list:
    return [(d.code, d.span.abs_start) for d in diags]


def _line_of(text: str, k: int) -> int:
    """The offset of the name in function k's `return NAME`."""
    return text.index("return ", text.index(f"fn f{k}(")) + len("return ")


def _stopped_after(ws: Workspace, path: str, bodies: int):
    """The first check, stopped after `bodies` function bodies (as a keystroke stops it)."""
    asked = [0]

    def cancelled():
        asked[0] += 1
        return asked[0] > bodies
    with pytest.raises(Cancelled):
        ws.analyze(path, cancelled=cancelled)


def test_an_edit_during_the_first_check_publishes_its_function_first():
    text = _source({30: "y"})
    ws = Workspace()
    ws.set_text(PATH, text, 1)
    _stopped_after(ws, PATH, 5)
    edited = _source({30: "y", 12: "z"})
    ws.set_text(PATH, edited, 2)
    early: list = []
    a = ws.analyze(PATH, early=early.append)
    assert len(early) == 1
    # f12, edited, checked first; f30's error is not known yet (its body not checked)
    assert _codes(early[0]) == [("E0201", _line_of(edited, 12))]
    assert _codes(a.diags) == [("E0201", _line_of(edited, 12)), ("E0201", _line_of(edited, 30))]
    # the complete list is what a check from scratch gives
    fresh = Workspace()
    fresh.set_text(PATH, edited, 2)
    assert _codes(fresh.analyze(PATH).diags) == _codes(a.diags)


def test_nothing_early_once_every_body_was_checked_or_for_an_edit_of_no_function():
    text = _source({30: "y"})
    ws = Workspace()
    ws.set_text(PATH, text, 1)
    ws.analyze(PATH)
    early: list = []
    ws.set_text(PATH, _source({30: "y", 12: "z"}), 2)
    ws.analyze(PATH, early=early.append)
    assert early == []  # typing after the first check: the complete list at once
    ws2 = Workspace()
    ws2.set_text(PATH, text, 1)
    _stopped_after(ws2, PATH, 5)
    ws2.set_text(PATH, text.replace("dim D = 4\n", "dim D = 4\n# a comment\n"), 2)
    ws2.analyze(PATH, early=early.append)
    assert early == []  # no function edited: nothing to put first


def test_the_first_check_goes_on_a_slice_after_each_early_publish():
    """check_slice.AfterEarly: a newer keystroke stops the check at once, but not within
    SLICE seconds of an early publish (typing that never pauses still gets it checked)."""
    import time

    from shapescript_server.check_slice import SLICE, AfterEarly
    asked: list = []

    def stop():
        asked.append(1)
        return True
    c = AfterEarly(stop)
    assert c() is True and len(asked) == 1
    c.published()
    assert c() is False and len(asked) == 1  # inside the slice: the keystroke isn't even looked for
    time.sleep(SLICE * 1.5)
    assert c() is True and len(asked) == 2
