"""JSON-RPC messages cut from a byte stream, so that a broken header can't deafen the
server (transport.py serves them; fast_start.py reads the first ones before pygls is
loaded, so nothing here imports pygls).

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

import json
import logging
import re
from typing import Optional

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


