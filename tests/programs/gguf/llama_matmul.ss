# A llama whose projections are written `x @ W` with W stored [in out] (the output layer
# stays a linear, as E3302 asks): the export transposes them, then permutes Q and K.
dim V   = 256
dim D   = 256
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 512
dim L   = 2

model Attention:
    wq: [D H*Dh]
    wk: [D Hkv*Dh]
    wv: [D Hkv*Dh]
    wo: [H*Dh D]

model Mlp:
    w_gate: [D F]
    w_up: [D F]
    w_down: [F D]

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

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = (x @ a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=500000.0)
    k = (x @ a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=500000.0)
    v = (x @ a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> matmul(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (silu((x @ p.w_gate)) * (x @ p.w_up)) |> matmul(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

@export(hf, vllm, gguf)
fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
