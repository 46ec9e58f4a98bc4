# A llama (multi-head: as many key/value heads as query heads) with one fused `w_qkv`
# split by the pattern (3 Dh H), head width before heads: the GGUF export cuts it into
# attn_q, attn_k, attn_v and puts each one's rows head-major.
dim V  = 256
dim D  = 256
dim H  = 4
dim Dh = D / H
dim F  = 512
dim L  = 2

model Block:
    attn_norm: [D] = ones
    w_qkv: [3*H*Dh D]
    wo: [D H*Dh]
    mlp_norm: [D] = ones
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = rms_norm(x, p.attn_norm, over=D, eps=1e-5)
    q, k, v = linear(h, p.w_qkv) |> split(b n (3 Dh H) -> b H n Dh)
    o = scaled_dot_product_attention(q |> rope(pos, theta=500000.0), k |> rope(pos, theta=500000.0), v,
                                     attn_mask=causal[n n])
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.wo))
    h = rms_norm(x, p.mlp_norm, over=D, eps=1e-5)
    return x + ((silu(linear(h, p.w_gate)) * linear(h, p.w_up)) |> linear(p.w_down))

@export(gguf)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
