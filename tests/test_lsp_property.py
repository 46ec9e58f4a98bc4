"""Random edit sequences against the real server: the last publish for each version
equals a fresh check of that version's text, versions never go back, and the last
version is always published.

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

from lsp_support import SERVER, ROOT, as_json, fresh, initialize, make_client, open_doc, replace, uri_of, wait_version

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
