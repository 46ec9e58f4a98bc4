"""The special token ids of a tokenizer directory, for `config.json` and `generation_config.json`.

Engines read them from the model, not the tokenizer: transformers' `generate()` stops at
`generation_config.eos_token_id`, LiteRT-Torch's `export_hf` takes the `.litertlm`'s stop
tokens from it (without any, the LiteRT-LM engine refuses to open a session). Read from
the JSON files (no transformers import): a token named in `tokenizer_config.json` (or
`special_tokens_map.json`), a string or `{"content": ...}`, gets its id from
`tokenizer.json`'s added tokens, then its vocabulary. A `generation_config.json` already in
the directory wins for what it gives.
"""
from __future__ import annotations

import json
import logging
import os

log = logging.getLogger("shapescript.export.hf")

ROLES = ("bos", "eos", "pad")


def _json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        log.warning("can't read %s for the special tokens: %s", path, e)
        return None


def _content(v):
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def _vocab_ids(tok) -> dict:
    ids = {}
    if not isinstance(tok, dict):
        return ids
    vocab = (tok.get("model") or {}).get("vocab")
    if isinstance(vocab, dict):
        ids.update({k: v for k, v in vocab.items() if isinstance(v, int)})
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        ids.update({e[0]: i for i, e in enumerate(vocab) if isinstance(e, list) and e and isinstance(e[0], str)})
    for t in tok.get("added_tokens") or []:
        if isinstance(t, dict) and isinstance(t.get("content"), str) and isinstance(t.get("id"), int):
            ids[t["content"]] = t["id"]
    return ids


def special_token_ids(directory: str, vocab_size: int | None = None) -> dict:
    """{"bos_token_id": int, "eos_token_id": int | [int], "pad_token_id": int} as far as known."""
    out: dict = {}
    gen = _json(os.path.join(directory, "generation_config.json")) or {}
    cfg = _json(os.path.join(directory, "tokenizer_config.json")) or {}
    smap = _json(os.path.join(directory, "special_tokens_map.json")) or {}
    ids = _vocab_ids(_json(os.path.join(directory, "tokenizer.json")))
    for role in ROLES:
        key = f"{role}_token_id"
        given = gen.get(key)
        if isinstance(given, int) or (isinstance(given, list) and given and all(isinstance(i, int) for i in given)):
            out[key] = given
            continue
        name = _content(cfg.get(f"{role}_token")) or _content(smap.get(f"{role}_token"))
        if name is not None and name in ids:
            out[key] = ids[name]
    if vocab_size is not None:  # an id the model can't produce is no use to an engine
        for key, v in list(out.items()):
            vs = v if isinstance(v, list) else [v]
            if any(i < 0 or i >= vocab_size for i in vs):
                log.warning("the tokenizer's %s %s is outside the vocabulary (%d): not written", key, v, vocab_size)
                del out[key]
    return out


def generation_config(ids: dict) -> dict:
    """The generation_config.json for these ids (transformers' own keys)."""
    out = {k: ids[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in ids}
    return out
