# A Qwen3-style decoder: a llama whose queries and keys are each normalized per head
# (rms_norm over the head width, before rope), a head width of its own, theta 1e6, and
# the output layer tied to the token embedding. Its sizes are left open: an export reads
# them from the checkpoint it imports (--weights); otherwise give them with --dim
# (Qwen3-0.6B: V=151936 D=1024 H=16 Hkv=8 Dh=128 F=3072 L=28).

dim V
dim D
dim H
dim Hkv
dim G = H / Hkv
dim Dh
dim F
dim L

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    q_norm: [Dh] = ones
    k_norm: [Dh] = ones

model Mlp:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    mlp: Mlp

model Qwen3:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rms_norm(a.q_norm, over=Dh, eps=1e-6)
        |> rope(pos, theta=1000000.0)
    k = linear(x, a.wk)
        |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
        |> rms_norm(a.k_norm, over=Dh, eps=1e-6)
        |> rope(pos, theta=1000000.0)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (silu(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-6), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-6))

@export(hf, vllm, gguf)
fn forward(m: Qwen3, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-6) |> linear(m.embed)
