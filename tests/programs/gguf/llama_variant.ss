# A llama written another way: other names for everything, the block split into other
# helpers (the norm inside them, keys and values in their own functions), SwiGLU as
# up * silu(gate). The GGUF export must still see a `llama`.
dim Vocab   = 256
dim Width   = 256
dim Heads   = 4
dim KvHeads = 2
dim Group   = Heads / KvHeads
dim HeadW   = Width / Heads
dim Hidden  = 512
dim Depth   = 2

model SelfAttn:
    query: [Heads*HeadW Width]
    key: [KvHeads*HeadW Width]
    value: [KvHeads*HeadW Width]
    out: [Width Heads*HeadW]

model Layer:
    pre_attn: [Width] = ones
    sa: SelfAttn
    pre_ffn: [Width] = ones
    gate: [Hidden Width]
    up: [Hidden Width]
    down: [Width Hidden]

model Decoder:
    tokens: [Vocab Width]
    blocks: [Depth] Layer
    final_norm: [Width] = ones
    head: [Vocab Width]

fn normed(x: [b n Width], w: [Width]) -> [b n Width]:
    return rms_norm(x, w, over=Width, eps=1e-5)

fn keys(p: SelfAttn, h: [b n Width], at: [b n] i64) -> [b Heads n HeadW]:
    k = h |> linear(p.key) |> rearrange(b n (KvHeads HeadW) -> b KvHeads n HeadW) |> rope(at, theta=500000.0)
    return k |> repeat(b KvHeads n HeadW -> b (KvHeads Group) n HeadW)

fn values(p: SelfAttn, h: [b n Width]) -> [b Heads n HeadW]:
    v = h |> linear(p.value) |> rearrange(b n (KvHeads HeadW) -> b KvHeads n HeadW)
    return v |> repeat(b KvHeads n HeadW -> b (KvHeads Group) n HeadW)

fn attend(p: SelfAttn, x: [b n Width], w: [Width], at: [b n] i64) -> [b n Width]:
    h = normed(x, w)
    q = h |> linear(p.query) |> rearrange(b n (Heads HeadW) -> b Heads n HeadW) |> rope(at, theta=500000.0)
    o = scaled_dot_product_attention(q, keys(p, h, at), values(p, h), attn_mask=causal[n n])
    return o |> rearrange(b Heads n HeadW -> b n (Heads HeadW)) |> linear(p.out)

fn ffn(l: Layer, x: [b n Width]) -> [b n Width]:
    h = normed(x, l.pre_ffn)
    return (linear(h, l.up) * silu(linear(h, l.gate))) |> linear(l.down)

@export(gguf)
fn logits(d: Decoder, toks: [b n] Index[Vocab], at: [b n] i64) -> [b n Vocab]:
    x = embedding(toks, d.tokens)
    for blk in d.blocks:
        x = x + attend(blk.sa, x, blk.pre_attn, at)
        x = x + ffn(blk, x)
    return normed(x, d.final_norm) |> linear(d.head)
