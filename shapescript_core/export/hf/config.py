"""The generated `configuration_*.py` and `config.json`.

config.json carries every dim's value, `auto_map` and `architectures`, and the
conventional names engines read where they apply (`vocab_size`, `hidden_size`,
`num_attention_heads`, `num_key_value_heads`, `head_dim`, `num_hidden_layers`,
`tie_word_embeddings`, `max_position_embeddings`, `rope_parameters`: the generated
`rotary_emb` reads them when the model's rotary positions are one table, compile/rotary_plan.py).
"""
from __future__ import annotations

from ...check.types import TensorT
from ...check.mixture_routing import ROUTINGS
from ...compile.codegen import MethodGen
from ...compile.graph import trace_program
from ...compile.mixtures import mixtures
from ...compile.names import py_ident
from ...compile.plan import walk_nodes
from ...dtypes import BY_NAME, STORED
from ...escape import py_docstring, py_str, py_value, shown

# names a config already has or that we write: a dim called so is stored as `dim_<name>`
CONFIG_ATTRS = {"dtype", "torch_dtype", "architectures", "auto_map", "model_type", "name_or_path",
                "use_cache", "vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads",
                "head_dim", "num_hidden_layers", "tie_word_embeddings", "max_position_embeddings",
                "transformers_version", "is_encoder_decoder", "pad_token_id", "bos_token_id",
                "eos_token_id", "return_dict", "output_attentions", "output_hidden_states",
                "sliding_window", "layer_types", "rope_parameters", "rope_scaling", "rope_theta",
                "partial_rotary_factor", "num_local_experts", "num_experts_per_tok", "norm_topk_prob", "intermediate_size"}

TORCH_DTYPE_NAMES = {n: BY_NAME[n].torch for n in STORED}


def config_keys(dims) -> dict:
    """Each dim's key in config.json and its configuration class: the dim's own name when
    that is a plain Python name nobody else reads (not one of transformers' config
    attributes such as `num_labels` or `use_return_dict`, nor a name we write); else
    `dim_<name>`, made a Python name of its own (names.py). Plain keys never start with
    `dim_`, so two dims never share a key."""
    out, taken = {}, set(CONFIG_ATTRS)
    plain = [d for d in dims if py_ident(d) == d and d not in CONFIG_ATTRS and not d.startswith("dim_")]
    for d in plain:
        out[d] = d
        taken.add(d)
    for d in dims:
        if d not in out:
            out[d] = py_ident(f"dim_{d}", taken)
            taken.add(out[d])
    return out


def conventional(gen) -> dict:
    """The conventional config names that apply to this export."""
    prog, plan, lm = gen.prog, gen.plan, gen.lm
    out: dict = {}
    if lm is None:
        return out
    entry = prog.entry
    ids_t = next(t for n, t, _ in entry.params if n == lm.ids)
    out["vocab_size"] = prog.value_of(ids_t.dtype.index)
    table = prog.model(plan.root).fields[lm.table].type
    out["hidden_size"] = prog.value_of(table.axes[1].size)
    site = next((c.sites[0] for c in gen.classes.values() if c.sites), None)
    if site is not None:
        attention = plan.attention.site(site)  # heads and groups, decided once by the plan
        out["num_attention_heads"] = attention.heads
        out["num_key_value_heads"] = attention.kv_heads
        out["head_dim"] = gen.head_dim()
    out["num_hidden_layers"] = gen.attention_count(plan.root)
    if lm.positions:
        pt = next(t for n, t, _ in entry.params if n == lm.positions)
        if isinstance(pt, TensorT) and pt.dtype.name == "Index":
            out["max_position_embeddings"] = prog.value_of(pt.dtype.index)
    out["tie_word_embeddings"] = lm.tied
    if gen.windows is not None:  # as transformers writes Mistral, Gemma 2/3: one window, a type per layer
        out["sliding_window"] = gen.windows.sliding_window
        out["layer_types"] = gen.windows.layer_types
    if gen.rope_parameters is not None:
        out["rope_parameters"] = gen.rope_parameters
        if "max_position_embeddings" not in out:  # transformers reads it for a scaled rope
            scaled = [r for r in _ropes(gen.rope_parameters) if "original_max_position_embeddings" in r]
            if scaled:  # the context the scaling stretches the original one to (docs/language.md)
                out["max_position_embeddings"] = max(int(r["original_max_position_embeddings"] * r["factor"])
                                                      for r in scaled)
    if lm.final_softcap is not None:  # v0.3: the logits capped after the output layer (Gemma 2)
        out["final_logit_softcapping"] = lm.final_softcap
    caps = {gen.site_softcap(n) for c in gen.classes.values() for n in c.sites}
    if len(caps) == 1 and None not in caps:  # every attention caps its scores alike (Gemma 2)
        out["attn_logit_softcapping"] = caps.pop()
    out.update(mixture_keys(gen))
    return out


