"""The `hf` writer: compile the function and write a Hugging Face model directory.

The directory: `config.json`, `configuration_<stem>.py`, `modeling_<stem>.py`, the
source file(s), `model.safetensors` (keys: the generated model's state_dict), and
`shapescript-weights.json` mapping each param path to its key. With a tokenizer
(`--tokenizer DIR`, or one carried from an imported checkpoint) its files are copied,
and a language model's special token ids go into `config.json` and, when the tokenizer
brought none, a `generation_config.json` (`special_tokens.py`; an imported checkpoint's
own ids win).
"""
from __future__ import annotations

import logging
import os
import shutil

from ...escape import json_text
from ...export_errors import ExportError
from ..generated import copy_sources, write_generated
from .build import build
from .keys import MAPPING_FILE
from .special_tokens import generation_config, special_token_ids

log = logging.getLogger("shapescript.export.hf")

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "merges.txt", "added_tokens.json", "generation_config.json",
                   "chat_template.jinja", "chat_template.json")
# what an imported checkpoint brings into config.json (see weights/imported_source.py)
SPECIAL_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")


def write(ctx) -> str:
    out = write_directory(ctx)
    copy_sources(ctx.tmp, out["artifact"].sources)
    return f"wrote {ctx.request.output} (hf: {out['tensors']} tensors, {_size(out['bytes'])}" + \
        (", language model" if out["lm"] else "") + ")"


def write_directory(ctx) -> dict:
    ctx.progress("compiling to PyTorch", 0, 1)
    art = build(ctx.ws, ctx.request.path, ctx.fn_item.name, ctx.request.dtype)
    d = ctx.tmp
    tok = getattr(ctx.request, "tokenizer", None)
    if tok:
        copy_tokenizer(tok, d)
    elif ctx.imported.get("gguf_file"):
        note = tokenizer_from_gguf(ctx.imported["gguf_file"], d)
        if note:
            ctx.notes.append(note)
    cfg = dict(art.config)
    if art.lm:
        cfg.update(special_token_ids(d, cfg.get("vocab_size")))
    for k in SPECIAL_IDS:
        if k in ctx.imported:
            cfg[k] = ctx.imported[k]
    if "context_length" in ctx.imported and "max_position_embeddings" not in cfg and art.lm:
        cfg["max_position_embeddings"] = ctx.imported["context_length"]
    write_generated(d, "config.json", json_text(cfg))
    ids = generation_config(cfg)
    if art.lm and ids and not os.path.exists(os.path.join(d, "generation_config.json")):
        write_generated(d, "generation_config.json", json_text(ids))
    write_generated(d, f"{art.names.configuration}.py", art.configuration)
    write_generated(d, f"{art.names.modeling}.py", art.modeling)
    keys = {}
    entries = []
    for spec in ctx.params:
        key = art.keys.get(spec.path)
        keys[spec.path] = key
        if isinstance(key, list):  # a packed param: one tensor per part, blocks of its rows
            entries += _part_entries(key, spec)
        elif key is not None:
            entries.append((key, spec.path))
    write_generated(d, MAPPING_FILE, json_text({"format": 1, "source": os.path.basename(ctx.request.path),
                                                "function": ctx.fn_item.name, "keys": keys}))
    ctx.check_cancelled()
    size = ctx.write_safetensors("model.safetensors", entries, metadata={"format": "pt"})
    return {"tensors": len(entries), "bytes": size, "lm": art.lm, "artifact": art}


def _part_entries(keys: list, spec) -> list:
    """The safetensors entries of a param held as parts: part j is rows [j*r, (j+1)*r)."""
    rows = spec.shape[0] // len(keys)
    shape = (rows,) + tuple(spec.shape[1:])
    return [(key, spec.path, lambda a, j=j: a[j * rows:(j + 1) * rows], shape) for j, key in enumerate(keys)]


def copy_tokenizer(src: str, dst: str):
    found = [f for f in TOKENIZER_FILES if os.path.isfile(os.path.join(src, f))]
    if not any(f in found for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        raise ExportError(f"`{src}` holds no Hugging Face tokenizer (tokenizer.json, tokenizer.model or vocab.json)")
    for f in found:
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))


def tokenizer_from_gguf(file: str, dst: str) -> str | None:
    """The Hugging Face tokenizer transformers builds from a GGUF file's vocabulary, saved
    into the export; a note when it can't."""
    try:
        from transformers import AutoTokenizer  # deferred: transformers is slow to import
        tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(file)),
                                            gguf_file=os.path.basename(file))
        tok.save_pretrained(dst)
    except Exception as e:  # transformers raises many kinds for a vocabulary it can't convert
        log.info("no tokenizer from %s", file, exc_info=True)
        return (f"no tokenizer written: transformers can't build one from {os.path.basename(file)} "
                f"({type(e).__name__}: {e}); pass --tokenizer DIR")
    return None


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"
