"""The import's diagnostics, each built in one place from what the matching found: one
E3314 for a checkpoint that is not the source's model (another architecture, roles without
a tensor, tensors without a role, params a weights map leaves out), one E3315 for the first
dim the checkpoint contradicts (its number of blocks first), one E3316 warning per constant
its config contradicts (and one when a Gemma checkpoint's attention scale, folded into the
query norms, is not the source's)."""
from __future__ import annotations

import math
import os

from ..arch.archs import FAMILIES, names_in_words
from ..arch.plan import Scale
from ..arch.match import NO_CAP
from ..arch import rope_gguf
from ..check import rope_scaling
from ..check.mixture_routing import ROUTINGS
from .checkpoint_axes import source_axis
from ..arch.roles import describe_role, role_kind
from .stacks import stack_fields
from .e3314 import e3314
from .e3315 import e3315, e3315_blocks
from .e3316 import e3316
from .hf_checkpoint import config_number

MAX_LISTED = 4  # roles (or params) named in an E3314

_FIX_ROLES = ("export the checkpoint into a source of its own architecture (the roles must be the same: "
              "biases, tied output layer, per-head norms), or give --weights-map a file mapping each "
              "param to its tensor")


def source_line(db, span) -> int | None:
    f = db.file(span.path) if span is not None else None
    return f.lines.line_of(span.abs_start) + 1 if f is not None else None


def _fn_span(resolved):
    return resolved.fn_item.span(resolved.fn_item.name_pos)


def unknown_architecture(resolved, label: str, departure):
    """The exported function matches no architecture the importer reads."""
    name = resolved.fn_item.name
    return e3314(
        f"`{name}` is no architecture the importer knows, so {label} can't be matched to it",
        _fn_span(resolved), "the exported function", [f"the closest is {departure.arch}: {departure.reason}"],
        f"the importer reads {names_in_words()} models by their roles; for another model, "
        "give --weights-map a file that maps each param to its checkpoint tensor")


def role_mismatch(db, resolved, ckpt, plan, missing, extra, unread, wrong_arch):
    """`missing`: (param path, role) without a tensor; `extra`: checkpoint tensors without
    a role; `unread`: params no role reads."""
    sites = resolved.sites
    theirs = ckpt.model_type or "unnamed"
    first = missing[0][0] if missing else (unread[0] if unread else None)
    span = sites[first].span if first else _fn_span(resolved)
    notes = [f"the weights are {ckpt.label()}", f"the source is a {plan.arch} model (matched by its graph)"]
    # the first few roles, each kind once (block 0's query norm stands for every block's)
    listed, seen = [], set()
    for path, role in missing:
        if role_kind(role) not in seen:
            seen.add(role_kind(role))
            listed.append(f"`{path}` (line {source_line(db, sites[path].span)}) is {describe_role(role)}, "
                          f"which the checkpoint has no tensor for")
    for path in unread:
        if ("unread", path) not in seen:
            seen.add(("unread", path))
            listed.append(f"`{path}` (line {source_line(db, sites[path].span)}) is read by no role the "
                          f"architecture has")
    for name in extra:
        if role_kind(name) not in seen:
            seen.add(role_kind(name))
            listed.append(f"the checkpoint's `{ckpt.key_of(name)}` is {describe_role(name)}, which the "
                          f"source has no param for" if name in ckpt.names else
                          f"the checkpoint's `{name}` is no role of {ckpt.family or plan.arch}")
    notes.extend(listed[:MAX_LISTED])
    more = len(missing) + len(extra) + len(unread) - len(listed[:MAX_LISTED])
    if more > 0:
        notes.append(f"and {more} more tensor{'s' if more != 1 else ''} like these")
    if wrong_arch or (ckpt.family is None and ckpt.model_type):
        head = (f"the checkpoint is a `{theirs}` model, but the source is a {plan.arch} model"
                if ckpt.family is not None else
                f"the checkpoint is a `{theirs}` model, which the importer doesn't know")
    elif missing:
        head = f"the checkpoint has no tensor for {len(missing)} of the source's params"
    else:
        head = f"the checkpoint has {len(extra) + len(unread)} tensors the source has no param for"
    label = f"`{first}` is declared here" if first else "the exported function"
    return e3314(head, span, label, notes, _FIX_ROLES)


