# The reference llama with every field and function renamed.
dim Vocab = 32000
dim Width = 4096
dim Heads = 32
dim KvHeads = 8
dim Rep = Heads / KvHeads
dim HeadW = Width / Heads
dim Hidden = 11008
dim Depth = 32

model SelfAttn:
    query: [Heads*HeadW Width]
    key: [KvHeads*HeadW Width]
    value: [KvHeads*HeadW Width]
    out: [Width Heads*HeadW]

model FeedForward:
    gate: [Hidden Width]
    up: [Hidden Width]
    down: [Width Hidden]

model Layer:
    pre_attn: [Width] = ones
    sa: SelfAttn
    pre_ff: [Width] = ones
    ff: FeedForward

model Decoder:
    tokens: [Vocab Width]
    stack: [Depth] Layer
    final_norm: [Width] = ones
    unembed: [Vocab Width]

fn attend_all(s: SelfAttn, h: [batch seq Width], where: [batch seq] i64) -> [batch seq Width]:
    qq = linear(h, s.query) |> rearrange(batch seq (Heads HeadW) -> batch Heads seq HeadW) |> rope(where, theta=500000.0)
    kk = linear(h, s.key) |> rearrange(batch seq (KvHeads HeadW) -> batch KvHeads seq HeadW) |> rope(where, theta=500000.0)
    vv = linear(h, s.value) |> rearrange(batch seq (KvHeads HeadW) -> batch KvHeads seq HeadW)
    kk = kk |> repeat(batch KvHeads seq HeadW -> batch (KvHeads Rep) seq HeadW)
    vv = vv |> repeat(batch KvHeads seq HeadW -> batch (KvHeads Rep) seq HeadW)
    ctx = scaled_dot_product_attention(qq, kk, vv, attn_mask=causal[seq seq])
    return ctx |> rearrange(batch Heads seq HeadW -> batch seq (Heads HeadW)) |> linear(s.out)

fn feed(f: FeedForward, h: [batch seq Width]) -> [batch seq Width]:
    return (silu(linear(h, f.gate)) * linear(h, f.up)) |> linear(f.down)

fn layer_step(l: Layer, h: [batch seq Width], where: [batch seq] i64) -> [batch seq Width]:
    h = h + attend_all(l.sa, rms_norm(h, l.pre_attn, over=Width, eps=1e-5), where)
    return h + feed(l.ff, rms_norm(h, l.pre_ff, over=Width, eps=1e-5))

@export(hf, vllm, gguf)
fn run(dec: Decoder, tok: [batch seq] Index[Vocab], where: [batch seq] i64) -> [batch seq Vocab]:
    h = embedding(tok, dec.tokens)
    for l in dec.stack:
        h = layer_step(l, h, where)
    return rms_norm(h, dec.final_norm, over=Width, eps=1e-5) |> linear(dec.unembed)
