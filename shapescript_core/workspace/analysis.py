"""The per-file analysis: the steps that check one file and the results they give."""
from __future__ import annotations

import operator
from typing import Optional
from ..check.env import DimTable, build_model, build_signature, model_cycles, reachable_models
from ..check.whole_file import hide_unresolved, import_cycle, recursion, reaches_itself, unread_fields
from ..check.messages import defined_twice, import_missing, import_not_utf8, import_outside, import_unreadable
from ..serving.entry import export_diagnostics
from ..imports import import_problem
from ..declarations import Declarations
from ..reads import Meanings
from ..syntax import ast as A
from ..syntax.names import NameMap, without_simple_dims
from ..syntax.parser import parsed_syntax_errors
from ..targets import exported, unknown_targets
from .results import Analysis, Declared, FileEnv, _Seen, _declared
from .source_file import Cancelled, SourceFile, _no_gc, item_syntax_errors
from .interfaces import _first_of_each_name
from .declare import _same_dims


class Analyzer:
    """The analysis of one file, in its steps (`_analyze`), kept while it holds."""

    # ------------------------------------------------------------ analysis
    def analyze(self, path: str, cancelled=None, early=None) -> Optional[Analysis]:
        """The analysis of a file. `cancelled()`, when given, is asked between function
        bodies: when it says True the analysis stops by raising `Cancelled` (what was
        checked so far stays cached). `early(diagnostics)`, when given, is called before
        the bodies left to check when the file's edited functions are not all of them
        (`_early`)."""
        path = self.norm(path)
        a = self._analysis.get(path)
        if a is not None:
            if self._still_valid(a):
                return a
            del self._analysis[path]
        f = self.file(path)
        if f is None:
            return None
        closure = [p for p in self._import_closure(path) if p != path]
        stamp = tuple((p, self._interface_entry(p)[2]) for p in closure)
        lists = {p: self._interface_entry(p)[1] for p in closure}
        items = f.items
        self._analyzing.append(path)
        self._reads_stack.append([])
        self._read_open.append(False)
        w = self._work.setdefault(path, {"analyses": 0, "items": 0, "declarations": 0})
        w["analyses"] += 1
        try:
            with _no_gc():
                a = self._analyze(f, cancelled, (stamp, lists), early)
        finally:
            self._analyzing.pop()
            body_reads = self._reads_stack.pop()
            read_open = self._read_open.pop()
        a.items, a.stamp, a.body_reads, a.lists = items, stamp, body_reads, lists
        a.read_open = read_open
        self._analysis[path] = a
        return a

    def diagnostics(self, path: str) -> list:
        a = self.analyze(path)
        return a.diags if a else []

    def _analyze(self, f: SourceFile, cancelled=None, stamp=None, early=None) -> Analysis:
        """A file's check, in its steps: its items' own errors, its imports, what they
        declare, the dims and declarations, the bodies, then the whole-file checks
        (check/whole_file.py) and the serving checks (serving/)."""
        # this file's names, the first item of each: the map its interface entry already holds
        # (shared, never changed: a file of a million dims keeps one such map, not three)
        e = self._interface_entry(f.path)
        own: NameMap = e[3] if e[0] is f and e[1] is f.items else _first_of_each_name(f.items)
        # the items' own errors come first in the list, but are read after the declarations:
        # they parse every body not parsed yet, which an early publish does not wait for
        head: list = []
        imports = self._imports_of(f, head)
        seen = self._imported_view(f, own, e)
        dims, meanings, models, sigs = self._declarations(f, own, seen, stamp, head)
        env = FileEnv(dims, models, sigs, seen.broken)
        head.extend(self._model_cycles_of(f.path, models, own))
        if early is not None:
            self._early(f, own, env, meanings, head, early)
        diags: list = list(self._item_errors(f, own, cancelled))
        diags.extend(head)
        fns = self._bodies(f, own, env, meanings, cancelled, diags)
        diags.extend(self._cycles_of(f.path, fns, own))
        diags = hide_unresolved(diags)
        for it in without_simple_dims(own).values():
            if isinstance(it, A.FnItem) and it.decorators:
                diags.extend(unknown_targets(it))
        diags.extend(unread_fields([it.name for it, _ in exported(own, env)], fns, own, models,
                                   lambda n: fns.get(n) or self._imported_result(own, n, f)))
        a = Analysis(f.path, f, env, diags, fns, own, seen.visible, imports)
        a.diags.extend(export_diagnostics(self.program, a))
        return a

    def _imports_of(self, f: SourceFile, diags: list) -> list:
        """The files `f` imports that can be read; the errors of the others (E0213, E0210,
        E0209) into `diags`."""
        imports = []
        root = self.root_of(f.path)
        for it in f.items:
            if isinstance(it, A.ImportItem):
                why = import_problem(f.path, it.target, root)
                if why is not None:
                    diags.append(import_outside(it, why))
        for it, target in self._import_targets(f, root):
            tf = self.file(target)
            if tf is None:
                why = self.refusal(target)
                diags.append(import_unreadable(it, why) if why is not None and why.kind != "missing"
                             else import_missing(it))
                continue
            if tf.decode_error is not None:
                diags.append(import_not_utf8(it, tf.decode_error))
                continue
            imports.append(target)
            cyc = self._import_cycle(f.path, target)
            if cyc is not None:
                diags.append(import_cycle(it, cyc))
                continue
        return imports

    def _imported_view(self, f: SourceFile, own, e) -> "_Seen":
        """What the file sees: the imports' declarations (kept per version of their items:
        the visible names, the dims, the broken names and the models among them), the
        names changed since the last analysis, and its own names over them."""
        closure = [t for t in self._import_closure(f.path) if t != f.path]
        lists = [self.file(t) for t in closure]
        lists = [tf.items for tf in lists if tf is not None]
        imp = self._imported.get(f.path)
        changed = None  # the imported names whose item may differ from the last analysis's
        old_lists = imp[0] if imp is not None else ()
        if imp is None or len(imp[0]) != len(lists) or not all(map(operator.is_, imp[0], lists)):
            got = self._imported_since(imp, closure, lists)
            if got is not None:
                imp, changed = got
            else:
                ivisible: dict = {}
                for items in lists:
                    for it in items:
                        if it.name is not None:
                            ivisible.setdefault(it.name, it)
                imp = (lists, ivisible, *_declared(ivisible))
            self._imported[f.path] = imp
        else:
            changed = ()
        ivisible = imp[1]
        # an own name hides an import's (the views look the smaller map's names up in the
        # larger, in C: no set of all the names)
        plain = self._plain_names(f.path, own) if own is e[3] else own
        shadowed = not ivisible.keys().isdisjoint(plain.keys())
        if ivisible:
            visible = dict(ivisible)
            visible.update(plain)
        else:  # nothing imported: this file's own map, not a copy of it
            visible = own
        if shadowed:
            broken_kinds, models_declared = _declared(visible)
        else:  # the same as from `visible`: the imports' first, then this file's
            own_broken, own_models = _declared(plain)
            broken_kinds, models_declared = {**imp[2], **own_broken}, imp[3] | own_models
        broken = set(broken_kinds.items())
        model_names = models_declared | {n for n, k in broken if k == "model"}
        return _Seen(ivisible, visible, changed, old_lists, shadowed, broken_kinds, broken, model_names)

    def _declarations(self, f: SourceFile, own, seen: "_Seen", stamp, diags: list) -> tuple:
        """(dims, meanings, models, signatures) of the file: the last analysis's where its
        declarations and the imports' hold (early cutoff by name), built otherwise."""
        own_key = self._interface_entry(f.path)[2]
        last = self._decl_prev.get(f.path)
        changed = seen.changed
        # this file's declarations are the same, and of the imports only the names in
        # `changed` (none: an edit in this file) have new items, none of them a dim or a
        # model that became something else or the reverse (`_imported_since`)
        cutoff = stamp is not None and last is not None and last.own_key == own_key and not seen.shadowed \
            and changed is not None and (last.closure == stamp[0] or changed) \
            and tuple(last.lists) == tuple(stamp[1]) and all(map(operator.is_, last.lists.values(), seen.old_lists))
        visible = seen.visible
        # dims: a view over `visible` (a dim that didn't parse is still a dim, of unknown
        # size: its uses raise nothing). With the same dim items as the last analysis, its
        # table: the same fingerprint object, which every read of all dims compares in one
        # step instead of a walk over every visible name
        if cutoff and _same_dims(last.items, f.items):
            dims = last.dims
            dims.rebind(visible)  # not the last version's map: it isn't kept alive beside this one
        else:
            dims = DimTable(visible, self._inputs.dims)
        if dims.diags:
            for it in own.values():
                diags.extend(dims.diags.get(id(it), []))
        meanings = Meanings(dims, seen.model_names, seen.broken_kinds,
                            lambda: (dims.fingerprint, tuple(sorted((n, it.kind) for n, it in visible.items()))))
        prev = self._meanings.get(f.path)
        meanings.carry_decl(prev)
        if cutoff:
            imodels, isigs, omodels, osigs, odiags = self._declared_after(f, own, seen, last, meanings, dims, diags)
        else:
            imodels, isigs, omodels, osigs, odiags = self._declared_whole(f, own, seen, meanings, dims)
        diags.extend(odiags)
        if stamp is not None:
            # what the next analysis may take over: the imports' models and signatures, and
            # (for the same items, in the order a whole analysis gives them: not with an own
            # name hiding an import's) this file's, with their errors
            self._decl_prev[f.path] = Declared(own_key, stamp[0], imodels, isigs, stamp[1],
                                               None if seen.shadowed else f.items, omodels, osigs, odiags,
                                               f.items, dims)
        self._meanings[f.path] = meanings
        return dims, meanings, meanings.models, meanings.sigs

    def _declared_after(self, f: SourceFile, own, seen: "_Seen", last, meanings, dims, diags: list) -> tuple:
        """The cutoff: every imported declaration but the changed names' reads dims and
        model names that mean what they meant, so its model or signature is the last
        analysis's. Only this file's items and the changed names are looked at."""
        decl, model_names, changed, ivisible = meanings.decl, seen.model_names, seen.changed, seen.ivisible
        build_m = self._builder(self._model_cache, build_model, decl, dims, model_names)
        build_s = self._builder(self._sig_cache, build_signature, decl, dims, model_names)
        imodels, isigs = last.imodels.copy(build_m), last.isigs.copy(build_s)
        names = []
        for n in changed:
            it = ivisible.get(n)
            if isinstance(it, (A.ModelItem, A.FnItem)):
                names.append((n, it))
            else:
                imodels.pop(n)
                isigs.pop(n)
        self._declare(names, imodels, isigs, decl, dims, model_names, own, diags)
        if any(n not in last.imodels and n not in last.isigs for n, _ in names):
            # a name new to the imports: in the order of `visible`, as a whole analysis has them
            imodels, isigs = imodels.in_order(ivisible), isigs.in_order(ivisible)
        if last.own_items is f.items:
            # this file's items are the ones of the last analysis (an import changed, not
            # this file): their models, signatures and errors too, for the same reason
            omodels, osigs, odiags = last.omodels, last.osigs, last.odiags
            among = changed
        else:
            omodels, osigs, odiags = {}, {}, []
            self._declare(without_simple_dims(own).items(), omodels, osigs, decl, dims, model_names, own,
                          odiags)
            # (a simple dim is no model nor signature: not among them)
            among = (*changed, *without_simple_dims(own))
        meanings.models, meanings.sigs = imodels.merged(omodels), isigs.merged(osigs)
        meanings.carry_full(self._meanings.get(f.path), among)
        return imodels, isigs, omodels, osigs, odiags

    def _declared_whole(self, f: SourceFile, own, seen: "_Seen", meanings, dims) -> tuple:
        """This file's declarations now (their errors are its own); the imports' when
        first read (declarations.py): a file reads a few of the thousands it sees."""
        decl, model_names = meanings.decl, seen.model_names
        build_m = self._builder(self._model_cache, build_model, decl, dims, model_names)
        build_s = self._builder(self._sig_cache, build_signature, decl, dims, model_names)
        morder, sorder = {}, {}
        for n, it in without_simple_dims(seen.visible).items():
            if isinstance(it, A.ModelItem):
                morder[n] = it
            elif isinstance(it, A.FnItem):
                sorder[n] = it
        omodels, osigs, odiags = {}, {}, []
        self._declare(without_simple_dims(own).items(), omodels, osigs, decl, dims, model_names, own, odiags)
        mbuilt, sbuilt = dict(omodels), dict(osigs)
        models, sigs = Declarations(morder, mbuilt, build_m), Declarations(sorder, sbuilt, build_s)
        # the imports' alone, sharing what is built (Declarations.get looks in its own names only)
        imodels = Declarations({n: it for n, it in morder.items() if n not in omodels}, mbuilt, build_m)
        isigs = Declarations({n: it for n, it in sorder.items() if n not in osigs}, sbuilt, build_s)
        meanings.models, meanings.sigs = models, sigs
        meanings.carry_full(self._meanings.get(f.path))
        return imodels, isigs, omodels, osigs, odiags

    def _early(self, f: SourceFile, own, env: FileEnv, meanings, head: list, publish) -> None:
        """The diagnostics of an edit typed while the file's first check runs, before the
        rest of that check: when some function's body was never checked (the cold check
        stopped for the edit), the bodies the edit parsed anew (SourceFile.fresh) are
        checked first and `publish(…)` gets what is known by then: the syntax errors of
        the items parsed, `head` (the imports' and the declarations' errors) and every
        body checked and still valid. The complete list follows when the rest is checked.
        Nothing when the edit changed no function, or once every other body has been
        checked (typing after the first check)."""
        fns = [(n, it) for n, it in without_simple_dims(own).items() if isinstance(it, A.FnItem)]
        cache, fresh = self._body_cache, f.fresh
        if not any(id(it) in fresh for _, it in fns) or all(id(it) in cache or id(it) in fresh for _, it in fns):
            return  # no function edited, or none other left to check
        for n, it in fns:
            if id(it) in fresh:
                self._body(it, env.sigs[n], env, meanings)
        known = parsed_syntax_errors(f.items)
        known.extend(head)
        for n, it in fns:
            res = self._kept_body(it, n, meanings.full)
            if res is not None and res.diags:
                known.extend(res.diags)
        publish(hide_unresolved(known))

    def _bodies(self, f: SourceFile, own, env: FileEnv, meanings, cancelled, diags: list) -> dict:
        """name -> FnResult of the file's functions, each reused while its signature and
        what it read mean the same; their errors into `diags`."""
        fns: dict = {}
        sigs = env.sigs
        full = meanings.full
        for n, it in without_simple_dims(own).items():
            if isinstance(it, A.FnItem):
                res = self._kept_body(it, n, full)
                if res is None:
                    if cancelled is not None and cancelled():
                        raise Cancelled(f.path)
                    res = self._body(it, sigs[n], env, meanings)
                fns[n] = res
                if res.diags:
                    diags.extend(res.diags)
        return fns

    def _item_errors(self, f: SourceFile, own, cancelled=None) -> list:
        """The syntax and layout errors of a file's items and its names defined twice,
        kept per version of its items: a file re-analysed because an import changed (an
        interface edit's dependents) doesn't walk its items again."""
        known = self._items_errors.get(f.path)
        if known is not None and known[0] is f.items and known[1] is own:
            return known[2]
        out = item_syntax_errors(f.items, cancelled, f.path)
        for i, it in enumerate(f.items):
            first = own.earlier(i, it)
            if first is not None:
                out.append(defined_twice(it.span(it.name_pos), it.name, first.span(first.name_pos))
                           .help(f"rename one of the two `{it.name}`"))
        self._items_errors[f.path] = (f.items, own, out)
        return out

    def _imported_result(self, own: dict, name: str, f: SourceFile):
        for target in self._import_closure(f.path):
            a = self.analyze(target)
            if a is not None and name in a.fns:
                self.note_body_read(a.fns[name].item)
                return a.fns[name]
        return None

    def _model_cycles_of(self, path: str, models: dict, own: dict) -> list:
        """E0211, again only when a model's fields changed (a new ModelInfo)."""
        models = reachable_models(models, own)  # (the imports' other models play no part)
        last = self._model_cycles.get(path)
        if last is not None and last[0].keys() == models.keys() and \
                all(map(operator.is_, last[0].values(), models.values())):
            return last[1]
        out = model_cycles(models, own)
        self._model_cycles[path] = (models, out)
        return out

    def _cycles_of(self, path: str, fns: dict, own: dict) -> list:
        """E0207. With no cycle in the last analysis, a new one must go through a body
        whose result changed (only a changed body has new calls): look from those only."""
        last = self._cycles.get(path)
        if last is not None and not last[1]:
            before = last[0]
            changed = [n for n, r in fns.items() if before.get(n) is not r]
            if not any(reaches_itself(fns, n) for n in changed):
                self._cycles[path] = (fns, [])
                return []
        out = recursion(fns, own)
        self._cycles[path] = (fns, out)
        return out

    # ------------------------------------------------------------ queries
    def all_diagnostics(self, paths) -> dict:
        return {p: self.diagnostics(p) for p in paths}
