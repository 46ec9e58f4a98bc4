"""Weights of another layout, matched to the source's params by their role in the traced
graph: `open_weights` recognises the input by its content, `import_checkpoint` builds one
`Recipe` per param and returns an `ImportedSource`, which reads like a `WeightSource`
keyed by param paths (so every writer takes it unchanged).

Roles are the GGUF plan's: the architecture matcher (`gguf.match`) already says which
param is block N's query projection, the final norm, the output layer..., and how its
layout differs from llama.cpp's. The checkpoint's tensors are named by the same roles
(its reader, one per format). A param never matches by its name.

One mistake, one diagnostic: another architecture, roles without a tensor, or tensors
without a role are one E3314; the first dim the checkpoint contradicts is one E3315; a
constant the checkpoint's config contradicts is one E3316 warning each.
"""
from __future__ import annotations

import math
import os

import gguf
import numpy as np

from ...check.types import ModelT, StackT
from ...compile.graph import CompileError, trace
from ..gguf import metadata
from ..gguf.match import match
from ..gguf.gguf_plan import Departure, Gather, Transpose
from ..errors import ExportError
from .convert import NP, bf16_bits, bf16_to_f32, to_stored
from .gguf_checkpoint import GGUFCheckpoint, is_gguf
from .hf_checkpoint import HFCheckpoint
from .weight_messages import e3314, e3315, e3315_heads, e3316
from .recipe import Rows, add_part
from .safetensors_format import ST_DTYPES, TO_ST, TensorInfo
from .source import WeightSource
from .specs import resolve
from .weights_map import keys_for, read_map, recipe_for, rule_for

MAX_LISTED = 4  # roles named in an E3314

ROLE_WORDS = {
    "TOKEN_EMBD": "the token embedding", "POS_EMBD": "the position embedding",
    "OUTPUT_NORM": "the final norm", "OUTPUT": "the output layer",
    "ATTN_NORM": "the attention norm", "ATTN_Q": "the query projection", "ATTN_K": "the key projection",
    "ATTN_V": "the value projection", "ATTN_QKV": "the fused q/k/v projection",
    "ATTN_OUT": "the attention output projection", "ATTN_Q_NORM": "the per-head query norm",
    "ATTN_K_NORM": "the per-head key norm", "FFN_NORM": "the MLP norm", "FFN_GATE": "the MLP gate",
    "ATTN_POST_NORM": "the norm after attention", "FFN_PRE_NORM": "the MLP norm",
    "FFN_POST_NORM": "the norm after the MLP",
    "FFN_UP": "the MLP up projection", "FFN_DOWN": "the MLP down projection",
}


def describe_role(name: str) -> str:
    """`blk.0.attn_q.bias` -> "block 0's query projection bias"."""
    parts = name.split(".")
    block = None
    if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit():
        block, base = int(parts[1]), "blk.{bid}." + ".".join(parts[2:-1])
    else:
        base = ".".join(parts[:-1])
    kind = next((mt.name for mt, n in gguf.TENSOR_NAMES.items() if n == base), None)
    words = ROLE_WORDS.get(kind or "", f"`{name}`")
    if block is not None:
        words = f"block {block}'s {words[4:] if words.startswith('the ') else words}"
    return words + (" bias" if parts[-1] == "bias" else "")


# ------------------------------------------------------------------ recognising the input
def open_weights(path: str, specs, weights_map: str | None = None):
    """(WeightSource, None) for weights keyed by param paths (today's formats), or
    (None, checkpoint reader) for weights of another layout. By content: the GGUF magic,
    or safetensors (a file, a sharded index, a directory with a config.json) whose names
    are none of the params' (Hugging Face names)."""
    if is_gguf(path):
        return None, GGUFCheckpoint(path)
    if weights_map is not None:
        return None, HFCheckpoint(path)
    source = WeightSource(path)  # our own exports too: a mapping.json renames their keys
    keys = source.keys()
    wanted = {s.path for s in specs}
    if keys and not any(k in wanted for k in keys):
        return None, HFCheckpoint(path)
    return source, None


# ------------------------------------------------------------------ the source param view
class _Where:
    def __init__(self, file: str):
        self.file = file


