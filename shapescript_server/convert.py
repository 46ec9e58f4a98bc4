"""Every conversion between the core's plain values and LSP types, as free functions
named after what they produce (rust-analyzer's to_proto / from_proto).

Positions are UTF-16 code units, as LSP requires; the core's offsets are code points.
`lines_for(path)` gives a file's `LineIndex`, `uri_for(path)` its URI and
`version_for(uri)` the version of an open document (None when it is not open).
"""
from __future__ import annotations

from typing import Callable, Optional

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import default_converter

from shapescript_core.diagnostics import Applicability
from shapescript_core.syntax.source import LineIndex

from . import diagnostics_json


# ---------------------------------------------------------------- from LSP
def offset(lines: LineIndex, pos: T.Position) -> int:
    return lines.offset_utf16(max(pos.line, 0), max(pos.character, 0))


def offsets(lines: LineIndex, rng: T.Range) -> tuple[int, int]:
    a, b = offset(lines, rng.start), offset(lines, rng.end)
    return (a, b) if a <= b else (b, a)


# ---------------------------------------------------------------- to LSP: places
def position(lines: LineIndex, off: int) -> T.Position:
    line, ch = lines.utf16_position(off)
    return T.Position(line=line, character=ch)


def range_(lines: LineIndex, start: int, end: int) -> T.Range:
    return T.Range(start=position(lines, start), end=position(lines, end))


def location(loc, lines_for: Callable, uri_for: Callable) -> T.Location:
    return T.Location(uri=uri_for(loc.path), range=range_(lines_for(loc.path), loc.start, loc.end))


# ---------------------------------------------------------------- diagnostics
# Built once, as JSON, in diagnostics_json.py (the server publishes that JSON as it is);
# here structured into lsprotocol's Diagnostic for code actions, pull answers and Export.
SOURCE = diagnostics_json.SOURCE
fix_data = diagnostics_json.fix_data
_converter = default_converter()


def diagnostic(d, lines_for: Callable, uri_for: Callable, version_for: Callable) -> T.Diagnostic:
    return _converter.structure(diagnostics_json.diagnostic(d, lines_for, uri_for, version_for), T.Diagnostic)


def diagnostics(diags: list, path: str, lines_for: Callable, uri_for: Callable,
                version_for: Callable) -> list:
    """The LSP diagnostics of one file, in source order."""
    return [_converter.structure(j, T.Diagnostic)
            for j in diagnostics_json.diagnostics(diags, path, lines_for, uri_for, version_for)]


