# The reference llama with its block split into other helpers: projections, a
# free-standing attention core, a residual helper.
dim V   = 32000
dim D   = 4096
dim H   = 32
dim Hkv = 8
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 11008
dim L   = 32

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Mlp:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    mlp: Mlp

model Llama:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn heads(x: [b n D], w: [H*Dh D]) -> [b H n Dh]:
    return linear(x, w) |> rearrange(b n (H Dh) -> b H n Dh)

fn kv_heads(x: [b n D], w: [Hkv*Dh D]) -> [b Hkv n Dh]:
    return linear(x, w) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)

fn core(q: [b H n Dh], k: [b Hkv n Dh], v: [b Hkv n Dh]) -> [b n D]:
    k2 = repeat(k, b Hkv n Dh -> b (Hkv G) n Dh)
    v2 = repeat(v, b Hkv n Dh -> b (Hkv G) n Dh)
    return scaled_dot_product_attention(q, k2, v2, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh))

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = heads(x, a.wq) |> rope(pos, theta=500000.0)
    k = kv_heads(x, a.wk) |> rope(pos, theta=500000.0)
    return core(q, k, kv_heads(x, a.wv)) |> linear(a.wo)

fn residual(x: [b n D], y: [b n D]) -> [b n D]:
    return x + y

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = residual(x, attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos))
    h = rms_norm(x, blk.mlp_norm, over=D, eps=1e-5)
    return residual(x, linear(silu(linear(h, blk.mlp.w_gate)) * linear(h, blk.mlp.w_up), blk.mlp.w_down))

@export(hf, vllm, gguf)
fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
