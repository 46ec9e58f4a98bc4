"""JSON-RPC over a byte stream (stdio or TCP): framed by framing.py, parsed and
dispatched by pygls (`protocol.structure_message`, `protocol.handle_message`).
A server started by fast_start.py hands over the messages it has read already and its
framer (with what it holds of the next message).
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import Any, Callable

from pygls.exceptions import JsonRpcException

from .framing import MAX_DEPTH, Framer, ParseError, TooDeep

__all__ = ["Framer", "ParseError", "TooDeep", "MAX_DEPTH", "dispatch", "pump", "serve_io", "serve_tcp"]

log = logging.getLogger("shapescript.transport")


# ---------------------------------------------------------------- the message pump
def dispatch(ls, msg) -> None:
    """Hand one framed message to pygls (on the event loop)."""
    protocol = ls.protocol
    if isinstance(msg, ParseError):
        log.warning("a message that is not JSON (%s): %r", msg.reason, msg.body)
        _error(protocol, None, -32700, f"Parse error: {msg.reason}")
        return
    if isinstance(msg, TooDeep):
        log.warning("a message nested deeper than %d levels (id %r)", MAX_DEPTH, msg.id)
        _error(protocol, msg.id, -32600, f"Invalid Request: nested deeper than {MAX_DEPTH} levels")
        return
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        log.warning("a message that is not a JSON-RPC 2.0 object: %.200r", msg)
        msg_id = msg.get("id") if isinstance(msg, dict) and "method" in msg else None
        _error(protocol, msg_id if isinstance(msg_id, (int, str)) else None, -32600,
               "Invalid Request: not a JSON-RPC 2.0 object (batches are not supported)")
        return
    msg_id = msg.get("id")
    if (msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)))) or \
            ("method" in msg and not isinstance(msg["method"], str)):
        # JSON-RPC: an id is a number or a string, a method a string; never echo anything else
        log.warning("a message with an id or a method of the wrong type: %.200r", msg)
        _error(protocol, None, -32600, "Invalid Request: `id` takes a number or a string, `method` a string")
        return
    if msg.get("method") == "initialize":
        ls.raw_initialize = msg.get("params")  # as sent: the key of its answer kept (fast_start.py)
    try:
        protocol.handle_message(protocol.structure_message(msg))
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as exc:
        log.exception("unable to handle a message")
        ls._report_server_error(exc, JsonRpcException)
        if "method" in msg and isinstance(msg.get("id"), (int, str)):  # a request: answer it
            _error(protocol, msg["id"], -32603, f"Internal error: {type(exc).__name__}")


def _error(protocol, msg_id, code: int, message: str) -> None:
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


async def pump(ls, read: Callable[[], Any], framer: Framer | None = None) -> None:
    """Read chunks with `await read()` until end of input or the server stops."""
    framer = framer or Framer()
    stop = ls._stop_event
    while not stop.is_set():
        data = await read()
        if not data:
            break
        for msg in framer.feed(data):
            dispatch(ls, msg)
            if stop.is_set():
                break


def _reader_thread(stream, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue):
    """Read the stream on a daemon thread (os.read on the file descriptor: a daemon
    thread blocked in a buffered read would hold its lock at interpreter exit)."""
    try:
        fd = stream.fileno()
        read = lambda: os.read(fd, 1 << 16)  # noqa: E731
    except (AttributeError, OSError, ValueError):
        read = (lambda: stream.read1(1 << 16)) if hasattr(stream, "read1") else (lambda: stream.read(1 << 16))  # noqa: E731
    while True:
        try:
            data = read()
        except OSError as exc:
            log.error("reading the input failed: %s", exc)
            data = b""
        try:
            loop.call_soon_threadsafe(queue.put_nowait, data)
        except RuntimeError:  # the loop is closed
            return
        if not data:
            return


def serve_io(ls, stdin=None, stdout=None, early=None) -> int:
    """Serve over stdin/stdout (pygls's start_io, with our framing); the exit status:
    1 when `exit` came without `shutdown` (as LSP says), else 0. `early`: what
    fast_start.run read and answered from the same streams before the server existed."""
    from pygls.io_ import StdoutWriter

    ls._stop_event = threading.Event()
    ls.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    stream = stdin or sys.stdin.buffer
    if early is not None:
        ls.protocol.answered_early = {i: m for i, m in ((early.answered, "initialize"),
                                                        (early.pull_answered, "textDocument/diagnostic"))
                                      if i is not None}
        ls.shown_early = dict(early.shown)
        ls.pulled_early = dict(early.pulled)
        ls.first_lines_early = dict(early.first_lines)
        ls.checked_early = set(early.checked)
        if early.workspace is not None:  # the one fast_start checked the shown document in
            ls.ws = early.workspace

    async def main():
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        for msg in early.messages if early is not None else ():
            dispatch(ls, msg)
            if ls._stop_event.is_set():
                return
        threading.Thread(target=_reader_thread, args=(stream, loop, queue), daemon=True,
                         name="shapescript-stdin").start()
        await pump(ls, queue.get, early.framer if early is not None else None)

    status = 0
    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except SystemExit as e:  # pygls's `exit` handler: 0 after shutdown, 1 without
        status = e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt:
        pass
    finally:
        ls.shutdown()
    return status


def serve_tcp(ls, host: str, port: int) -> None:
    """Listen on host:port; serve the first client that connects, then stop."""
    ls._stop_event = threading.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        ls.protocol.set_writer(writer)
        try:
            await pump(ls, lambda: reader.read(1 << 16))
        finally:
            ls.shutdown()
            server.close()

    async def main():
        nonlocal server
        server = await asyncio.start_server(connection, host, port)
        log.info("serving on %s", ", ".join(str(s.getsockname()) for s in server.sockets))
        async with server:
            try:
                await server.serve_forever()
            except asyncio.CancelledError:
                pass

    server = None
    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):
        pass
