# A GPT-2 written with separate query, key and value projections (gpt2 in llama.cpp has
# one fused attn_qkv: the export stacks their rows) and no bias on the attention's
# output projection (zeros are written: gpt2 has one).
dim V  = 256
dim D  = 256
dim H  = 4
dim Dh = D / H
dim P  = 64
dim L  = 2

model Block:
    ln1_w: [D] = ones
    ln1_b: [D] = zeros
    wq: [D D]
    bq: [D] = zeros
    wk: [D D]
    bk: [D] = zeros
    wv: [D D]
    bv: [D] = zeros
    w_o: [D D]
    ln2_w: [D] = ones
    ln2_b: [D] = zeros
    w_fc: [4*D D]
    b_fc: [4*D] = zeros
    w_proj: [D 4*D]
    b_proj: [D] = zeros

model Gpt:
    wte: [V D]
    wpe: [P D] = normal(0.01)
    blocks: [L] Block
    lnf_w: [D] = ones
    lnf_b: [D] = zeros

fn heads(x: [b n D]) -> [b H n Dh]:
    return x |> rearrange(b n (H Dh) -> b H n Dh)

fn block(p: Block, x: [b n D]) -> [b n D]:
    h = layer_norm(x, p.ln1_w, p.ln1_b, over=D)
    q = heads(linear(h, p.wq, p.bq))
    k = heads(linear(h, p.wk, p.bk))
    v = heads(linear(h, p.wv, p.bv))
    a = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n]) |> rearrange(b H n Dh -> b n (H Dh))
    x = x + linear(a, p.w_o)
    h = layer_norm(x, p.ln2_w, p.ln2_b, over=D)
    return x + (linear(h, p.w_fc, p.b_fc) |> gelu_tanh |> linear(p.w_proj, p.b_proj))

@export(gguf)
fn forward(m: Gpt, ids: [b n] Index[V], pos: [b n] Index[P]) -> [b n V]:
    x = embedding(ids, m.wte) + embedding(pos, m.wpe)
    for blk in m.blocks:
        x = block(blk, x)
    return layer_norm(x, m.lnf_w, m.lnf_b, over=D) |> linear(m.wte)
