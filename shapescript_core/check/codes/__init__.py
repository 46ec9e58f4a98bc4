"""The language's codes, one module per code (as ruff keeps one per rule): each holds its
code's message builders, help and note texts, and says in its docstring where the check
itself lives (most are inside the type checker, check/function.py, builtins.py, ops.py,
patterns.py and env.py, and can't be split per code). `similar.py` is the "did you
mean" help and fix that several codes share.

Two modules hold a check of their own: `e0413.py` (a compile-time value at a call, over
what an exported function reaches) and `e3306_model_first.py` (the export's model first
parameter, a serving code whose sentence the compiler raises too: it sits here, below
compile/, for that). The syntax codes E0101-E0104 are in syntax/codes/, below this
layer; E0001 is `diagnostics.internal_error`; the serving codes are serving/e33xx_*.py.
"""
