"""The parsed items kept on disk between sessions (syntax/parse_cache.py): a file opened
again reuses every item whose text is unchanged, and gives the same diagnostics as a
fresh parse; a cache that is missing, broken, another file's or another parser's is no
cache."""
from __future__ import annotations

import dataclasses
import os
import pickle
import queue
import subprocess
import time

import pytest

from shapescript_core.syntax import ast as A, parse_cache
from shapescript_core.workspace import Workspace
from lsp_support import ROOT, SERVER
from stdio_client import StdioClient

SRC = """\
dim D = 4

model M:
    w: [D D]

fn f(m: M, x: [b D]) -> [b D]:
    return linear(x, m.w)

fn broken(x: [D]) -> [D]:
    return x +

fn g(x: [b D]) -> [b D]:
    return f(x)
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _item_files(cache) -> list:
    """The parse cache's files (the folder also holds the parser's table, lark_table.py)."""
    return [n for n in os.listdir(cache) if not n.startswith("lalr-")]


def _diags(ws, path):
    return sorted((d.code, d.message, d.span.abs_start, d.span.abs_end) for d in ws.diagnostics(path))


def _open(path, text):
    ws = Workspace()
    ws.use_parse_cache()
    ws.set_text(path, text)
    return ws


def test_a_reopened_file_reuses_its_items_and_checks_the_same(cache, tmp_path):
    path = str(tmp_path / "m.ss")
    first = _open(path, SRC)
    assert first.save_parse_cache(path)
    assert len(_item_files(cache)) == 1
    edited = SRC.replace("return f(x)", "return f(x) + x")
    again = _open(path, edited)
    fresh = Workspace()
    fresh.set_text(path, edited)
    assert _diags(again, path) == _diags(fresh, path)
    assert {d[0] for d in _diags(again, path)} >= {"E0101"}
    reused = {it.text for it in first.file(path).items} & {it.text for it in again.file(path).items}
    assert len(reused) == len(first.file(path).items) - 1  # all but the edited function
    for old, new in zip(first.file(path).items, again.file(path).items):
        assert new.offset == fresh.file(path).items[again.file(path).items.index(new)].offset
        if old.text == new.text:
            assert new is not old and new.text == old.text  # unpickled: the same text, its own object


@pytest.mark.parametrize("damage", ["garbage", "other file", "old format"])
def test_a_cache_that_is_not_this_files_is_no_cache(cache, tmp_path, damage):
    path = str(tmp_path / "m.ss")
    assert _open(path, SRC).save_parse_cache(path)
    (name,) = _item_files(cache)
    target = cache / name
    if damage == "garbage":
        target.write_bytes(b"not a pickle")
    elif damage == "other file":
        target.write_bytes(pickle.dumps((parse_cache.FORMAT, "/elsewhere.ss", [])))
    else:
        target.write_bytes(pickle.dumps((parse_cache.FORMAT - 1, path, [])))
    assert parse_cache.load(path) == {}
    ws = _open(path, SRC)
    fresh = Workspace()
    fresh.set_text(path, SRC)
    assert _diags(ws, path) == _diags(fresh, path)


def test_simple_dims_are_parsed_again_not_kept(cache, tmp_path):
    """A file of a million `dim X = 1` lines pickles none of them (a memo entry per object
    took 460 MB more than the check): they parse again as fast as they unpickle."""
    path = str(tmp_path / "m.ss")
    text = "dim A = 1\ndim B = 0\ndim C = 2 * A\n" + SRC
    ws = _open(path, text)
    assert ws.save_parse_cache(path)
    kept = [it for items in parse_cache.load(path).values() for it in items]
    assert sorted(it.text.split("\n")[0] for it in kept if it.kind == "dim") == ["dim B = 0", "dim C = 2 * A"]
    assert len(kept) == len(ws.file(path).items) - 2  # all but `dim A = 1` and `dim D = 4`
    again = _open(path, text)
    assert _diags(again, path) == _diags(ws, path) and len(again.file(path).items) == len(ws.file(path).items)


def test_another_parser_reads_another_cache(cache, tmp_path, monkeypatch):
    path = str(tmp_path / "m.ss")
    _open(path, SRC).save_parse_cache(path)
    monkeypatch.setattr(parse_cache, "_version", "another-parser")
    assert parse_cache.load(path) == {}


def test_an_unwritable_cache_is_logged_not_raised(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(blocker / "sub"))
    path = str(tmp_path / "m.ss")
    assert _open(path, SRC).save_parse_cache(path) is False
    assert "parse cache for" in caplog.text


class _Planted:
    """What an attacker would plant: unpickling it calls os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_cache_file_runs_no_code(cache, tmp_path):
    path = str(tmp_path / "m.ss")
    assert _open(path, SRC).save_parse_cache(path)
    (name,) = _item_files(cache)
    marker = tmp_path / "ran"
    (cache / name).write_bytes(pickle.dumps((parse_cache.FORMAT, path, [_Planted(marker)])))
    assert parse_cache.load(path) == {}
    assert not marker.exists()


def test_a_cache_others_can_write_is_not_read(cache, tmp_path, caplog):
    path = str(tmp_path / "m.ss")
    assert _open(path, SRC).save_parse_cache(path)
    assert parse_cache.load(path) != {}
    os.chmod(cache, 0o777)
    assert parse_cache.load(path) == {}
    assert "not private" in caplog.text



