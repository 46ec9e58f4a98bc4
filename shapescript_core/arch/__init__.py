"""Architecture knowledge, neutral of any target: which families exist, what tensors they
have, and how a function's op graph is recognised as one of them.

- `archs`: the table of families, one `Family` entry each (its E3313 words, its roles,
  rope style, window and embedding scale, the query scale llama.cpp assumes, the Hugging
  Face model types read as it and their layout quirks, what llama.cpp assumes when a GGUF
  file doesn't say): recognising a family means one entry there;
- `roles`: the tensors' roles, a vocabulary of our own (`attn_q`, `ffn_norm`...), the
  name of a tensor by its role (`blk.0.attn_q.weight`) and the words the import's
  diagnostics use for it. Each target spells them its own way: gguf-py's names live in
  `gguf_format/names.py` only;
- `match` (with `sublayers`, `projections`, `departure`): the matcher, from the traced op
  graph to a `plan.GGUFPlan`: the family, its hyper-parameters and, per tensor, its role,
  the param it comes from and the layout steps on the way (`plan`), or the first
  `Departure` from every family (E3313);
- `layout`: the layout steps themselves on arrays (numpy, loaded only by the writers and
  the importer).

No numpy or gguf on the checker's path: `match` and what it imports load neither, and
nothing here imports gguf. The GGUF writer, the weights importer (by role), the E3313
check and the tensor-parallel plan read it.
"""
