"""The `litert` writer: the `hf` export, its generated ModelExtension, then LiteRT-Torch's
`export_hf` in the LiteRT environment, all into the export's temporary directory:

    hf/                               the `hf` export export_hf converts (and a user re-runs)
    shapescript_litert_<stem>.py      the generated ModelExtension (extension.py)
    model.tflite                      float32 (int8 weights with --quantize int8: export_hf's
                                      model_quantized.tflite, the one the bundle holds): prefill_<P>
                                      (logits on) and decode signatures, cache length C
    embedder.tflite, auxiliary.tflite with --split-cache: the token embedding; the RoPE, mask and
                                      cache-update signatures (model.tflite then takes embeddings)
    model.litertlm                    the LiteRT-LM bundle (with a tokenizer only)
    README.md                         what is there and how to re-run export_hf

plus what export_hf leaves beside them with `keep_temporary_files` (its tokenizer copy).
"""
from __future__ import annotations

import json
import os

from ...check.types import TensorT
from ..hf.writer import _size, write_directory
from ...export_errors import ExportError
from . import options as opts
from .convert import run_export_hf
from .env import require
from .extension import extension_source, module_name
from .e3317 import check_cache_length
from .e3318 import check_split_cache
from .litert_messages import not_a_language_model, prefill_too_long, sliding_window_unsupported
from ...serving.e3319_engine_features import export_error_text, lacking

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
SPLIT_FILES = ("embedder", "auxiliary")  # beside model.tflite with --split-cache

README = """# {name}: a ShapeScript export for LiteRT

Exported by ShapeScript from `{source}` (function `{fn}`) through LiteRT-Torch's
`export_hf`:

- `model.tflite`: {weights}; signatures `prefill_{prefill}` ({prefill_what}) and `decode`
  (one token), a KV cache of {cache} positions. Run it with
  `ai_edge_litert.interpreter.Interpreter(model_path=...).get_signature_runner(...)`.
{split}{litertlm}- `hf/`: the Hugging Face export it was made from.
- `{module}.py`: the LiteRT-Torch ModelExtension for its model type `{model_type}`
  (`odml.rms_norm` composites, the causal flag, stop tokens, a tied head's key for `--use_v2`).

To convert again with other options (the folder holding the extension on PYTHONPATH):

```
PYTHONPATH={out} litert-torch export_hf --model={out}/hf --output_dir=OUT \\
    --trust_remote_code=True --extension_modules={module} \\
    --quantization_recipe={recipe} --prefill_logits=True --prefill_lengths={prefill} \\
    --cache_length={cache} --keep_temporary_files=True{bundle_flag}{split_flag}
```
"""


SPLIT_README = """\
  Split cache (`--split-cache`): `model.tflite` takes embeddings, the rotary table
  (`pos_emb_cos`, `pos_emb_sin`) and the mask, and returns each layer's new keys and values
  (`kv_slice_*`; logits at decode only); `embedder.tflite` maps tokens to embeddings;
  `auxiliary.tflite` computes the rotary table (`*_rope`), the mask (`*_mask`) and writes
  the slices into the cache (`*_cache_update`).
"""