class ImportedSource:
    """Params rebuilt from a checkpoint, read like a `WeightSource`."""

    def __init__(self, ckpt, recipes: dict, specs: list):
        self.ckpt = ckpt
        self.recipes = recipes
        self.specs = {s.path: s for s in specs}
        self.where = {p: _Where(ckpt.path) for p in recipes}

    def describe(self) -> str:
        return self.ckpt.label()

    def settings(self) -> dict:
        """What comes along with the weights: bos/eos/pad ids, the context length."""
        return self.ckpt.settings()

    def tokenizer_fields(self) -> list:
        """A GGUF input's embedded tokenizer (tokenizer.* metadata); [] for other inputs."""
        return self.ckpt.tokenizer_fields() if hasattr(self.ckpt, "tokenizer_fields") else []

    def keys(self) -> list:
        return list(self.recipes)

    def info(self, path: str) -> TensorInfo:
        s = self.specs[path]
        item = ST_DTYPES[TO_ST[s.dtype]][1]
        return TensorInfo(path, s.dtype, tuple(s.shape), 0, s.numel * item)

    def truncated(self, path: str):
        return None

    def start_reading(self):
        self.ckpt.start_reading()

    def _direct(self, path: str):
        r = self.recipes[path]
        t = r.direct
        if t is not None and self.ckpt.can_copy(t) and self.ckpt.dtype(t) == self.specs[path].dtype:
            return t
        return None

    def read(self, path: str):
        """The param in its declared dtype (bf16 as float32 holding bf16 values)."""
        arr = self.recipes[path].build(self.ckpt.read)
        dt = self.specs[path].dtype
        if dt == "bf16":  # rounds f32 values; bf16 values stay as they are
            return bf16_to_f32(bf16_bits(arr))
        want = NP.get(dt, np.float32)
        return arr if arr.dtype == want else arr.astype(want)

    def copy_into(self, path: str, out, check_cancelled=None) -> int:
        """Append the param's bytes (its declared dtype) to the open binary file `out`."""
        t = self._direct(path)
        if t is not None:
            return self.ckpt.copy_into(t, out, check_cancelled)
        arr = to_stored(self.read(path), self.specs[path].dtype)
        view = memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
        n = len(view)
        while view:
            view = view[out.write(view):]
        return n

    def stream_chunks(self, path: str, elements: int):
        flat = self.read(path).reshape(-1)
        for i in range(0, flat.size, elements):
            yield flat[i:i + elements]


# ------------------------------------------------------------------ matching by role
def _line(ws, span) -> int | None:
    f = ws.file(span.path) if span is not None else None
    return f.lines.line_of(span.abs_start) + 1 if f is not None else None


def _forward_shape(shape: tuple, steps) -> tuple:
    shape = list(shape)
    for s in steps:
        if isinstance(s, Transpose):
            shape.reverse()
        elif isinstance(s, Gather) and s.take is not None:
            shape[s.axis] //= s.shape[s.take[0]]
    return tuple(shape)


# a dim the source leaves open takes this while the graph is traced to find its role
# (every product and quotient of the usual head counts stays a whole number), then the
# checkpoint's size at that axis
_PROBE = 2 ** 7 * 3 * 5 * 7


def infer_dims(ws, request, path: str, fn_item, ckpt) -> dict:
    """Values for the dims the source declares without one, read from the checkpoint: a
    stack's count from its number of blocks, any other dim from the size of a tensor
    whose param writes the dim alone as an axis (`embed: [V D]`: V and D). {} when the
    graph can't be matched even so; the dims not found stay open (E3312)."""
    env = ws.analyze(path).env
    open_dims = [n for n, i in env.dims.info.items()
                 if i.value is None and i.canon is not None and i.canon.single_symbol() == n]
    if not open_dims:
        return {}
    found: dict = {}
    blocks = ckpt.block_count()
    sig = env.sig(fn_item.name)
    todo = [sig.params[0].type.name] if sig and sig.params and isinstance(sig.params[0].type, ModelT) else []
    seen = set()
    while todo:
        info = env.model(todo.pop())
        for f in (info.fields.values() if info else ()):
            t = f.type
            if isinstance(t, StackT):
                n = t.count.single_symbol()
                if n in open_dims and blocks:
                    found[n] = blocks
                if t.model not in seen:
                    seen.add(t.model)
                    todo.append(t.model)
            elif isinstance(t, ModelT) and t.name not in seen:
                seen.add(t.name)
                todo.append(t.name)
    probes = {n: _PROBE * (i + 2) for i, n in enumerate(x for x in open_dims if x not in found)}
    saved = dict(ws.dim_overrides)
    ws.set_dim_overrides({**saved, **found, **probes})
    try:
        resolved = resolve(ws, path, fn_item)
        if resolved.diagnostics:
            return found
        try:
            plan = plan_for_import(ws, request, resolved, ckpt.label())
        except ExportError:
            return found
        hp = plan.hparams
        ckpt.index(ckpt.family or plan.arch, hp["block_count"], hp["head_count"], hp["head_count_kv"])
        for t in plan.tensors:
            name = metadata.tensor_name(plan.arch, t)
            if t.source is None or t.parts or name not in ckpt.names:
                continue
            want, got = _forward_shape(t.shape, t.steps), ckpt.shape(name)
            if len(want) != len(got):
                continue
            axes = resolved.sites[t.source].written.strip("[]").split()
            flips = sum(isinstance(s, Transpose) for s in t.steps) % 2
            for i, size in enumerate(got):
                j = len(want) - 1 - i if flips and len(want) == 2 else i
                factor = 1
                for s in t.steps:
                    if isinstance(s, Gather) and s.take is not None and s.axis == i:
                        factor = s.shape[s.take[0]]
                if j < len(axes) and axes[j] in probes and axes[j] not in found:
                    found[axes[j]] = size * factor
    finally:
        ckpt.names, ckpt.unknown = {}, []
        ws.set_dim_overrides(saved)
    return found


