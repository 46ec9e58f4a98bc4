"""A bare JSON-RPC client over a language server's stdio (no LSP library).

For the latency benchmark (no client library in the timing) and for tests that send
what a real client never would (broken JSON, bad params).
"""
from __future__ import annotations

import collections
import json
import queue
import subprocess
import threading
import time


class StdioClient:
    def __init__(self, cmd: list, cwd: str | None = None, env: dict | None = None,
                 stderr=None):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, cwd=cwd, env=env)
        self.inbox: queue.Queue = queue.Queue()  # (arrival time, message), None at exit
        self.next_id = 0
        self.answers: dict = {}  # id -> answer that came while waiting for another
        self.notifications = collections.deque(maxlen=1000)  # seen while waiting for answers
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            self.inbox.put((time.perf_counter(), msg))

    def send_bytes(self, body: bytes) -> float:
        """Frame and send a body as it is; returns the time it was sent."""
        return self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write(self, raw: bytes) -> float:
        """Send bytes as they are, headers and all."""
        t = time.perf_counter()
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()
        return t

    def send(self, msg: dict) -> float:
        return self.send_bytes(json.dumps(msg).encode())

    def receive(self, timeout: float) -> tuple:
        item = self.inbox.get(timeout=timeout)
        if item is None:
            raise RuntimeError("the server exited")
        return item

    def answer_server_request(self, msg: dict) -> bool:
        """Answer a request the server sent (configuration, refresh…) with null."""
        if "method" in msg and "id" in msg:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            return True
        return False

    def request(self, method: str, params, timeout: float = 60) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.answer(self.next_id, timeout)

    def answer(self, msg_id, timeout: float = 60) -> dict:
        """The answer to request `msg_id` (answering the server's requests meanwhile;
        notifications and other answers are kept)."""
        deadline = time.monotonic() + timeout
        while msg_id not in self.answers:
            try:
                _, msg = self.receive(max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise TimeoutError(f"no answer to request {msg_id} within {timeout} s") from None
            if "method" not in msg:
                self.answers[msg.get("id")] = msg
            elif not self.answer_server_request(msg):
                self.notifications.append(msg)
        return self.answers.pop(msg_id)

    def notify(self, method: str, params) -> float:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self, timeout: float = 10):
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit", None)
            self.proc.wait(timeout)
        except Exception:
            self.proc.kill()
            self.proc.wait()
