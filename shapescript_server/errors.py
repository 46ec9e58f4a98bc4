"""Error answers of our own (pygls has no class for LSP's RequestFailed)."""
from __future__ import annotations

from pygls.exceptions import JsonRpcException


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed (-32803): the request was valid, and the server refuses it
    with a message the editor shows (a rename that would collide, say)."""

    CODE = -32803
    MESSAGE = "Request Failed"
