# case: lm weights-seed=36941 target=gguf
# Bug: the export folded a scalar keyword to a number only when its expression's type was a
# plain number: `theta=t * 1` with `t: []` (a scalar parameter, passed 10000.0 at every call)
# was "computed", and --gguf refused the model (E3313) though theta is known at export.
# progen.llama_case(0).
dim V = 256
dim D = 64
dim H = 4
dim Hkv = 2
dim G = H / Hkv
dim Dh = D / H
dim F = 96
dim L = 2

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Llama:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn normed(x: [b n D], w: [D], e: []) -> [b n D]:
    return rms_norm(x, w, over=D, eps=1e-6)

fn attention(a: Attention, x: [b n D], pos: [b n] i64, t: [], sc: []) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=t * 1, style="half")
    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=t * 1, style="half")
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=Dh ** -0.5)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn block(p: Block, x: [b n D], pos: [b n] i64, eps: []) -> [b n D]:
    x = x + attention(p.attn, normed(x, p.attn_norm, eps * 1), pos, 500000.0, 1 / sqrt(Dh))
    h = normed(x, p.mlp_norm, eps * 1)
    return x + linear((linear(h, p.w_up) * silu(linear(h, p.w_gate))), p.w_down)

@export(gguf)
fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos, 1e-06)
    return normed(x, m.norm, 1e-06) |> linear(m.lm_head)