def shape_mismatch(resolved, ckpt, specs, path, name, want, steps):
    """The first axis of `path` (llama.cpp shape `want`) that the checkpoint's `name` contradicts."""
    got = ckpt.shape(name)
    site = resolved.sites[path]
    written = site.written
    if len(got) != len(want):
        return e3315(written, len(want), len(got), ckpt.key_of(name), got, site.span, written)
    i = next(i for i in range(len(got)) if got[i] != want[i])
    axis, factor = source_axis(i, len(want), steps)
    axes = written.strip("[]").split()
    text = axes[axis] if axis < len(axes) else written
    return e3315(text, specs[path].shape[axis], got[i] * factor, ckpt.key_of(name), got, site.span, written)


def block_mismatch(env, resolved, ours: int, theirs: int, where: str):
    """The checkpoint has `theirs` blocks (as its `where` says), the source `ours`: named at
    the stack that holds them (its count as written, `L`), when one stack does."""
    stacks = [f for f in stack_fields(env, resolved.fn_item.name) if f.type.count.evaluate(env.dims.values) == ours]
    if len(stacks) != 1:
        return e3315_blocks(None, ours, theirs, where, _fn_span(resolved), None)
    f = stacks[0]
    return e3315_blocks(f.item.src(f.node.type.axes_pos).strip("[] "), ours, theirs, where,
                        f.item.span(f.node.name_pos), f.item.src(f.node.type.pos))


def map_shape_mismatch(site, spec, shape, key: str, got):
    """A param a weights map builds in `shape` (None: not buildable) that its declared shape contradicts."""
    if shape is None or len(shape) != len(spec.shape):
        return e3315(site.written, len(spec.shape), len(got), key, got, site.span, site.written)
    i = next(i for i in range(len(shape)) if shape[i] != spec.shape[i])
    axes = site.written.strip("[]").split()
    return e3315(axes[i] if i < len(axes) else site.written, spec.shape[i], shape[i],
                 key, got, site.span, site.written)


def map_gaps(db, sites, ckpt, map_file: str, unmapped: list, missing: list):
    """Params a weights map gives no tensor: `unmapped` match no entry, `missing` are
    (param path, key) whose key the checkpoint doesn't have."""
    first = (unmapped or [m[0] for m in missing])[0]
    notes = [f"the weights are {ckpt.label()}, read through the weights map {os.path.basename(map_file)}"]
    for p in unmapped[:MAX_LISTED]:
        notes.append(f"`{p}` (line {source_line(db, sites[p].span)}) matches no entry of the map")
    for p, k in missing[:MAX_LISTED]:
        notes.append(f"`{p}` (line {source_line(db, sites[p].span)}) maps to `{k}`, which the checkpoint "
                     f"doesn't have")
    more = len(unmapped) + len(missing) - min(len(unmapped), MAX_LISTED) - min(len(missing), MAX_LISTED)
    if more > 0:
        notes.append(f"and {more} more")
    n = len(unmapped) + len(missing)
    return e3314(
        f"the weights map gives {n} of the source's params no tensor of the checkpoint",
        sites[first].span, f"`{first}` is declared here", notes,
        "add an entry for each param (a pattern with {i} covers every layer), naming a key the "
        "checkpoint has")


