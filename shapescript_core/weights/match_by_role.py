"""A checkpoint of another layout matched to the source's params by their role in the
traced graph (`role_plan`; the checkpoint's tensors are named by role too: `roles.tensor_key`),
never by a param's name: one `Recipe` per param, or one
diagnostic (E3314/E3315) for the whole mismatch, plus E3316 warnings for constants."""
from __future__ import annotations

import numpy as np

from ..export_errors import ExportError
from ..arch.roles import tensor_key
from .checkpoint_axes import forward_shape
from .import_diagnostics import (block_mismatch, constant_warnings, role_mismatch, scale_warnings,
                                 shape_mismatch)
from .imported_source import ImportedSource, dequantized_note, refuse_unreadable
from .recipe import Rows, add_part
from .role_plan import plan_for_import
from .e3315 import e3315_heads

_HEAD_WORDS = {"head_count": "query heads", "head_count_kv": "key/value heads",
               "expert_used_count": "experts per token"}


def import_checkpoint(db, request, resolved, ckpt):
    """(ImportedSource, notes, warnings) or ExportError with one E3314/E3315."""
    plan = plan_for_import(db, request, resolved, ckpt.label())
    hp = plan.hparams
    wrong_arch = ckpt.family is not None and ckpt.family != plan.arch
    foreign = wrong_arch or (ckpt.family is None and ckpt.model_type)  # E3314 below says so
    blocks = ckpt.blocks()
    if blocks is not None and not foreign and blocks[0] != hp["block_count"]:
        raise ExportError("not exported: the checkpoint's number of blocks contradicts the source's",
                          diagnostics=[block_mismatch(db.analyze(request.path).env, resolved,
                                                      hp["block_count"], *blocks)])
    ckpt.index(ckpt.family or plan.arch, hp["block_count"], hp["head_count"], hp["head_count_kv"])
    specs = {s.path: s for s in resolved.specs}
    recipes: dict = {}
    missing: list = []      # (param path, role name)
    consumed: set = set()
    mismatch = None         # the first shape the checkpoint contradicts
    shaped: set = set()     # params whose tensor has another shape
    notes: list = []
    for t in plan.tensors:
        name = t.key
        if t.parts:
            if name not in ckpt.names:
                missing.extend((p, name) for p, _, _ in t.parts if p is not None)
                continue
            consumed.add(name)
            row = 0
            for p, shape, steps in t.parts:
                rows = forward_shape(shape, steps)[0]
                if p is not None:
                    add_part(recipes, p, shape, name, ckpt.to_gguf(name), steps, Rows(row, row + rows))
                row += rows
            if mismatch is None and ckpt.shape(name)[0] != row:
                mismatch = (t.parts[0][0], name, forward_shape(t.parts[0][1], t.parts[0][2]), t.parts[0][2])
            continue
        if t.source is None:
            continue  # a bias llama.cpp has and the source doesn't: a checkpoint's is "without a role"
        got = name
        tied = tensor_key("token_embedding", None, "weight")
        if name not in ckpt.names and t.name == "output" and tied in ckpt.names:
            got = tied
            notes.append(f"the checkpoint ties its output layer to the token embedding: "
                         f"`{t.source}` gets a copy of it")
        if got not in ckpt.names:
            missing.append((t.source, name))
            continue
        consumed.add(got)
        want = forward_shape(t.shape, t.steps)
        if ckpt.shape(got) != want:
            if mismatch is None:
                mismatch = (t.source, got, want, t.steps)
            shaped.add(t.source)
            continue
        add_part(recipes, t.source, t.shape, got, ckpt.to_gguf(got), t.steps)
    if request.dtype != "keep":  # keep copies them as they are (export/gguf/keep.py)
        notes += dequantized_note(ckpt, consumed)
    extra = [n for n in ckpt.names if n not in consumed]
    zeros = [n for n in extra if _all_zeros(ckpt, n)]  # a bias of zeros the source doesn't have
    if zeros:
        notes.append(f"{len(zeros)} bias{'es' if len(zeros) != 1 else ''} of zeros in the checkpoint "
                     f"(`{ckpt.key_of(zeros[0])}`...) {'have' if len(zeros) != 1 else 'has'} no param in the "
                     f"source: left out, which changes nothing")
    extra = [n for n in extra if n not in zeros] + list(ckpt.unknown)
    unread = [p for p in specs if p not in recipes and p not in shaped and not any(p == m[0] for m in missing)]
    if foreign or missing or extra or unread:
        raise ExportError("not exported: the checkpoint doesn't fit the source",
                          diagnostics=[role_mismatch(db, resolved, ckpt, plan, missing, extra, unread, wrong_arch)])
    if mismatch is not None:
        raise ExportError("not exported: the checkpoint's shapes contradict the source's dims",
                          diagnostics=[shape_mismatch(resolved, ckpt, specs, *mismatch)])
    for short, (theirs, where) in ckpt.heads().items():
        if hp.get(short) is not None and hp[short] != theirs:
            raise ExportError("not exported: the checkpoint's heads contradict the source's dims",
                              diagnostics=[e3315_heads(_HEAD_WORDS[short], hp[short], theirs, where,
                                                       resolved.fn_item.span(resolved.fn_item.name_pos))])
    refuse_unreadable(ckpt, recipes)
    warnings = [f"[{d.code}] {d.message}" for d in constant_warnings(plan, ckpt, resolved) +
                scale_warnings(recipes, ckpt, resolved)]
    return ImportedSource(ckpt, recipes, resolved.specs), notes, warnings


def _all_zeros(ckpt, name: str) -> bool:
    """A vector (a bias) of zeros: leaving it out changes nothing. Matrices are never read here."""
    if len(ckpt.shape(name)) != 1 or not name.endswith(".bias") or ckpt.problem(name):
        return False
    return not np.any(ckpt.read(name))
