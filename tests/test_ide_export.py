"""The editor's Export in the core (ide/export.py): what the server's handler asks, tested
without a client (tests/test_lsp_export.py drives it end to end)."""
from __future__ import annotations

import os

from shapescript_core.files import Access
from shapescript_core.ide.export import export_from_editor
from shapescript_core.settings import Config

BROKEN = """\
dim D = 4

model M:
    w: [D D]

@export(hf)
fn forward(m: M, x: [b D]) -> [b D]:
    return x @ m.w + undefined_name
"""


def _export(tmp_path, text, **options):
    path = str(tmp_path / "main.ss")
    (tmp_path / "main.ss").write_text(text, encoding="utf-8")
    return export_from_editor(path, "hf", options, [(path, text, 1)], Config(), str(tmp_path),
                              Access.within([str(tmp_path)]))


def test_a_bad_option_is_a_usage_result(tmp_path):
    out = _export(tmp_path, BROKEN, dtype="f12")
    assert (out.result.ok, out.result.status, out.diagnostics) == (False, 2, [])
    assert "f12" in out.message


def test_an_output_outside_the_workspace_is_refused(tmp_path):
    outside = str(tmp_path.parent / "elsewhere-out")
    out = _export(tmp_path, BROKEN, output=outside)
    assert (out.result.ok, out.result.status) == (False, 2)
    assert out.message.endswith("is outside the workspace folder: the editor reads and writes only inside it; "
                                "nothing was written")
    assert not os.path.exists(outside)


def test_errors_are_named_with_their_place_and_the_open_text_counts(tmp_path):
    out = _export(tmp_path, BROKEN)
    assert (out.result.ok, out.result.status, out.fn) == (False, 1, None)
    assert [d.code for d in out.diagnostics] == ["E0201"]
    assert out.message.splitlines()[1:] == ["main.ss:8:22: E0201 `undefined_name` isn't defined"]
    assert out.lines_for(str(tmp_path / "main.ss")).line_col(0) == (0, 0)
    assert not os.path.exists(tmp_path / "main-hf")
