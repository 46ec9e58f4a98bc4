# Pythia (GPT-NeoX): attention and the MLP side by side, each reading a LayerNorm of its
# own (use_parallel_residual); q, k and v (one projection in the checkpoint, read into three
# by the importer); a rope over the
# first quarter of each head's features (spec v0.3's rotary_dims: transformers'
# partial_rotary_factor 0.25); biases on every projection; exact GELU; an output layer of
# its own. Dims are Pythia-160M's. Exported for transformers, vLLM and llama.cpp (its
# gptneox, whose GELU is the tanh approximation: docs/serving-engines.md).

dim V  = 50304
dim D  = 768
dim H  = 12
dim Dh = D / H
dim F  = 3072
dim L  = 12

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
    b_o: [D] = zeros
    ln2_w: [D] = ones
    ln2_b: [D] = zeros
    w_fc: [F D]
    b_fc: [F] = zeros
    w_proj: [D F]
    b_proj: [D] = zeros

model Pythia:
    embed: [V D]
    layers: [L] Block
    lnf_w: [D] = ones
    lnf_b: [D] = zeros
    head: [V D]

fn attention(p: Block, h: [b n D], pos: [b n] i64) -> [b n D]:
    q = linear(h, p.wq, p.bq)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=10000.0, rotary_dims=16)
    k = linear(h, p.wk, p.bk)
        |> rearrange(b n (H Dh) -> b H n Dh)
        |> rope(pos, theta=10000.0, rotary_dims=16)
    v = linear(h, p.wv, p.bv) |> rearrange(b n (H Dh) -> b H n Dh)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b H n Dh -> b n (H Dh)) |> linear(p.w_o, p.b_o)

fn mlp(p: Block, h: [b n D]) -> [b n D]:
    return linear(h, p.w_fc, p.b_fc) |> gelu |> linear(p.w_proj, p.b_proj)

fn block(p: Block, x: [b n D], pos: [b n] i64) -> [b n D]:
    a = attention(p, layer_norm(x, p.ln1_w, p.ln1_b, over=D, eps=1e-5), pos)
    return x + a + mlp(p, layer_norm(x, p.ln2_w, p.ln2_b, over=D, eps=1e-5))

@export(hf, vllm, gguf)
fn forward(m: Pythia, ids: [b n] Index[V], pos: [b n] i64) -> [b n V]:
    x = embedding(ids, m.embed)
    for layer in m.layers:
        x = block(layer, x, pos)
    return layer_norm(x, m.lnf_w, m.lnf_b, over=D, eps=1e-5) |> linear(m.head)
