# Not a language model: exported to Hugging Face only, its forward taking `x`.

dim D = 64
dim F = 256
dim C = 10

model Classifier:
    w1: [F D]
    b1: [F] = zeros
    w2: [C F]
    b2: [C] = zeros

@export(hf)
fn classify(m: Classifier, x: [b D]) -> [b C]:
    h = linear(x, m.w1, m.b1) |> gelu
    return linear(h, m.w2, m.b2) |> log_softmax(over=C)
