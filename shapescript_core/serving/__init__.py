"""The serving-engine checks, run inside the analysis as the user types (no numpy):
`entry.py` is what the workspace calls, and says their order. One module per code, named
by it, holds that code's check, its messages, help and notes, and its fix:

- e3301_signature.py: a forward function a serving engine can run (its signature);
- e3302_output.py: the logits straight from the output layer;
- e3303_tables.py: the token ids looked up once, the embedding and output tables read
  nowhere else;
- e3304_token_axes.py: nothing mixes the token axes (the flow; its rules, values and the
  fix for hand-written attention in e3304_rules.py, e3304_values.py and
  e3304_hand_attention.py);
- e3305_attention.py: every attention of one shape, [b H n Dh];
- e3307_tensor_parallel.py: a model vLLM can split N ways;
- e3313_gguf.py: a model one of llama.cpp's architectures runs.

E3306 (the model first) and E0413 at a call are checked here too (entry.py), but their
modules are check/codes/e3306_model_first.py and check/codes/e0413.py: the checker and the
compiler, below this layer, word them as well. Shared helpers: places.py (where a
diagnostic goes), edits.py (text edits for the fixes)."""
