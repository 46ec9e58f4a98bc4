"""A Hugging Face tokenizer directory embedded in the GGUF, as convert_hf_to_gguf writes it.

Only byte-level BPE vocabularies (`tokenizer.json` with a `BPE` model) are embedded:
`tokenizer.ggml.model = "gpt2"`, the pre-tokenizer's llama.cpp name (`tokenizer.ggml.pre`),
the tokens (padded to the model's vocabulary with `[PADi]`, type UNUSED), their types
(NORMAL, CONTROL for special added tokens, USER_DEFINED for others), the merges and the
special token ids and add-bos/eos flags (through `gguf.SpecialVocab`, as the converter
does). Reads the JSON files itself: no transformers import.
"""
from __future__ import annotations

import json
import os

import gguf

# the pre-tokenizer regexes llama.cpp implements, by their llama.cpp names
_GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_SPLIT_PRE = {_LLAMA3_RE: "llama-bpe", _QWEN2_RE: "qwen2"}


class TokenizerError(Exception):
    """A tokenizer directory this export can't embed; the message says why."""


def read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise TokenizerError(f"can't read {path}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerError(f"{path} is not valid JSON: {e}") from None


def pre_name(pre) -> str:
    """llama.cpp's name for a tokenizer.json pre_tokenizer, or a TokenizerError."""
    if not isinstance(pre, dict):
        raise TokenizerError("the tokenizer has no byte-level pre-tokenizer, which llama.cpp's BPE needs")
    if pre.get("type") == "ByteLevel" and pre.get("use_regex", True):
        if pre.get("add_prefix_space"):
            raise TokenizerError("the tokenizer's ByteLevel pre-tokenizer adds a prefix space, "
                                 "which llama.cpp's BPE tokenizer never does")
        return "gpt-2"
    if pre.get("type") == "Sequence":
        steps = pre.get("pretokenizers") or []
        if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel":
            regex = (steps[0].get("pattern") or {}).get("Regex")
            if regex in _SPLIT_PRE and not steps[1].get("use_regex", True):
                return _SPLIT_PRE[regex]
    raise TokenizerError(f"llama.cpp has no pre-tokenizer like this tokenizer's ({pre.get('type')}); "
                         "embeddable: GPT-2's ByteLevel, Llama 3's and Qwen2's regex splits")


def vocab_entries(tok: dict, n_vocab: int) -> tuple[list, list]:
    model = tok.get("model") or {}
    if model.get("type") != "BPE":
        raise TokenizerError(f"the tokenizer's model is {model.get('type') or 'missing'}; "
                             "only BPE vocabularies can be embedded")
    by_id = {int(i): t for t, i in (model.get("vocab") or {}).items()}
    added = {int(a["id"]): a for a in tok.get("added_tokens") or []}
    ids = set(by_id) | set(added)
    if ids and max(ids) >= n_vocab:
        raise TokenizerError(f"the tokenizer has token id {max(ids)}, but the model's vocabulary "
                             f"has {n_vocab} entries")
    tokens, types = [], []
    for i in range(n_vocab):
        if i in added:
            a = added[i]
            if a.get("special"):
                tokens.append(a["content"])
                types.append(gguf.TokenType.CONTROL)
            else:
                tokens.append(a["content"].replace("\u2581", " "))
                types.append(gguf.TokenType.USER_DEFINED)
        elif i in by_id:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
    return tokens, types


def add_tokenizer(w: "gguf.GGUFWriter", directory: str | None, n_vocab: int) -> str | None:
    """Write the tokenizer.ggml.* keys; returns a note for the summary, or None."""
    if directory is None:
        w.add_tokenizer_model("none")
        return "no tokenizer embedded (tokenizer.ggml.model = \"none\"): pass --tokenizer DIR"
    tok = read_json(os.path.join(directory, "tokenizer.json"))
    tokens, types = vocab_entries(tok, n_vocab)
    pre = pre_name(tok.get("pre_tokenizer"))
    special = gguf.SpecialVocab(directory, load_merges=True, n_vocab=n_vocab)
    if not special.merges:
        raise TokenizerError("the tokenizer has no merges")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    special.add_to_gguf(w, quiet=True)
    # the converter leaves these to llama.cpp's defaults; the HF tokenizer adds nothing
    # unless its post-processor says so, and llama.cpp should do the same
    if "bos" not in special.add_special_token:
        w.add_add_bos_token(False)
    if "eos" not in special.add_special_token:
        w.add_add_eos_token(False)
    norm = tok.get("normalizer")
    if norm:
        return f"the tokenizer's normalizer ({norm.get('type')}) is not applied by llama.cpp"
    return None


def copy_tokenizer(w: "gguf.GGUFWriter", fields) -> None:
    """A GGUF input's tokenizer.* metadata, as it is: [(key, value, type, sub type)]."""
    for key, value, vtype, sub in fields:
        w.add_key_value(key, value, vtype, sub_type=sub)
    return None
