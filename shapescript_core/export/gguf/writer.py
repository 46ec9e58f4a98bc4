"""The `gguf` writer: `write(ctx) -> str` (the contract is in ../writers.py).

The graph is matched first (`match.match`); then the whole header (metadata, tokenizer,
every tensor's name, shape and type) is written, then the tensors one at a time: read,
layout changes (`layout.apply`), converted to the stored type, written, dropped. Peak
memory stays near one tensor. Matrices take `--dtype` (f32, f16, bf16, q8_0); norms and
biases stay f32, as llama.cpp's converters store them. A matrix whose rows can't be cut
into q8_0's blocks of 32 is stored f16, and the summary says so. The other quantized
types (q4_0, q4_k_m, …) are llama.cpp's own quantizer's, run on the f32 file
(llama_quantize.py).
"""
from __future__ import annotations

import gc

import os

import gguf
import numpy as np
from gguf.quants import quant_shape_to_byte_shape, quantize

from ...compile.graph import CompileError, trace
from ...export_errors import ExportError
from ...gguf_format import names as metadata
from ...arch import layout
from ...arch.archs import FAMILIES
from ...arch.match import match
from ...serving.e3313_gguf import export_error_text as e3313_refusal
from ...arch.plan import Departure, Gather, Transpose
from . import keep, llama_quantize
from .tokenizer import TokenizerError, add_tokenizer, copy_tokenizer

Q = gguf.GGMLQuantizationType
_QTYPE = {"bf16": Q.BF16, "q8_0": Q.Q8_0}


def plan_for(ctx):
    """The matched GGUFPlan, or ExportError E3313."""
    # the trace of a stack of 100,000 layers is millions of small objects and no cycle:
    # the cycle collector, paused, would otherwise walk them again and again
    enabled = gc.isenabled()
    gc.disable()
    try:
        tr = trace(ctx.ws.program, ctx.request.path, ctx.fn_item.name, ctx.dims)
        plan = match(tr)
    except CompileError as e:
        raise ExportError(f"can't follow the exported function for gguf: {e}") from None
    finally:
        if enabled:
            gc.enable()
    if isinstance(plan, Departure):
        raise ExportError(e3313_refusal(plan.reason))
    return plan


def _write_array(fout, arr):
    """Write an array's bytes with the file's own writes (numpy's `tofile` reports a full
    disk as "N requested and M written", with no errno: this raises ENOSPC, which the
    export names)."""
    view = memoryview(np.ascontiguousarray(arr)).cast("B")
    while view:
        view = view[fout.write(view):]


def out_shape(t) -> tuple:
    if t.parts:
        return tuple(t.shape)
    shape = list(t.shape)
    for s in t.steps:
        if isinstance(s, Transpose):
            shape.reverse()
        elif isinstance(s, Gather) and s.take is not None:
            shape[s.axis] //= s.shape[s.take[0]]
    return tuple(shape)


def stored_type(t, shape, dtype: str):
    """(GGML type, numpy dtype for the header, byte shape) a tensor is stored in."""
    if t.kind == "vector" or dtype == "f32" or len(shape) < 2:
        return Q.F32, np.float32, shape
    if dtype == "f16":
        return Q.F16, np.float16, shape
    q = _QTYPE[dtype]
    if q == Q.Q8_0 and shape[-1] % gguf.GGML_QUANT_SIZES[Q.Q8_0][0]:
        return Q.F16, np.float16, shape
    return q, np.uint8, quant_shape_to_byte_shape(shape, q)


def convert(arr: np.ndarray, qtype) -> np.ndarray:
    arr = np.asarray(arr, dtype=np.float32)
    if qtype == Q.F32:
        return arr
    if qtype == Q.F16:
        return arr.astype(np.float16)
    return quantize(arr, qtype)


def _values(ctx, t, shape) -> np.ndarray:
    """The tensor's values in llama.cpp's layout: read and re-laid out, stacked from its
    parts, the matcher's numbers (llama3's rope_freqs), or zeros (a bias the source
    doesn't have)."""
    if t.parts:
        return np.concatenate([np.zeros(s, np.float32) if p is None else layout.apply(ctx.read(p), steps)
                               for p, s, steps in t.parts], axis=0)
    if t.values:
        return np.asarray(t.values, dtype=np.float32).reshape(shape)
    if t.source is None:
        return np.zeros(shape, dtype=np.float32)
    return layout.apply(ctx.read(t.source), t.steps)


def _copy_unchanged(ctx, t, qtype, fout) -> bool:
    """Copy an f32 param stored f32 whose layout change only re-orders rows (or none)
    straight from the weights file: the kernel's copy_file_range, as `cp` does, or the
    rows read into their places and written (Q/K's rotary permutation); False when it
    must be converted."""
    source = getattr(ctx, "_source", None)  # the backbone's WeightSource; None for random weights
    if source is None or t.source is None or t.parts or qtype != Q.F32 or source.info(t.source).dtype != "f32":
        return False
    order = layout.row_order(t.steps, t.shape[0]) if t.steps else None
    if t.steps and order is None:
        return False
    fout.flush()
    if order is None:
        source.copy_into(t.source, fout, ctx.check_cancelled)
    else:
        source.copy_rows_into(t.source, fout, order, ctx.check_cancelled)
    fout.seek(0, os.SEEK_END)
    return True


