# The Qwen2-style decoder with the interleaved rotary style: llama.cpp's qwen2 rotates
# halves, so the export permutes the q and k rows (and biases) from pairs to halves.
dim V   = 256
dim D   = 256
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 512
dim L   = 2

model Attention:
    wq: [H*Dh D]
    bq: [H*Dh] = zeros
    wk: [Hkv*Dh D]
    bk: [Hkv*Dh] = zeros
    wv: [Hkv*Dh D]
    bv: [Hkv*Dh] = zeros
    wo: [D H*Dh]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Qwen:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn attention(a: Attention, h: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(h, a.wq, a.bq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=1000000.0, style="interleaved")
    k = linear(h, a.wk, a.bk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=1000000.0, style="interleaved")
    v = linear(h, a.wv, a.bv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(p.attn, rms_norm(x, p.attn_norm, over=D), pos)
    h = rms_norm(x, p.mlp_norm, over=D)
    return x + ((silu(linear(h, p.w_gate)) * linear(h, p.w_up)) |> linear(p.w_down))

@export(gguf)
fn forward(m: Qwen, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D) |> linear(m.lm_head)