# ---------------------------------------------------------------- arguments from the client
# What comes back from the client as plain JSON (a diagnostic's `data`, a command's
# arguments) is checked here: a wrong shape is the client's error, InvalidParams, never
# an exception deep in a handler (InternalError).
def _uint(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 31


def position_json(value, what: str = "position") -> Optional[dict]:
    """A {line, character} object of non-negative integers (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(_uint(value.get(k)) for k in ("line", "character")):
        raise JsonRpcInvalidParams(f"`{what}` takes {{line, character}}, non-negative integers; got {value!r:.80}")
    return value


def _range_json(value, what: str) -> dict:
    if not isinstance(value, dict) or value.get("start") is None or value.get("end") is None:
        raise JsonRpcInvalidParams(f"`{what}` takes {{start, end}} positions; got {value!r:.80}")
    position_json(value["start"], what + ".start")
    position_json(value["end"], what + ".end")
    return value


def fixes_from_data(data) -> list:
    """The fixes in one of our diagnostics' `data` as the client sent it back:
    [] when it carries none; InvalidParams when they are not what we sent
    ({title, applicability, edits: {uri: [{range, newText}]}, versions: {uri: int | null}})."""
    if not isinstance(data, dict) or data.get("fixes") is None:
        return []
    fixes = data["fixes"]
    if not isinstance(fixes, list):
        raise JsonRpcInvalidParams(f"diagnostic `data.fixes` takes a list; got {fixes!r:.80}")
    for k, fix in enumerate(fixes):
        what = f"data.fixes[{k}]"
        if not isinstance(fix, dict) or not isinstance(fix.get("title"), str):
            raise JsonRpcInvalidParams(f"`{what}` takes {{title, edits, versions}}; got {fix!r:.80}")
        edits = fix.get("edits")
        if not isinstance(edits, dict) or not all(isinstance(u, str) and isinstance(es, list)
                                                  for u, es in edits.items()):
            raise JsonRpcInvalidParams(f"`{what}.edits` takes {{uri: [edits]}}; got {edits!r:.80}")
        for uri, es in edits.items():
            for e in es:
                if not isinstance(e, dict) or not isinstance(e.get("newText"), str):
                    raise JsonRpcInvalidParams(f"an edit of `{what}` takes {{range, newText}}; got {e!r:.80}")
                _range_json(e.get("range"), f"{what}.edits range")
        versions = fix.get("versions")
        if versions is not None and not (isinstance(versions, dict) and all(
                v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in versions.values())):
            raise JsonRpcInvalidParams(f"`{what}.versions` takes {{uri: version}}; got {versions!r:.80}")
        if fix.get("applicability") is not None and not isinstance(fix["applicability"], str):
            raise JsonRpcInvalidParams(f"`{what}.applicability` takes a string")
    return fixes


# ---------------------------------------------------------------- fixes as code actions
def _range_from_json(r: dict) -> T.Range:
    return T.Range(start=T.Position(line=r["start"]["line"], character=r["start"]["character"]),
                   end=T.Position(line=r["end"]["line"], character=r["end"]["character"]))


def workspace_edit(fix: dict, document_changes: bool) -> T.WorkspaceEdit:
    """The WorkspaceEdit of a fix read back from a diagnostic's data."""
    per_uri = {uri: [T.TextEdit(range=_range_from_json(e["range"]), new_text=str(e["newText"])) for e in es]
               for uri, es in fix["edits"].items()}
    if document_changes:
        versions = fix.get("versions") or {}
        return T.WorkspaceEdit(document_changes=[
            T.TextDocumentEdit(
                text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(uri)),
                edits=es)
            for uri, es in per_uri.items()])
    return T.WorkspaceEdit(changes=per_uri)


def code_action(fix: dict, diag: Optional[T.Diagnostic], document_changes: bool, preferred: bool) -> T.CodeAction:
    return T.CodeAction(
        title=str(fix["title"]),
        kind=T.CodeActionKind.QuickFix,
        diagnostics=[diag] if diag is not None else None,
        edit=workspace_edit(fix, document_changes),
        is_preferred=preferred and fix.get("applicability") == Applicability.SAFE.name.lower(),
    )


# ---------------------------------------------------------------- features
def markup(text: str, markdown: bool) -> T.MarkupContent:
    return T.MarkupContent(kind=T.MarkupKind.Markdown if markdown else T.MarkupKind.PlainText, value=text)


def hover(h, lines: LineIndex, markdown: bool) -> T.Hover:
    return T.Hover(contents=markup(h.markdown, markdown), range=range_(lines, h.start, h.end))


def inlay_hint(h, lines: LineIndex) -> T.InlayHint:
    return T.InlayHint(position=position(lines, h.offset), label=h.label, kind=T.InlayHintKind.Type,
                       padding_left=True, tooltip=h.tooltip or None)


SYMBOL_KINDS = {"dim": T.SymbolKind.Constant, "model": T.SymbolKind.Struct, "field": T.SymbolKind.Field,
                "fn": T.SymbolKind.Function, "import": T.SymbolKind.Module}


def document_symbol(s, lines: LineIndex) -> T.DocumentSymbol:
    return T.DocumentSymbol(
        name=s.name, kind=SYMBOL_KINDS.get(s.kind, T.SymbolKind.Variable), detail=s.detail or None,
        range=range_(lines, s.start, s.end), selection_range=range_(lines, s.sel_start, s.sel_end),
        children=[document_symbol(c, lines) for c in s.children] or None)


