# case: plain weights-seed=38540
dim V = 24
dim D = 8
dim H = 2
dim Hkv = 1
dim G = H / Hkv
dim Dh = D / H
dim E = D / 2
dim L = 1

model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    attn: Attn
    half: [E D]

model Root:
    layers: [L] Block

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = x
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=1000 / s, style="half")
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=1 / (s + 1))
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = o
    return x + scale(concat(linear(x, p.half), linear(x, p.half), over=E), mean(x, over=D))

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64) -> [b n D]:
    x = x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(arange(n), theta=100.0) |> rearrange(b H n Dh -> b n (H Dh))
    for layer in m.layers:
        x = block(layer, x, pos, Dh / D)
    return (x * x) * tanh(sum((x - mean(x))))
