"""Generate large ShapeScript files for benchmarks: many llama-like models and functions."""
from __future__ import annotations

HEAD = """dim V   = 32000
dim D   = 4096
dim H   = 32
dim Hkv = 8
dim G   = H / Hkv
dim Dh  = D / H
dim F   = 11008
dim L   = 32
"""

BLOCK = """
# Attention weights of copy {i}.
model Attention{i}:
    wq: [H*Dh D]
    wk: [Hkv*Dh D]
    wv: [Hkv*Dh D]
    wo: [D H*Dh]

model Mlp{i}:
    w_gate: [F D]
    w_up: [F D]
    w_down: [D F]

model Block{i}:
    attn_norm: [D] = ones
    attn: Attention{i}
    mlp_norm: [D] = ones
    mlp: Mlp{i}

model Llama{i}:
    embed: [V D]
    layers: [L] Block{i}
    norm: [D] = ones
    lm_head: [V D]

fn attention{i}(a: Attention{i}, x: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(x, a.wq) |> rearrange(b n (H Dh) -> b H n Dh) |> rope(pos, theta=500000.0)
    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=500000.0)
    v = linear(x, a.wv) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)
    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(a.wo)

fn mlp{i}(p: Mlp{i}, x: [b n D]) -> [b n D]:
    return (silu(linear(x, p.w_gate)) * linear(x, p.w_up)) |> linear(p.w_down)

fn block{i}(blk: Block{i}, x: [b n D], pos: [b n] i64) -> [b n D]:
    x = x + attention{i}(blk.attn, rms_norm(x, blk.attn_norm, over=D, eps=1e-5), pos)
    return x + mlp{i}(blk.mlp, rms_norm(x, blk.mlp_norm, over=D, eps=1e-5))

fn hand_attention{i}(x: [b n D], w_qkv: [D 3*D], w_o: [D D]) -> [b n D]:
    q, k, v = x @ w_qkv
        |> split(b n (3 H Dh) -> b H n Dh)
    att = einsum(q, k: b H n Dh, b H m Dh -> b H n m)
        |> scale(1 / sqrt(Dh))
        |> masked_fill(!causal[n m], -inf)
        |> softmax(over=m)
    return einsum(att, v: b H n m, b H m Dh -> b H n Dh)
        |> rearrange(b H n Dh -> b n (H Dh))
        |> matmul(w_o)

fn forward{i}(m: Llama{i}, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block{i}(layer, x, pos)
    return rms_norm(x, m.norm, over=D, eps=1e-5) |> linear(m.lm_head)
"""


def generate(lines: int = 10_000) -> str:
    parts = [HEAD]
    n = len(HEAD.splitlines())
    i = 0
    per = len(BLOCK.splitlines())
    while n + per <= lines:
        parts.append(BLOCK.format(i=i))
        n += per
        i += 1
    return "".join(parts)


def body_edit_offsets(text: str, count: int) -> list:
    """Offsets of `1e-5` literals inside function bodies, spread over the file."""
    import re
    offs = [m.start() + len("eps=1e-") for m in re.finditer(r"eps=1e-5", text)]
    step = max(1, len(offs) // count)
    return offs[::step][:count]
