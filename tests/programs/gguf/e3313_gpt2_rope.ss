# E3313: a gpt2 whose queries and keys are rotated (rope): gpt2 has learned positions only.
dim V  = 50257
dim D  = 768
dim H  = 12
dim Dh = D / H
dim P  = 1024
dim L  = 12

model Gpt2Block:
    ln1_w: [D] = ones
    ln1_b: [D] = zeros
    w_qkv: [3*D D]
    b_qkv: [3*D] = zeros
    w_o: [D D]
    b_o: [D] = zeros
    ln2_w: [D] = ones
    ln2_b: [D] = zeros
    w_fc: [4*D D]
    b_fc: [4*D] = zeros
    w_proj: [D 4*D]
    b_proj: [D] = zeros

model Gpt2:
    wte: [V D]
    wpe: [P D] = normal(0.01)
    layers: [L] Gpt2Block
    lnf_w: [D] = ones
    lnf_b: [D] = zeros

fn gpt2_block(p: Gpt2Block, x: [b n D], pos: [b n] Index[P]) -> [b n D]:
    h = layer_norm(x, p.ln1_w, p.ln1_b, over=D)
    q, k, v = linear(h, p.w_qkv, p.b_qkv) |> split(b n (3 H Dh) -> b H n Dh)
    a = scaled_dot_product_attention(q |> rope(pos), k |> rope(pos), v, attn_mask=causal[n n])
        |> rearrange(b H n Dh -> b n (H Dh))
        |> linear(p.w_o, p.b_o)
    x = x + a
    h = layer_norm(x, p.ln2_w, p.ln2_b, over=D)
    return x + (linear(h, p.w_fc, p.b_fc) |> gelu_tanh |> linear(p.w_proj, p.b_proj))

@export(hf, vllm, gguf)
fn forward(m: Gpt2, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.wte) + embedding(pos, m.wpe)
    for layer in m.layers:
        x = gpt2_block(layer, x, pos)
    h = layer_norm(x, m.lnf_w, m.lnf_b, over=D)
    return linear(h, m.wte)
