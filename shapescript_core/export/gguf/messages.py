"""The E3313 headline (ERRORS.md), in one place."""
from __future__ import annotations


def e3313(reason: str) -> str:
    return f"no llama.cpp architecture runs this model: {reason}"