def write(ctx) -> str:
    dtype = ctx.request.dtype
    if not llama_quantize.by_llama_cpp(dtype):
        arch, count = _write(ctx, ctx.tmp, dtype)
        return _summary(ctx, arch, count, dtype)
    llama_quantize.require(dtype)  # before anything is written
    f32 = ctx.tmp + ".f32"
    try:
        arch, count = _write(ctx, f32, "f32")
        f32_size = os.path.getsize(f32)
        ctx.check_cancelled()
        ctx.progress(f"quantizing {os.path.basename(ctx.request.output)} to {dtype} with llama.cpp", 0, 1)
        llama_quantize.quantize(f32, ctx.tmp, dtype)
    finally:
        if os.path.exists(f32):
            os.remove(f32)
    ctx.notes.append(f"quantized to {dtype} by llama.cpp's own quantizer (llama_model_quantize) from the f32 file")
    return _summary(ctx, arch, count, dtype, f"; f32: {_human(f32_size)}")


def _summary(ctx, arch: str, count: int, dtype: str, more: str = "") -> str:
    return (f"wrote {ctx.request.output} (gguf: {arch}, {count} tensors, {dtype}, "
            f"{_human(os.path.getsize(ctx.tmp))}{more})")


def _write(ctx, out: str, dtype: str) -> tuple:
    """Write the model into `out` stored as `dtype`: (its architecture, its number of tensors)."""
    plan = plan_for(ctx)
    arch = metadata.arch_name(plan.arch)
    for t in plan.tensors:
        for path, shape, _ in ((t.source, t.shape, ()),) + t.parts:
            if path is not None and tuple(ctx.spec(path).shape) != tuple(shape):
                raise ExportError(f"internal: `{path}` is {list(ctx.spec(path).shape)}, "
                                  f"the {plan.arch} plan expected {list(shape)}")
    context = ctx.imported.get("context_length")
    # gpt2's is its position table's size; one no uint32 holds (a hostile checkpoint's) stays the default
    if context and metadata.fits_uint32(context) and "position_embedding" not in FAMILIES[plan.arch].roles:
        plan.hparams["context_length"] = context
    ckpt = keep.checkpoint(ctx) if dtype == "keep" else None
    w = gguf.GGUFWriter(out, arch)
    rows = []
    kept_types, computed = {}, []
    try:
        metadata.add_hparams(w, plan, ctx.model, dtype,
                             ckpt.field("general.file_type") if ckpt is not None else None)
        if ctx.request.tokenizer is None and ctx.imported_tokenizer:
            note = copy_tokenizer(w, ctx.imported_tokenizer)  # a GGUF input's own vocabulary
        else:
            try:
                note = add_tokenizer(w, ctx.request.tokenizer, plan.hparams["vocab_size"])
            except TokenizerError as e:
                raise ExportError(f"can't embed the tokenizer {ctx.request.tokenizer}: {e}") from None
        notes = list(plan.notes) + ([note] if note else [])
        fallback = []
        for t in plan.tensors:
            shape = out_shape(t)
            name = metadata.tensor_name(plan.arch, t)
            copy = keep.kept(ctx, t, shape) if ckpt is not None else None
            if copy is not None:
                qtype, npdt, header_shape = copy.qtype, np.uint8, copy.byte_shape
                kept_types[qtype.name] = kept_types.get(qtype.name, 0) + 1
            else:
                qtype, npdt, header_shape = stored_type(t, shape, keep.computed_type(ctx, t) if ckpt else dtype)
                if ckpt is not None:
                    computed.append((name, qtype.name))
            if dtype not in ("f32", "f16", "keep") and t.kind == "matrix" and qtype == Q.F16:
                fallback.append(t)
            nbytes = int(np.prod(header_shape)) * np.dtype(npdt).itemsize
            w.add_tensor_info(name, header_shape, np.dtype(npdt), nbytes,
                              raw_dtype=qtype if npdt == np.uint8 else None)
            rows.append((t, name, shape, qtype, nbytes, copy))
        if ckpt is not None:
            notes.append(keep.summary(kept_types, computed))
        if fallback:
            notes.append(f"{len(fallback)} tensor(s) stored f16: rows not a multiple of 32 for {dtype}")
        ctx.check_cancelled()
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        fout = w.fout[0]
        total = sum(r[4] for r in rows)
        done = 0
        for t, name, shape, qtype, nbytes, copy in rows:
            ctx.check_cancelled()
            ctx.progress(f"writing {os.path.basename(ctx.request.output)}: {name}", done, total)
            w.write_padding(fout, fout.tell())
            start = fout.tell()
            if copy is not None:
                copy.write(fout)
            elif not _copy_unchanged(ctx, t, qtype, fout):
                arr = _values(ctx, t, shape)
                out = convert(arr, qtype)
                del arr
                _write_array(fout, out)
                del out
            if fout.tell() - start != nbytes:
                raise ExportError(f"internal: `{name}` came out {fout.tell() - start} bytes, not {nbytes}")
            w.write_padding(fout, nbytes)
            done += nbytes
        ctx.progress(f"wrote {os.path.basename(ctx.request.output)}", total, total)
    finally:
        w.close()
    ctx.notes.extend(notes)
    return plan.arch, len(rows)


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"