def test_the_server_keeps_a_large_files_items_once_idle_and_reuses_them(tmp_path):
    """End to end: a large file opened cold is published (the syntax errors of its first
    lines, then its check's, both before pygls is loaded: fast_start.py), and its items
    are saved once the editor is quiet and the core idle; a new server
    opening it again publishes the same from them."""
    text = "".join(f"dim Pad{i} = {i + 1}\n" for i in range(250)) + SRC
    path = tmp_path / "big.ss"
    path.write_text(text, encoding="utf-8")
    expected = sorted(d.code for d in Workspace().diagnostics(str(path)))
    assert expected  # SRC has its mistakes
    folder = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": ROOT, "SHAPESCRIPT_CACHE_DIR": str(folder)}

    def saved(suffix=".pickle") -> list:
        return [n for n in os.listdir(folder) if n.endswith(suffix)] if folder.is_dir() else []

    def session(publishes: int = 2) -> list:
        """The diagnostics' codes of each publish, once `publishes` came and the items
        and the diagnostics are saved."""
        c = StdioClient(SERVER, cwd=str(tmp_path), env=env, stderr=subprocess.DEVNULL)
        try:
            c.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
            c.notify("initialized", {})
            c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "shapescript",
                                                               "version": 1, "text": text}})
            got: list = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (len(got) < publishes or not saved() or not saved(".diags.json")):
                try:
                    _, msg = c.receive(0.2)
                except queue.Empty:
                    continue
                if msg.get("method") == "textDocument/publishDiagnostics":
                    got.append(sorted(d["code"] for d in msg["params"]["diagnostics"]))
            return got
        finally:
            c.close()

    first = session(publishes=2)
    assert len(saved()) == 1
    # the syntax errors of the first lines (fast_start.py: the pads have none), then the
    # check's, made by fast_start.py too (no other document opened with it), sent once
    assert first == [[], expected]
    # the kept diagnostics at once (shapescript_server/diagnostics_cache.py), no syntax-only publish
    # first; the check, from the saved items, finds the same and sends nothing more
    assert session(publishes=1) == [expected]


def test_a_reloaded_items_nodes_have_every_field(cache, tmp_path):
    """Syntax nodes are pickled as their class and their fields (ast.Node.__reduce__):
    every field of every node comes back."""
    path = str(tmp_path / "m.ss")
    ws = _open(path, SRC)
    assert ws.save_parse_cache(path)
    loaded = {it.name: it for items in parse_cache.load(path).values() for it in items}
    for it in ws.file(path).items:
        if it.kind == "fn":
            again = loaded[it.name]
            for before, after in ((it.params, again.params), (it.ret, again.ret), (it.body, again.body)):
                assert repr(after) == repr(before) and after is not before


def _rows(driver) -> dict:
    """A parser driver's table: each state's actions, callbacks by whether there is one."""
    return {s: {t: a[:3] + (a[3] is None,) for t, a in row.items()} for s, row in driver.rows.items()}


def test_the_parsers_table_is_built_once_then_read_back_the_same(cache):
    """lark's LALR parser (syntax/lark_table.py): built and written on first use, then
    read back from the private cache; the same table either way."""
    from shapescript_core.syntax import lark_table, parser
    built = parser._Driver()
    (name,) = [n for n in os.listdir(cache) if n.startswith("lalr-")]
    mtime = os.stat(cache / name).st_mtime_ns
    read = parser._Driver()
    assert os.stat(cache / name).st_mtime_ns == mtime  # read, not built and written again
    assert (read.start, read.end, _rows(read)) == (built.start, built.end, _rows(built))
    assert lark_table._load(str(cache / name), parser._NoLexer, parser._Build()) is not None


def test_a_planted_parser_table_runs_no_code_and_the_parser_is_built(cache, tmp_path, caplog):
    from shapescript_core.syntax import lark_table, parser
    parser._Driver()
    (name,) = [n for n in os.listdir(cache) if n.startswith("lalr-")]
    marker = tmp_path / "ran"
    (cache / name).write_bytes(pickle.dumps((lark_table.FORMAT, {"options": _Planted(marker)}, {})))
    with caplog.at_level("DEBUG", logger="shapescript.cache"):
        assert lark_table._load(str(cache / name), parser._NoLexer, parser._Build()) is None
    assert not marker.exists() and "holds no classes" in caplog.text
    assert _rows(parser._Driver()) and not marker.exists()  # built again, and written again
    assert lark_table._load(str(cache / name), parser._NoLexer, parser._Build()) is not None
    os.chmod(cache, 0o777)
    with caplog.at_level("DEBUG", logger="shapescript.cache"):
        assert lark_table._load(str(cache / name), parser._NoLexer, parser._Build()) is None
    assert "not private" in caplog.text


def test_a_parser_table_that_cant_be_written_is_logged_at_debug_level_only(tmp_path, monkeypatch, caplog):
    """The command line builds the parser at each start then, and says nothing."""
    from shapescript_core.syntax import parser
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SHAPESCRIPT_CACHE_DIR", str(blocker / "sub"))
    with caplog.at_level("DEBUG", logger="shapescript.cache"):
        assert _rows(parser._Driver())
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "parser table" in r.getMessage()]
    assert {level for level, _ in said} == {"DEBUG"} and any("not written" in m for _, m in said)


def test_every_syntax_node_is_made_again_from_its_fields():
    """ast.Node.__reduce__ pickles a node as its class and its dataclass fields, made
    again by the class's own __init__: every node class must be a dataclass whose fields
    all go through __init__ (else saving a parse cache fails, logged)."""
    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    nodes = list(subclasses(A.Node))
    assert len(nodes) > 20
    assert [n.__name__ for n in nodes if not dataclasses.is_dataclass(n)
            or any(not f.init for f in dataclasses.fields(n))] == []
