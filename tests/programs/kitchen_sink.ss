# A kitchen-sink program that must check clean.
dim V = 1000
dim D = 64
dim H = 4
dim Dh = D / H
dim L = 2
dim P = 128

model Layer:
    w: [D D]
    b: [D] = zeros
    g: [D] = normal(0.02)

model Net:
    emb: [V D]
    pos_emb: [P D]
    layers: [L] Layer
    head: [V D]

fn layer(p: Layer, x: [b n D], temp: f32 = 1.0) -> [b n D]:
    h: [b n D] = linear(x, p.w, p.b) |> gelu_tanh
    gate = sigmoid(h) * p.g
    y = where(h > 0.0, h, -h) ** 2
    z = h / D + y * (1 / sqrt(Dh)) - gate
    s = z |> rearrange(b n (H Dh) -> b H n Dh)
    t = einsum(s, s: b H n Dh, b H m Dh -> b H n m) |> scale(temp) |> softmax(over=m)
    u = einsum(t, s: b H n m, b H m Dh -> b H n Dh) |> rearrange(b H n Dh -> b n (H Dh))
    c = concat(u, x, over=D) |> rearrange(b n (two D) -> b n two D) |> mean(over=two)
    return to(c, bf16) |> to(f32)

fn pick(logits: [b n V]) -> [b n] Index[V]:
    return argmax(logits, over=V)

fn run(m: Net, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.emb) + embedding(pos, m.pos_emb)
    for l in m.layers:
        x = layer(l, x, temp=0.5)
    oh = one_hot(ids) |> sum(over=V)
    x = x * oh
    q = x |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, style="interleaved")
    o = scaled_dot_product_attention(q, q, q, attn_mask=causal[n n], scale=0.1)
    x = x + (o |> rearrange(b H n Dh -> b n (H Dh)))
    mx = max(x, over=D)
    _unused = mx
    return linear(x, m.head)
