"""JSON-RPC over a byte stream (stdio or TCP), framed so that a broken header can't
deafen the server.

pygls 2.1's reader (`pygls.io_.run_async`) matches the header `Content-Length: N\\r\\n`
exactly, case included, and then reads exactly N bytes. So a lowercase
`content-length` (header names are case-insensitive, as in HTTP) is never seen, and a
length that overstates its body swallows the start of the next message: from then on
every body is glued to the next header and nothing is answered again. The fix belongs
in pygls; until it is there, the server reads its input here (`Framer`), and pygls only
parses and dispatches (`protocol.structure_message`, `protocol.handle_message`).

The framer takes what the stream holds as its evidence:
- header names in any case, spaces optional, `\\n` or `\\r\\n` line ends; other headers
  (Content-Type) are skipped, and so is anything before a header (logged);
- a body of exactly the declared length that parses is the common path (one parse);
- otherwise a complete JSON value at the start of what has arrived is the message, even
  before the declared length is reached (the length overstated it: the client waits for
  the answer, so don't wait for bytes that will never come), or past it (understated);
- a `Content-Length: N` line inside a body can't be JSON (JSON has no raw line breaks in
  strings): the body ends there, and the next message starts there.
A body that still doesn't parse gets JSON-RPC's Parse error answer (id null).

Hostile input costs time linear in its size, and nothing else:
- junk before a header is dropped in bulk (one regex search per chunk, not a Python step
  per line), keeping only the last bytes, where a header may be starting;
- while a long body arrives, each chunk costs its own length (the header search resumes
  where it stopped, the "does it end in `}`" look is at the last bytes only); 60 MB of
  garbage was quadratic here and left the server deaf for half a minute;
- a body nested deeper than MAX_DEPTH (json's RecursionError included) is answered
  InvalidRequest with its id when one is found at the top level (`TooDeep`), so the
  client isn't left waiting, and never raises;
- a JSON `null` body is a message (answered InvalidRequest), not "wait for more bytes":
  the request behind it in the same chunk is read at once.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from typing import Any, Callable, Optional

from pygls.exceptions import JsonRpcException

log = logging.getLogger("shapescript.transport")

HEADER = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]{1,12})[ \t]*\r?\n", re.IGNORECASE)
_OTHER_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:.*")
_HEADER_MAX = 64  # the longest header line searched for across a chunk boundary
_LINE_MAX = 1 << 16  # junk without a line end: dropped past this
_EAGER_MAX = 1 << 22  # bodies past this wait for their declared length (no early parse)
_WS = b" \t\r\n"
_DECODER = json.JSONDecoder()
MAX_DEPTH = 100  # nesting of arrays and objects in one message (LSP's own need ~10)
_ID_SCAN_MAX = 1 << 20  # bytes searched for the id of a message too deep to parse
_WAIT = object()  # _body's "not complete yet" (None is a message: JSON null)


class ParseError:
    """A body that is not JSON: `reason` says why, `body` holds its first bytes."""

    def __init__(self, reason: str, body: bytes):
        self.reason = reason
        self.body = body[:200]

    def __repr__(self):
        return f"ParseError({self.reason!r}, {self.body!r})"


class TooDeep:
    """A message nested deeper than MAX_DEPTH: answered InvalidRequest (with its `id`
    when the top level shows one)."""

    def __init__(self, msg_id):
        self.id = msg_id

    def __repr__(self):
        return f"TooDeep({self.id!r})"


def _too_deep(value) -> bool:
    """Whether a parsed value nests past MAX_DEPTH (an explicit stack: no recursion)."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            return True
        for x in (v.values() if isinstance(v, dict) else v):
            if isinstance(x, (dict, list)):
                stack.append((x, d + 1))
    return False


def _top_level_id(data: bytes):
    """The `id` of a JSON object, read without parsing its nested values: the value
    after an `"id"` key at depth 1, if it is a number or a string; else None."""
    depth, i, n = 0, 0, min(len(data), _ID_SCAN_MAX)
    while i < n:
        c = data[i]
        if c == 0x22:  # a string: skip it; at depth 1 it may be the key "id"
            j = i + 1
            while j < n and data[j] != 0x22:
                j += 2 if data[j] == 0x5C else 1
            if depth == 1 and data[i:j + 1] == b'"id"':
                rest = data[j + 1:j + 200].lstrip(_WS)
                if rest[:1] == b":":
                    try:
                        value, _ = _DECODER.raw_decode(rest[1:].lstrip(_WS).decode("utf-8", "replace"))
                    except (ValueError, RecursionError):
                        return None
                    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
            i = j + 1
            continue
        if c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
        i += 1
    return None


def _checked(value, body: bytes):
    """The parsed message, or TooDeep when it nests past MAX_DEPTH."""
    return TooDeep(_top_level_id(body)) if _too_deep(value) else value


