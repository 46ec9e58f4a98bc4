"""Source identifiers → generated Python identifiers: `py_ident`, the one function every
name of a generated file goes through (dims' constants, classes, attributes, methods,
parameters, locals, config keys).

A generated name is never a Python keyword (soft keywords included), a builtin, a dunder
or any name starting with `_` (Python mangles `__x` inside a class, and `nn.Module`
keeps its own state in `_x` attributes), a name the generated module defines itself
(imports, helpers, and the classes named `ShapeScript...` after the root model), or
an attribute of `nn.Module`, `PreTrainedModel`, `GenerationMixin` or `PretrainedConfig`
(`FRAMEWORK_NAMES`, a table that `tests/test_security_names.py` checks against the
installed classes, so that the export imports neither torch nor transformers). Python
reads identifiers in NFKC form, so the name is normalized first. A name that would be
reserved gets a trailing `_` (a leading `_` or `ShapeScript` gets a `u` first), and one already taken in its
scope gets more, so that two source names never meet in one Python name. The user's own
spelling stays in the comments and in config.json.
"""
from __future__ import annotations

import builtins
import keyword
import unicodedata

# public names of nn.Module, PreTrainedModel, GenerationMixin and PretrainedConfig (class
# and instance attributes, the config's __init__ parameters), transformers 5.24 / torch 2.13,
# and what transformers 5.25 added
FRAMEWORK_NAMES = frozenset("""
    T_destination activation_checkpointing_disable activation_checkpointing_enable
    active_adapters add_adapter add_model_tags add_module adjust_generation_fn
    all_tied_weights_keys allow_global_per_layer_attribute_access apply architectures
    attribute_map barrier_after_gathered_checkpoint_save base_config_key base_model
    base_model_ep_plan base_model_fsdp_plan base_model_pp_plan base_model_prefix
    base_model_tp_plan bfloat16 buffers call_super_init can_generate can_record_outputs
    children chunk_size_feed_forward compile compute_transition_scores config config_class
    continuous_batching_context_manager convert_rope_params_to_dict cpu cuda
    default_config_fields default_rope_type default_theta delete_adapter dequantize
    destroy_cached_continuous_batching_manager device dict_dtype_to_str disable_adapters
    disable_input_require_grads double dtype dummy_inputs dump_patches enable_adapters
    enable_input_require_grads enable_peft_hotswap ep_plan eval extra_config_files
    extra_files extra_repr float forward from_dict from_json_file from_pretrained fsdp_plan
    fsdp_size gather_sharded_state_dict_for_save generate generate_batch generation_config
    generation_config_class get_adapter_state_dict get_buffer get_compiled_call
    get_config_dict get_correct_attn_implementation get_correct_experts_implementation
    get_decoder get_encoder get_expanded_tied_weights_keys get_experts_implementation
    get_extra_state get_init_context get_input_embeddings get_memory_footprint
    get_mtp_config get_output_embeddings get_parameter get_parameter_or_buffer
    get_position_embeddings get_submodule get_text_config gradient_checkpointing_disable
    gradient_checkpointing_enable half heal_tokens id2label ignore_keys_at_rope_validation
    init_continuous_batching init_parallel_plans init_weights initialize_weights
    input_modalities ipu is_activation_checkpointing is_backend_compatible is_custom_code
    is_distributed_loading_by_transformers is_encoder_decoder is_gradient_checkpointing
    is_heterogeneous is_remote_code kernel_config label2id load_adapter load_custom_generate
    load_state_dict loss_function loss_type main_input_name mark_tied_weights_as_initialized
    maybe_distribute_model model_tags model_type modules mtia name_or_path named_buffers
    named_children named_modules named_non_persistent_buffers named_parameters
    nested_rope_parameter_keys num_labels num_parameters output_attentions
    output_hidden_states output_modalities parameters per_layer_attributes per_layer_config
    post_init pp_plan prepare_distribute_model prepare_inputs_for_generation problem_type
    push_to_hub register_backward_hook register_buffer register_for_auto_class
    register_forward_hook register_forward_pre_hook register_full_backward_hook
    register_full_backward_pre_hook register_load_state_dict_post_hook
    register_load_state_dict_pre_hook register_module register_parameter
    register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
    resize_position_embeddings resize_token_embeddings retrieve_modules_from_names
    return_dict rope_scaling save_distributed_checkpoint save_pretrained self
    serialize_explicit_per_layer_config set_adapter set_attn_implementation set_decoder
    set_encoder set_experts_implementation set_extra_state set_input_embeddings
    set_output_embeddings set_submodule set_use_kernels share_memory
    should_save_on_this_rank smart_apply standardize_rope_params state_dict sub_configs
    sub_configs_defaults supports_context_parallel supports_gradient_checkpointing
    supports_pp_plan supports_tp_plan tie_weights to to_dict to_diff_dict to_empty
    to_json_file to_json_string torch_dtype tp_plan tp_size train training
    transformers_version type update update_from_string use_kernels use_return_dict validate
    validate_architecture validate_layer_type validate_output_attentions validate_rope
    validate_token_ids warn_if_padding_and_no_attention_mask xpu zero_grad
""".split()) | frozenset((
    "kernels_mode", "reset_kernels",  # transformers 5.25's (its model classes' kernels)
))

