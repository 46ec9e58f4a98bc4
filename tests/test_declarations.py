"""An analysis's models and signatures (shapescript_core/declarations.py): its own built at
once, an import's when read; the names in the order an eager build gives; what the
cutoff of the next analysis takes over. The workspace-level counts are in
test_workspace_reuse.py."""
from shapescript_core.declarations import Declarations


class Item:
    def __init__(self, name: str):
        self.name = name


class Value:
    def __init__(self, item: Item):
        self.item = item


def made(names: str, built: str = "") -> tuple:
    """(Declarations over one item per letter of `names`, those of `built` built; the
    items built since, in order)."""
    items = {n: Item(n) for n in names}
    log: list = []

    def build(it):
        log.append(it.name)
        return Value(it)

    return Declarations(items, {n: Value(items[n]) for n in built}, build), log


def test_a_name_is_built_when_first_read_and_once():
    d, log = made("abcd", built="d")
    assert list(d) == list("abcd") and len(d) == 4 and "c" in d and "z" not in d
    assert log == []  # listing names, and asking whether one is there, build nothing
    v = d.get("b")
    assert v.item.name == "b" and d["b"] is v and d.get("b") is v
    assert log == ["b"]
    assert d.get("z") is None and d.get("z", 7) == 7
    assert [v.item.name for v in d.values()] == list("abcd")  # all: built now, in order
    assert log == ["b", "a", "c"]


def test_differing_counts_a_name_not_built_in_one_of_them_as_changed():
    d, _ = made("abc", built="ab")
    e = d.copy(d._build)
    assert d.differing(e) == {"c"}  # the same built values; `c` may differ once built
    e.set_built("b", Item("b"), Value(Item("b")))
    e.pop("a")
    assert d.differing(e) == {"a", "b", "c"}
    assert d.differing(e, among=["b"]) == {"b"}


def test_a_value_left_in_a_shared_table_is_not_among_the_names():
    """The views of one analysis share what is built; a name that left one view (no
    longer declared) is neither read nor compared through it."""
    d, log = made("ab", built="ab")
    view = d.in_order({"a": 1})  # the same built values, `a` only
    assert list(view) == ["a"] and view.get("b") is None and "b" not in view
    assert view.differing(d) == {"b"} and view.differing(d, among=["a"]) == set()
    assert log == []


def test_the_next_analysis_builds_the_rest_with_its_own_builder():
    d, log = made("abc", built="a")
    later: list = []
    e = d.copy(lambda it: later.append(it.name) or Value(it))
    assert e.get("a") is d.get("a")  # taken over
    e.get("b")
    assert (log, later) == ([], ["b"])
    own = Value(Item("x"))
    whole = e.merged({"x": own})
    assert list(whole) == ["a", "b", "c", "x"] and whole.get("x") is own
    assert whole.get("b") is e.get("b")  # one table of built values


def test_repoint_moves_a_name_to_its_current_item():
    d, log = made("ab", built="a")
    old_a, new_a = d.get("a").item, Item("a")
    d.repoint("a", old_a, new_a, lambda v: Value(new_a))
    assert d.get("a").item is new_a
    old_b, new_b = Item("b"), Item("b")
    d.repoint("b", old_b, new_b, lambda v: v)  # not its item: nothing changes
    assert d.get("b").item is not new_b
