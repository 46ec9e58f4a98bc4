# case: plain+s weights-seed=31053 progen-seed=405167 target=hf
dim V = 16
dim D = 12
dim H = 2
dim Hkv = 1
dim Dh = D / H
dim F = 20
dim L = 2

model Attn:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    sinks: [H]

model Block:
    b1: [D] = zeros
    attn: Attn
    sq: [D D]
    w_up: [F D]
    w_down: [D F]

model Root:
    embed: [V D]
    layers: [L] Block

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = scale(log_softmax(x, over=D), mean(log_softmax(x, over=n), over=D))
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=D * D, scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=Dh * 100, style="interleaved", scaling="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_positions=16)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=s / sqrt(Dh), sinks=p.attn.sinks)
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    h0 = sin(linear(silu(linear(o, p.w_up)) * linear(linear(h, p.sq, p.b1), p.w_up), p.w_down))
    x = h0
    return x

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64, s: []) -> [b n D]:
    x = x + embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos, 1 / H)
    return x