def write(ctx) -> str:
    python = require()
    hf_dir = os.path.join(ctx.tmp, "hf")
    os.mkdir(hf_dir)
    with ctx.writing_into(hf_dir):
        out = write_directory(ctx)
    if not out["lm"]:
        raise ExportError(not_a_language_model(ctx.fn_item.name))
    art = out["artifact"]
    with open(os.path.join(hf_dir, "config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    if config.get("sliding_window") is not None:
        raise ExportError(sliding_window_unsupported(ctx.fn_item.name, config["sliding_window"]))
    found = lacking(art.generator.trace_nodes(), "litert")
    if found:  # the export checks say so first (E3319); a backstop where they could not trace
        raise ExportError(export_error_text("litert", ctx.fn_item.name, found))
    table = position_table(art)
    o = opts.resolve(ctx.request, table)
    _check_lengths(ctx, art, table, o)
    if o.split_cache:
        check_split_cache(ctx, art)  # E3318

    stem = art.names.stem
    module = module_name(stem)
    eos = config.get("eos_token_id")
    stop_ids = eos if isinstance(eos, list) else ([eos] if isinstance(eos, int) else [])
    text = extension_source(stem=stem, model_type=config["model_type"], source=os.path.basename(ctx.request.path),
                            function=ctx.fn_item.name, stop_ids=stop_ids, prefill=o.prefill_length,
                            cache=o.cache_length, tied_table=_tied_table(art))
    compile(text, f"{module}.py", "exec")
    with open(os.path.join(ctx.tmp, f"{module}.py"), "w", encoding="utf-8") as fh:
        fh.write(text)

    bundle = any(os.path.isfile(os.path.join(hf_dir, f)) for f in TOKENIZER_FILES)
    ctx.progress("converting with LiteRT-Torch's export_hf", 0, 1)
    seconds = run_export_hf(ctx, python, {
        "model": hf_dir, "output_dir": ctx.tmp, "extension_dir": ctx.tmp, "extension_module": module,
        "prefill_length": o.prefill_length, "cache_length": o.cache_length,
        "quantization_recipe": o.recipe, "bundle": bundle, "split_cache": o.split_cache})
    tflite = os.path.join(ctx.tmp, "model.tflite")
    for name in ("model",) + (SPLIT_FILES if o.split_cache else ()):
        path = os.path.join(ctx.tmp, f"{name}.tflite")
        quantized = os.path.join(ctx.tmp, f"{name}_quantized.tflite")
        if o.quantized and os.path.isfile(quantized):  # export_hf keeps the float one beside it
            os.replace(quantized, path)
        if not os.path.isfile(path):
            raise ExportError(f"LiteRT-Torch's export_hf finished without writing {name}.tflite")
    if bundle and not os.path.isfile(os.path.join(ctx.tmp, "model.litertlm")):
        raise ExportError("LiteRT-Torch's export_hf finished without writing model.litertlm")
    _readme(ctx, art, config, module, o, bundle)
    weights = "int8 weights (dynamic int8)" if o.quantized else "float32"
    summary = (f"wrote {ctx.request.output} (litert: model.tflite {_size(os.path.getsize(tflite))}, {weights}, "
               f"prefill {o.prefill_length}, cache {o.cache_length}")
    if o.split_cache:
        summary += "; split cache: " + ", ".join(
            f"{n}.tflite {_size(os.path.getsize(os.path.join(ctx.tmp, n + '.tflite')))}" for n in SPLIT_FILES)
    if bundle:
        summary += f"; model.litertlm {_size(os.path.getsize(os.path.join(ctx.tmp, 'model.litertlm')))}"
    summary += f"; converted in {seconds:.0f} s)"
    if not bundle:
        ctx.notes.append("no model.litertlm: the LiteRT-LM bundle needs a tokenizer (--tokenizer DIR)")
    elif o.split_cache:
        ctx.notes.append("model.litertlm holds the split-cache model: LiteRT-LM runs it on an NPU backend "
                         "(its CPU backend refuses it: no input positions)")
    return summary


def _tied_table(art):
    """The checkpoint key of the embedding table a tied output layer reads, or None."""
    lm = art.generator.lm
    return art.keys.get(lm.table) if lm is not None and lm.tied else None


def position_table(art):
    """The size of the learned position table the positions index (`pos: [b n] Index[P]`),
    or None when the positions are plain integers (rotary) or absent."""
    lm = art.generator.lm
    if lm is None or not lm.positions:
        return None
    prog = art.generator.prog
    t = next((t for n, t, _ in prog.entry.params if n == lm.positions), None)
    if isinstance(t, TensorT) and t.dtype.name == "Index":
        return prog.value_of(t.dtype.index)
    return None


def _check_lengths(ctx, art, size, o):
    check_cache_length(ctx, art, size, o)  # E3317
    if o.prefill_length > o.cache_length:
        raise ExportError(prefill_too_long(o.prefill_length, o.cache_length))


def _readme(ctx, art, config, module, o, bundle):
    litertlm = ("- `model.litertlm`: the LiteRT-LM bundle (model, tokenizer, stop tokens): "
                "`litert_lm.Engine(...)` runs it.\n") if bundle else \
        "- no `model.litertlm`: the LiteRT-LM bundle needs a tokenizer (export with `--tokenizer DIR`).\n"
    text = README.format(
        name=os.path.basename(ctx.request.output), source=os.path.basename(ctx.request.path),
        fn=ctx.fn_item.name, weights="int8 weights" if o.quantized else "float32",
        prefill=o.prefill_length, cache=o.cache_length, litertlm=litertlm, module=module,
        model_type=config["model_type"], out=ctx.request.output, recipe=o.recipe,
        bundle_flag=" --bundle_litert_lm=True" if bundle else " --bundle_litert_lm=False",
        prefill_what=f"`{o.prefill_length}` embeddings" if o.split_cache else
        f"tokens `[1, {o.prefill_length}]`, logits on",
        split=SPLIT_README if o.split_cache else "", split_flag=" \\\n    --split_cache=True" if o.split_cache else "")
    with open(os.path.join(ctx.tmp, "README.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