def mixture_keys(gen) -> dict:
    """v0.3: a model whose mixtures of experts (compile/mixtures.py) all have the same E, K
    and a fused routing gets transformers' names for them (Mixtral's, Qwen3-MoE's
    `norm_topk_prob`); they describe, the generated code computes what the source says."""
    if not any(n.op == "topk" for f in gen.prog.fns.values() for n in walk_nodes(f.body)[0]):
        return {}
    found = {(m.experts, m.used, m.routing, m.width) for m in mixtures(trace_program(gen.prog, unroll=1))}
    if len(found) != 1:
        return {}
    experts, used, key, width = found.pop()
    if key == "written" or experts is None or used is None:
        return {}
    out = {"num_local_experts": experts, "num_experts_per_tok": used, "norm_topk_prob": ROUTINGS[key][1]}
    if width is not None:  # each expert's width, as Mixtral's config names it (vLLM reads it)
        out["intermediate_size"] = width
    return out


def _ropes(rope_parameters: dict) -> list:
    """The rope settings of `rope_parameters`: itself, or one per layer type."""
    if "rope_type" in rope_parameters:
        return [rope_parameters]
    return [v for v in rope_parameters.values() if isinstance(v, dict)]


def module_paths(gen) -> dict:
    """(model, field) -> the patterns of its module's path under the base model
    (`layers.*.attn.wq`: a stack's layers are `*`)."""
    out: dict = {}
    prog, plan = gen.prog, gen.plan

    def visit(model: str, prefix: str):
        for fname, f in prog.model(model).fields.items():
            fp = plan.fields[(model, fname)]
            if fp.kind == "model":
                visit(f.type.name, f"{prefix}{fp.attr}.")
            elif fp.kind == "stack":
                visit(f.type.model, f"{prefix}{fp.attr}.*.")
            else:
                out.setdefault((model, fname), []).append(prefix + fp.attr)
    visit(plan.root, "")
    return out


def parallel_plans(gen) -> dict:
    """`base_model_tp_plan` and `base_model_pp_plan` (compile/parallel_plan.py), where the
    model has them: what vLLM's Transformers backend splits it by (transformers' own
    `tp_plan="auto"` reads the same keys; only vLLM's use is tested)."""
    out: dict = {}
    par, plan = gen.parallel, gen.plan
    tp = par.tp_plan(module_paths(gen))
    if tp:
        out["base_model_tp_plan"] = tp
    if par.pipeline is not None:
        table = plan.fields[(plan.root, gen.lm.table)].attr
        out["base_model_pp_plan"] = {table: [["input_ids"], ["inputs_embeds"]],
                                     par.pipeline.layers: [["hidden_states", "attention_mask"], ["hidden_states"]]}
    return out


def config_json(gen, names, dtype: str, source_name: str) -> dict:
    prog = gen.prog
    lm = gen.lm
    auto = {"AutoConfig": f"{names.configuration}.{names.config}",
            "AutoModel": f"{names.modeling}.{names.base}"}
    if lm is not None:
        auto["AutoModelForCausalLM"] = f"{names.modeling}.{names.causal_lm}"
    cfg = {"architectures": [names.causal_lm if lm is not None else names.base],
           "auto_map": auto, "model_type": names.model_type}
    keys = config_keys(prog.dims)
    for d, v in prog.dims.items():
        if v is not None:
            cfg[keys[d]] = v
    cfg.update(conventional(gen))
    if lm is not None:
        cfg["use_cache"] = True
        cfg.update(parallel_plans(gen))
    cfg["dtype"] = TORCH_DTYPE_NAMES.get(dtype, "float32")
    cfg["torch_dtype"] = cfg["dtype"]
    cfg["shapescript"] = {"source": source_name, "function": prog.entry.name,
                          "language_model": lm is not None,
                          "dims": {d: v for d, v in prog.dims.items() if v is not None}}
    return cfg


def configuration_source(gen, names, cfg: dict, source_name: str) -> str:
    plans = ("base_model_tp_plan", "base_model_pp_plan")  # class attributes, as transformers' configs have them
    skip = {"architectures", "auto_map", "model_type", "dtype", "torch_dtype", "shapescript", *plans}
    fields = [(k, v) for k, v in cfg.items() if k not in skip]
    args = ", ".join(f"{k}={py_value(v)}" for k, v in fields)
    sets = "\n".join(f"        self.{k} = {k}" for k, v in fields if k != "tie_word_embeddings")
    tie = cfg.get("tie_word_embeddings")
    lines = [
        py_docstring(f"Configuration of the model ShapeScript exported from `{shown(source_name)}`, "
                     f"function `{gen.prog.entry.name}`."),
        "from transformers import PretrainedConfig",
        "",
        "",
        f"class {names.config}(PretrainedConfig):",
        f"    model_type = {py_str(names.model_type)}",
        *(f"    {k} = {py_value(cfg[k])}" for k in plans if k in cfg),
        "",
        f"    def __init__(self, {args}{', ' if args else ''}**kwargs):",
        sets if sets else "        pass",
    ]
    if tie is not None:
        lines += ["        super().__init__(**kwargs)",
                  "        self.tie_word_embeddings = tie_word_embeddings  # not a base-config field in transformers 5"]
    else:
        lines += ["        super().__init__(**kwargs)"]
    return "\n".join(lines) + "\n"
