"""Every param checked against the weights before anything is written."""
from __future__ import annotations

from dataclasses import dataclass, field

from .e3310 import e3310
from .e3311 import e3311
from .weight_messages import extra_key, unreadable, wrong_dtype


@dataclass
class WeightsReport:
    diagnostics: list = field(default_factory=list)   # E3310, E3311 at the fields
    errors: list = field(default_factory=list)        # messages: wrong dtype, truncated tensors
    warnings: list = field(default_factory=list)      # messages: extra keys

    @property
    def ok(self) -> bool:
        return not self.diagnostics and not self.errors


def check_weights(resolved, source) -> WeightsReport:
    """E3310 for a param the weights lack, E3311 for a wrong shape, an error for a wrong
    dtype or a tensor the file cuts short, a warning for each key that is no param."""
    import os
    rep = WeightsReport()
    wanted = set()
    for spec in resolved.specs:
        wanted.add(spec.path)
        site = resolved.sites[spec.path]
        if spec.path not in source.where:
            rep.diagnostics.append(e3310(spec.path, site.span, source.describe()))
            continue
        t = source.info(spec.path)
        if tuple(t.shape) != tuple(spec.shape):
            rep.diagnostics.append(e3311(spec.path, t.shape, site.written, spec.shape, site.span))
            continue
        if t.dtype != spec.dtype:
            rep.errors.append(wrong_dtype(spec.path, t.dtype, spec.dtype))
            continue
        why = source.truncated(spec.path)
        if why:
            rep.errors.append(unreadable(spec.path, os.path.basename(source.where[spec.path].file), why))
    for key in source.keys():
        if key not in wanted:
            rep.warnings.append(extra_key(key, resolved.model))
    return rep
