"""The export checks E3301-E3306 of one file (and E3313, E3307, E3319, and E0413 at calls): the
entry point the workspace calls. Each check is the module named by its code.

Order, so that one mistake gives one diagnostic: E3306, then E3301 (only for vllm and
gguf); the model, ids and token axes that E3302-E3305 speak about exist only once both
pass. A function whose call graph has language errors is not checked at all.
"""
from __future__ import annotations

from ..diagnostics import debugging, internal_error
from ..syntax import ast as A
from ..compile.reach import Reach
from ..targets import FULL
from ..check.codes.e0413 import check_static_args
from ..check.codes.e3306_model_first import check_model_first
from .e3301_signature import check_signature
from .e3302_output import Layers, check_output
from .e3303_tables import check_embedding, check_stray_reads
from .e3304_token_axes import TokenFlow
from .e3305_attention import check_attention
from .e3307_tensor_parallel import check_tensor_parallel
from .e3313_gguf import check_gguf
from .e3319_engine_features import check_engine_features
from .places import file_span


def export_diagnostics(db, analysis) -> list:
    """E33xx diagnostics of the file; never raises."""
    with db.export_checks_of(analysis.path) as first:
        if not first:
            return []
        try:
            return _diagnostics(db, analysis)
        except Exception as exc:  # noqa: BLE001 - an export check's bug must not take the checker down
            if debugging():
                raise
            return [internal_error("the export checks", file_span(analysis.path, 0, 0), exc)]


def _diagnostics(db, analysis) -> list:
    pairs = db.exported(analysis)
    if not pairs:
        return []
    prog = Reach(db, analysis)
    out, seen = [], set()
    for item, targets in pairs:
        try:
            found = _static_args(prog, analysis, item) + check_exported(prog, item, targets)
        except Exception as exc:  # noqa: BLE001 - shown as E0001 at the function, never as no E33xx
            if debugging():
                raise
            found = [internal_error(f"the export checks of `{item.name}`", item.span(item.name_pos), exc)]
        for d in found:
            key = (d.code, d.path, d.span.abs_start, d.span.abs_end)
            if key not in seen:
                seen.add(key)
                out.append(d)
    return out


def _static_args(prog, analysis, item) -> list:
    """E0413 at the calls that pass a value the model computes to a parameter a callee
    decides by (check/codes/e0413.py), over what the exported function reaches."""
    res = analysis.fns.get(item.name)
    if res is None or res.item is not item:
        return []
    fns = prog.closure(res)
    if fns is None or prog.has_core_errors(fns):
        return []
    return check_static_args(prog, fns)


def check_exported(prog, item: A.FnItem, targets: set) -> list:
    """E3301-E3306 (and E3313 for gguf, E3307 for a vllm split, E3319 for what vLLM or LiteRT lack) of one
    exported function, in their order."""
    a = prog.a
    res = a.fns.get(item.name)
    sig = a.env.sig(item.name)
    if res is None or res.item is not item or sig is None or sig.broken or not targets:
        return []
    fns = prog.closure(res)
    if fns is None or prog.has_core_errors(fns):
        return []
    d = check_model_first(prog, item, sig)
    if d is not None:
        return [d]
    if not targets & FULL:
        return []
    d, si = check_signature(prog, item, sig, a.env)
    if d is not None:
        return [d]
    out = []
    layers = Layers()
    e3302 = check_output(prog, res, a.env, si, layers)
    if e3302 is not None:
        out.append(e3302)
    out += check_embedding(prog, res, a.env, si, layers)
    ret_nodes = _return_nodes(item)
    model_type = sig.params[0].type.name
    out += check_stray_reads(prog, fns, si, layers, ret_nodes, model_type, lambda r: _stack_to(prog, res, r))
    skip = _skip_ops(res, layers) if e3302 is not None else frozenset()
    flow = TokenFlow(prog, si, skip)
    e3304 = flow.run_exported(res, a.env)
    out += e3304
    out += check_attention(prog, flow, res, si, bool(e3304))
    if out:
        return out
    if "gguf" in targets:  # E3313 once E3301-E3306 pass
        out += check_gguf(prog, item)
    if "vllm" in targets and prog.db.inputs.tensor_parallel > 1:  # E3307 once a split is asked for
        out += check_tensor_parallel(prog, item, prog.db.inputs.tensor_parallel)
    return out + check_engine_features(prog, item, targets)  # E3319: vLLM's and LiteRT's


def _return_nodes(item) -> set:
    last = item.body[-1] if item.body else None
    return {id(n) for n in A.walk_expr(last.value)} if isinstance(last, A.Return) else set()


def _skip_ops(res, layers) -> frozenset:
    """Operations of the returned expression that E3302 already speaks for."""
    last = res.item.body[-1]
    keep = set()
    if layers.out_call is not None:
        info = res.calls.get(id(layers.out_call))
        x = info.arg_map.get("x") if info is not None else None
        if x is not None:
            keep = {id(n) for n in A.walk_expr(x.value)}
    return frozenset(id(n) for n in A.walk_expr(last.value) if id(n) not in keep)


def _stack_to(prog, root, target) -> tuple:
    """A call path ((caller item, call), ...) from root's function to target's."""
    if target is root:
        return ()
    prev = {id(root.item): None}
    queue = [root]
    while queue:
        r = queue.pop(0)
        for cid, info in r.calls.items():
            if info.sig is None:
                continue
            _, callee = prog.callee(r, info)
            if callee is None or id(callee.item) in prev:
                continue
            prev[id(callee.item)] = (r, r.nodes.get(cid))
            if callee is target:
                path, cur = [], callee
                while prev[id(cur.item)] is not None:
                    caller, call = prev[id(cur.item)]
                    path.append((caller.item, call))
                    cur = caller
                return tuple(reversed(path))
            queue.append(callee)
    return ()
