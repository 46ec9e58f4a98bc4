# E3313: a tanh on the residual stream (docs/errors/E3313.md's example).
dim V  = 1000
dim D  = 64
dim H  = 4
dim Dh = D / H
dim F  = 172
dim L  = 2

model Block:
    attn_norm: [D] = ones
    wq: [D D]
    wk: [D D]
    wv: [D D]
    wo: [D D]
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
    q = linear(h, p.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    k = linear(h, p.wk) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos)
    v = linear(h, p.wv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    x = tanh(x + (o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.wo)))  # error: E3313
    h = rms_norm(x, p.mlp_norm, over=D, eps=1e-5)
    return x + ((silu(linear(h, p.w_gate)) * linear(h, p.w_up)) |> linear(p.w_down))

@export(hf, vllm, gguf)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
