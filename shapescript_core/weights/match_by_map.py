"""A checkpoint read through a `--weights-map` file (weights_map.py) instead of roles: each
param takes the tensors its rule names; one E3314 for every param left without one."""
from __future__ import annotations

from ..export_errors import ExportError
from .import_diagnostics import map_gaps, map_shape_mismatch
from .imported_source import ImportedSource, dequantized_note, refuse_unreadable
from .weights_map import keys_for, read_map, recipe_for, rule_for


def import_mapped(db, request, resolved, ckpt, map_file: str):
    """(ImportedSource, notes, warnings) by a --weights-map file instead of roles."""
    rules = read_map(map_file)
    ckpt.index_raw()
    sites = resolved.sites
    recipes: dict = {}
    unmapped, missing, used = [], [], set()
    for spec in resolved.specs:
        rule, groups = rule_for(rules, spec.path)
        if rule is None:
            unmapped.append(spec.path)
            continue
        keys = keys_for(rule, groups)
        absent = [k for k in keys if k not in ckpt.names]
        if absent:
            missing.append((spec.path, absent[0]))
            continue
        used.update(keys)
        recipe, shape, _ = recipe_for(rule, groups, spec, ckpt.shape)
        if shape != tuple(spec.shape):
            d = map_shape_mismatch(sites[spec.path], spec, shape, keys[0], tuple(ckpt.shape(keys[0])))
            raise ExportError("not exported: the weights map's tensors don't fit the source"
                              if shape is None or len(shape) != len(spec.shape) else
                              "not exported: the checkpoint's shapes contradict the source's dims", diagnostics=[d])
        recipes[spec.path] = recipe
    if unmapped or missing:
        raise ExportError("not exported: the weights map leaves params without a tensor",
                          diagnostics=[map_gaps(db, sites, ckpt, map_file, unmapped, missing)])
    refuse_unreadable(ckpt, recipes)
    unused = [k for k in ckpt.names if k not in used]
    warnings = []
    if unused:
        warnings.append(f"{len(unused)} tensor{'s' if len(unused) != 1 else ''} of the checkpoint no param maps "
                        f"to (`{unused[0]}`...): left out")
    notes = dequantized_note(ckpt, used) if request.dtype != "keep" else []  # keep copies them as they are
    return ImportedSource(ckpt, recipes, resolved.specs), notes, warnings
