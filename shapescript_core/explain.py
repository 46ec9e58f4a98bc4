"""`shapescript explain CODE`: a code's docs page."""
from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def page(code: str) -> str | None:
    code = code.strip().upper()
    if not re.fullmatch(r"[EW]\d{4}", code):
        return None
    p = DOCS / "errors" / f"{code}.md"
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


def codes() -> list:
    return sorted(p.stem for p in (DOCS / "errors").glob("*.md"))