def plan_for_import(ws, request, resolved, label: str):
    try:
        tr = trace(ws, request.path, resolved.fn_item.name, resolved.dims)
    except CompileError as e:
        raise ExportError(f"can't follow `{resolved.fn_item.name}` to match it with {label}: {e}") from None
    plan = match(tr, any_window=True)  # a window changes no role (Mistral's is llama's layout)
    if isinstance(plan, Departure):
        span = resolved.fn_item.span(resolved.fn_item.name_pos)
        raise ExportError("not exported: the checkpoint can't be matched to the source", diagnostics=[e3314(
            f"`{resolved.fn_item.name}` is no architecture the importer knows, so {label} can't be matched to it",
            span, "the exported function", [f"the closest is {plan.arch}: {plan.reason}"],
            "the importer reads llama, qwen2, qwen3, gpt2 and gemma3 models by their roles; for another model, "
            "give --weights-map a file that maps each param to its checkpoint tensor")])
    return plan


def import_checkpoint(ws, request, resolved, ckpt):
    """(ImportedSource, notes, warnings) or ExportError with one E3314/E3315."""
    label = ckpt.label()
    plan = plan_for_import(ws, request, resolved, label)
    hp = plan.hparams
    arch = ckpt.family or plan.arch
    ckpt.index(arch, hp["block_count"], hp["head_count"], hp["head_count_kv"])
    sites = resolved.sites
    specs = {s.path: s for s in resolved.specs}
    recipes: dict = {}
    missing: list = []      # (param path, role name)
    consumed: set = set()
    mismatch = None         # the first shape the checkpoint contradicts
    shaped: set = set()     # params whose tensor has another shape
    notes: list = []
    for t in plan.tensors:
        name = metadata.tensor_name(plan.arch, t)
        if t.parts:
            if name not in ckpt.names:
                missing.extend((p, name) for p, _, _ in t.parts if p is not None)
                continue
            consumed.add(name)
            row = 0
            for p, shape, steps in t.parts:
                rows = _forward_shape(shape, steps)[0]
                if p is not None:
                    add_part(recipes, p, shape, name, ckpt.to_gguf(name), steps, Rows(row, row + rows))
                row += rows
            if mismatch is None and ckpt.shape(name)[0] != row:
                mismatch = (t.parts[0][0], name, _forward_shape(t.parts[0][1], t.parts[0][2]), t.parts[0][2])
            continue
        if t.source is None:
            continue  # a bias llama.cpp has and the source doesn't: a checkpoint's is "without a role"
        got = name
        if name not in ckpt.names and t.name == "OUTPUT" and "token_embd.weight" in ckpt.names:
            got = "token_embd.weight"
            notes.append(f"the checkpoint ties its output layer to the token embedding: "
                         f"`{t.source}` gets a copy of it")
        if got not in ckpt.names:
            missing.append((t.source, name))
            continue
        consumed.add(got)
        want = _forward_shape(t.shape, t.steps)
        if ckpt.shape(got) != want:
            if mismatch is None:
                mismatch = (t.source, got, want, t.steps)
            shaped.add(t.source)
            continue
        add_part(recipes, t.source, t.shape, got, ckpt.to_gguf(got), t.steps)
    extra = [n for n in ckpt.names if n not in consumed]
    zeros = [n for n in extra if _all_zeros(ckpt, n)]  # a bias of zeros the source doesn't have
    if zeros:
        notes.append(f"{len(zeros)} bias{'es' if len(zeros) != 1 else ''} of zeros in the checkpoint "
                     f"(`{ckpt.key_of(zeros[0])}`...) {'have' if len(zeros) != 1 else 'has'} no param in the "
                     f"source: left out, which changes nothing")
    extra = [n for n in extra if n not in zeros] + list(ckpt.unknown)
    unread = [p for p in specs if p not in recipes and p not in shaped and not any(p == m[0] for m in missing)]
    wrong_arch = ckpt.family is not None and ckpt.family != plan.arch
    if (ckpt.family is None and ckpt.model_type) or wrong_arch or missing or extra or unread:
        raise ExportError("not exported: the checkpoint doesn't fit the source",
                          diagnostics=[_e3314(ws, resolved, ckpt, plan, missing, extra, unread, wrong_arch)])
    if mismatch is not None:
        raise ExportError("not exported: the checkpoint's shapes contradict the source's dims",
                          diagnostics=[_e3315(resolved, ckpt, specs, *mismatch)])
    words = {"head_count": "query heads", "head_count_kv": "key/value heads"}
    for short, (theirs, where) in ckpt.heads().items():
        if hp.get(short) is not None and hp[short] != theirs:
            raise ExportError("not exported: the checkpoint's heads contradict the source's dims",
                              diagnostics=[e3315_heads(words[short], hp[short], theirs, where,
                                                       resolved.fn_item.span(resolved.fn_item.name_pos))])
    for r in recipes.values():
        for part in r.parts:
            why = ckpt.problem(part.tensor)
            if why:
                raise ExportError(why)
    warnings = [f"[{d.code}] {d.message}" for d in _constants(plan, ckpt, resolved)]
    return ImportedSource(ckpt, recipes, resolved.specs), notes, warnings


