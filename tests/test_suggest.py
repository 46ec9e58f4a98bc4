"""Suggestions ("a similar name") are deterministic: ties are broken by a fixed rule."""
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from shapescript_core.check.suggest import closest, distance, distance_within

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ties_do_not_depend_on_the_order_of_the_candidates():
    names = ["Wk", "Wq", "Wv", "wo"]
    for order in (names, list(reversed(names)), sorted(names, key=lambda n: n[::-1])):
        assert closest("Wx", order) == "Wk"  # distance 1 each: the first name in code-point order
    assert closest("Attn", ["attm", "Attm"]) == "Attm"  # equal ignoring case: then case decides
    assert closest("embed", ["embeds", "embd"]) == "embd"  # a tie: then the nearest length...
    assert closest("embed", ["embxd", "embad"]) == "embad"  # ...then code-point order
    assert closest("q", ["k", "v"]) is None  # one-letter names: none


SCRIPT = r'''
import sys
sys.path.insert(0, "tests")
from support import check
src = """dim Dh = 64
dim Dk = 64
dim Dv = 64
model Ak:
    w: [Dh]
model Aq:
    w: [Dh]
model Av:
    w: [Dh]
fn f(x: [n Dh], m: Ax) -> [n Dh]:
    return x * Dx
"""
ws, diags = check(src)
print(sorted((d.code, d.message, tuple(d.helps)) for d in diags))
'''


def test_suggestions_are_the_same_whatever_the_hash_seed():
    outs = set()
    for seed in ("0", "1", "2", "3", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1, outs
    out = outs.pop()
    assert "there is a type with a similar name: `Ak`" in out  # Ak, Aq, Av tie: code-point order
    assert "`Dh`" in out  # Dh, Dk, Dv tie


def _closest_by_full_distance(name: str, candidates) -> str | None:
    """The rule `closest` follows, with the full edit-distance table for every candidate."""
    limit = max(1, len(name) // 3)
    best = None
    for c in candidates:
        if c == name:
            continue
        d = distance(name.lower(), c.lower())
        if d > limit or d >= len(name):
            continue
        key = (d, distance(name, c), abs(len(c) - len(name)), c)
        best = key if best is None or key < best else best
    return best[3] if best else None


NAMES = st.text(alphabet="abAB_1İıß", max_size=9)


@settings(max_examples=300, deadline=None)
@given(NAMES, st.lists(NAMES, max_size=12))
def test_closest_is_the_full_distance_rule(name, candidates):
    # the length and letter tests and the bounded distance only skip names out of reach
    assert closest(name, candidates) == _closest_by_full_distance(name, candidates)


@settings(max_examples=300, deadline=None)
@given(NAMES, NAMES, st.integers(0, 5))
def test_the_bounded_distance_is_the_distance_within_its_bound(a, b, bound):
    d = distance(a, b)
    assert distance_within(a, b, bound) == (d if d <= bound else bound + 1)