# what a generated module (modeling, configuration, the vLLM model) defines or imports
GENERATED_NAMES = frozenset("""
    torch nn math inspect dataclasses self config cls kwargs args
    rms_norm layer_norm rope rotary_table rotate RotaryEmbedding rotary_emb position_embeddings
    causal attend eager_attention causal_mask with_cache cache_of
    ALL_ATTENTION_FUNCTIONS create_causal_mask DynamicCache GenerationMixin PreTrainedModel
    PretrainedConfig BaseModelOutputWithPast CausalLMOutputWithPast input_ids attention_mask
    position_ids past_key_values inputs_embeds use_cache cache return_dict labels logits_to_keep
    layer_idx hidden_states outputs logits loss keep past i CausalAttention PagedAttention
    LogitsProcessor ParallelLMHead VocabParallelEmbedding default_weight_loader
    get_current_vllm_config positions intermediate_tensors prefix vllm_config weights loaded
    params name loaded_weight param weight_loader register ARCHITECTURE MODEL ModelRegistry
    scaling num_key_value_groups is_causal head_dim model lm_head
    Parts inv_frequencies kv_head_shards kv_shard window_mask written_attention topk expert_einsum expert_shard
    float_dtype
    fused_experts fused_shards EXPERT_LAYERS FusedMoEFactory itertools flat
    tensor_model_parallel_all_reduce get_tensor_model_parallel_rank get_tensor_model_parallel_world_size
    get_pp_group get_pp_indices ColumnParallelLinear RowParallelLinear ReplicatedLinear PPMissingLayer
    is_pp_missing_parameter make_empty_intermediate_tensors_factory IntermediateTensors SupportsPP
""".split()) | frozenset((
    # vLLM's Transformers backend replaces a module named so that holds 3-D params by its
    # own fused mixture, loading weights the export doesn't have: never a source's name
    "experts",
))

OWN_PREFIX = "ShapeScript"  # the classes the export names itself: ShapeScriptLlamaConfig ...
BUILTIN_NAMES = frozenset(dir(builtins))
KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


def reserved(name: str) -> bool:
    """True when a generated file can't use `name` for a source's name."""
    return (name in KEYWORDS or name in BUILTIN_NAMES or name in FRAMEWORK_NAMES or name in GENERATED_NAMES
            or name.startswith(("_", OWN_PREFIX)) or not name.isidentifier())


def _identifier(name: str) -> str:
    n = unicodedata.normalize("NFKC", str(name))
    if not n.isidentifier():
        n = "".join(ch if ("a" + ch).isidentifier() else "_" for ch in n) or "x"
        if not n.isidentifier():
            n = "x" + n
    if n.startswith(("_", OWN_PREFIX)):  # reserved whatever follows: made a name of the user's
        n = "u" + n
    return n


def py_ident(name: str, taken=(), extra_reserved=()) -> str:
    """The Python identifier for the source name `name`: not reserved, not in `taken`
    (the names already used in its scope), nor in `extra_reserved`."""
    n = _identifier(name)
    while reserved(n) or n in taken or n in extra_reserved:
        n += "_"
    return n


class Scope:
    """Source names → Python names in one scope: each source name keeps its first answer,
    and no two source names share one."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.names: dict = {}

    def __call__(self, name: str) -> str:
        got = self.names.get(name)
        if got is None:
            got = py_ident(name, self.taken)
            self.taken.add(got)
            self.names[name] = got
        return got

    def reserve(self, py: str):
        self.taken.add(py)


def module_stem(name: str) -> str:
    """An ASCII module / distribution stem for a source name (lower case, `_` between)."""
    out = []
    for ch in unicodedata.normalize("NFKC", str(name)):
        if ch.isascii() and ch.isalnum():
            out.append(ch.lower())
        elif ch.isascii():
            out.append("_")
        else:
            out.append(f"u{ord(ch):x}")
    stem = "".join(out).strip("_") or "model"
    return stem if not stem[0].isdigit() else "m" + stem
