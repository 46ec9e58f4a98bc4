"""The attention plan (compile/attention_plan.py) decides the key/value groups once: the
PyTorch code reads `groups`, the GGUF matcher reads `stored` (found by the attention call's
syntax node), so the cases where the two exports differ are decided in one place."""
from pathlib import Path

from shapescript_core.compile.attention_plan import plan_attention
from shapescript_core.compile.graph import build_program, trace
from shapescript_core.arch.plan import Departure
from shapescript_core.arch.match import match
from shapescript_core.workspace import Workspace

GROUP_MAJOR = (Path(__file__).parent / "programs" / "gguf" / "llama_repeat_group_major.ss").read_text()
ROW_MAJOR = GROUP_MAJOR.replace("(G Hkv)", "(Hkv G)")
K_REPEAT = "    k = k |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)\n"
ROPE_K = "    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh) |> rope(pos, theta=500000.0)\n"
# the keys repeated before rope: the repeat is not the attention's argument
REPEAT_BEFORE_ROPE = ROW_MAJOR.replace(K_REPEAT, "").replace(
    ROPE_K, "    k = linear(x, a.wk) |> rearrange(b n (Hkv Dh) -> b Hkv n Dh)"
            " |> repeat(b Hkv n Dh -> b (Hkv G) n Dh) |> rope(pos, theta=500000.0)\n")
H, HKV = 4, 2


def _site(tmp_path, src):
    path = str(tmp_path / "m.ss")
    ws = Workspace()
    ws.set_text(path, src)
    prog = build_program(ws.program, path, "forward")
    sites = list(plan_attention(prog).sites.values())
    assert len(sites) == 1
    return ws, path, sites[0]


def _gguf_heads(ws, path):
    found = match(trace(ws.program, path, "forward"))
    assert not isinstance(found, Departure), found.reason
    return found.hparams["head_count"], found.hparams["head_count_kv"]


def test_sources_differ():
    assert REPEAT_BEFORE_ROPE.count("repeat(") == 2 and ROW_MAJOR.count("(G Hkv)") == 0


def test_row_major_repeat_is_grouped_for_every_target(tmp_path):
    ws, path, site = _site(tmp_path, ROW_MAJOR)
    assert (site.heads, site.groups) == (H, H // HKV)
    for role in ("k", "v"):
        st = site.stored[role]
        assert (st.heads, st.groups, st.group_major, st.repeat.op) == (HKV, H // HKV, False, "repeat")
    assert _gguf_heads(ws, path) == (H, HKV)


def test_group_major_repeat_is_plain_attention_in_pytorch_and_grouped_in_gguf(tmp_path):
    ws, path, site = _site(tmp_path, GROUP_MAJOR)
    assert site.groups == 1  # hf/vllm: multi-head attention over the repeated heads
    for role in ("k", "v"):
        st = site.stored[role]
        assert (st.heads, st.groups, st.group_major) == (HKV, H // HKV, True)
    assert _gguf_heads(ws, path) == (H, HKV)


def test_a_repeat_before_rope_is_found_by_the_plan_for_gguf(tmp_path):
    ws, path, site = _site(tmp_path, REPEAT_BEFORE_ROPE)
    assert site.groups == 1  # the PyTorch code sees the repeat only as the keys themselves
    k = site.stored["k"]
    assert (k.heads, k.groups, k.group_major, k.repeat.op) == (HKV, H // HKV, False, "repeat")
    assert k.source.op == "rearrange"
    assert _gguf_heads(ws, path) == (H, HKV)


def test_no_repeat_stores_every_head(tmp_path):
    src = ROW_MAJOR.replace("dim Hkv = 2", "dim Hkv = 4").replace(K_REPEAT, "").replace(
        "    v = v |> repeat(b Hkv n Dh -> b (Hkv G) n Dh)\n", "")
    ws, path, site = _site(tmp_path, src)
    assert site.groups == 1
    assert [(st.repeat, st.heads, st.groups) for st in site.stored.values()] == [(None, H, 1)] * 2
    assert _gguf_heads(ws, path) == (H, H)


def test_every_traced_attention_finds_its_site_by_its_call(tmp_path):
    ws, path, site = _site(tmp_path, ROW_MAJOR)
    tr = trace(ws.program, path, "forward")
    plan = plan_attention(tr.program)
    atts = [n for n in tr.nodes if n.op == "scaled_dot_product_attention"]
    assert len(atts) == 2  # one per layer
    assert all(plan.site_of_call(n.ast) is not None for n in atts)
    assert plan.site_of_call(object()) is None
