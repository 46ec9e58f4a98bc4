# A llama written another way than Hugging Face's: other names, keys and values fused
# into one `x @ W` param ([in out], rows (2 KvHeads HeadW)), gate and up fused the same
# way as (2 Hidden) in a `linear`, and interleaved rotary. A Hugging Face Llama checkpoint
# imports into it.
dim Vocab   = 300
dim Width   = 64
dim Heads   = 4
dim KvHeads = 2
dim Group   = Heads / KvHeads
dim HeadW   = Width / Heads
dim Hidden  = 128
dim Depth   = 2

model Layer:
    pre_attn: [Width] = ones
    query: [Width Heads*HeadW]
    kv: [Width 2*KvHeads*HeadW]
    out: [Width Heads*HeadW]
    pre_ffn: [Width] = ones
    gate_up: [2*Hidden Width]
    down: [Width Hidden]

model Decoder:
    tokens: [Vocab Width]
    blocks: [Depth] Layer
    final_norm: [Width] = ones
    head: [Vocab Width]

fn attend(p: Layer, h: [b n Width], at: [b n] i64) -> [b n Width]:
    q = (h @ p.query) |> rearrange(b n (Heads HeadW) -> b Heads n HeadW)
        |> rope(at, theta=500000.0, style="interleaved")
    k, v = (h @ p.kv) |> split(b n (2 KvHeads HeadW) -> b KvHeads n HeadW)
    k = k |> rope(at, theta=500000.0, style="interleaved") |> repeat(b KvHeads n HeadW -> b (KvHeads Group) n HeadW)
    v = v |> repeat(b KvHeads n HeadW -> b (KvHeads Group) n HeadW)
    o = scaled_dot_product_attention(q, k, v, attn_mask=causal[n n])
    return o |> rearrange(b Heads n HeadW -> b n (Heads HeadW)) |> linear(p.out)

fn ffn(p: Layer, h: [b n Width]) -> [b n Width]:
    gate, up = linear(h, p.gate_up) |> split(b n (2 Hidden) -> b n Hidden)
    return (silu(gate) * up) |> linear(p.down)

@export(hf, gguf)
fn logits(d: Decoder, toks: [b n] Index[Vocab], at: [b n] i64) -> [b n Vocab]:
    x = embedding(toks, d.tokens)
    for blk in d.blocks:
        x = x + attend(blk, rms_norm(x, blk.pre_attn, over=Width, eps=1e-5), at)
        x = x + ffn(blk, rms_norm(x, blk.pre_ffn, over=Width, eps=1e-5))
    return rms_norm(x, d.final_norm, over=Width, eps=1e-5) |> linear(d.head)
