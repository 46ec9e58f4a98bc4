"""The serving-engine checks E3301-E3307 and E3313, run inside the analysis as the user
types (no numpy): `entry.py` is what the workspace calls; one module per family (token
axes: E3304, signature: E3301 and E3306, io_layers: E3302/E3303/E3305, attention,
tensor_parallel: E3307, gguf: E3313), their messages (`serving_messages.py`) and fixes
(`fixes.py`, `edits.py`)."""
