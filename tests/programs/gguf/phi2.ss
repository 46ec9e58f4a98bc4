# A Phi-2-shaped decoder: one LayerNorm read by attention and the MLP side by side
# (x + attn(h) + mlp(h)), a rope over the first half of each head (rotary_dims), biases on
# every projection, GELU (tanh). llama.cpp's phi2; its output layer's bias is written as
# zeros (a serving engine's output layer has none here: E3302).
dim V  = 256
dim D  = 256
dim H  = 4
dim Dh = D / H
dim F  = 512
dim L  = 2

model Attention:
    q_proj: [H*Dh D]
    q_bias: [H*Dh] = zeros
    k_proj: [H*Dh D]
    k_bias: [H*Dh] = zeros
    v_proj: [H*Dh D]
    v_bias: [H*Dh] = zeros
    dense: [D H*Dh]
    dense_bias: [D] = zeros

model Layer:
    ln_w: [D] = ones
    ln_b: [D] = zeros
    attn: Attention
    fc1: [F D]
    fc1_b: [F] = zeros
    fc2: [D F]
    fc2_b: [D] = zeros

model Phi:
    embed: [V D]
    layers: [L] Layer
    ln_w: [D] = ones
    ln_b: [D] = zeros
    lm_head: [V D]

fn attention(a: Attention, h: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(h, a.q_proj, a.q_bias)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=10000.0, rotary_dims=32)
    k = linear(h, a.k_proj, a.k_bias)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=10000.0, rotary_dims=32)
    v = linear(h, a.v_proj, a.v_bias) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.dense, a.dense_bias)

fn layer(p: Layer, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = layer_norm(x, p.ln_w, p.ln_b, over=D, eps=1e-5)
    m = linear(h, p.fc1, p.fc1_b) |> gelu_tanh |> linear(p.fc2, p.fc2_b)
    return attention(p.attn, h, pos) + m + x

@export(gguf)
fn forward(m: Phi, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for l in m.layers:
        x = layer(l, x, pos)
    return layer_norm(x, m.ln_w, m.ln_b, over=D, eps=1e-5) |> linear(m.lm_head)
