"""A restored session opens many documents at once: the one opened (or typed in) last is
checked first, the documents it imports read at interface depth (their functions'
headers) for it, and a check of an older one under way stops for it. Each document is
still checked and published once, with its own version. The server's scheduling without
a transport (`make_server`), so the order is the server's, not the machine's."""
import os

from lsprotocol import types as T

from lsp_support import uri_of
from shapescript_server import diagnostics as D
from test_lsp_protocol import make_server, run
from test_workspace_reuse import TEXTS


def opened_files(tmp_path, texts):
    uris = []
    for k, text in enumerate(texts):
        path = tmp_path / f"f{k}.ss"
        path.write_text(text, encoding="utf-8")
        uris.append(uri_of(str(path)))
    return uris


def did_open(ls, uri, text):
    """What the didOpen handler does for the scheduling (diagnostics.register)."""
    ls.docs.open(uri, text, 1)
    ls.update_access()
    D._unchecked(ls).opened(uri)
    D.schedule_check(ls, uri)


def server(tmp_path, monkeypatch, texts, open_all: bool = True):
    """(a server without transport, the documents' URIs, the checks it ran to their end),
    every document opened in order (`open_all`)."""
    ls = make_server()
    ls.ws.use_parse_cache(False)
    uris = opened_files(tmp_path, texts)
    done = record_checks(ls, monkeypatch)
    if open_all:
        for uri, text in zip(uris, texts):
            did_open(ls, uri, text)
    return ls, uris, done


def record_checks(ls, monkeypatch):
    """[(file, the other files with a function body parsed)] of each analysis that ran to its end."""
    done = []
    analyze = ls.ws.analyze

    def check(path, *args, **kw):
        a = analyze(path, *args, **kw)
        name = os.path.basename(path)
        if a is not None and name not in [d for d, _ in done]:
            done.append((name, sorted(os.path.basename(p) for p, f in ls.ws.files.items() if p != ls.ws.norm(path)
                                      and any(it.kind == "fn" and it.body_loaded for it in f.items))))
        return a

    monkeypatch.setattr(ls.ws, "analyze", check)
    return done


def serve(ls):
    """The core's jobs in order, the loop's callbacks after each (as the server runs them)."""
    while ls.jobs:
        ls.jobs.pop(0)()
        run(ls.later)


def published(ls) -> list:
    return [(os.path.basename(p.uri), p.version, [str(d.code) for d in p.diagnostics]) for p in ls.sent]


def test_the_document_opened_last_is_checked_first_its_imports_at_interface_depth(tmp_path, monkeypatch):
    ls, uris, done = server(tmp_path, monkeypatch,
                            TEXTS[:3] + [TEXTS[3].replace("mid(x) + x", "mid(x) + nowhere")])
    serve(ls)
    # f3 first, reading f0-f2 at interface depth (no body of theirs parsed), then the
    # others, the latest first
    assert [d for d, _ in done] == ["f3.ss", "f2.ss", "f1.ss", "f0.ss"]
    assert done[0][1] == []
    assert sorted(published(ls)) == [("f0.ss", 1, []), ("f1.ss", 1, []), ("f2.ss", 1, []),
                                     ("f3.ss", 1, ["E0201"])]
    assert published(ls)[0] == ("f3.ss", 1, ["E0201"])


def test_a_check_under_way_stops_for_a_document_opened_after_it(tmp_path, monkeypatch):
    ls, uris, done = server(tmp_path, monkeypatch, TEXTS[:2], open_all=False)
    analyze = ls.ws.analyze
    stopped = []

    def check(path, *args, cancelled=None, **kw):
        if os.path.basename(path) == "f0.ss" and cancelled is not None and not stopped:
            did_open(ls, uris[1], TEXTS[1])  # arrives while f0's check runs
            try:
                return analyze(path, *args, cancelled=cancelled, **kw)
            except D.Cancelled:
                stopped.append(path)
                raise
        return analyze(path, *args, cancelled=cancelled, **kw)

    monkeypatch.setattr(ls.ws, "analyze", check)
    did_open(ls, uris[0], TEXTS[0])
    serve(ls)
    assert len(stopped) == 1
    assert [d for d, _ in done] == ["f1.ss", "f0.ss"]
    assert sorted(published(ls)) == [("f0.ss", 1, []), ("f1.ss", 1, [])]


def test_typing_in_a_document_waiting_for_its_first_check_puts_it_first(tmp_path, monkeypatch):
    ls, uris, done = server(tmp_path, monkeypatch, TEXTS)
    new = TEXTS[1].replace("p.w_down))", "p.w_down)) + y")
    ls.docs.change(uris[1], [T.TextDocumentContentChangeWholeDocument(text=new)], 2)
    D.schedule_check(ls, uris[1])
    serve(ls)
    assert [d for d, _ in done][0] == "f1.ss"
    assert sorted(published(ls)) == [("f0.ss", 1, []), ("f1.ss", 2, ["E0201"]), ("f2.ss", 1, []), ("f3.ss", 1, [])]


def test_a_document_closed_before_its_check_is_neither_checked_nor_read(tmp_path, monkeypatch):
    ls, uris, done = server(tmp_path, monkeypatch, TEXTS[:2])
    ls.docs.close(uris[1])
    D._unchecked(ls).discard(uris[1])  # as didClose does
    serve(ls)
    assert [d for d, _ in done] == ["f0.ss"]
    assert published(ls) == [("f0.ss", 1, [])]
    assert ls.ws.norm(str(tmp_path / "f1.ss")) not in ls.ws.open
