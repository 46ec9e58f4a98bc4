"""`guarded`: every handler's wrapper. An exception is logged (stderr and
window/logMessage, through the server's `report_failure`); a request gets an error
answer, a notification is dropped, and the server goes on. A JsonRpcException (such as
InvalidParams for malformed arguments) is the answer itself and passes through."""
from __future__ import annotations

import asyncio
import functools

from pygls.exceptions import JsonRpcException, JsonRpcInternalError


def guarded(kind: str = "request"):
    """Wrap a handler: log any exception; answer a request with an error; go on."""

    def deco(fn):
        name = fn.__name__

        def failed(ls, exc):
            ls.report_failure(name, exc)
            if kind == "request":
                raise JsonRpcInternalError(f"{name} failed: {exc!r}") from None
            return None

        if asyncio.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapper(ls, *args):
                try:
                    return await fn(ls, *args)
                except JsonRpcException:
                    raise
                except Exception as exc:
                    return failed(ls, exc)
        else:
            @functools.wraps(fn)
            def wrapper(ls, *args):
                try:
                    return fn(ls, *args)
                except JsonRpcException:
                    raise
                except Exception as exc:
                    return failed(ls, exc)
        return wrapper

    return deco
