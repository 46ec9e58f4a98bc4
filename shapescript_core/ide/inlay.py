"""Inlay hints: the inferred shape after each assignment (`att = … ▸ [b H n m]`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..check.types import TensorT, is_unknown, render_nested
from ..syntax import ast as A
from .locate import fn_result


@dataclass
class InlayHint:
    offset: int  # absolute: the end of the assignment
    label: str  # "▸ [b H n m]"
    tooltip: str = ""


def shape_text(env, t) -> str:
    """A binding's shape: axes, and the dtype only when it is not f32."""
    def one(x):
        return env.render(x, dtype=isinstance(x, TensorT) and x.dtype.name != "f32")
    return render_nested(t, one)


def inlay_hints(ws, path: str, start: int = 0, end: int | None = None) -> list:
    a = ws.analyze(path)
    if a is None:
        return []
    end = len(a.file.text) if end is None else end
    out: list = []
    for item in a.file.items:
        if not isinstance(item, A.FnItem) or item.offset > end or item.offset + len(item.text) < start:
            continue
        res = fn_result(a, item)
        if res is None:
            continue
        by_pos = {pos: t for _, pos, t in res.locals_at}
        for s in A.walk_stmts(item.body):
            if isinstance(s, A.Assign):
                targets = [(s.target, s.target_pos)]
            elif isinstance(s, A.TupleAssign):
                targets = list(s.targets)
            else:
                continue
            at = item.offset + s.pos[1]
            if not (start <= at <= end):
                continue
            shown = []
            for name, pos in targets:
                t = by_pos.get(pos)
                if t is None or is_unknown(t):
                    shown = []
                    break
                shown.append(shape_text(a.env, t))
            if not shown:
                continue
            label = "▸ " + ", ".join(shown)
            tip = "; ".join(f"{n}: {a.env.render(by_pos[p], dtype=isinstance(by_pos[p], TensorT))}"
                            for n, p in targets)
            out.append(InlayHint(at, label, tip))
    return out
