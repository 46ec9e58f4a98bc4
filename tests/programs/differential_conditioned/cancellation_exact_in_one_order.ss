# case: plain weights-seed=15647 progen-seed=200831 target=hf
dim V = 24
dim D = 8
dim H = 2
dim Hkv = 2
dim Dh = D / H
dim F = 8
dim L = 2

model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    n1: [D] = ones
    b1: [D] = zeros
    attn: Attn
    w_up: [F D]
    w_down: [D F]

model Root:
    embed: [V D]
    onehot: [D V]
    layers: [L] Block
    norm: [D] = ones
    top: Block
    lm_head: [V D]

fn f0(x: [b n D], s: [] = 1.5) -> [b n D]:
    return x * tanh(sum(x))

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = where(mean((x + p.b1), over=D) > 0.0, linear(relu(linear(x, p.w_up)) * linear(x, p.w_up), p.w_down), x)
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=10000.0, style="half", rotary_dims=Dh)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=500.0, style="half", rotary_dims=Dh)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    return x + x

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64) -> [b n D]:
    x = x + embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos, 1.5)
    x = (einsum(x, m.top.n1: b n D, D -> b n D) |> scale(3))
    return f0((x - mean(x)))
