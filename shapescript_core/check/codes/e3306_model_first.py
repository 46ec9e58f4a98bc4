"""E3306: an exported function takes the model first. Its check (the first of the export
checks, serving/entry.py), its message and help, and its fix (the model moved first,
with the calls in the file and in the files that import it rewritten; the language
server widens it to the workspace folder: `model_first_at`).

Why here, in check/codes/ and not in serving/ with the other export checks: the compiler
(compile/plan.py, `make_plan`), which sits below serving/, refuses a function without the
model first in the same words, as does the weights' resolution (weights/specs.py); the
sentence is written once, here, where all of them can import it. Nothing here needs more
than the checker's types, the syntax tree and files.py.
"""
from __future__ import annotations

from ...diagnostics import Edit, Fix, error
from ...files import walk_files
from ...syntax import ast as A
from ..types import ModelT


def must_take_the_model_first(fn: str) -> str:
    """The sentence's core, which the compiler raises as it is (compile/plan.py)."""
    return f"`{fn}` must take the model first"


def message(fn: str) -> str:
    """The diagnostic's message; the weights' resolution raises it too (weights/specs.py)."""
    return f"{must_take_the_model_first(fn)}, to be exported as one"


HELP = "Make the model the first parameter."


def check_model_first(prog, item, sig):
    """E3306, or None when the first parameter is a model."""
    if sig.params and isinstance(sig.params[0].type, ModelT):
        return None
    model = next((p for p in sig.params if isinstance(p.type, ModelT)), None)
    if model is None:
        label = "no parameter is a model" if sig.params else "no parameters"
    else:
        label = f"`{model.name}` is the model, but `{sig.params[0].name}` comes first"
    d = error("E3306", message(item.name), item.span(item.params_pos), label).help(HELP)
    if model is not None:
        f = model_first(prog, item, sig, model)
        if f is not None:
            d.fix(f)
    return d


# ---------------------------------------------------------------- the fix
def model_first(prog, item, sig, model) -> Fix | None:
    """The fix as the checks carry it: the call sites in the function's file and in the
    open files that import it (the server widens it to the workspace: model_first_at)."""
    return _model_first(prog.db, item, model, prog.db.importers(item.path))


def model_first_at(db, path: str, offset: int, roots) -> Fix | None:
    """The E3306 fix for the function whose parameter list holds `offset` in `path`,
    rewriting the calls in every `.ss` file under `roots` (the editor's workspace
    folders) that imports `path`, directly or not, open in the editor or not."""
    a = db.analyze(path)
    if a is None:
        return None
    item = next((it for it in a.own.values() if isinstance(it, A.FnItem)
                 and it.offset + it.params_pos[0] <= offset <= it.offset + it.params_pos[1]), None)
    sig = a.env.sig(item.name) if item is not None else None
    if sig is None or sig.item is not item:
        return None
    model = next((p for p in sig.params if isinstance(p.type, ModelT)), None)
    if model is None or (sig.params and sig.params[0] is model):
        return None
    importers = set(db.importers(path)) | set(workspace_importers(db, path, roots))
    return _model_first(db, item, model, sorted(importers))


def _model_first(db, item, model, importers) -> Fix | None:
    names = [p.name for p in item.params]
    if model.name not in names or len(set(names)) != len(names):
        return None
    k = names.index(model.name)
    order = [k] + [i for i in range(len(names)) if i != k]
    edits = [Edit(item.span(item.params[i].pos), item.src(item.params[j].pos))
             for i, j in enumerate(order) if i != j]
    for fitem in _callers(db, item, importers):
        for s in A.walk_stmts(fitem.body):
            root = s.iter if isinstance(s, A.For) else s.value
            for node in A.walk_expr(root):
                if isinstance(node, A.Call) and isinstance(node.func, A.Name) and node.func.id == item.name:
                    edits += _reorder_call(fitem, node, names, k)
    return Fix.safe(f"Make `{model.name}` the first parameter", *edits)


def _callers(db, item, importers) -> list:
    """Function items that call `item` by its name: in its file and in the importers."""
    out = []
    for p in [item.path] + [p for p in importers if p != item.path]:
        f = db.file(p)
        if f is None:
            continue
        own = {it.name for it in f.items if it.name is not None}
        if p != item.path and item.name in own:
            continue  # that file's own function of the same name
        out += [it for it in f.items if isinstance(it, A.FnItem)]
    return out


def workspace_importers(db, path: str, roots) -> list:
    """The `.ss` files under `roots` that import `path`, directly or through other files;
    read from disk where they are not open. The walk is `files.walk_files`: special files
    and symlinks out of the roots skipped, bounded in entries and time."""
    path = db.norm(path)
    out = []
    for p in walk_files(roots or (), ".ss"):
        p = db.norm(p)
        if p != path and path in db.import_closure(p):
            out.append(p)
    return out


def _reorder_call(fitem, call: A.Call, names: list, k: int) -> list:
    positional = [a for a in call.args if a.name is None]
    keywords = [a for a in call.args if a.name is not None]
    if len(positional) > len(names):
        return []
    bound = dict(zip(names, positional))
    model_arg = bound.get(names[k]) or next((a for a in keywords if a.name == names[k]), None)
    if model_arg is None:
        return []
    new = [model_arg] + [bound[p] for p in names if p in bound and p != names[k]]
    new += [a for a in keywords if a is not model_arg]
    positional_ids = {id(a) for a in new[:len(new) - len([a for a in keywords if a is not model_arg])]}

    def text(a):
        return fitem.src(a.value.pos) if id(a) in positional_ids else fitem.src(a.pos)

    if call.piped and new[0] is not call.args[0]:
        fname = fitem.src(call.func.pos)
        return [Edit(fitem.span(call.pos), f"{fname}({', '.join(text(a) for a in new)})")]
    slots = call.args[1:] if call.piped else call.args
    olds = new[1:] if call.piped else new
    return [Edit(fitem.span(s.pos), text(a)) for s, a in zip(slots, olds) if s is not a or text(a) != fitem.src(s.pos)]
