"""The one shape of the server's read requests (hover, completion, definition, references,
symbols, formatting, semantic tokens…): a request about a document.

`read_request` registers such a handler: `make(ls, params)` runs on the loop when the
request arrives (reading the client's capabilities, say) and returns its question,
`answer(path)`, which converts the core's result to LSP; everything else happens here, once:

- the document's snapshot (`ls.snapshot`: path, text, version) is taken on the loop,
  when the handler first runs, just before `make` (nothing awaits in between);
- on the core thread (`ls.query`: after every change received before the request), the
  workspace is synced to that snapshot (`ls.sync`): a version the client has moved past
  is answered ContentModified, a file the server won't read RequestFailed, and a
  document that is neither open nor on disk gets `missing` (None unless told);
- then `answer(path)` runs there, and its value (LSP types) is the answer;
- a cancelled request cancels its job if it has not started (`asyncio.wrap_future`);
- any other exception is logged and answered InternalError by `guarded`, under the
  handler's own name ("hover failed: ...").

`ask_core` is the sync-and-answer part alone, for handlers that do more around it
(code actions, pull diagnostics): they take the snapshot themselves."""
from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any, Callable

from .guard import guarded

if TYPE_CHECKING:
    from .app import ShapeScriptServer


async def ask_core(ls: ShapeScriptServer, snap: tuple, answer: Callable[[str], Any], missing: Any = None):
    """On the core thread, after every change received before it: the workspace synced
    to `snap` (a `ls.snapshot`), then `answer(path)`; `missing` when the file can't be read."""
    path, text, version = snap

    def job():
        if not ls.sync(path, text, version):
            return copy.deepcopy(missing)  # a fresh [] each time, never one shared list
        return answer(path)

    return await ls.query(job)


def read_request(ls: ShapeScriptServer, method: str, options: Any = None, *, missing: Any = None):
    """Register `make(ls, params) -> answer` as the handler of the read request `method`
    (see the module's doc): `make` runs on the loop, `answer(path)` on the core thread."""

    def deco(make: Callable):
        @guarded()
        @functools.wraps(make)
        async def handler(ls: ShapeScriptServer, params):
            snap = ls.snapshot(params.text_document.uri)
            return await ask_core(ls, snap, make(ls, params), missing)

        ls.feature(method, options)(handler)
        return handler

    return deco