def constant_warnings(plan, ckpt, resolved) -> list:
    """An E3316 per constant (rotary theta, norm eps, the windowed layers' theta, the
    sliding window) the checkpoint's config contradicts."""
    hp = plan.hparams
    caps = {k: (v if v < NO_CAP else None) for k, v in hp.items() if k.endswith("_softcap")}
    ours = {"theta": hp.get("freq_base"), "eps": hp.get("rms_eps", hp.get("ln_eps")),
            "theta_swa": hp.get("freq_base_swa"), "window": hp.get("sliding_window"), **caps}
    words = {"theta": "rotary theta", "eps": "norm eps", "theta_swa": "rotary theta of the windowed layers",
             "window": "sliding window", "attn_softcap": "attention logit softcapping",
             "final_softcap": "final logit softcapping"}
    where = {"theta": "rope theta", "eps": "norm eps", "theta_swa": "rope.freq_base_swa",
             "window": "attention.sliding_window", "attn_softcap": "attn_logit_softcapping",
             "final_softcap": "final_logit_softcapping"}
    if ckpt.kind == "hf":
        where = {"theta": "config.json rope_theta", "eps": "config.json " + FAMILIES[plan.arch].hf_eps_key,
                 "theta_swa": "config.json rope_parameters.sliding_attention", "window": "config.json sliding_window",
                 "attn_softcap": "config.json attn_logit_softcapping",
                 "final_softcap": "config.json final_logit_softcapping"}
    out = []
    for k, v in ckpt.constants().items():
        o = ours.get(k)
        if o is None and k in ("window", "attn_softcap", "final_softcap"):  # what the source doesn't do
            none = "none (full attention)" if k == "window" else "none"
            out.append(e3316(words[k], none, _num(v), where[k], _fn_span(resolved)))
        elif o is not None and not math.isclose(float(o), v, rel_tol=1e-6):
            out.append(e3316(words[k], _num(o), _num(v), where[k], _fn_span(resolved)))
    found = [_rope_scaling_warning(plan, ckpt, resolved), _rotary_dims_warning(plan, ckpt, resolved),
             _routing_warning(plan, ckpt, resolved)]
    return out + [d for d in found if d is not None]


def _routing_warning(plan, ckpt, resolved):
    """E3316 where the source's mixture divides the K chosen weights by their sum and the
    checkpoint's doesn't (`norm_topk_prob`), or the other way round: another function of
    the same tensors (check/mixture_routing.py names both)."""
    ours = ROUTINGS[plan.routing][1] if plan.routing is not None else None
    theirs = ckpt.routing_renormalised()
    if ours is None or theirs is None or ours == theirs[0]:
        return None
    said = next(words for words, renormalised, _ in ROUTINGS.values() if renormalised is theirs[0])
    return e3316("routing of the experts", ROUTINGS[plan.routing][0], f"{str(theirs[0]).lower()} ({said})",
                 theirs[1], _fn_span(resolved))


def _rotary_dims_warning(plan, ckpt, resolved):
    """E3316 where the source's rope rotates another number of each head's features than
    the checkpoint's (v0.3's rotary_dims; transformers' partial_rotary_factor)."""
    _, _, dims = plan.rope
    ours = dims if dims is not None else plan.hparams.get("rope_dim")
    theirs = ckpt.rotary_dims()
    if ours is None or theirs is None or int(ours) == int(theirs[0]):
        return None
    return e3316("rotated head width (rotary_dims)", int(ours), int(theirs[0]), theirs[1], _fn_span(resolved))