def import_mapped(ws, request, resolved, ckpt, map_file: str):
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
            site = sites[spec.path]
            got = tuple(ckpt.shape(keys[0]))
            if shape is None or len(shape) != len(spec.shape):
                raise ExportError("not exported: the weights map's tensors don't fit the source", diagnostics=[
                    e3315(site.written, len(spec.shape), len(got), keys[0], got, site.span, site.written)])
            i = next(i for i in range(len(shape)) if shape[i] != spec.shape[i])
            axes = site.written.strip("[]").split()
            raise ExportError("not exported: the checkpoint's shapes contradict the source's dims", diagnostics=[
                e3315(axes[i] if i < len(axes) else site.written, spec.shape[i], shape[i],
                      keys[0], got, site.span, site.written)])
        recipes[spec.path] = recipe
    if unmapped or missing:
        first = (unmapped or [m[0] for m in missing])[0]
        notes = [f"the weights are {ckpt.label()}, read through the weights map {os.path.basename(map_file)}"]
        for p in unmapped[:MAX_LISTED]:
            notes.append(f"`{p}` (line {_line(ws, sites[p].span)}) matches no entry of the map")
        for p, k in missing[:MAX_LISTED]:
            notes.append(f"`{p}` (line {_line(ws, sites[p].span)}) maps to `{k}`, which the checkpoint "
                         f"doesn't have")
        more = len(unmapped) + len(missing) - min(len(unmapped), MAX_LISTED) - min(len(missing), MAX_LISTED)
        if more > 0:
            notes.append(f"and {more} more")
        n = len(unmapped) + len(missing)
        raise ExportError("not exported: the weights map leaves params without a tensor", diagnostics=[e3314(
            f"the weights map gives {n} of the source's params no tensor of the checkpoint",
            sites[first].span, f"`{first}` is declared here", notes,
            "add an entry for each param (a pattern with {i} covers every layer), naming a key the "
            "checkpoint has")])
    for r in recipes.values():
        for part in r.parts:
            why = ckpt.problem(part.tensor)
            if why:
                raise ExportError(why)
    unused = [k for k in ckpt.names if k not in used]
    warnings = []
    if unused:
        warnings.append(f"{len(unused)} tensor{'s' if len(unused) != 1 else ''} of the checkpoint no param maps "
                        f"to (`{unused[0]}`...): left out")
    return ImportedSource(ckpt, recipes, resolved.specs), [], warnings


