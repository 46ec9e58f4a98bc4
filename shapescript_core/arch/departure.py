"""A departure while matching: the node where the model leaves an architecture, and why.

Raised inside the matcher, turned into a `plan.Departure` by `match.match`.
"""
from __future__ import annotations


class Depart(Exception):
    def __init__(self, node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


def line_of(node) -> str:
    return f" (line {node.where[1]})" if node is not None and node.where and node.where[1] else ""
