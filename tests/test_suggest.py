"""Suggestions ("a similar name") are deterministic: ties are broken by a fixed rule."""
import os
import subprocess
import sys

from shapescript_core.check.suggest import closest

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