def _rope_scaling_warning(plan, ckpt, resolved):
    """E3316 where the source's rope scaling (v0.3) is not the checkpoint's: another
    scaling, or another value of one of its keywords."""
    kind, values, _ = plan.rope
    ours = rope_scaling.describe(kind, dict(values))
    where = "config.json rope_parameters"
    if ckpt.kind != "hf":  # a .gguf says it as llama.cpp reads it (arch/rope_gguf.py)
        return _gguf_rope_warning(plan, ckpt, ours, resolved)
    theirs = ckpt.rope_scaling_parameters()
    if theirs is None:  # the config says it only in words (ropes per layer type)
        scaling = ckpt.rope_scaling()
        if scaling and kind == "none":  # the source's rope has none: positions are rotated unscaled
            return e3316("rope scaling", "none", scaling, where, _fn_span(resolved))
        return None
    tkind, tvalues = theirs
    untruncated = tkind == "yarn" and ckpt.yarn_untruncated()
    same = tkind == kind and all(math.isclose(float(v), tvalues[k], rel_tol=1e-6) for k, v in values)
    if same and not untruncated:
        return None
    said = rope_scaling.describe(tkind, tvalues) + (" with its correction range not rounded (truncate: false, "
                                                    "which the language's yarn doesn't compute)" if untruncated else "")
    return e3316("rope scaling", ours, said, where, _fn_span(resolved))


def _gguf_rope_warning(plan, ckpt, ours: str, resolved):
    """E3316 where a .gguf's scaling is another kind, another factor or original context, or
    (llama3) other divisors than the source's rope computes."""
    kind, values, dims = plan.rope
    values = dict(values)
    tkind = ckpt.rope_scaling_kind()
    theirs = ckpt.rope_scaling() or "none"
    where = "rope_freqs.weight" if tkind == "llama3" else "rope.scaling.type"
    if tkind != kind:
        return e3316("rope scaling", ours, theirs, where, _fn_span(resolved))
    if kind == "llama3":
        theta = plan.hparams.get("freq_base") or 10000.0
        want = rope_gguf.llama3_factors(theta, int(dims or plan.hparams.get("rope_dim") or 0), values)
        got = ckpt.rope_freqs()
        if len(want) != len(got) or any(not math.isclose(a, b, rel_tol=1e-5) for a, b in zip(want, got)):
            return e3316("rope scaling", ours, theirs, where, _fn_span(resolved))
        return None
    for k, v in ckpt.rope_scaling_values().items():
        if k in values and not math.isclose(float(values[k]), v, rel_tol=1e-6):
            return e3316("rope scaling", ours, theirs, where, _fn_span(resolved))
    return None


def scale_warnings(recipes: dict, ckpt, resolved) -> list:
    """An E3316 when a Hugging Face Gemma checkpoint's attention scale (1/sqrt of its
    `query_pre_attn_scalar`) is not the source's: the import keeps the checkpoint's
    outputs by folding the ratio into the query norms' weights (Gemma 2: the query rows'),
    and says so, naming both scales."""
    qpas = config_number(ckpt.config.get("query_pre_attn_scalar")) if ckpt.kind == "hf" else None
    if qpas is None or not 0 < qpas < math.inf:
        return []
    folded = [(path, f) for path, r in recipes.items() for f in (_scale_factor(r),) if f is not None]
    if not folded:
        return []
    theirs = qpas ** -0.5
    ours = theirs / folded[0][1]
    params = f"`{folded[0][0]}`" + (f" and {len(folded) - 1} more" if len(folded) > 1 else "")
    return [e3316("attention scale", _scale(ours), f"{_num(qpas)} (a scale of {_scale(theirs)})",
                  "config.json query_pre_attn_scalar", _fn_span(resolved),
                  folded_into=f"{params} (a factor of {folded[0][1]:.6g})")]


def _scale_factor(recipe):
    """The product of the scales the recipe applies, when it isn't 1; else None."""
    f = 1.0
    for steps in [p.steps for p in recipe.parts] + [recipe.post]:
        for s in steps:
            if isinstance(s, Scale):
                f *= s.factor
    return None if math.isclose(f, 1.0, rel_tol=1e-9) else f


def _scale(x: float) -> str:
    """1/sqrt(N) when x is one, else the number."""
    n = 1 / (x * x)
    return f"1/sqrt({round(n)})" if abs(n - round(n)) < 1e-6 * n else f"{x:.6g}"


def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) >= 1 else f"{x:g}"
