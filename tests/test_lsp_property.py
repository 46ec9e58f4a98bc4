"""Random edit sequences against the real server: the last publish for each version
equals a fresh check of that version's text, versions never go back, and the last
version is always published.

Across files: a chain of four files opened together in any order (a restored session:
the last one opened is checked first, the others read at interface depth for it), then
edited in turns, bodies broken and names changed: every file's last publish equals a
fresh check of all the texts.

Hypothesis drives a synchronous test; the pytest-lsp client lives on an event loop in a
thread of its own, one server for the whole run. SHAPESCRIPT_PROPERTY_EXAMPLES=1000 runs
more examples than the default 40.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as T

from lsp_support import (SERVER, ROOT, as_json, fresh, initialize, make_client, open_doc, replace, uri_of,
                         wait_until, wait_version)
from test_workspace_reuse import TEXTS as CHAIN

SEEDS = [
    open(os.path.join(ROOT, "examples", "broken_attention.ss"), encoding="utf-8").read(),
    open(os.path.join(ROOT, "examples", "classifier.ss"), encoding="utf-8").read(),
    "# 注意力 😀\ndim D = 8  # 𝔸\n\nmodel M:\n    w: [D D]\n\n"
    "@export(hf)\nfn forward(x: [b D], m: M) -> [b D]:\n    y = linear(x, m.w)  # é\n    return y\n",
]

PIECES = st.sampled_from(list("abxyzDHmn_ \n()[]:=,.#|>-*/@019") + [
    "é", "😀", "𝔸", "\t", "fn ", "dim ", "model ", "    ", "return ", "linear(", " |> ", "softmax(over=n)",
    "[b n D]", "x", "\n    ", "@export(hf)\n"])
EDIT = st.tuples(st.integers(0, 10 ** 6), st.integers(0, 30), st.lists(PIECES, max_size=5).map("".join))


class Background:
    """A pytest-lsp client on an event loop in another thread."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = make_client()
        self.run(self.client.start_io(*SERVER, env={**os.environ, "PYTHONPATH": ROOT}))
        self.run(initialize(self.client, caps=T.ClientCapabilities()))

    def run(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        try:
            self.run(self.client.shutdown_session(), 10)
            self.run(self.client.stop(), 10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


@pytest.fixture(scope="module")
def bg():
    b = Background()
    yield b
    b.close()


COUNTER = itertools.count()


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), edits=st.lists(EDIT, min_size=1, max_size=10), burst=st.booleans())
def test_last_publish_of_each_version_equals_a_fresh_check(bg, tmp_path, seed, edits, burst):
    client = bg.client
    path = str(tmp_path / f"case{next(COUNTER)}.ss")
    uri = uri_of(path)
    texts = {1: seed}

    async def drive():
        text = seed
        open_doc(client, uri, text)
        if not burst:
            await wait_version(client, uri, 1)
        for k, (pos, length, new) in enumerate(edits):
            v = k + 2
            start = pos % (len(text) + 1)
            end = min(len(text), start + length)
            text = replace(client, uri, v, text, start, end, new)
            texts[v] = text
            if not burst:
                await wait_version(client, uri, v)
        await wait_version(client, uri, len(edits) + 1)

    async def close():
        client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))

    bg.run(drive())
    mine = [p for p in client.publishes if p.uri == uri]
    bg.run(close())
    versions = [p.version for p in mine]
    assert versions == sorted(versions), "a publish for a version after a newer one"
    last = {}
    for p in mine:
        last[p.version] = p
    assert max(texts) in last
    if not burst:
        assert set(last) == set(texts)
    for v, p in last.items():
        assert as_json(p.diagnostics) == fresh({path: texts[v]}, path, {path: v}), f"version {v}"


CHAIN_PIECES = st.sampled_from([" ", "\n", "(", ")", ":", "x", "q", "helper", "other", "mid", "\n    ", "return ",
                                "* 2.0", "#", "dim D = 32\n", "fn helped(x: [b n D]) -> [b n D]:\n    return x\n"])
CHAIN_EDIT = st.tuples(st.integers(0, 3), st.integers(0, 10 ** 6), st.integers(0, 8),
                       st.lists(CHAIN_PIECES, max_size=3).map("".join))


@settings(max_examples=int(os.environ.get("SHAPESCRIPT_PROPERTY_EXAMPLES", "15")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(order=st.permutations(range(len(CHAIN))), edits=st.lists(CHAIN_EDIT, max_size=6), burst=st.booleans())
def test_files_opened_together_then_edited_publish_what_check_says(bg, tmp_path, order, edits, burst):
    client = bg.client
    folder = tmp_path / f"chain{next(COUNTER)}"
    folder.mkdir()
    paths = [str(folder / f"f{k}.ss") for k in range(len(CHAIN))]
    for p, t in zip(paths, CHAIN):
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(t)
    uris = [uri_of(p) for p in paths]
    texts, versions = list(CHAIN), [1] * len(CHAIN)

    async def drive():
        for k in order:
            open_doc(client, uris[k], texts[k])
        if not burst:  # the edits after the open's checks, each waited for: its dependents republished
            await wait_until(client, lambda: {p.uri for p in client.publishes} >= set(uris), 45, "the opens")
        for k, pos, length, new in edits:
            start = pos % (len(texts[k]) + 1)
            end = min(len(texts[k]), start + length)
            versions[k] += 1
            texts[k] = replace(client, uris[k], versions[k], texts[k], start, end, new)
            if not burst:
                await wait_version(client, uris[k], versions[k], 45)
        every = dict(zip(paths, texts))
        at = dict(zip(paths, versions))
        expected = [fresh(every, p, at) for p in paths]

        def settled():
            for uri, version, want in zip(uris, versions, expected):
                mine = [p for p in client.publishes if p.uri == uri]
                if not mine or mine[-1].version != version or as_json(mine[-1].diagnostics) != want:
                    return False
            return True

        await wait_until(client, settled, timeout=45, what="every file's publish equal to a fresh check")

    async def close():
        for uri in uris:
            client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))

    try:
        bg.run(drive(), timeout=90)
    finally:
        bg.run(close())
