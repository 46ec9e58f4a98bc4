"""Importing weights: where an export's weights come from (a Hugging Face folder or a
`.gguf`, matched by role or by a weights map), their checks (E3310-E3316), dtypes and
random init. Run by the export pipeline (`export/run.py`), never by the checker."""
