# case: plain weights-seed=55128 progen-seed=200829 target=hf
dim V = 24
dim D = 16
dim H = 2
dim Hkv = 1
dim G = H / Hkv
dim Dh = D / H
dim L = 2

model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Block:
    attn: Attn

model Root:
    layers: [L] Block

fn pooled(x: [pb pn D]) -> [pb D]:
    h: [pb pn D] = tanh(x)
    return mean(h, over=pn) |> rms_norm(ones_d(), over=D)

fn ones_d() -> [D]:
    return sum(causal[D D] |> to(f32) |> rearrange(D e -> D e), over=e) / D

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = ((((x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(arange(n) + 1, theta=50.0) |> rearrange(b H n Dh -> b n (H Dh)))) ** 2))
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=500.0 + D, style="half", rotary_dims=Dh)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=s * 100 + Dh, style="interleaved", rotary_dims=Dh)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    return x + to(to(cos(x), f64), f32)

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64) -> [b n D]:
    x = x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(arange(n), theta=100.0) |> rearrange(b H n Dh -> b n (H Dh))
    for layer in m.layers:
        x = block(layer, x, pos, 0.5)
    h0 = x
    x = cos(where(where(x < 0.0, h0, 0.5) > h0, h0, (x * pooled(h0))))
    return x
