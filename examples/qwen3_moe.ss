# A Qwen3-MoE-style decoder (Qwen3-30B-A3B): Qwen3's attention (queries and keys normalized
# per head) and a mixture of experts in every block (LANGUAGE.md §6.2), routed as Qwen3-MoE
# writes it: the softmax over all E router logits, the K largest, divided by their sum
# (`norm_topk_prob`). Its sizes are left open: an export reads them from the checkpoint it
# imports (--weights); otherwise give them with --dim
# (Qwen3-30B-A3B: V=151936 D=2048 H=32 Hkv=4 Dh=128 F=768 L=48 E=128 K=8).

dim V
dim D
dim H
dim Hkv
dim G = H / Hkv
dim Dh
dim F  # each expert's width (moe_intermediate_size)
dim L
dim E  # experts
dim K  # experts used per token

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    q_norm: [Dh] = ones
    k_norm: [Dh] = ones

model Experts:
    router: [E D]
    w_gate: [E F D]
    w_up: [E F D]
    w_down: [E D F]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    moe: Experts

model Qwen3Moe:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

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

fn experts(p: Experts, x: [b n D]) -> [b n D]:
    w, e = linear(x, p.router) |> softmax(over=E) |> topk(k=K, over=E)
    w = w / sum(w, over=K)  # norm_topk_prob: the K weights sum to 1
    g = einsum(x, take(p.w_gate, e, over=E): b n D, b n K F D -> b n K F)
    u = einsum(x, take(p.w_up, e, over=E): b n D, b n K F D -> b n K F)
    y = einsum(silu(g) * u, take(p.w_down, e, over=E): b n K F, b n K D F -> b n K D)
    return sum(y * w, over=K)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-6), pos)
    return x + experts(blk.moe, rms_norm(x, blk.mlp_norm, over=D, eps=1e-6))

@export(hf, vllm, gguf)
fn forward(m: Qwen3Moe, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-6) |> linear(m.lm_head)
