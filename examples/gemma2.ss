# Gemma 2: one flat stack; every other layer attends globally (a window of
# at least the positions' bound P), the others through a sliding window of W; one rope
# base; norm weights used as (1 + w), a norm after each sublayer too, no per-head norms, a
# head width of its own (Dh != D / H), the attention scaled by 1/sqrt(Q)
# (query_pre_attn_scalar), the embedding times sqrt(D), a GeGLU MLP, the output layer tied
# to the embedding; the attention's scores and the logits capped by c·tanh(x/c) (spec v0.3:
# `softcap=` and `softcap(…)`). Dims are Gemma 2 2B's.
dim V   = 256000
dim D   = 2304
dim H   = 8
dim Hkv = 4
dim G   = H / Hkv
dim Dh  = 256
dim F   = 9216
dim L   = 26
dim Q   = 256
dim W   = 4096
dim P   = 8192

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
    attn_norm: [D] = zeros
    attn: Attention
    post_attn_norm: [D] = zeros
    mlp_norm: [D] = zeros
    mlp: Mlp
    post_mlp_norm: [D] = zeros

model Gemma2:
    embed: [V D]
    layers: [L] Block
    norm: [D] = zeros

fn attention(a: Attention, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    q = linear(x, a.wq)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=theta)
    k = linear(x, a.wk)
        |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
        |> rope(pos, theta=theta)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=1.0 / sqrt(Q), window=window,
        softcap=50.0)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (gelu_tanh(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    h = attention(blk.attn, rms_norm(x, 1.0 + blk.attn_norm, over=D, eps=1e-6), pos, theta, window)
    x = x + rms_norm(h, 1.0 + blk.post_attn_norm, over=D, eps=1e-6)
    h = mlp(blk.mlp, rms_norm(x, 1.0 + blk.mlp_norm, over=D, eps=1e-6))
    return x + rms_norm(h, 1.0 + blk.post_mlp_norm, over=D, eps=1e-6)

@export(hf, vllm, gguf)
fn forward(m: Gemma2, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.embed) * sqrt(D)
    for i, layer in m.layers:
        x = block(layer, x, pos, 10000.0, W if i % 2 == 0 else P)
    return rms_norm(x, 1.0 + m.norm, over=D, eps=1e-6) |> linear(m.embed) |> softcap(30.0)
