"""Helper functions the generated PyTorch files define, each written out only when used.

They are plain PyTorch, so that a generated file imports only torch (and transformers).
"""
from __future__ import annotations

import inspect

# where vLLM serves an attention, the heads it gives each rank must be the heads the model
# computes there, or the tensor-parallel split can't be this model's (E3307): one message
# for the hf flavour (vLLM's Transformers backend) and the vLLM one
_HEADS_GUARD = '''(engine.num_heads, engine.num_kv_heads) != (query.shape[1], key.shape[1]):
            raise RuntimeError(f"vLLM gives this attention {engine.num_heads} query and {engine.num_kv_heads} "
                               f"key/value heads per rank, but the model computes {query.shape[1]} and "
                               f"{key.shape[1]}: it can't be split this way (ShapeScript's E3307 says why)")'''

HELPERS = {
    "parts": '''
class Parts(nn.Module):
    """A param the source splits into parts by a pattern (a fused `w_qkv`, `w_gate_up`),
    held as one linear per part (`w_qkv.0`, `w_qkv.1`, ...), so that tensor parallelism
    gives each rank its share of each part; their outputs concatenated are the fused
    linear's."""

    def __init__(self, parts):
        super().__init__()
        for i, part in enumerate(parts):
            self.add_module(str(i), part)

    def forward(self, x):
        return torch.cat([part(x) for part in self.children()], -1)
''',
    "float_dtype": '''
def float_dtype(module):
    """The float type the model's weights were loaded in (its first floating parameter's;
    float32 without one): what the source's f32 means in a model loaded in bfloat16."""
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)
''',
    "rms_norm": '''
def rms_norm(x, weight, dims, eps):
    """RMS normalization over `dims`, in float32 as Hugging Face Llama does it (float64
    stays float64)."""
    dtype = x.dtype
    x = x.to(torch.promote_types(dtype, torch.float32))
    x = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return weight * x.to(dtype)
''',
    "layer_norm": '''
def layer_norm(x, weight, bias, dims, eps):
    """Layer normalization over `dims` (which need not be the last axes)."""
    mean = x.mean(dims, keepdim=True)
    var = (x - mean).pow(2).mean(dims, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias
''',
    "rope": '''
def inv_frequencies(theta, width, device, scaling=None, work=torch.float32):
    """The inverse frequencies of `width` rotated features, changed as `scaling` says (a
    `rope_parameters` dict: `rope_type` "linear", "llama3" or "yarn" and its fields, with
    transformers' meaning), and the factor cos and sin are multiplied by (yarn's
    attention_factor; else 1). Computed in `work`: float32 as transformers does, float64
    for a model run in float64."""
    kind = (scaling or {}).get("rope_type", "default")
    powers = theta ** (torch.arange(0, width, 2, dtype=torch.int64, device=device).to(work) / width)
    inv_freq = 1.0 / powers
    if kind == "linear":
        return inv_freq / scaling["factor"], 1.0
    if kind == "llama3":  # wavelengths kept, divided by factor, or blended between the two
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        original = scaling["original_max_position_embeddings"]
        wavelength = 2 * math.pi / inv_freq
        scaled = torch.where(wavelength > original / low, inv_freq / factor, inv_freq)
        smooth = (original / wavelength - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        between = ~(wavelength < original / high) * ~(wavelength > original / low)
        return torch.where(between, blended, scaled), 1.0
    if kind == "yarn":  # blended by a ramp between beta_fast and beta_slow rotations
        factor, original = scaling["factor"], scaling["original_max_position_embeddings"]

        def dim_of(rotations):
            return width * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))
        low = max(math.floor(dim_of(scaling["beta_fast"])), 0)
        high = min(math.ceil(dim_of(scaling["beta_slow"])), width - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(width // 2, dtype=work, device=device) - low) / (high - low)).clamp(0, 1)
        kept = 1 - ramp
        return (1.0 / (factor * powers)) * (1 - kept) + inv_freq * kept, scaling["attention_factor"]
    return inv_freq, 1.0


def rotary_table(pos, theta, width, style, dtype, scaling=None):
    """The rotary table of the positions `pos`: cos and sin, each [*pos.shape, width], laid
    out as `style` rotates: "half" rotates the two halves (Hugging Face Llama),
    "interleaved" pairs of neighbours (GPT-J); frequencies scaled as `scaling` says."""
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq, attention = inv_frequencies(theta, width, pos.device, scaling, work)
    angles = pos[..., None].to(work) * inv_freq
    if style == "half":
        angles = torch.cat((angles, angles), -1)
    else:
        angles = torch.stack((angles, angles), -1).flatten(-2)
    return (angles.cos() * attention).to(dtype), (angles.sin() * attention).to(dtype)


def rotate(x, cos, sin, style):
    """x rotated over its last axis by a rotary table (`rotary_table`) that broadcasts against
    it; a table narrower than x rotates x's first features and passes the others through."""
    width = cos.shape[-1]
    if width < x.shape[-1]:
        return torch.cat((rotate(x[..., :width], cos, sin, style), x[..., width:]), -1)
    if style == "half":
        rotated = torch.cat((-x[..., width // 2:], x[..., : width // 2]), -1)
        return x * cos + rotated * sin
    cos, sin = cos[..., 0::2], sin[..., 0::2]
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), -1).flatten(-2)


def rope(x, pos, theta, style, dims=None, scaling=None):
    """Rotary position embedding over the first `dims` features of x's last axis (all
    without it); `pos` broadcasts against x's other axes."""
    return rotate(x, *rotary_table(pos, theta, dims or x.shape[-1], style, x.dtype, scaling), style)
''',
    "rotary": '''
class RotaryEmbedding(nn.Module):
    """The model's rotary table, computed once per forward as transformers' models do
    (`config.rope_parameters`: theta, rope_type and its fields): cos and sin [b n width] of
    the positions, `width` the rotated features of each head. Every rope of the model
    rotates by it; LiteRT-Torch's split-cache export replaces this module by tables it
    computes outside the model."""

    def __init__(self, config, width, style):
        super().__init__()
        self.config = config
        self.theta = float(config.rope_parameters["rope_theta"])
        self.scaling = dict(config.rope_parameters)
        self.width = width
        self.style = style

    def forward(self, x, position_ids):
        return rotary_table(position_ids, self.theta, self.width, self.style, x.dtype, self.scaling)
''',
    "written_attention": '''
def written_attention(query, key, value, attn_mask=None, scale=None, enable_gqa=False, softcap=None, sinks=None):
    """scaled_dot_product_attention written out, for what PyTorch's lacks: scores s become
    softcap * tanh(s / softcap) after scaling and before the mask (Gemma 2); `sinks` [H]
    gives each head's softmax one more logit whose probability is dropped (gpt-oss)."""
    if enable_gqa:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
        value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    scores = torch.matmul(query, key.transpose(-1, -2)) * (query.shape[-1] ** -0.5 if scale is None else scale)
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    if sinks is None:
        return torch.matmul(scores.softmax(-1), value)
    sink = sinks.to(scores.dtype).reshape(-1, 1, 1).expand(scores.shape[:-1] + (1,))
    weights = torch.cat([scores, sink], dim=-1).softmax(-1)[..., :-1]
    return torch.matmul(weights, value)
''',
    "expert_einsum": '''
def expert_einsum(equation, idx, weight, dim, operands):
    """torch.einsum(equation) of the operands and `weight` gathered by idx along `dim`
    (`take(weight, idx, over=…)`, one weight per slot of idx), computing only the chosen
    experts: the slots grouped by expert, one einsum per expert that has slots, never the
    dense gather. Each operand comes as (tensor, the order putting its slot axes first,
    which of idx's axes it has); the result is [idx's axes…, the equation's other axes]."""
    rows_of = []
    for o, perm, keep in operands:
        if not any(keep):  # no slot axis: the same for every slot
            rows_of.append((o, False))
            continue
        o = o.permute(perm)
        for i, has in enumerate(keep):
            if not has:
                o = o.unsqueeze(i)
        o = o.expand(tuple(idx.shape) + tuple(o.shape[len(keep):]))
        rows_of.append((o.reshape((-1,) + tuple(o.shape[len(keep):])), True))
    weight = weight.movedim(dim, 0)
    slots = idx.reshape(-1)
    order = torch.argsort(slots, stable=True)
    counts = torch.bincount(slots, minlength=weight.shape[0]).tolist()
    out, start = None, 0
    for expert, count in enumerate(counts):
        if count == 0:
            continue
        rows = order[start:start + count]
        start += count
        part = torch.einsum(equation, *[o[rows] if sliced else o for o, sliced in rows_of], weight[expert])
        if out is None:
            out = part.new_empty((slots.numel(),) + tuple(part.shape[1:]))
        out[rows] = part
    if out is None:  # no slots at all (an empty batch)
        out = torch.einsum(equation, *[o[:0] if sliced else o for o, sliced in rows_of], weight[0])
    return out.reshape(tuple(idx.shape) + tuple(out.shape[1:]))
''',
    "topk": '''
def topk(x, k, dim):
    """The k largest values along dim and their indices, largest first; equal values: the
    lower index first (a stable sort: torch.topk leaves ties' order unspecified)."""
    values, indices = torch.sort(x, dim=dim, descending=True, stable=True)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)
''',
    "causal": '''
def causal(rows, cols, device):
    """The mask `causal[rows cols]`: true where a query at i may see the key at j <= i."""
    return torch.ones(rows, cols, dtype=torch.bool, device=device).tril()
''',
    "window_mask": '''
def window_mask(mask, window):
    """A causal mask narrowed to a sliding window: a query at i sees the keys at j with
    i - window < j <= i (the mask's last two axes are the queries' and the keys')."""
    rows, cols = mask.shape[-2], mask.shape[-1]
    i = torch.arange(rows, device=mask.device)[:, None]
    j = torch.arange(cols, device=mask.device)[None, :]
    return mask & (j > i - window)
''',
    "attend": '''
def eager_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention in plain PyTorch, for attn_implementation="eager"."""
    key = key.repeat_interleave(module.num_key_value_groups, dim=1)
    value = value.repeat_interleave(module.num_key_value_groups, dim=1)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if kwargs.get("softcap") is not None:  # after scaling, before the mask (Gemma 2)
        scores = kwargs["softcap"] * torch.tanh(scores / kwargs["softcap"])
    if attention_mask is not None and attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask[:, :, :, : key.shape[-2]], float("-inf"))
    elif attention_mask is not None:
        scores = scores + attention_mask[:, :, :, : key.shape[-2]]
    elif query.shape[2] > 1:
        q, k = query.shape[2], key.shape[2]
        keep = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q)
        if getattr(module, "sliding_window", None):  # a query sees the last `sliding_window` keys
            keep = keep & ~torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q - module.sliding_window)
        scores = scores.masked_fill(~keep, float("-inf"))
    sinks = kwargs.get("s_aux")
    wide = torch.promote_types(scores.dtype, torch.float32)  # the softmax in float32 at least
    if sinks is None:
        weights = scores.to(wide).softmax(-1).to(query.dtype)
    else:  # one more logit per head whose probability is dropped (gpt-oss's sinks)
        sink = sinks.to(scores.dtype).reshape(1, -1, 1, 1).expand(scores.shape[:-1] + (1,))
        weights = torch.cat([scores, sink], dim=-1).to(wide).softmax(-1)[..., :-1].to(query.dtype)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


class CausalAttention(nn.Module):
    """Causal attention through the engine's attention function (sdpa, eager, vLLM's ...).

    Keys and values keep their own number of heads: the cache stores them so, and the
    attention function repeats each `num_key_value_groups` times. Takes and returns
    [b H n Dh] tensors, as the source's `scaled_dot_product_attention` does."""

    def __init__(self, config, layer_idx, num_heads, num_key_value_groups, scaling, head_dim, sliding_window=None,
                 softcap=None):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.num_heads = num_heads
        self.num_key_value_groups = num_key_value_groups
        self.scaling = scaling
        self.head_dim = head_dim
        self.is_causal = True
        self.sliding_window = sliding_window  # a query sees the last `sliding_window` keys (None: all)
        self.softcap = softcap  # scores s become softcap * tanh(s / softcap) (None: uncapped)

    def forward(self, query, key, value, attention_mask=None, past_key_values=None, **kwargs):
        engine = getattr(self, "attn", None)  # vLLM's Attention, where vLLM serves this module
        if engine is not None and ''' + _HEADS_GUARD + '''
        if engine is not None and kwargs.get("s_aux") is not None:  # its attention functions drop them
            raise NotImplementedError("vLLM's Transformers backend drops attention sinks (`sinks=`): this "
                                      "model can't be served by it (ShapeScript's --vllm export refuses it)")
        if isinstance(attention_mask, dict):  # one mask per layer type, as transformers' hybrid models
            attention_mask = attention_mask["sliding_attention" if self.sliding_window else "full_attention"]
        if self.sliding_window:
            kwargs["sliding_window"] = self.sliding_window  # flash attention reads it; sdpa has the mask
        if past_key_values is not None:
            key, value = past_key_values.update(key, value, self.layer_idx)
        attention_interface = eager_attention
        if self.softcap is not None:  # flash and flex attention cap too; sdpa would drop it
            kwargs["softcap"] = self.softcap
        written = self.softcap is not None or kwargs.get("s_aux") is not None  # sdpa has neither
        if self.config._attn_implementation not in (None, "eager") and (
                not written or self.config._attn_implementation not in ("sdpa", "paged|sdpa")):
            # get_interface: transformers reads this call in the source to let
            # set_attn_implementation() switch the function (LiteRT-Torch's export_hf does)
            attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation,
                                                                        eager_attention)
        out, _ = attention_interface(self, query, key, value, attention_mask, dropout=0.0,
                                     scaling=self.scaling, **kwargs)
        # [b n H Dh] from transformers' functions, [n H*Dh] from vLLM's: back to [b H n Dh]
        batch, heads, tokens = query.shape[0], query.shape[1], query.shape[2]
        return out.reshape(batch, tokens, heads, -1).transpose(1, 2)
''',
    "mask": '''
_MASK_PARAMETERS = set(inspect.signature(create_causal_mask).parameters)


def causal_mask(config, inputs_embeds, attention_mask, cache, position_ids, make=create_causal_mask):
    """create_causal_mask (or `make`, taking the same keywords: the sliding-window mask),
    called with the keywords this transformers version takes (5.24 renamed
    `past_key_values` to `cache`; 5.0 also took `cache_position`)."""
    kwargs = {"config": config, "attention_mask": attention_mask, "position_ids": position_ids}
    kwargs["inputs_embeds" if "inputs_embeds" in _MASK_PARAMETERS else "input_embeds"] = inputs_embeds
    kwargs["cache" if "cache" in _MASK_PARAMETERS else "past_key_values"] = cache
    if "cache_position" in _MASK_PARAMETERS:
        past = cache.get_seq_length() if cache is not None else 0
        kwargs["cache_position"] = torch.arange(past, past + inputs_embeds.shape[1], device=inputs_embeds.device)
    return make(**kwargs)


def with_cache(output_class, cache, **fields):
    """An output holding the cache under the name this transformers version uses."""
    names = {f.name for f in dataclasses.fields(output_class)}
    fields["cache" if "cache" in names else "past_key_values"] = cache
    return output_class(**fields)


def cache_of(output):
    """The cache an output holds, under the name this transformers version uses."""
    names = {f.name for f in dataclasses.fields(output)}
    return getattr(output, "cache" if "cache" in names else "past_key_values", None)
''',
}

