# A Gemma 3 decoder (Gemma 3 1B's dims): the embedding scaled by sqrt(D); RMS norms that
# scale by (1 + w), so their weights start at zero; a norm before and after attention and
# before and after the MLP; queries and keys normalized per head; attention scaled by
# 1/sqrt(Q), Q the query_pre_attn_scalar, on heads wider than D/H; a gated GELU-tanh MLP;
# the output layer tied to the embedding. Five of every six layers are local: a sliding
# window of W positions and rope base 1e4; every sixth is global: rope base 1e6 and a
# window of P, the positions' bound, which drops no key (full attention).

dim V   = 262144
dim D   = 1152
dim H   = 4
dim Hkv = 1
dim G   = H / Hkv
dim Dh  = 256
dim F   = 6912
dim L   = 26
dim W   = 512  # the sliding window of the local layers
dim Q   = 256  # query_pre_attn_scalar: attention scales by 1/sqrt(Q)
dim P   = 32768  # positions: max_position_embeddings

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

# Gemma's RMS norm: the weight is stored as w and scales by (1 + w)
fn norm(x: [b n D], w: [D]) -> [b n D]:
    return rms_norm(x, 1.0 + w, over=D, eps=1e-6)

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
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=1 / sqrt(Q), window=window)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (gelu_tanh(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] Index[P], theta: [], window: []) -> [b n D]:
    x = x + norm(attention(blk.attn, norm(x, blk.attn_norm), pos, theta, window), blk.post_attn_norm)
    return x + norm(mlp(blk.mlp, norm(x, blk.mlp_norm)), blk.post_mlp_norm)

@export(hf, vllm, gguf)
fn forward(m: Gemma3, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.embed) * sqrt(D)
    for i, layer in m.layers:
        local = i % 6 != 5
        theta = 10000.0 if local else 1000000.0
        window = W if local else P
        x = block(layer, x, pos, theta, window)
    return norm(x, m.norm) |> linear(m.embed)
