# A Gemma-3-style decoder (until examples/gemma3.ss): one flat stack; every sixth layer
# attends globally (a window of at least the positions' bound P) with rope base 1e6, the
# others through a sliding window of W with base 1e4; norm weights used as (1 + w), a norm
# after each sublayer too, queries and keys normalized per head, a head width of its own
# (Dh != D / H), the attention scaled by 1/sqrt(Q) (query_pre_attn_scalar), the embedding
# times sqrt(D), a GeGLU MLP and the output layer tied to the embedding.
dim V   = 256
dim D   = 128
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = 64
dim F   = 256
dim L   = 6
dim Q   = 48
dim W   = 8
dim P   = 256

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    q_norm: [Dh] = zeros
    k_norm: [Dh] = zeros

model Mlp:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block:
    attn_norm: [D] = zeros
    attn: Attention
    post_attn_norm: [D] = zeros
    mlp_norm: [D] = zeros
    mlp: Mlp
    post_mlp_norm: [D] = zeros

model Gemma3:
    embed: [V D]
    layers: [L] Block
    norm: [D] = zeros

fn attention(a: Attention, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    q = linear(x, a.wq)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rms_norm(1.0 + a.q_norm, over=Dh, eps=1e-6)
        |> rope(pos, theta=theta)
    k = linear(x, a.wk)
        |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
        |> rms_norm(1.0 + a.k_norm, over=Dh, eps=1e-6)
        |> rope(pos, theta=theta)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=1.0 / sqrt(Q), window=window)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (gelu_tanh(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    h = attention(blk.attn, rms_norm(x, 1.0 + blk.attn_norm, over=D, eps=1e-6), pos, theta, window)
    x = x + rms_norm(h, 1.0 + blk.post_attn_norm, over=D, eps=1e-6)
    h = mlp(blk.mlp, rms_norm(x, 1.0 + blk.mlp_norm, over=D, eps=1e-6))
    return x + rms_norm(h, 1.0 + blk.post_mlp_norm, over=D, eps=1e-6)

@export(hf, vllm, gguf)
fn forward(m: Gemma3, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.embed) * sqrt(D)
    for i, layer in m.layers:
        local = i % 6 != 5
        theta = 10000.0 if local else 1000000.0
        window = W if local else P
        x = block(layer, x, pos, theta, window)
    return rms_norm(x, 1.0 + m.norm, over=D, eps=1e-6) |> linear(m.embed)