def kv_head_shards(heads, ranks, rank):
    """Tensor parallelism's key/value heads as vLLM's Llama splits them: (the shard of the
    `heads` key/value heads that rank `rank` of `ranks` holds, how many shards there are).
    With at least as many heads as ranks, each rank holds heads / ranks of them; with more
    ranks than heads, each rank holds one, every head on ranks / heads ranks: those whose
    query heads read it (rank r's query heads belong to head r // (ranks / heads))."""
    if (heads % ranks if ranks <= heads else ranks % heads) != 0:
        raise ValueError(f"{heads} key/value heads can't be split {ranks} ways "
                         f"(ShapeScript's E3307 says which sizes work)")
    if ranks <= heads:
        return rank, ranks
    return rank // (ranks // heads), heads


# the vLLM flavour: the key/value heads a rank holds (written into the native model as it is,
# so that the function tests/test_tensor_parallel.py checks is the one vLLM runs)
VLLM_KV_SHARDS = inspect.getsource(kv_head_shards) + '''

def kv_shard(heads):
    """A key/value projection's ColumnParallelLinear arguments: vLLM's own split when
    every rank holds heads / ranks of the heads, else the shard this rank holds."""
    ranks = get_tensor_model_parallel_world_size()
    if ranks <= heads:
        return {}
    shard, shards = kv_head_shards(heads, ranks, get_tensor_model_parallel_rank())
    return {"tp_rank": shard, "tp_size": shards}
'''

