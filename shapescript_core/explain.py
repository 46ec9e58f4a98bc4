"""`shapescript explain CODE`: a code's docs page, and where the docs pages are.

The pages ship inside the package (`shapescript_core/docs/`, copied from the checkout's
`docs/` when a wheel is built: see setup.py); in a checkout or an editable install they
are read from `docs/` itself, so an edit to a page shows at once.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

_HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def docs_dir() -> Path:
    """The folder holding `errors/CODE.md` and the other docs pages."""
    packaged = _HERE / "docs"
    if (packaged / "errors").is_dir():
        return packaged
    return _HERE.parent / "docs"


def page_path(code: str) -> Path | None:
    """The page of a well-formed code (E0408, W0101), present or not; None otherwise."""
    code = code.strip().upper()
    if not re.fullmatch(r"[EW]\d{4}", code):
        return None
    return docs_dir() / "errors" / f"{code}.md"


def page(code: str) -> str | None:
    p = page_path(code)
    if p is None:
        return None
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


def codes() -> list:
    return sorted(p.stem for p in (docs_dir() / "errors").glob("*.md"))
