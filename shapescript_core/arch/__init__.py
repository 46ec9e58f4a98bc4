"""Architecture knowledge, neutral of any target: which families exist and how a
function's op graph is recognised as one of them.

- `archs`: the table of families (what each has: biases, norms, rope style, caps);
- `match` (with `sublayers`, `projections`, `departure`): the matcher, from the traced op
  graph to a `plan.GGUFPlan`: the family, its hyper-parameters and,
  per tensor, the param it comes from and the layout steps on the way (`plan`), or the
  first `Departure` from every family (E3313);
- `layout`: the layout steps themselves on arrays (numpy, loaded only by the writers and
  the importer);
- `roles` and `gguf_names`: the tensors' roles, today llama.cpp's names from gguf-py
  (`blk.0.attn_q.weight`), and the GGUF metadata keys.

No numpy or gguf on the checker's path: `match` and what it imports load neither.
The GGUF writer, the weights importer (by role), the E3313 check and the tensor-parallel
plan read it.
"""
