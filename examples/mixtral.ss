# A Mixtral-style decoder: a llama whose MLP is a mixture of experts (LANGUAGE.md §6.2).
# Each token's router logits pick its K experts (`topk`), their softmax weighs the
# experts' SwiGLU outputs. Its sizes are left open: an export reads them from the
# checkpoint it imports (--weights); otherwise give them with --dim
# (Mixtral-8x7B: V=32000 D=4096 H=32 Hkv=8 F=14336 L=32 E=8 K=2).

dim V
dim D
dim H
dim Hkv
dim G  = H / Hkv
dim Dh = D / H
dim F
dim L
dim E  # experts
dim K  # experts used per token

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

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

model Mixtral:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=1000000.0)
    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=1000000.0)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn experts(p: Experts, x: [b n D]) -> [b n D]:
    w, e = linear(x, p.router) |> topk(k=K, over=E)  # each token's K largest logits
    w = softmax(w, over=K)  # Mixtral: the softmax of the chosen
    g = einsum(x, take(p.w_gate, e, over=E): b n D, b n K F D -> b n K F)
    u = einsum(x, take(p.w_up, e, over=E): b n D, b n K F D -> b n K F)
    y = einsum(silu(g) * u, take(p.w_down, e, over=E): b n K F, b n K D F -> b n K D)
    return sum(y * w, over=K)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + experts(blk.moe, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

@export(hf, vllm, gguf)
fn forward(m: Mixtral, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
