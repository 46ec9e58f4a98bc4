# case: plain+s weights-seed=62941 progen-seed=400709 target=hf
dim V = 24
dim D = 12
dim H = 2
dim Hkv = 2
dim G = H / Hkv
dim Dh = D / H
dim F = 8
dim E = D / 2
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
    sq: [D D]
    half: [E D]
    w_up: [F D]
    w_down: [D F]

model Root:
    embed: [V D]
    onehot: [D V]
    layers: [L] Block
    norm: [D] = ones
    top: Block
    lm_head: [V D]

fn f0(blk: Block, x: [p q D], s: []) -> [p q D]:
    h0 = x
    return ((x * 1 / H) |> rearrange(p q (H Dh) -> p q H Dh) |> softmax(over=Dh) |> rearrange(p q H Dh -> p q (H Dh)))

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = x
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=s * 1000, scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16, rotary_dims=2)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=3.0, scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16, rotary_dims=2)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=Dh / D)
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    h0 = o
    return x + ((x / (max(abs(x)) + 1.0)) |> rearrange(b n (H Dh) -> b n (Dh H)))

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64, s: []) -> [b n D]:
    x = x + linear(one_hot(ids), m.onehot)
    for layer in m.layers:
        x = block(layer, x, pos, s + 0.5)
    h0 = masked_fill(x, x > 1.0, 1.0)
    h1 = minimum(h0, 3)
    return (tanh(x) * tanh(mean(where((h1 < -0.5) or not (h1 < 0.5), h0, h0), over=D)))