def _e3314(ws, resolved, ckpt, plan, missing, extra, unread, wrong_arch):
    sites = resolved.sites
    theirs = ckpt.model_type or "unnamed"
    first = missing[0][0] if missing else (unread[0] if unread else None)
    span = sites[first].span if first else resolved.fn_item.span(resolved.fn_item.name_pos)
    notes = [f"the weights are {ckpt.label()}", f"the source is a {plan.arch} model (matched by its graph)"]
    # the first few roles, each kind once (block 0's query norm stands for every block's)
    listed, seen = [], set()
    for path, role in missing:
        if _kind(role) not in seen:
            seen.add(_kind(role))
            listed.append(f"`{path}` (line {_line(ws, sites[path].span)}) is {describe_role(role)}, "
                          f"which the checkpoint has no tensor for")
    for path in unread:
        if ("unread", path) not in seen:
            seen.add(("unread", path))
            listed.append(f"`{path}` (line {_line(ws, sites[path].span)}) is read by no role the "
                          f"architecture has")
    for name in extra:
        if _kind(name) not in seen:
            seen.add(_kind(name))
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
    return e3314(head, span, label, notes,
                 "export the checkpoint into a source of its own architecture (the roles must be the same: "
                 "biases, tied output layer, per-head norms), or give --weights-map a file mapping each "
                 "param to its tensor")


def _all_zeros(ckpt, name: str) -> bool:
    """A vector (a bias) of zeros: leaving it out changes nothing. Matrices are never read here."""
    if len(ckpt.shape(name)) != 1 or not name.endswith(".bias") or ckpt.problem(name):
        return False
    return not np.any(ckpt.read(name))


def _kind(name: str):
    """A role without its block: `blk.3.attn_q.weight` -> `attn_q.weight`."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() else name


def _e3315(resolved, ckpt, specs, path, name, want, steps):
    got = ckpt.shape(name)
    site = resolved.sites[path]
    spec = specs[path]
    written = site.written
    axes = written.strip("[]").split()
    if len(got) != len(want):
        return e3315(written, len(want), len(got), ckpt.key_of(name), got, site.span, written)
    i = next(i for i in range(len(got)) if got[i] != want[i])
    flips = sum(isinstance(s, Transpose) for s in steps) % 2
    axis = len(want) - 1 - i if flips and len(want) == 2 else i
    factor = 1
    for s in steps:
        if isinstance(s, Gather) and s.take is not None and s.axis == i:
            factor = s.shape[s.take[0]]
    text = axes[axis] if axis < len(axes) else written
    return e3315(text, spec.shape[axis], got[i] * factor, ckpt.key_of(name), got, site.span, written)


def _constants(plan, ckpt, resolved) -> list:
    hp = plan.hparams
    ours = {"theta": hp.get("freq_base"), "eps": hp.get("rms_eps", hp.get("ln_eps")),
            "theta_swa": hp.get("freq_base_swa"), "window": hp.get("sliding_window")}
    words = {"theta": "rotary theta", "eps": "norm eps", "theta_swa": "rotary theta of the windowed layers",
             "window": "sliding window"}
    where = {"theta": "rope theta", "eps": "norm eps", "theta_swa": "rope.freq_base_swa",
             "window": "attention.sliding_window"}
    if ckpt.kind == "hf":
        where = {"theta": "config.json rope_theta", "eps": "config.json " +
                 ("layer_norm_epsilon" if plan.arch == "gpt2" else "rms_norm_eps"),
                 "theta_swa": "config.json rope_parameters.sliding_attention", "window": "config.json sliding_window"}
    out = []
    for k, v in ckpt.constants().items():
        o = ours.get(k)
        if o is None and k == "window":  # the source attends to every earlier position
            out.append(e3316(words[k], "none (full attention)", _num(v), where[k],
                             resolved.fn_item.span(resolved.fn_item.name_pos)))
        elif o is not None and not math.isclose(float(o), v, rel_tol=1e-6):
            out.append(e3316(words[k], _num(o), _num(v), where[k],
                             resolved.fn_item.span(resolved.fn_item.name_pos)))
    return out


def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) >= 1 else f"{x:g}"


def checkpoint_dir(ckpt) -> str | None:
    """The directory a Hugging Face checkpoint's tokenizer and generation settings come from."""
    return ckpt.path if ckpt.kind == "hf" and os.path.isdir(ckpt.path) else None
