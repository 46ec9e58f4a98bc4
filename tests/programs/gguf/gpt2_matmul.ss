# A GPT-2 written as its checkpoint stores it: Conv1D weights [in out] used as `h @ W + b`.
# The export transposes them into llama.cpp's [out in] (and keeps the fused QKV).
dim V  = 256
dim D  = 256
dim H  = 4
dim Dh = D / H
dim P  = 64
dim L  = 2

model Block:
    ln_1_w: [D] = ones
    ln_1_b: [D] = zeros
    c_attn_w: [D 3*D]
    c_attn_b: [3*D] = zeros
    c_proj_w: [D D]
    c_proj_b: [D] = zeros
    ln_2_w: [D] = ones
    ln_2_b: [D] = zeros
    c_fc_w: [D 4*D]
    c_fc_b: [4*D] = zeros
    mlp_proj_w: [4*D D]
    mlp_proj_b: [D] = zeros

model Gpt2:
    wte: [V D]
    wpe: [P D] = normal(0.01)
    h: [L] Block
    ln_f_w: [D] = ones
    ln_f_b: [D] = zeros

fn block(p: Block, x: [b n D]) -> [b n D]:
    h = layer_norm(x, p.ln_1_w, p.ln_1_b, over=D)
    q, k, v = (h @ p.c_attn_w + p.c_attn_b) |> split(b n (3 H Dh) -> b H n Dh)
    a = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh))
    x = x + (a @ p.c_proj_w + p.c_proj_b)
    h = layer_norm(x, p.ln_2_w, p.ln_2_b, over=D)
    return x + (gelu_tanh(h @ p.c_fc_w + p.c_fc_b) @ p.mlp_proj_w + p.mlp_proj_b)

@export(gguf)
fn forward(m: Gpt2, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.wte) + embedding(pos, m.wpe)
    for layer in m.h:
        x = block(layer, x)
    return layer_norm(x, m.ln_f_w, m.ln_f_b, over=D) |> linear(m.wte)
