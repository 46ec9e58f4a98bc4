# Llama 3.2 1B: the Llama decoder with Llama 3's rope scaling (spec v0.3, §6.1): the
# low frequencies of the rotation divided by 32, as transformers' rope_type "llama3" does,
# and the output layer tied to the token embedding. Dims are Llama 3.2 1B's.
# Exported for transformers, vLLM and llama.cpp (the divisors in the GGUF's rope_freqs
# tensor, as llama.cpp's own converter writes them).

dim V   = 128256
dim D   = 2048
dim H   = 32
dim Hkv = 8
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 8192
dim L   = 16

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Mlp:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    mlp: Mlp

model Llama:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=500000.0, scaling="llama3", factor=32.0,
            low_freq_factor=1.0, high_freq_factor=4.0,
            original_positions=8192)
    k = linear(x, a.wk)
        |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
        |> rope(pos, theta=500000.0, scaling="llama3", factor=32.0,
            low_freq_factor=1.0, high_freq_factor=4.0,
            original_positions=8192)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (silu(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

@export(hf, vllm, gguf)
fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.embed)
