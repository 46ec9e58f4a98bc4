"""What an exported function reaches: its functions, across files, with their checks.

The compiler lowers these functions and the export checks check them. Functions of the
analysed file come from its analysis; functions of imported files from their own
analyses. A file whose export checks are running is never analysed again from inside
them (an import cycle would otherwise recurse: `Workspace.export_checks_running`).
"""
from __future__ import annotations

from typing import Optional

from ..check.env import held_model, held_models
from ..diagnostics import Severity
from ..syntax import ast as A

class Reach:
    def __init__(self, db, analysis):
        self.db = db
        self.a = analysis
        self.path = analysis.path
        self._analyses = {analysis.path: analysis}

    # ------------------------------------------------------------ lookups
    def analysis_of(self, path: str):
        if path in self._analyses:
            return self._analyses[path]
        if self.db.export_checks_running(path):
            return None
        an = self.db.analyze(path)
        self._analyses[path] = an
        return an

    def fn(self, item) -> Optional[object]:
        """The FnResult of a function item, wherever it is defined."""
        an = self.analysis_of(item.path)
        if an is None:
            return None
        res = an.fns.get(item.name)
        if item.path != self.path:
            self.db.note_body_read(item)  # the analysis asking holds while this body stays
        return res if res is not None and res.item is item else None

    def callee(self, caller, info):
        """(Signature, FnResult) of a user call, as the caller's file sees it now.

        A cached caller's CallInfo may hold the signature of an older version of the
        callee (one with the same fingerprint), so the name is looked up again.
        """
        env = self.env_of(caller.item)
        sig = env.sig(info.target) if env is not None else None
        if sig is None or sig.broken:
            return None, None
        return sig, self.fn(sig.item)

    def env_of(self, item):
        an = self.analysis_of(item.path)
        return an.env if an is not None else None

    def line(self, item, pos) -> int:
        f = self.db.file(item.path)
        if f is None:
            return 0
        return f.lines.line_of(item.offset + pos[0]) + 1

    def local(self, item) -> bool:
        return item.path == self.path

    # ------------------------------------------------------------ the call graph
    def closure(self, res) -> list:
        """The FnResults reached from res (res first), or None when one is missing."""
        out, seen, stack = [], set(), [res]
        while stack:
            r = stack.pop()
            if id(r.item) in seen:
                continue
            seen.add(id(r.item))
            out.append(r)
            for info in r.calls.values():
                if info.sig is None:
                    continue
                _, callee = self.callee(r, info)
                if callee is None:
                    return None
                stack.append(callee)
        return out

    def has_core_errors(self, fns: list) -> bool:
        """Language errors (E01xx-E04xx), or a check that could not complete (E0001), in these
    functions or the models they use."""
        anchors = {id(r.item) for r in fns}
        for r in fns:
            if r.item.syntax_errors or any(_core(d) for d in r.diags):  # a body that didn't parse, or errors
                return True
            env = self.env_of(r.item)
            if env is None or _calls_broken(r, env):
                return True
            for name, m in held_models(map(held_model, r.types.values()), env.model):
                if m is not None:
                    anchors.add(id(m.item))
                elif env.is_broken_name(name):  # a model that did not parse: what it holds is unknown
                    return True
        for an in list(self._analyses.values()):
            if an is None:
                continue
            for d in an.diags:
                if _core(d) and id(d.span.anchor) in anchors:
                    return True
        return False


def _core(d) -> bool:
    return d.severity == Severity.ERROR and d.code[:3] in ("E00", "E01", "E02", "E03", "E04")


def _calls_broken(res, env) -> bool:
    """A call of a function that did not parse: its result is unknown."""
    for node in res.nodes.values():
        if isinstance(node, A.Call) and isinstance(node.func, A.Name) and id(node) not in res.calls \
                and env.is_broken_name(node.func.id):
            return True
    return False


