# case: plain+s weights-seed=9992
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
    attn: Attn
    w_up: [F D]
    w_down: [D F]

model Root:
    layers: [L] Block

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = (linear(gelu_tanh(linear(x, p.w_up)) * linear(x, p.w_up), p.w_down) * tanh(mean(x, over=(n, D))))
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=Dh * 100)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=10000.0, style="half")
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    return x + x

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64, s: []) -> [b n D]:
    x = x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(arange(n), theta=100.0) |> rearrange(b H n Dh -> b n (H Dh))
    for layer in m.layers:
        x = block(layer, x, pos, H)
    x = ((x * tanh(sum(((einsum((x - mean(x)), log_softmax(x, over=n): b n D, b m D -> b m n) |> log_softmax(over=n) |> exp |> einsum((x - mean(x)): b m n, b m D -> b n D)))))))
    return x
