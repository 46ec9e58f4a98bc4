"""The quick fixes of E3301, E3302, E3304 (the mask), E3305 and E3306, as data.

Hand-written attention (E3304) is recognised in hand_attention.py.
"""
from __future__ import annotations

from ..check.types import DTypeValue, ModelT, TensorT
from ..diagnostics import Edit, Fix
from ..files import walk_files
from ..syntax import ast as A
from . import edits as ED
from .places import file_span, stmt_of


# ---------------------------------------------------------------- E3306
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


# ---------------------------------------------------------------- E3301
def give_default(item, p) -> Fix | None:
    t = p.type
    if not isinstance(t, TensorT) or t.axes:
        return None
    d = t.dtype
    literal = "false" if d.name == "bool" else "0" if d.is_int else "0.0"
    return Fix.safe(f"Give `{p.name}` a default", Edit.insertion(item.span((p.node.pos[1], p.node.pos[1])),
                                                                   f" = {literal}"))


# ---------------------------------------------------------------- E3302
def move_cast(res, env, value, linear) -> Fix | None:
    """`linear(h, m.W) |> to(dt)` → `h |> to(dt) |> linear(m.W)`: the same when W is dt."""
    info = res.calls.get(id(value))
    if info is None or info.target != "to" or info.arg_map.get("x") is None:
        return None
    if info.arg_map["x"].value is not linear or info.arg_map.get("dtype") is None:
        return None
    dt = res.types.get(id(info.arg_map["dtype"].value))
    linfo = res.calls[id(linear)]
    x, w = linfo.arg_map.get("x"), linfo.arg_map.get("W")
    wt = res.types.get(id(w.value)) if w is not None else None
    if not isinstance(dt, DTypeValue) or not isinstance(wt, TensorT) or wt.dtype != dt.dtype or x is None:
        return None
    item = res.item
    xs, ws, ds = item.src(x.value.pos), item.src(w.value.pos), item.src(info.arg_map["dtype"].value.pos)
    new = (f"{xs} |> to({ds}) |> linear({ws})" if linear.piped else f"linear(to({xs}, {ds}), {ws})")
    return Fix.safe("Cast before the output layer", Edit(item.span(value.pos), new))


# ---------------------------------------------------------------- E3304: the mask
def causal_mask(prog, ctx, call, info, xs: str) -> Fix | None:
    item = ctx.item
    text = f"causal[{xs} {xs}]"
    mask = info.arg_map.get("attn_mask")
    prog_edits = []
    if mask is not None:
        prog_edits.append(Edit(item.span(mask.value.pos), text))
        if isinstance(mask.value, A.Name):
            defs = ED.assignments(item, mask.value.id)
            if len(defs) == 1 and isinstance(defs[0], A.Assign) and len(ED.name_uses(item, mask.value.id)) == 1:
                prog_edits += ED.delete_statements(prog, item, defs)
    else:
        v = info.arg_map.get("v")
        if v is None or (call.piped and v is call.args[0]):
            return None
        prog_edits.append(Edit.insertion(item.span((v.pos[1], v.pos[1])), f", attn_mask={text}"))
    return Fix.safe("Use the causal mask", *prog_edits)


# ---------------------------------------------------------------- E3305
def repeat_kv(prog, site) -> Fix | None:
    ctx = site.ctx
    item, env = ctx.item, ctx.env
    qt, kt, vt = site.types
    qa, ka, va = site.args
    if not all(isinstance(t, TensorT) and len(t.axes) == 4 for t in (qt, kt, vt)):
        return None
    if [a.size for a in kt.axes] != [a.size for a in vt.axes]:
        return None
    if any(qt.axes[i].size != kt.axes[i].size for i in (0, 2, 3)) or qt.axes[1].size == kt.axes[1].size:
        return None
    if not (isinstance(ka.value, A.Name) and isinstance(va.value, A.Name)):
        return None
    heads, kv_heads = qt.axes[1].size, kt.axes[1].size
    if not all(env.dims.is_dim(s) for s in heads.symbols() | kv_heads.symbols()):
        return None
    ratio = heads / kv_heads
    value = ratio.evaluate(env.dims.values)
    if value is not None and (value.denominator != 1 or value <= 1):
        return None
    h_name, kv_name = env.dims.render(heads), env.dims.render(kv_heads)
    axes = [env.dims.render(a.name) for a in kt.axes]
    if not all(ED.is_ident(s) for s in axes + [h_name, kv_name]):
        return None
    found = stmt_of(item.body, site.call.pos)
    if found is None:
        return None
    stmt, body = found
    names = [ka.value.id] + ([va.value.id] if va.value.id != ka.value.id else [])
    for n in names:
        if not _defined_before(item, body, stmt, n):
            return None
        if any(u.pos[0] > stmt.pos[1] for u in ED.name_uses(item, n)):
            return None
    text = ED.file_text(prog, item)
    edits = []
    g_name = env.dims.name_of(ratio)
    if g_name is None:
        g_name = _fresh_dim_name(prog, text, env)
        decl = _declare_dim(prog, item, env, g_name, f"{h_name} / {kv_name}", (h_name, kv_name))
        if decl is None:
            return None
        edits.append(decl)
    start = item.offset + stmt.pos[0]
    indent = ED.indent_at(text, start)
    left = " ".join(axes)
    right = " ".join(f"({kv_name} {g_name})" if i == 1 else s for i, s in enumerate(axes))
    lines = "".join(f"{indent}{n} = {n} |> repeat({left} -> {right})\n" for n in names)
    edits.append(Edit(file_span(item.path, ED.line_start(text, start), ED.line_start(text, start)), lines))
    return Fix.safe(f"Repeat keys and values to {h_name} heads", *edits)


def _defined_before(item, body, stmt, name: str) -> bool:
    idx = body.index(stmt)
    for s in body[:idx]:
        if isinstance(s, A.Assign) and s.target == name:
            return True
        if isinstance(s, A.TupleAssign) and any(n == name for n, _ in s.targets):
            return True
    return body is item.body and any(p.name == name for p in item.params)


def _fresh_dim_name(prog, text: str, env) -> str:
    for cand in ["G"] + [f"G{i}" for i in range(2, 20)]:
        if not ED.used_word(text, cand) and not env.dims.is_dim(cand):
            return cand
    return "Grp"


def _declare_dim(prog, item, env, name: str, value: str, after: tuple):
    """An insertion of `dim name = value`, after the latest of the dims it uses in item's file."""
    f = prog.db.file(item.path)
    if f is None:
        return None
    dims = [it for it in f.items if isinstance(it, A.DimItem)]
    anchors = [it for it in dims if it.name in after]
    anchor = max(anchors, key=lambda it: it.offset) if anchors else (dims[-1] if dims else None)
    text = f.text
    if anchor is None:
        at = 0
        first = ""
    else:
        at = ED.line_end(text, anchor.offset + anchor.pos[1] - 1) if anchor.pos[1] > 0 else anchor.offset
        first = text[anchor.offset:ED.line_end(text, anchor.offset)]
    eq = first.find("=")
    width = max(len(name), eq - len("dim ") - 1) if first.startswith("dim ") and eq > 0 else len(name)
    return Edit(file_span(item.path, at, at), f"dim {name.ljust(width)} = {value}\n")
