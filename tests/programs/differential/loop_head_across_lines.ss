# case: lm weights-seed=0 target=hf
# Bug: a `for` header written across lines was copied raw into the generated code's
# "# line N:" comment, so its second line `else):` became Python (nested, a for/else that
# ran the inner loop once after the outer one: another model, max logit diff 6; here, code
# that does not parse). From shared/repro/security/04_loop_head_else.ss.
dim V   = 64
dim D   = 32
dim H   = 4
dim Hkv = 2
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 64
dim L   = 2

model Attention:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Mlp:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block:
    attn_norm: [D] = ones
    attn: Attention
    mlp_norm: [D] = ones
    mlp: Mlp

model Llama:
    embed: [V D]
    layers: [L] Block
    else: [L] Block
    norm: [D] = ones
    lm_head: [V D]

fn attention(a: Attention, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=500000.0)
    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=500000.0)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp(p: Mlp, x: [b n D]) -> [b n D]:
    return (silu(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block(blk: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

fn forward(m: Llama, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for outer in m.layers:
        x = block(outer, x, pos)
    for layer in (m.
    else):
        x = block(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
