# case: plain+s weights-seed=0 target=hf
# Bug: a number passed to a scalar parameter `s: []` reached the callee as a Python
# number, but the callee's builtins on it were lowered as tensor operations: `torch.sqrt(s)`
# raised TypeError when the export ran. Shrunk from progen seed 13.
dim V = 16
dim D = 12
dim H = 2
dim Dh = D / H
dim L = 1

model Attn:
    wq: [H*Dh D]

model Block:
    b1: [D] = zeros

model Root:
    layers: [L] Block

fn f0(x: [bb t D], s: []) -> [bb t D]:
    return x

fn block(p: Block, x: [b n D], pos: [b n] i64, s: []) -> [b n D]:
    h = sqrt(s)
    return x

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64, s: []) -> [b n D]:
    for layer in m.layers:
        x = block(layer, x, pos, H)
    h0 = x
    return h0
