# A Mistral-style decoder (Mistral 7B v0.1's dims): a llama whose attention slides: a
# query sees the last W positions, itself included, on every layer.

dim V   = 32000
dim D   = 4096
dim H   = 32
dim Hkv = 8
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 14336
dim L   = 32
dim W   = 4096  # the sliding window
dim P   = 32768  # positions: max_position_embeddings

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

model Mistral:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn attention(a: Attention, x: [b n D], pos: [b n] Index[P]) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=10000.0)
    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=10000.0)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], window=W)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (silu(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] Index[P]) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

@export(hf, vllm)
fn forward(m: Mistral, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