def symbol_information(s, lines: LineIndex, uri: str) -> list:
    """Flat symbols for clients without hierarchical support."""
    out = [T.SymbolInformation(name=s.name, kind=SYMBOL_KINDS.get(s.kind, T.SymbolKind.Variable),
                               location=T.Location(uri=uri, range=range_(lines, s.start, s.end)))]
    for c in s.children:
        out.extend(symbol_information(c, lines, uri))
    return out


COMPLETION_KINDS = {"local": T.CompletionItemKind.Variable, "param": T.CompletionItemKind.Variable,
                    "field": T.CompletionItemKind.Field, "dim": T.CompletionItemKind.Constant,
                    "model": T.CompletionItemKind.Struct, "fn": T.CompletionItemKind.Function,
                    "builtin": T.CompletionItemKind.Function, "dtype": T.CompletionItemKind.TypeParameter,
                    "keyword": T.CompletionItemKind.Keyword, "argument": T.CompletionItemKind.Property,
                    "sizevar": T.CompletionItemKind.TypeParameter}


def completion_item(c, markdown: bool) -> T.CompletionItem:
    doc = None
    if c.doc:
        doc = markup(c.doc, True) if markdown else c.doc
    return T.CompletionItem(label=c.label, kind=COMPLETION_KINDS.get(c.kind), detail=c.detail or None,
                            documentation=doc, insert_text=c.insert, sort_text=f"{c.sort}{c.label}")


def signature_help(s, markdown: bool) -> T.SignatureHelp:
    params = [T.ParameterInformation(label=(a, b)) for a, b in s.params]
    sig = T.SignatureInformation(label=s.label, documentation=markup(s.doc, markdown) if s.doc else None,
                                 parameters=params, active_parameter=s.active)
    return T.SignatureHelp(signatures=[sig], active_signature=0, active_parameter=s.active)


EXPORT_COMMAND = "shapescript.export"


def code_lenses(lens, lines: LineIndex, uri: str) -> list:
    """"Export ▸ hf | vllm | gguf": one lens per target on the function's name line (editors
    join a line's lenses with bars), the first one titled "Export ▸ hf"."""
    rng = range_(lines, lens.start, lens.end)
    out = []
    for k, target in enumerate(lens.targets):
        title = f"Export ▸ {target}" if k == 0 else target
        out.append(T.CodeLens(range=rng, command=T.Command(
            title=title, command=EXPORT_COMMAND,
            arguments=[{"uri": uri, "fn": lens.fn, "target": target}])))
    return out


def semantic_tokens_chunk(text: str, tokens, types: list, modifiers: list) -> tuple:
    """LSP's relative encoding of one chunk's tokens (offsets relative to the chunk,
    which starts a line): (data, first line, last line, last column), lines relative to
    the chunk. The first token's deltas are relative to the chunk's start; `stitch` fixes
    them. Columns in UTF-16; a token never spans lines."""
    lines = LineIndex(text)
    type_index = {t: i for i, t in enumerate(types)}
    mod_bit = {m: 1 << i for i, m in enumerate(modifiers)}
    data: list = []
    first = prev_line = prev_col = 0
    for k, t in enumerate(tokens):
        line, col = lines.utf16_position(t.start)
        end_line, end_col = lines.utf16_position(t.end)
        if end_line != line:
            continue
        if not data:
            first = line
            prev_line, prev_col = line, 0
        data += [line - prev_line, col - prev_col if line == prev_line else col, end_col - col,
                 type_index[t.type], sum(mod_bit[m] for m in t.modifiers)]
        prev_line, prev_col = line, col
    return data, first, prev_line, prev_col


