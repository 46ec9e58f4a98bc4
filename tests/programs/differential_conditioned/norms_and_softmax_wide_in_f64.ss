# case: lm weights-seed=50418 progen-seed=404932 target=hf
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

fn f0(blk: Block, x: [bb t D], s: []) -> [bb t D]:
    x = (((exp(tanh(x)) |> rearrange(bb t D -> bb D t) |> rms_norm(blk.n1, over=D, eps=D / 1000) |> rearrange(bb D t -> bb t D))) |> rearrange(bb t (H Dh) -> bb t (Dh H)))
    return x

fn f1(x: [bb t D]) -> [bb t Dh]:
    a0, c0 = (to(to((x |> rearrange(bb t (H Dh) -> bb t (Dh H))), f64), f32)) |> split(bb t (2 E) -> bb t E)
    x = concat(c0, a0, over=E)
    return log(abs(where((x < -0.5) or not (x < 0.5), x, x)) + 1.0) |> rearrange(bb t (H Dh) -> bb t H Dh) |> sum(over=H)

fn f2(x: [p q D], s: []) -> [p q D]:
    h0 = einsum(x, (x * tanh(sum(x, over=D))): p q D, p q D -> p q D)
    h0 = to(to(where(mean(softmax(h0, over=D), over=D) > 0.0, (h0 ** 2), (-h0)), f64), f32)
    return (cos(h0) * to(to(h0, f64), f32))

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = x
    q = linear(h, p.attn.wq) |> rearrange(b n (H Dh) -> b H n Dh)
    k = linear(h, p.attn.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    v = linear(h, p.attn.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=s, softcap=3.0)
    o = o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.attn.wo)
    x = x + o
    o = ((linear(relu(linear(rms_norm(h, p.n1, over=D, eps=s * s), p.w_up)) * linear((h |> rearrange(b n (H Dh) -> b H n Dh) |> rearrange(b H n Dh -> b n (H Dh))), p.w_up), p.w_down)) |> rearrange(b n (H Dh) -> b n (Dh H)))
    return x + (layer_norm(((x |> f2(0.5))), p.n1, p.b1, over=D, eps=s))

@export(hf, vllm)
fn forward(m: Root, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    x = concat(linear(f0(m.top, x, 1 / H), m.top.half), linear(concat(linear(x, m.top.half), linear(x, m.top.half), over=E), m.top.half), over=E)
    for layer in m.layers:
        x = block(layer, x, pos, H)
    return rms_norm(x, m.norm, over=D, eps=1e-6) |> linear(m.lm_head)