class Framer:
    """Bytes in, messages out (parsed JSON values, or ParseError), with no I/O."""

    def __init__(self):
        self.buf = bytearray()
        self.length: Optional[int] = None  # the pending header's length
        self.in_body = False
        self.scanned = 0  # bytes of the body already searched for a header

    def feed(self, data: bytes) -> list:
        self.buf += data
        out: list = []
        while True:
            if not self.in_body and not self._headers():
                return out
            msg = self._body()
            if msg is _WAIT:
                return out
            out.append(msg)

    # ------------------------------------------------------------ headers
    def _headers(self) -> bool:
        """Read header lines; True once the blank line after a Content-Length came."""
        buf = self.buf
        while True:
            if self.length is None:
                # until a Content-Length: one search over the chunk; what comes before it is junk
                m = HEADER.search(buf)
                if m is None:
                    if len(buf) > _HEADER_MAX:
                        cut = len(buf) - _HEADER_MAX  # keep where a header may be starting
                        self._junk(buf[:cut])
                        del buf[:cut]
                    return False
                self._junk(buf[:m.start()])
                self.length = int(m.group(1))
                del buf[:m.end()]
                continue
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > _LINE_MAX:  # a header line that never ends: junk, look again
                    log.warning("dropped a header line of over %d bytes", _LINE_MAX)
                    self.length = None
                    del buf[:len(buf) - _HEADER_MAX]
                return False
            line = bytes(buf[:nl + 1])
            del buf[:nl + 1]
            if not line.strip(_WS):
                self.in_body = True
                self.scanned = 0
                return True
            m = HEADER.search(line)
            if m is not None:
                self.length = int(m.group(1))
            elif not _OTHER_HEADER.fullmatch(line.strip(_WS)):
                log.warning("skipped a line that is not a header: %r", line[:80])

    @staticmethod
    def _junk(data) -> None:
        """Log what is dropped before a header (other headers and blank lines are no junk)."""
        lines = [x for x in bytes(data[:4096]).split(b"\n") if x.strip(_WS)]
        if any(not _OTHER_HEADER.fullmatch(x.strip(_WS)) for x in lines) or len(data) > 4096:
            log.warning("skipped %d bytes before a header: %r", len(data), bytes(data[:80]))

    # ------------------------------------------------------------ bodies
    def _done(self, consumed: int, msg):
        del self.buf[:consumed]
        self.in_body = False
        self.length = None
        self.scanned = 0
        return msg

    def _body(self):
        """The next message, or _WAIT until more bytes come."""
        buf, n = self.buf, self.length
        if len(buf) >= n:
            with memoryview(buf) as view:  # one copy of a long body, not two
                body = view[:n].tobytes()
            try:
                return self._done(n, _checked(json.loads(body), body))
            except RecursionError:  # deeper than json's C parser goes: no value, maybe an id
                return self._done(n, TooDeep(_top_level_id(body)))
            except (ValueError, UnicodeDecodeError):
                pass
            got = self._leading_value(bytes(buf))
            if got is not None:  # the length was wrong; the JSON says where it ends
                value, end = got
                log.warning("Content-Length said %d bytes; the message took %d", n, end)
                return self._done(end, _checked(value, bytes(buf[:end])))
            cut = self._header_in(0, len(buf))
            if cut is not None and cut < n:
                return self._done(cut, ParseError(f"the next header came after {cut} of {n} bytes", buf[:cut]))
            return self._done(n, ParseError("not JSON", body))
        # fewer bytes than declared: a header inside them ends the body there
        cut = self._header_in(max(self.scanned - _HEADER_MAX, 0), len(buf))
        self.scanned = len(buf)
        if cut is not None:
            got = self._leading_value(bytes(buf[:cut]))
            log.warning("Content-Length said %d bytes; the next header came after %d", n, cut)
            if got is not None:
                return self._done(cut, _checked(got[0], bytes(buf[:cut])))
            return self._done(cut, ParseError(f"the next header came after {cut} of {n} bytes", buf[:cut]))
        # ... or a complete JSON value: the length overstated it and the client waits
        # (only the last bytes are looked at: a long body arriving costs each chunk its length)
        tail = bytes(buf[-_HEADER_MAX:]).rstrip(_WS)
        if tail[-1:] in (b"}", b"]") and len(buf) <= _EAGER_MAX:
            got = self._leading_value(bytes(buf))
            if got is not None and not buf[got[1]:].strip(_WS):
                log.warning("Content-Length said %d bytes; the message took %d", n, got[1])
                return self._done(len(buf), _checked(got[0], bytes(buf)))
        return _WAIT

    def _header_in(self, start: int, end: int) -> Optional[int]:
        """Where a Content-Length header starts in buf[start:end], if one does."""
        m = HEADER.search(self.buf, start, end)
        return None if m is None else m.start()

    @staticmethod
    def _leading_value(data: bytes):
        """(value, bytes it took) of a JSON value at the start of `data`, or None."""
        stripped = data.lstrip(_WS)
        if not stripped[:1] in (b"{", b"["):
            return None
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = stripped[:exc.start].decode("utf-8")
        try:
            value, end = _DECODER.raw_decode(text)
        except (ValueError, RecursionError):
            return None
        return value, len(data) - len(stripped) + len(text[:end].encode("utf-8"))


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


async def pump(ls, read: Callable[[], Any]) -> None:
    """Read chunks with `await read()` until end of input or the server stops."""
    framer = Framer()
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


def serve_io(ls, stdin=None, stdout=None) -> int:
    """Serve over stdin/stdout (pygls's start_io, with our framing); the exit status:
    1 when `exit` came without `shutdown` (as LSP says), else 0."""
    from pygls.io_ import StdoutWriter

    ls._stop_event = threading.Event()
    ls.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    stream = stdin or sys.stdin.buffer

    async def main():
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        threading.Thread(target=_reader_thread, args=(stream, loop, queue), daemon=True,
                         name="shapescript-stdin").start()
        await pump(ls, queue.get)

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