def stitch(encoded: list) -> T.SemanticTokens:
    """Join chunks' encodings: [(first line of the chunk in the file, chunk encoding)]."""
    data: list = []
    prev_line = prev_col = 0
    for base_line, (chunk, first, last_line, last_col) in encoded:
        if not chunk:
            continue
        line = base_line + first
        col = chunk[1]
        delta = line - prev_line
        data += [delta, col - prev_col if delta == 0 else col]
        data += chunk[2:]
        prev_line, prev_col = base_line + last_line, last_col
    return T.SemanticTokens(data=data)


# ---------------------------------------------------------------- edits of whole files
def edits_workspace_edit(edits: dict, lines_for: Callable, uri_for: Callable, version_for: Callable,
                         document_changes: bool) -> T.WorkspaceEdit:
    """A WorkspaceEdit of the core's `{path: [TextEdit]}` (rename): versioned for the
    open documents when the client takes `documentChanges`."""
    per_uri = {}
    for path, es in sorted(edits.items()):
        lines = lines_for(path)
        per_uri[uri_for(path)] = [T.TextEdit(range=range_(lines, e.start, e.end), new_text=e.text) for e in es]
    if document_changes:
        return T.WorkspaceEdit(document_changes=[
            T.TextDocumentEdit(text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri,
                                                                                       version=version_for(uri)),
                               edits=es)
            for uri, es in per_uri.items()])
    return T.WorkspaceEdit(changes=per_uri)


def document_highlight(h, lines: LineIndex) -> T.DocumentHighlight:
    return T.DocumentHighlight(range=range_(lines, h.start, h.end),
                               kind=T.DocumentHighlightKind.Write if h.write else T.DocumentHighlightKind.Read)


def piece_edit(p, lines: LineIndex) -> T.TextEdit:
    """A formatter's piece (start, end, text) as a TextEdit."""
    return T.TextEdit(range=range_(lines, p.start, p.end), new_text=p.text)


def tokens_delta(old: list, new: list) -> list:
    """The one SemanticTokensEdit that turns `old` data into `new` (the changed middle,
    in whole tokens of five numbers), or none."""
    if old == new:
        return []
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    p -= p % 5
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    s -= s % 5
    return [T.SemanticTokensEdit(start=p, delete_count=len(old) - s - p, data=new[p:len(new) - s])]


# ---------------------------------------------------------------- structure, symbols, calls
FOLD_KINDS = {"comment": T.FoldingRangeKind.Comment, "imports": T.FoldingRangeKind.Imports}


def folding_range(f, lines: LineIndex) -> Optional[T.FoldingRange]:
    start, end = lines.line_of(f.start), lines.line_of(f.end)
    if end <= start:
        return None
    return T.FoldingRange(start_line=start, end_line=end, kind=FOLD_KINDS.get(f.kind))


def selection_range(ranges: list, lines: LineIndex) -> T.SelectionRange:
    """[(start, end)] innermost first, as SelectionRange's parent chain."""
    out = None
    for s, e in reversed(ranges):
        out = T.SelectionRange(range=range_(lines, s, e), parent=out)
    return out


def workspace_symbol(s, lines: LineIndex, uri: str) -> T.WorkspaceSymbol:
    return T.WorkspaceSymbol(name=s.name, kind=SYMBOL_KINDS.get(s.kind, T.SymbolKind.Variable),
                             location=T.Location(uri=uri, range=range_(lines, s.start, s.end)),
                             container_name=s.container or None)


def call_item(c, lines_for: Callable, uri_for: Callable) -> T.CallHierarchyItem:
    lines = lines_for(c.path)
    return T.CallHierarchyItem(name=c.name, kind=T.SymbolKind.Function, uri=uri_for(c.path), detail=c.detail,
                               range=range_(lines, c.start, c.end),
                               selection_range=range_(lines, c.sel_start, c.sel_end),
                               data={"path": c.path, "name": c.name})


def call_item_data(data) -> dict:
    """The `data` of a CallHierarchyItem we sent, back from the client: checked."""
    if not isinstance(data, dict) or not isinstance(data.get("path"), str) or not isinstance(data.get("name"), str):
        raise JsonRpcInvalidParams("item.data is not the call hierarchy item's data")
    return data
