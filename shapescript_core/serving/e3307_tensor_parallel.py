"""E3307: a model vLLM can't split N ways (`[export.vllm] tensor_parallel = N`, CLI
`--tensor-parallel N`, the editor's `export.vllm.tensorParallel`).

Checked for a `vllm` target once E3301 to E3306 pass, and only when a split is asked
for. vLLM's tensor parallelism gives each rank a share of every attention's heads and of
every MLP's hidden units (compile/parallel_plan.py says which linears are split how), so
for N ranks:
- the query heads divide by N;
- the key/value heads divide by N, or there is one (every rank holds it); with more ranks
  than key/value heads (a multiple of them), the native model of `vllm_plugin/` holds
  each head on N / Hkv ranks as vLLM's Llama does, which the Transformers backend's tp
  plan can't: a note says so;
- the hidden units of an MLP's gate and up projections divide by N (those of each part of
  a fused `w_gate_up` too: the export holds a param a pattern splits into parts as its
  parts, each split on its own);
- every attention's queries, keys, values and output come from linears of the model.
One diagnostic per dim that decides it, at that dim's declaration (at the exported
function's name when the dim is declared in another file), naming the sizes that work.
Its check, its messages, note and help. No numpy, no torch.
"""
from __future__ import annotations

import logging
import os

from ..compile.graph import CompileError, build_program
from ..compile.parallel_plan import plan_parallel
from ..compile.plan import make_plan
from ..diagnostics import error
from ..syntax import ast as A

log = logging.getLogger("shapescript.export")


def message(fn: str, n: int, dim: str, count: int, what: str) -> str:
    return f"vLLM can't split `{fn}` {n} ways: {dim} is {count} {what}, which {n} ranks can't share"


def _either(words: list) -> str:
    words = [str(w) for w in words]
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def help_text(sizes: list, dims: list) -> str:
    return f"Serve it with a tensor-parallel size of {_either(sizes)}, or change {_either(dims)}."


def kv_replicas_note(n: int, count: int) -> str:
    return (f"the native model of `vllm_plugin/` does split it {n} ways, each of the {count} key/value heads "
            f"on {n // count} ranks as vLLM's Llama does; vLLM's Transformers backend can't")


def unsplit_message(fn: str, n: int) -> str:
    return f"vLLM can't split `{fn}` {n} ways: this attention's projections aren't linears of the model"


class Need:
    """A count every rank must hold a share of: N works when `works(count, N)`."""

    def __init__(self, size, count: int, what: str, kv: bool = False):
        self.size, self.count, self.what, self.kv = size, count, what, kv

    def works(self, n: int) -> bool:
        return self.count % n == 0 or (self.kv and self.count == 1)


def check_tensor_parallel(prog, item, n: int) -> list:
    """E3307 for `item` split `n` ways; [] when it splits or can't be compiled (the
    export reports that itself)."""
    if not n or n <= 1:
        return []
    try:
        cprog = build_program(prog.db, prog.path, item.name)
        plan = make_plan(cprog, True)
    except CompileError as e:
        log.debug("no E3307 check for `%s`: %s", item.name, e)
        return []
    par = plan_parallel(cprog, plan)
    needs = _needs(cprog, plan, par)
    out = []
    ok_sizes = [k for k in range(1, max([n] + [x.count for x in needs]) + 1) if all(x.works(k) for x in needs)]
    failing, seen = [], set()
    for need in needs:
        key = need.size if need.size is not None else (need.what, need.count)
        if not need.works(n) and key not in seen:
            seen.add(key)
            failing.append(need)
    if failing:  # one diagnostic: at the first dim that decides it, a label at each other one
        dims = [_dim(cprog, need) for need in failing]
        first = failing[0]
        d = _at_dim(prog, item, dims[0][0], message(item.name, n, dims[0][1], first.count, first.what),
                    f"{first.count} {first.what}, split {n} ways")
        for need, (name, shown) in zip(failing[1:], dims[1:]):
            other = _dim_item(prog, name)
            label = f"{shown} is {need.count} {need.what}, which {n} ranks can't share either"
            if other is not None:
                d.label(other.span(other.name_pos), label)
            else:
                d.note(label)
        kv = [need for need in failing if need.kv]
        if len(kv) == len(failing) and all(n % need.count == 0 for need in kv):
            # only key/value heads fewer than the ranks: the native model replicates them
            d.note(kv_replicas_note(n, kv[0].count))
        out.append(d.help(help_text(ok_sizes, [shown for _, shown in dims])))
    if par.unsplit:
        node, why = par.unsplit[0]
        out.append(_at_node(prog, item, cprog, node, unsplit_message(item.name, n), why))
    return out


def _needs(cprog, plan, par) -> list:
    needs = []
    for site in plan.attention.sites.values():
        q = site.node.attrs["args"]["q"]
        needs.append(Need(q.type.axes[-3].size, site.heads, "query heads"))
        stored = site.stored.get("k")
        src = stored.source if stored is not None and stored.source is not None else None
        size = src.type.axes[-3].size if src is not None and len(getattr(src.type, "axes", ())) >= 3 else None
        needs.append(Need(size, site.kv_heads, "key/value heads", kv=True))
    for (model, fname), role in par.roles.items():
        if role.role in ("gate", "up"):
            rows = cprog.model(model).fields[fname].type.axes[0].size
            count = cprog.value_of(rows)
            if count is not None:
                needs.append(Need(rows, count, "hidden units"))
    for p in par.packed:  # a fused `w_gate_up`: each part's hidden units
        if any(r.role in ("gate", "up") for r in p.roles.values()):
            rows = cprog.value_of(cprog.model(p.model).fields[p.field].type.axes[0].size)
            if rows is not None:
                needs.append(Need(p.unit, rows // p.parts, "hidden units"))
    return needs


def _dim(cprog, need) -> tuple:
    """(the dim's name or None, how the message shows it)."""
    name = cprog.env.dims.name_of(need.size) if need.size is not None else None
    return name, (f"`{name}`" if name is not None else f"the {need.what}")


def _dim_item(prog, name):
    """The declaration of a dim in this file, or None."""
    dim = prog.a.own.get(name) if name is not None else None
    return dim if isinstance(dim, A.DimItem) and prog.local(dim) else None


def _at_dim(prog, item, name, message: str, label: str):
    """At the dim's name in its declaration in this file; else at the function's name."""
    dim = _dim_item(prog, name)
    if dim is not None:
        return error("E3307", message, dim.span(dim.name_pos), label)
    return error("E3307", message, item.span(item.name_pos), label)


def _at_node(prog, item, cprog, node, message: str, label: str):
    """At a compiled node's source in this file; else at the function's name, saying where."""
    where = getattr(node, "where", None)
    ast = getattr(node, "ast", None)
    if where and ast is not None:
        path, line = where
        for g in cprog.fns.values():
            it = g.item
            if it.path != path or not prog.local(it):
                continue
            first = prog.line(it, (0, 0))
            last = prog.line(it, (len(it.text), len(it.text)))
            if first <= line <= last:
                return error("E3307", message, it.span(ast.pos), label)
        label += f" ({os.path.basename(path)}:{line})"
    return error("E3307", message, item.span(item.name_pos), label)
