# A llama with the interleaved rotary style (pairs, as GPT-J: llama.cpp's own layout, so
# no row permutation), the default theta and eps, and the output layer tied to the
# embedding (no output.weight in the GGUF).
dim V   = 256
dim D   = 256
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 512
dim L   = 2

model Block:
    attn_norm: [D] = ones
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    mlp_norm: [D] = ones
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = rms_norm(x, p.attn_norm, over=D)
    q = linear(h, p.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, style="interleaved")
    k = linear(h, p.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, style="interleaved")
    v = linear(h, p.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.wo))
    h = rms_norm(x, p.mlp_norm, over=D)
    return x + ((silu(linear(h, p.w_gate)) * linear(h, p.w_up)) |> linear(p.w_down))

@export(gguf)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D) |> linear(m.embed)
