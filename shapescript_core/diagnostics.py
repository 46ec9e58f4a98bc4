"""Diagnostic, Label, Edit, Fix: the one currency of every layer.

Spans are anchored: a span holds the object it is relative to (a parsed item or a
file's source), so a cached diagnostic stays right when its item moves in the file.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from enum import IntEnum

from .explain import docs_dir


class Anchor:
    """Something a span is relative to: has `.path` and `.offset` (absolute start)."""

    __slots__ = ()  # an Item keeps no dict for it
    path: str = ""
    offset: int = 0


class FileAnchor(Anchor):
    def __init__(self, path: str):
        self.path = path
        self.offset = 0


@dataclass(frozen=True)
class Span:
    anchor: Anchor
    start: int  # relative to anchor.offset, in str indices
    end: int

    @property
    def path(self) -> str:
        return self.anchor.path

    @property
    def abs_start(self) -> int:
        return self.anchor.offset + self.start

    @property
    def abs_end(self) -> int:
        return self.anchor.offset + self.end

    def to(self, other: "Span") -> "Span":
        """The span from the start of self to the end of other (same anchor)."""
        return Span(self.anchor, self.start, max(self.end, other.end))

    def __repr__(self) -> str:
        return f"Span({self.path}:{self.abs_start}-{self.abs_end})"


class Severity(IntEnum):
    ERROR = 1
    WARNING = 2
    INFO = 3
    HINT = 4

    @property
    def word(self) -> str:
        return self.name.lower()


class Applicability(IntEnum):
    DISPLAY_ONLY = 0
    UNSAFE = 1
    SAFE = 2


@dataclass(frozen=True)
class Edit:
    span: Span
    text: str

    @staticmethod
    def insertion(span_at: Span, text: str) -> "Edit":
        return Edit(Span(span_at.anchor, span_at.start, span_at.start), text)

    @staticmethod
    def replacement(span: Span, text: str) -> "Edit":
        return Edit(span, text)


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE

    @staticmethod
    def safe(title: str, *edits: Edit) -> "Fix":
        return Fix(title, tuple(edits), Applicability.SAFE)

    @staticmethod
    def unsafe(title: str, *edits: Edit) -> "Fix":
        return Fix(title, tuple(edits), Applicability.UNSAFE)


@dataclass(frozen=True)
class Label:
    span: Span
    message: str


@dataclass
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: Severity = Severity.ERROR
    labels: list[Label] = field(default_factory=list)  # the first may be the primary label
    primary_label: str = ""
    notes: list[str] = field(default_factory=list)
    helps: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.span.path

    def label(self, span: Span, message: str) -> "Diagnostic":
        self.labels.append(Label(span, message))
        return self

    def help(self, text: str) -> "Diagnostic":
        self.helps.append(text)
        return self

    def note(self, text: str) -> "Diagnostic":
        self.notes.append(text)
        return self

    def fix(self, f: Fix) -> "Diagnostic":
        self.fixes.append(f)
        return self


def error(code: str, message: str, span: Span, primary_label: str = "") -> Diagnostic:
    return Diagnostic(code, message, span, Severity.ERROR, primary_label=primary_label)


def warning(code: str, message: str, span: Span, primary_label: str = "") -> Diagnostic:
    return Diagnostic(code, message, span, Severity.WARNING, primary_label=primary_label)


INTERNAL = "E0001"
log = logging.getLogger("shapescript")


def debugging() -> bool:
    """SHAPESCRIPT_DEBUG set: internal errors are raised, not turned into E0001."""
    return bool(os.environ.get("SHAPESCRIPT_DEBUG"))


def internal_error(what: str, span: Span, exc: BaseException) -> Diagnostic:
    """E0001: a check could not complete because of a bug in ShapeScript itself. The
    traceback goes to the log ("shapescript" logger); the file shows this one error, so
    that a failed check never reads as a clean file."""
    log.error("internal error in %s at %s", what, span, exc_info=(type(exc), exc, exc.__traceback__))
    text = str(exc)
    text = text if len(text) <= 80 else text[:77] + "..."
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return error(INTERNAL, f"{what} could not complete: internal error ({detail})", span,
                 "the check stopped here").note(
        "this is a bug in ShapeScript, not in the file; the log has the details").help(
        "please report it with the file that shows it")


def docs_base() -> str:
    """Where the docs pages live: `SHAPESCRIPT_DOCS_URL` (a base URL ending in `/`), or
    else the pages the package ships (or the checkout's `docs/`) as a file URI, so the
    link opens a real page."""
    env = os.environ.get("SHAPESCRIPT_DOCS_URL")
    if env:
        return env if env.endswith("/") else env + "/"
    return docs_dir().as_uri() + "/"


def doc_url(code: str) -> str:
    """The docs page a code links to (the "Serving engines" page for E3301–E3306)."""
    if code.startswith("E33") and code[3:5] in {"01", "02", "03", "04", "05", "06"}:
        return docs_base() + "serving-engines.md#" + code.lower()
    return docs_base() + "errors/" + code + ".md"
