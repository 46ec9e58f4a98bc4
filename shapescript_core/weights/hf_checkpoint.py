"""A Hugging Face checkpoint read by role: a directory (`config.json` +
`model.safetensors`, or a sharded `model.safetensors.index.json`) or a bare
`.safetensors` with Hugging Face names.

Names: each tensor's role (arch/roles.py) comes from gguf-py's own tables
(`gguf.TensorNameMap`, the ones llama.cpp's converter uses, read through
`gguf_format.names.hf_role_map`), never from a list written here. The family
(arch/archs.py: `config.json`'s model_type) says the rest. Layout: what llama.cpp's
converter does to bring the tensor into llama.cpp's layout, the one the plan's steps
start from, as steps (`to_gguf`): Q/K rows permuted from rotate-half to interleaved
pairs where the family rotates interleaved pairs (llama), GPT-2's Conv1D weights
([in out]) transposed, Gemma's norm weights (used as 1 + w) stored as 1 + w, and Gemma's
`query_pre_attn_scalar` folded into the query norm (Gemma 2: the query rows) where
llama.cpp's own scale differs (as the GGUF writer folds a source's scale:
`arch.sublayers.folded_scale`). The safetensors files are read by `source.WeightSource`,
one tensor at a time.
"""
from __future__ import annotations

import json
import math
import os
import re

from ..files import ReadRefused, read_bytes
from ..arch.archs import FAMILIES, HF_MODEL_TYPES
from ..arch.layout import gather_index
from ..arch.plan import Gather, Offset, RopePermute, Scale, Transpose
from ..arch.sublayers import llama_cpp_scale
from ..check import rope_scaling
from ..export_errors import ExportError
from ..gguf_format.names import hf_role_map
from .recipe import Take
from .source import WeightSource

CONFIG = "config.json"
_BLOCK = re.compile(r"(?:layers|h|blocks|blk)\.(\d+)\.")
_EXPERT = re.compile(r"\.experts\.(\d+)\.")  # one expert's tensor (Mixtral, Qwen3-MoE)
GENERATION = "generation_config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")  # any one makes a tokenizer
SPECIAL_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")

# tensors a checkpoint may hold that are no weights: rotary tables, GPT-2's causal masks
BUFFERS = ("rotary_emb.inv_freq", ".attn.bias", ".attn.masked_bias")


