"""Call hierarchy (prepare, incoming and outgoing calls) and workspace symbols: the
queries across the project's files."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as T

from shapescript_core.ide import calls as ide_calls
from shapescript_core.ide import navigation as ide_nav

from . import convert
from .guard import guarded
from .reads import read_request

if TYPE_CHECKING:
    from .app import ShapeScriptServer


def register(ls: ShapeScriptServer):
    def item(ls, c):
        return convert.call_item(c, ls.lines_for, ls.docs.uri_for)

    @read_request(ls, T.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
    def prepare_call_hierarchy(ls: ShapeScriptServer, params: T.CallHierarchyPrepareParams):
        def answer(path):
            found = ide_calls.prepare(ls.ws, path, convert.offset(ls.lines_for(path), params.position))
            return [item(ls, c) for c in found] or None

        return answer

    def resolve(ls, it: T.CallHierarchyItem):
        """The core's CallItem of a CallHierarchyItem the client sends back (its `data`)."""
        data = convert.call_item_data(it.data)
        found = ide_calls.prepare(ls.ws, data["path"], _name_offset(ls, data["path"], it))
        return next((c for c in found if c.name == data["name"]), None)

    @ls.feature(T.CALL_HIERARCHY_INCOMING_CALLS)
    @guarded()
    async def incoming_calls(ls: ShapeScriptServer, params: T.CallHierarchyIncomingCallsParams):
        def job():
            c = resolve(ls, params.item)
            if c is None:
                return None
            return [T.CallHierarchyIncomingCall(from_=item(ls, call.item), from_ranges=[
                convert.range_(ls.lines_for(call.in_path), s, e) for s, e in call.ranges])
                for call in ide_calls.incoming(ls.ws, c)]

        return await ls.query(job)

    @ls.feature(T.CALL_HIERARCHY_OUTGOING_CALLS)
    @guarded()
    async def outgoing_calls(ls: ShapeScriptServer, params: T.CallHierarchyOutgoingCallsParams):
        def job():
            c = resolve(ls, params.item)
            if c is None:
                return None
            return [T.CallHierarchyOutgoingCall(to=item(ls, call.item), from_ranges=[
                convert.range_(ls.lines_for(call.in_path), s, e) for s, e in call.ranges])
                for call in ide_calls.outgoing(ls.ws, c)]

        return await ls.query(job)

    @ls.feature(T.WORKSPACE_SYMBOL)
    @guarded()
    async def workspace_symbol(ls: ShapeScriptServer, params: T.WorkspaceSymbolParams):
        def job():
            return [convert.workspace_symbol(s, ls.lines_for(s.path), ls.docs.uri_for(s.path))
                    for s in ide_nav.workspace_symbols(ls.ws, params.query)]

        return await ls.query(job)


def _name_offset(ls, path: str, it: T.CallHierarchyItem) -> int:
    return convert.offset(ls.lines_for(path), it.selection_range.start)
