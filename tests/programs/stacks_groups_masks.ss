dim V = 100
dim D = 64
dim H = 4
dim Dh = D / H
dim L = 3

model Blk:
    w: [D D]

model M:
    emb: [V D]
    layers: [L] Blk

fn noargs() -> [D]:
    return arange(D) |> to(f32)

fn three(a: [b D], c: [b D], e: [D D]) -> [b D]:
    return einsum(a, c, e: b D, b D, D F -> b F) |> rearrange(b D -> b D)

fn run_stack(ls: [L] Blk, x: [b n D]) -> [b n D]:
    for l in ls:
        x = linear(x, l.w)
    return x

fn misc(m: M, ids: [b n] Index[V], x: [b n D], mask: [b n] bool, w: [D D]) -> [b n D]:
    y: [b n D] = x
        # a comment inside a chain
        |> relu

        |> neg
    h = one_hot(ids) @ m.emb
    k = where(mask and not (sum(x, over=D) > 1.0), 1.0, 0.0)
    z = y * D + x / sqrt(Dh) - .5 * h * k
    u = x |> rearrange(b n (2 d) -> b n 2 d) |> rearrange(b n 2 d -> b n (2 d))
    t = sum(x, over=(n, D))
    r = run_stack(m.layers, z + u) * t
    return three(r |> rearrange(b n D -> (b n) D), x |> rearrange(b n D -> (b n) D), w)
        |> rearrange((b n) D -> b n D)
