# issue 20: scalar keywords given by parameters. The export must compute eps=0.5,
# theta=3.0 and scale=t (3.0) exactly as written, not the builtins' defaults.
dim V   = 64
dim D   = 32
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 48
dim L   = 2

model M:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]
    nw: [D] = ones

model Block:
    attn: M
    w_up: [F D]
    w_down: [D F]

model Lm:
    embed: [V D]
    layers: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn norm(x: [b n D], w: [D], e: []) -> [b n D]:
    return rms_norm(x, w, over=D, eps=e)

fn attn(m: M, x: [b n D], pos: [b n] i64, t: []) -> [b n D]:
    q = linear(x, m.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=t)
    k = linear(x, m.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=t)
    v = linear(x, m.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n], scale=t)
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(m.wo)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attn(blk.attn, norm(x, blk.attn.nw, 0.5), pos, 3.0)
    return x + linear(silu(linear(norm(x, blk.attn.nw, 1 / Dh), blk.w_up)), blk.w_down)

@export(hf, vllm)
fn forward(m: Lm, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=D / 1000) |> linear(m.lm_head)
