# A llama with fused projections split by patterns: keys and values from one `w_kv`
# whose rows go (2 Hkv Dh), gate and up from one `w_gu` whose rows go (2 F). The GGUF
# export splits the rows into llama.cpp's attn_k/attn_v and ffn_gate/ffn_up.
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
    w_kv: [2*Hkv*Dh D]
    wo: [D H*Dh]
    mlp_norm: [D] = ones
    w_gu: [2*F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = rms_norm(x, p.attn_norm, over=D, eps=1e-5)
    q = linear(h, p.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=500000.0)
    k, v = linear(h, p.w_kv) |> split(b n (2 Hkv Dh) -> b Hkv n Dh)
    k = k |> rope(pos, theta=500000.0) |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.wo))
    h = rms_norm(x, p.mlp_norm, over=D, eps=1e-5)
    g, u = linear(h, p.w_gu) |> split(b n (2 F) -> b n F)
    return x + ((silu(g) * u) |> linear(p.w_down))

@export(gguf)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