def read_config(directory: str, name: str = CONFIG) -> dict:
    file = os.path.join(directory, name)
    try:
        cfg = json.loads(read_bytes(file).decode("utf-8"))  # regular and bounded (files.py)
    except ReadRefused as e:
        raise ExportError(f"can't read {name} in `{directory}`: {e.refusal.reason}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ExportError(f"can't read {name} in `{directory}`: {getattr(e, 'strerror', None) or e}")
    if not isinstance(cfg, dict):
        raise ExportError(f"{name} in `{directory}` is not a JSON object")
    return cfg


class HFCheckpoint:
    kind = "hf"

    def __init__(self, path: str):
        self.path = path
        has_config = os.path.isdir(path) and os.path.isfile(os.path.join(path, CONFIG))
        self.config = read_config(path) if has_config else {}
        self.source = WeightSource(path)
        self.model_type = self.config.get("model_type") if isinstance(self.config.get("model_type"), str) else None
        archs = self.config.get("architectures")
        self.architectures = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
        self.family = HF_MODEL_TYPES.get(self.model_type or "")  # the family's name (arch/archs.py)
        self.names: dict = {}     # role key (roles.tensor_key) -> (checkpoint key, to_gguf steps)
        self.unknown: list = []   # checkpoint keys no role of the architecture has

    # ---- what the messages say
    def label(self) -> str:
        if self.model_type:
            what = f"`{self.model_type}`" + (f" ({', '.join(self.architectures)})" if self.architectures else "")
            return f"a Hugging Face {what} checkpoint"
        return f"a safetensors file with Hugging Face names ({self.source.describe()})"

    def key_of(self, name: str) -> str:
        return self.names[name][0]

    def file_of(self, name: str) -> str:
        return os.path.basename(self.source.where[self.key_of(name)].file)

    # ---- hyperparameters the source must agree with
    def constants(self) -> dict:
        """{"theta", "theta_swa", "eps", "window"} as the config says (each when it does):
        Gemma 3's rope parameters are per layer type (full_attention, sliding_attention)."""
        c = self.config
        rope = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else {}
        full, local = rope.get("full_attention"), rope.get("sliding_attention")
        theta = full.get("rope_theta") if isinstance(full, dict) else rope.get("rope_theta", c.get("rope_theta"))
        found = {"theta": theta, "eps": c.get("rms_norm_eps", c.get("layer_norm_epsilon"))}
        if isinstance(local, dict):
            found["theta_swa"] = local.get("rope_theta")
        if self.config.get("use_sliding_window", True) is not False:  # Qwen2 says whether it uses its own
            found["window"] = c.get("sliding_window")
        for k in ("attn_logit_softcapping", "final_logit_softcapping"):  # Gemma 2's caps
            found[k.split("_")[0] + "_softcap"] = c.get(k)
        return {k: x for k, x in ((k, config_number(v)) for k, v in found.items()) if x is not None}

    def routing_renormalised(self) -> tuple | None:
        """(whether the mixture divides the K chosen weights by their sum, where the config
        says so): `norm_topk_prob` where the config has it, transformers' default (false)
        for a Qwen3-MoE config without it, Mixtral's router always; None for a model of no
        mixture."""
        v = self.config.get("norm_topk_prob")
        if isinstance(v, bool):
            return v, "config.json norm_topk_prob"
        if self.model_type == "qwen3_moe":
            return False, "config.json (no norm_topk_prob: transformers' default)"
        if self.model_type == "mixtral":
            return True, "config.json model_type (mixtral)"
        return None

    def rope_scaling_parameters(self):
        """(scaling, {keyword: value}) of the config's one rope (check/rope_scaling.py's
        names), with the defaults transformers reads for yarn's missing fields; None when
        the layers' ropes differ or the type is none of the table's."""
        rope = self.config.get("rope_parameters")
        if not isinstance(rope, dict) or "rope_type" not in rope:
            rope = self.config.get("rope_scaling") or ({} if not isinstance(rope, dict) else None)
            if not isinstance(rope, dict):
                return None
        kind = rope.get("rope_type", rope.get("type", "default"))
        kind = next((k for k, v in rope_scaling.HF_TYPE.items() if v == kind), kind)
        if not isinstance(kind, str) or kind not in rope_scaling.SCALINGS:
            return None
        values = {}
        for k in rope_scaling.SCALINGS[kind]:
            v = rope.get(rope_scaling.HF_KEY.get(k, k))
            if v is None and kind == "yarn":  # as transformers' _compute_yarn_parameters reads it
                v = {"beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": _yarn_attention_factor(rope)}.get(k)
            x = config_number(v)
            if x is None:
                return None
            values[k] = x
        return kind, values

    def yarn_untruncated(self) -> bool:
        """Does the config's yarn say `truncate: false` (gpt-oss)? transformers then keeps
        the correction range's ends as they are, where LANGUAGE.md's yarn rounds them down
        and up, as transformers does by default: another rotation, which no source writes."""
        for rope in (self.config.get("rope_parameters"), self.config.get("rope_scaling")):
            if isinstance(rope, dict) and rope.get("truncate") is False:
                return True
        return False

    def head_width(self) -> int | None:
        """The width of a head as the config gives it: `head_dim`, else the width over the
        heads; None when it gives none (or one no tensor can have: 0, past int64)."""
        c = self.config
        v = c.get("head_dim")
        if not _count(v):
            D, H = c.get("hidden_size"), c.get("num_attention_heads")
            v = D // H if _count(D) and _count(H) else None
        return v if _count(v) else None

    def rotary_dims(self) -> tuple | None:
        """(the features of each head the rope rotates, where the config says so): the head
        width times `partial_rotary_factor` (in rope_parameters, or at the top as older
        configs and GPT-NeoX's `rotary_pct` write it); None when the config gives no widths."""
        c = self.config
        Dh = self.head_width()
        if Dh is None:
            return None
        rope = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else {}
        for where, v in (("rope_parameters.partial_rotary_factor", rope.get("partial_rotary_factor")),
                         ("partial_rotary_factor", c.get("partial_rotary_factor")), ("rotary_pct", c.get("rotary_pct"))):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1:
                return int(Dh * v), f"config.json {where}"
        return Dh, "config.json (no partial_rotary_factor)"

    def rope_scaling(self) -> str | None:
        """The config's rope scaling ("linear, factor 8" for Gemma 3's global layers from
        4B up), or None: a source's `rope` has none."""
        rope = self.config.get("rope_parameters")
        kinds = [rope] if isinstance(rope, dict) and "rope_type" in rope else \
            [v for v in rope.values() if isinstance(v, dict)] if isinstance(rope, dict) else []
        legacy = self.config.get("rope_scaling")
        if isinstance(legacy, dict):
            kinds.append({"rope_type": legacy.get("rope_type", legacy.get("type")), **legacy})
        for k in kinds:
            kind = k.get("rope_type")
            if isinstance(kind, str) and kind != "default":
                factor = config_number(k.get("factor"))
                return kind + (f", factor {factor:g}" if factor is not None else "")
        return None

    def block_count(self) -> int | None:
        found = self.blocks()
        return found[0] if found else None

    def blocks(self) -> tuple | None:
        """(the number of blocks, where it is read) as the config says, else as the
        tensors' names number them; None when neither does."""
        for k in ("num_hidden_layers", "n_layer"):
            v = self.config.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v, f"config.json {k}"
        blocks = {int(m.group(1)) for m in map(_BLOCK.search, self.source.keys()) if m}
        return (max(blocks) + 1, "tensor numbering") if blocks else None

    def heads(self) -> dict:
        """{"head_count": (value, where)...} as the config says."""
        out = {}
        for short, keys in (("head_count", ("num_attention_heads", "n_head")),
                            ("head_count_kv", ("num_key_value_heads",)),
                            ("expert_used_count", ("num_experts_per_tok", "experts_per_token"))):
            for k in keys:
                v = self.config.get(k)
                if isinstance(v, int) and not isinstance(v, bool):
                    out[short] = (v, f"config.json {k}")
                    break
        return out

    def context_length(self) -> int | None:
        for k in ("max_position_embeddings", "n_positions", "n_ctx"):
            v = self.config.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return None

    # ---- what comes along: the tokenizer, generation settings, the context length
    def directory(self) -> str | None:
        return self.path if os.path.isdir(self.path) else None

    def tokenizer_dir(self) -> str | None:
        d = self.directory()
        return d if d and any(os.path.isfile(os.path.join(d, f)) for f in TOKENIZER_FILES) else None

    def settings(self) -> dict:
        """bos/eos/pad ids (generation_config.json first, then config.json) and the context length."""
        out: dict = {}
        d = self.directory()
        gen = read_config(d, GENERATION) if d and os.path.isfile(os.path.join(d, GENERATION)) else {}
        for k in SPECIAL_IDS:
            for src in (gen, self.config):
                v = src.get(k)
                if _token_id(v):
                    out[k] = v
                    break
        ctx = self.context_length()
        if ctx:
            out["context_length"] = ctx
        return out

    # ---- names
    def index(self, arch: str, blocks: int, heads: int, kv_heads: int):
        """Name every tensor by its role for `arch` (a tensor no role has keeps the name
        gguf-py's table gives it)."""
        lookup = hf_role_map(arch, blocks)
        fam = FAMILIES[arch]
        self._stack_experts(lookup)
        for key in self.source.keys():
            found = lookup(key)
            if found is None and not key.startswith("transformer."):  # GPT-2 saved without its prefix
                found = lookup("transformer." + key)
            if found is None:
                if not key.endswith(BUFFERS):
                    self.unknown.append(key)
                continue
            name, role = found
            steps: tuple = ()
            shape = self.source.info(key).shape
            if role is None:
                pass
            elif fam.rope_style == "interleaved" and role in ("attn_q", "attn_k"):  # checkpoints rotate halves
                steps = (RopePermute(heads if role == "attn_q" else kv_heads, "interleaved"),)
            elif fam.hf_norm_offset and role.endswith("_norm"):
                steps = (Offset(fam.hf_norm_offset),) + (self._query_scale(arch) if role == fam.hf_scale_into else ())
            elif role == fam.hf_scale_into:
                steps = self._query_scale(arch)
            elif role in fam.hf_transposed and len(shape) == 2:
                steps = (Transpose(),)
            elif role == "attn_qkv" and fam.hf_qkv_by_head and shape[0] % (3 * heads) == 0:
                # GPT-NeoX's rows head by head (H, 3, Dh); llama.cpp's converter regroups them (3, H, Dh)
                order = gather_index(Gather(0, (heads, 3, shape[0] // (3 * heads)), None, (1, 0, 2)))
                steps = (Take(0, tuple(int(i) for i in order)),)
            self.names[name] = (key, steps)

    def _stack_experts(self, lookup):
        """v0.3: one tensor per expert (Mixtral's `block_sparse_moe.experts.{i}.w1.weight`,
        Qwen3-MoE's `mlp.experts.{i}.gate_proj.weight`) read as the experts stacked along a
        new first axis, under the name gguf-py's table gives the stack (`…experts.w1.weight`),
        as llama.cpp's converter stacks them; copied expert by expert, never held whole."""
        groups: dict = {}
        for key in self.source.keys():
            m = _EXPERT.search(key)
            if m:
                groups.setdefault(key[:m.start()] + ".experts." + key[m.end():], {})[int(m.group(1))] = key
        for stacked, by_id in groups.items():
            if lookup(stacked) is None:
                continue  # no role's tensor: the keys stay, to be reported
            ids = sorted(by_id)
            if ids != list(range(len(ids))):
                raise ExportError(f"the checkpoint's experts of `{stacked}` are numbered {', '.join(map(str, ids[:6]))}"
                                  f"{'…' if len(ids) > 6 else ''}: experts 0 to {len(ids) - 1} expected")
            self.source.stack(stacked, [by_id[i] for i in ids])

    def _query_scale(self, arch: str) -> tuple:
        """(Scale(r),) for the role the family folds its query_pre_attn_scalar into (Gemma
        3's query norm, Gemma 2's query rows) when it isn't what llama.cpp assumes; () when it
        is, or when the config doesn't say."""
        c = self.config
        qpas = config_number(c.get("query_pre_attn_scalar"))
        D, H, L = (c.get(k) for k in ("hidden_size", "num_attention_heads", "num_hidden_layers"))
        Dh = self.head_width()
        if Dh is None or qpas is None or not 0 < qpas < math.inf or not (_count(D) and _count(H) and _count(L)) \
                or D < H:
            return ()
        r = qpas ** -0.5 / llama_cpp_scale(arch, L, D, H, Dh)
        return () if abs(r - 1.0) < 1e-9 else (Scale(r),)

    def index_raw(self):
        """Every tensor by its own key (a --weights-map names them)."""
        self.names = {k: (k, ()) for k in self.source.keys()}

    # ---- tensors
    def shape(self, name: str) -> tuple:
        key, steps = self.names[name]
        shape = tuple(self.source.info(key).shape)
        return shape[::-1] if any(isinstance(s, Transpose) for s in steps) else shape

    def dtype(self, name: str) -> str:
        return self.source.info(self.key_of(name)).dtype

    def to_gguf(self, name: str) -> tuple:
        return self.names[name][1]

    def problem(self, name: str) -> str | None:
        """Why the tensor can't be read (a truncated file), or None."""
        key = self.key_of(name)
        why = self.source.truncated(key)
        return f"can't read `{key}` from {self.file_of(name)}: {why}" if why else None

    def read(self, name: str):
        """The tensor as the checkpoint stores it (float32 for bf16), before `to_gguf`."""
        return self.source.read(self.key_of(name))

    def copy_into(self, name: str, out, check_cancelled=None) -> int:
        return self.source.copy_into(self.key_of(name), out, check_cancelled)

    def copy_rows_into(self, name: str, out, order, check_cancelled=None) -> int:
        return self.source.copy_rows_into(self.key_of(name), out, order, check_cancelled)

    def can_copy(self, name: str) -> bool:
        return True

    def quantized(self, names) -> dict:
        """No tensor of a Hugging Face checkpoint is read as quantized (GGUFCheckpoint's is)."""
        return {}


def _token_id(v) -> bool:
    """An id, or a list of ids (several eos tokens)."""
    if isinstance(v, bool):
        return False
    return (isinstance(v, int) and v >= 0) or (isinstance(v, list) and bool(v) and
                                               all(isinstance(i, int) and not isinstance(i, bool) for i in v))


def _count(v) -> bool:
    """A positive integer a tensor's axis can have (a bool is no integer here)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2 ** 63


def config_number(v) -> float | None:
    """A config.json value that is a number (a bool is not), as a float; an integer too
    large for one is infinite (what it says: larger than any). None for anything else."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _yarn_attention_factor(rope: dict):
    """yarn's attention factor where config.json has none, as transformers computes it
    (from `factor`, and `mscale` / `mscale_all_dim` where both are given: DeepSeek)."""
    factor = config_number(rope.get("factor"))
    if factor is None:
        return None

    def mscale(m=1.0):
        return 1.0 if not factor > 1 else 0.1 * m * math.log(factor) + 1.0
    m, m_all = config_number(rope.get("mscale")), config_number(rope.get("mscale_all_dim"))
    if m and m_all:
        ratio = mscale(m_all)
        return mscale(m) / ratio if ratio else None
    return mscale()
