"""The server with its features: each feature module registers its handlers on the
server object it is given (`register(ls)`); this is the one place that knows them all,
so no feature module imports the server's module at run time, nor the other way round."""
from __future__ import annotations

from . import (actions, calls, completion, diagnostics, export, formatting, hover, inlay, navigation, references,
               semantic_tokens, settings, structure)
from .app import ShapeScriptServer

FEATURES = (settings, diagnostics, hover, inlay, navigation, references, formatting, structure, calls, completion,
            actions, export, semantic_tokens)


def create_server() -> ShapeScriptServer:
    ls = ShapeScriptServer()
    for module in FEATURES:
        module.register(ls)
    return ls
