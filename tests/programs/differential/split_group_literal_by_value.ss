# case: plain weights-seed=0 target=hf
# Bug (checker): a pattern group with a literal was compared with its axis by symbols only:
# `split(b n (2 Dh) -> b n Dh)` on [b n D] with D = 8, H = 2, Dh = D / H was E0406 "group
# (2 Dh) is 8, but axis 3 is 8", where LANGUAGE.md §3.1 compares such groups by the dims'
# values. Found writing the evaluator's tests; the export must compute it as the evaluator.
dim V = 16
dim D = 8
dim H = 2
dim Dh = D / H

model Root:
    w: [D D]

@export(hf)
fn forward(m: Root, x: [b n D], ids: [b n] Index[V], pos: [b n] i64) -> [b n 2*Dh]:
    a, c = linear(x, m.w) |> split(b n (2 Dh) -> b n Dh)
    return concat(c * 2.0, tanh(a), over=Dh)