# the vLLM flavour's experts split across ranks (compile/expert_parallel.py)
VLLM_EXPERT_SHARD = '''
def expert_shard(axis):
    """The weight loader of an expert weight `[E F D]` (axis 1) or `[E D F]` (axis 2) that
    each tensor-parallel rank holds its contiguous share of the experts' width F of."""
    def load(param, tensor):
        ranks, rank = get_tensor_model_parallel_world_size(), get_tensor_model_parallel_rank()
        if tensor.shape[axis] % ranks:
            raise ValueError(f"the experts' width {tensor.shape[axis]} can't be split {ranks} ways")
        share = tensor.shape[axis] // ranks
        param.data.copy_(tensor.narrow(axis, rank * share, share))
    return load
'''

# the vLLM flavour of the attention: vLLM's paged Attention, over its flattened tokens
VLLM_ATTENTION = '''
class CausalAttention(nn.Module):
    """Causal attention as vLLM runs it: its paged `Attention` with its own KV cache.

    Keys and values keep their own number of heads (`num_kv_heads`). Takes and returns
    [b H n Dh] tensors, as the source's `scaled_dot_product_attention` does; vLLM's
    tokens come as a batch of one."""

    def __init__(self, config, layer_idx, num_heads, num_key_value_groups, scaling, head_dim, sliding_window=None,
                 softcap=None):
        super().__init__()
        vllm_config = get_current_vllm_config()
        self.layer_idx = layer_idx
        # tensor parallelism: each rank computes its share of the heads; with fewer
        # key/value heads than ranks, each rank holds one (vLLM's Llama replicates them)
        ranks = get_tensor_model_parallel_world_size()
        kv_heads = num_heads // num_key_value_groups
        kv_heads //= kv_head_shards(kv_heads, ranks, 0)[1]
        # the layer's own window (None: full attention; vLLM then takes the cache config's,
        # which it sets only when every layer of config.json's `layer_types` slides)
        self.attn = PagedAttention(num_heads // ranks, head_dim, scaling, num_kv_heads=kv_heads,
                              cache_config=vllm_config.cache_config, quant_config=vllm_config.quant_config,
                              per_layer_sliding_window=sliding_window, logits_soft_cap=softcap,
                              prefix=f"layers.{layer_idx}.attention")

    def forward(self, query, key, value, attention_mask=None, past_key_values=None, **kwargs):
        engine = self.attn
        if ''' + _HEADS_GUARD + '''
        batch, heads, tokens = query.shape[0], query.shape[1], query.shape[2]
        flat = [x.transpose(1, 2).reshape(batch * tokens, -1) for x in (query, key, value)]
        out = self.attn(*flat)
        return out.reshape(batch, tokens, heads, -1).transpose(1, 2)
'''

# which imports each helper needs beyond torch / nn / F
NEEDS = {"attend": {"ALL_ATTENTION_FUNCTIONS"}, "mask": {"inspect", "create_causal_mask", "dataclasses"}}
