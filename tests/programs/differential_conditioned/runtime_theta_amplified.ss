# case: plain+s weights-seed=12341 progen-seed=201377 target=hf
dim V = 24
dim D = 16
dim H = 2
dim Hkv = 1
dim G = H / Hkv
dim Dh = D / H
dim F = 8
dim L = 2

model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    attn: Attn
    w_up: [F D]
    w_down: [D F]

model Root:
    layers: [L] Block

fn f2(blk: Block, x: [b n D], s: []) -> [b n D]:
    x = x |> linear(blk.w_up) |> gelu_tanh |> linear(blk.w_down)
    return x

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = x
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=1000 / s, style="interleaved", scaling="linear", factor=2.0)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    return x + f2(p, s=3, x=x)

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64, s: []) -> [b n D]:
    for layer in m.layers:
        x = block(layer, x, pos, s + 0.5)
    x = sin(x)
    return x
