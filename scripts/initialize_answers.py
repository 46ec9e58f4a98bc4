"""Write shapescript_server/initialize_answers.json: the server's own answer to
`initialize` for each variant of client (initialize_answer.py), made by the server's
real handler, in this process.

    .venv/bin/python scripts/initialize_answers.py          # write it
    .venv/bin/python scripts/initialize_answers.py --check  # exit 1 if it is not up to date

Run it after changing a feature the server registers, a capability, the version, or
pygls / lsprotocol (tests/test_initialize_answer.py fails until it is run).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from shapescript_server import initialize_answer  # noqa: E402

# a client of each variant: push or pull diagnostics, with or without prepareRename
CLIENTS = {
    "push": {},
    "push prepareRename": {"textDocument": {"rename": {"prepareSupport": True}}},
    "pull": {"textDocument": {"diagnostic": {}}, "workspace": {"diagnostics": {"refreshSupport": True}}},
    "pull prepareRename": {"textDocument": {"diagnostic": {}, "rename": {"prepareSupport": True}},
                           "workspace": {"diagnostics": {"refreshSupport": True}}},
}


def new_server():
    from shapescript_server.features import create_server
    return create_server()


def server_answer(params: dict, ls=None) -> dict:
    """The answer the server's own initialize handler (pygls's, app.Protocol's) gives to
    these params, as the JSON it sends; by `ls` (a server from new_server(), answering
    one initialize after another) or by a server made for it."""
    from lsprotocol import types as T

    own = ls is None
    ls = new_server() if own else ls
    protocol = ls.protocol

    async def run():
        steps = protocol.lsp_initialize(protocol._converter.structure(params, T.InitializeParams))
        value = None
        try:
            while True:
                handler, args, kwargs = steps.send(value)
                value = handler(*args, **(kwargs or {}))
                if asyncio.iscoroutine(value):
                    value = await value
        except StopIteration as done:
            return protocol._converter.unstructure(done.value)

    try:
        return asyncio.run(run())
    finally:
        if own:
            ls.shutdown_core()


def answers() -> dict:
    out = {}
    for name, caps in CLIENTS.items():
        params = {"processId": None, "rootUri": None, "capabilities": caps}
        assert initialize_answer.variant(params) == name, (name, initialize_answer.variant(params))
        out[name] = server_answer(params)
    return {"format": initialize_answer.FORMAT, "libraries": initialize_answer.libraries(), "answers": out}


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render(answers())
    if "--check" in argv:
        try:
            with open(initialize_answer.ANSWERS_FILE, encoding="utf-8") as fh:
                same = fh.read() == text
        except OSError:
            same = False
        print("up to date" if same else f"{initialize_answer.ANSWERS_FILE} is out of date: run {sys.argv[0]}")
        return 0 if same else 1
    tmp = initialize_answer.ANSWERS_FILE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, initialize_answer.ANSWERS_FILE)
    print(f"wrote {initialize_answer.ANSWERS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
