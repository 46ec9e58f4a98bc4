# A llama (all heads for keys and values) with fused projections split by patterns,
# SwiGLU written the other way round, and the output layer tied to the embedding.
dim V  = 32000
dim D  = 4096
dim H  = 32
dim Dh = D / H
dim F  = 11008
dim L  = 32

model Block:
    attn_norm: [D] = ones
    w_qkv: [3*D D]
    w_o: [D D]
    mlp_norm: [D] = ones
    w_gate_up: [2*F D]
    w_down: [D F]

model Llama:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    h = rms_norm(x, p.attn_norm, over=D, eps=1e-5)
    q, k, v = linear(h, p.w_qkv) |> split(b n (3 H Dh) -> b H n Dh)
    q = rope(q, pos, theta=10000.0)
    k = rope(k, pos, theta=10000.0)
    x = x + (scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.w_o))
    h = rms_norm(x, p.mlp_norm, over=D, eps=1e-5)
    gate, up = linear(h, p.w_gate_up) |> split(b n (2 F) -> b n F)
    return x + linear(up * silu(gate), p.w_down)

@export(hf, vllm, gguf)
fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.embed)
