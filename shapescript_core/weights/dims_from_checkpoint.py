"""Dims the source declares without a value, read from a checkpoint: a stack's count from
the checkpoint's number of blocks, the numbers of query and key/value heads from its
config (they hide in products, `[H*Dh D]`, where shapes can't tell them), any other dim
from the size of a tensor whose param writes the dim alone as an axis (`embed: [V D]`:
V and D)."""
from __future__ import annotations

from ..export_errors import ExportError
from .checkpoint_axes import forward_shape, source_axis
from .role_plan import plan_for_import
from .specs import resolve
from .stacks import stack_fields

# a dim the source leaves open takes a multiple of this while the graph is traced to find
# its role (every product and quotient of the usual head counts stays a whole number),
# then the checkpoint's size at that axis
_PROBE = 2 ** 7 * 3 * 5 * 7


def _probes(names: list) -> dict:
    """A distinct stand-in value per open dim, each a multiple of every later one's, so a
    quotient of an earlier by a later one (`Dh = D / H` with D before H) is whole."""
    return {n: _PROBE * 2 ** (len(names) - i) for i, n in enumerate(names)}


def _probe_order(env, names: list) -> list:
    """`names` in the order `_probes` takes them, so that the dims derived from them are
    whole and positive with the stand-ins: a dim a derived dim divides by comes after the
    dims it divides (`Dh = D / H`: D before H, whatever the declarations' order), one it
    subtracts after those it is subtracted from; otherwise (and on a cycle) as declared."""
    before: dict = {n: set() for n in names}  # n -> the dims that must come before it

    def after(s, dims):
        if s in before:
            before[s] |= {d for d in dims if d in before and d != s}
    for n, info in env.dims.info.items():
        c = info.canon
        if c is None or c.single_symbol() == n:
            continue
        plus = {s for m, k in c.terms if k > 0 for s, e in m if e > 0}
        for m, k in c.terms:
            for s, e in m:
                if e < 0:  # a quotient: whole when the divisor's stand-in divides the others'
                    after(s, {x for x, y in m if y > 0})
                elif k < 0:  # a difference: positive when what it takes is smaller
                    after(s, plus)
    order, placed, left = [], set(), list(names)
    while left:
        ready = next((x for x in left if before[x] <= placed), left[0])
        order.append(ready)
        placed.add(ready)
        left.remove(ready)
    return order


def _open_dims(env) -> list:
    return [n for n, i in env.dims.info.items()
            if i.value is None and i.canon is not None and i.canon.single_symbol() == n]


def _stack_counts(env, fn_name: str, open_dims: list, blocks) -> dict:
    """Each open dim that counts a stack's blocks, from the model the function takes down."""
    found: dict = {}
    for f in stack_fields(env, fn_name):
        n = f.type.count.single_symbol()
        if n in open_dims and blocks:
            found[n] = blocks
    return found


def infer_dims(db, request, path: str, fn_item, ckpt) -> dict:
    """Values for the dims the source declares without one. {} when the graph can't be
    matched even so; the dims not found stay open (E3312)."""
    env = db.analyze(path).env
    open_dims = _open_dims(env)
    if not open_dims:
        return {}
    found = _stack_counts(env, fn_item.name, open_dims, ckpt.block_count())
    probes = _probes(_probe_order(env, [x for x in open_dims if x not in found]))
    with db.with_dims({**db.inputs.dims, **found, **probes}):
        try:
            return _read_sizes(db, request, path, fn_item, ckpt, found, probes)
        finally:
            ckpt.names, ckpt.unknown = {}, []


def _read_sizes(db, request, path: str, fn_item, ckpt, found: dict, probes: dict) -> dict:
    """`infer_dims` with the probes set: the sizes the checkpoint's tensors give them."""
    resolved = resolve(db, path, fn_item)
    if resolved.diagnostics:
        return found
    try:
        plan = plan_for_import(db, request, resolved, ckpt.label())
    except ExportError:
        return found
    hp = plan.hparams
    ckpt.index(ckpt.family or plan.arch, hp["block_count"], hp["head_count"], hp["head_count_kv"])
    for t in plan.tensors:
        name = t.key
        if t.source is None or t.parts or name not in ckpt.names:
            continue
        want, got = forward_shape(t.shape, t.steps), ckpt.shape(name)
        if len(want) != len(got):
            continue
        axes = resolved.sites[t.source].written.strip("[]").split()
        for i, size in enumerate(got):
            j, factor = source_axis(i, len(want), t.steps)
            if j < len(axes) and axes[j] in probes and axes[j] not in found:
                found[axes[j]] = size * factor
    # a head count the source writes as an open dim, read from the config: after the
    # shapes, so a dim a shape gives is never taken for one
    for short, (theirs, _) in ckpt.heads().items():
        n = next((d for d, v in probes.items() if v == hp.get(short) and d not in found), None)
        if n is not None:
            found[n] = theirs
    return found
