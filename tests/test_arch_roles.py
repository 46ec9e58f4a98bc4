"""The roles are our own vocabulary (arch/roles.py), spelled as gguf-py's names in one
module only (gguf_format/names.py): every role a family has is a tensor of its llama.cpp
architecture, a GGUF name reads back as the same role, the import's words for a tensor
are the ones they were, and arch/ never imports gguf."""
import ast
import os

import pytest

from shapescript_core.arch.archs import FAMILIES, HF_MODEL_TYPES
from shapescript_core.arch.plan import TensorPlan
from shapescript_core.arch.roles import GLOBAL, ROLE_WORDS, ROLES, describe_role, role_kind, split_key, tensor_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# GGUF tensor name -> the words the import's diagnostics used for it when a role was
# gguf-py's name (describe_role before the roles were our own)
WORDS = {
    "blk.0.attn_q.bias": "block 0's query projection bias",
    "blk.0.attn_q.weight": "block 0's query projection",
    "blk.3.attn_k.weight": "block 3's key projection",
    "blk.1.attn_v.bias": "block 1's value projection bias",
    "blk.0.attn_qkv.weight": "block 0's fused q/k/v projection",
    "blk.0.attn_qkv.bias": "block 0's fused q/k/v projection bias",
    "blk.2.attn_output.weight": "block 2's attention output projection",
    "blk.0.attn_norm.weight": "block 0's attention norm",
    "blk.0.attn_norm.bias": "block 0's attention norm bias",
    "blk.0.attn_q_norm.weight": "block 0's per-head query norm",
    "blk.0.attn_k_norm.weight": "block 0's per-head key norm",
    "blk.0.post_attention_norm.weight": "block 0's norm after attention",
    "blk.0.ffn_norm.weight": "block 0's MLP norm",
    "blk.0.post_ffw_norm.weight": "block 0's norm after the MLP",
    "blk.0.ffn_gate.weight": "block 0's MLP gate",
    "blk.0.ffn_up.weight": "block 0's MLP up projection",
    "blk.0.ffn_up.bias": "block 0's MLP up projection bias",
    "blk.11.ffn_down.weight": "block 11's MLP down projection",
    "token_embd.weight": "the token embedding",
    "position_embd.weight": "the position embedding",
    "output_norm.weight": "the final norm",
    "output_norm.bias": "the final norm bias",
    "output.weight": "the output layer",
    "blk.0.ffn_gate_inp.weight": "block 0's experts' router",  # v0.3's mixtures of experts
    "blk.3.ffn_down_exps.weight": "block 3's experts' down projections",
    # names no role has: quoted as they are
    "blk.0.ffn_gate_shexp.weight": "block 0's `blk.0.ffn_gate_shexp.weight`",
    "rope_freqs.weight": "`rope_freqs.weight`",
    "blk.0.attn_q": "block 0's `blk.0.attn_q`",
    "v.blk.0.attn_out.weight": "`v.blk.0.attn_out.weight`",
    "something": "`something`",
}

def _plans(arch):
    """A TensorPlan per role of the family, in a block or not, weight and bias."""
    for role in sorted(FAMILIES[arch].roles):
        for suffix in ("weight", "bias"):
            yield TensorPlan(role, None if role in GLOBAL else 3, suffix, "p", (1,))


def test_roles_are_our_own_and_each_has_words():
    assert set(ROLES) == set(ROLE_WORDS)
    for fam in FAMILIES.values():
        assert fam.roles <= set(ROLES), fam.name
        assert fam.hf_transposed <= fam.roles and (fam.hf_scale_into is None or fam.hf_scale_into in fam.roles)
    assert set(HF_MODEL_TYPES.values()) == set(FAMILIES)


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_every_role_of_a_family_is_a_tensor_of_its_llama_cpp_architecture(arch):
    gguf = pytest.importorskip("gguf")
    from shapescript_core.gguf_format import names

    march = getattr(gguf.MODEL_ARCH, arch.upper())
    assert names.arch_name(arch) == arch  # the family's name is llama.cpp's
    for t in _plans(arch):
        assert names.model_tensor(arch, t.name) in gguf.MODEL_TENSORS[march]
        # and the GGUF name reads back as the same role
        assert names.role_key(names.tensor_name(arch, t)) == t.key
    missing = [r for r in ROLES if r not in FAMILIES[arch].roles]
    for role in missing:  # a role the family doesn't have is no tensor of it either
        with pytest.raises(ValueError):
            names.model_tensor(arch, role)


def test_a_gguf_name_no_role_has_is_never_read_as_one():
    gguf = pytest.importorskip("gguf")
    from shapescript_core.gguf_format import names

    ours = {gguf.TENSOR_NAMES[names.model_tensor(f.name, r)] for f in FAMILIES.values() for r in f.roles}
    for mt, template in gguf.TENSOR_NAMES.items():
        name = template.format(bid=0) + ".weight"
        if template in ours:
            assert split_key(names.role_key(name))[0] in ROLES, mt
        else:
            assert names.role_key(name) == name and split_key(name)[0] not in ROLES, mt


@pytest.mark.parametrize("name", list(WORDS))
def test_the_import_words_a_tensor_as_before(name):
    pytest.importorskip("gguf")
    from shapescript_core.gguf_format.names import role_key

    assert describe_role(role_key(name)) == WORDS[name]


def test_one_tensor_per_kind_is_listed():
    """The import lists one tensor per kind (`role_kind`): block 0's query projection
    stands for every block's."""
    pytest.importorskip("gguf")
    from shapescript_core.gguf_format.names import role_key

    assert role_kind(role_key("blk.3.attn_q.weight")) == role_kind(role_key("blk.0.attn_q.weight")) == "attn_q.weight"
    assert role_kind(role_key("blk.3.attn_output.bias")) == "attn_out.bias"
    assert role_kind(role_key("blk.2.ffn_gate_inp.weight")) == "ffn_gate_inp.weight"
    assert role_kind(role_key("token_embd.weight")) == "token_embedding.weight"


def test_the_matcher_emits_only_its_familys_roles():
    """Every plan of every program the snapshots hold names roles its family has."""
    from snapshot_support import programs
    from shapescript_core.arch.match import match
    from shapescript_core.arch.plan import Departure
    from shapescript_core.compile.graph import CompileError, trace
    from shapescript_core.gguf_format.names import COMPUTED_TENSORS
    from shapescript_core.workspace import Workspace

    seen = set()
    for _name, path in programs():
        ws = Workspace()
        ws.file(path)
        an = ws.analyze(path)
        if an is None or any(d.severity.word == "error" for d in ws.diagnostics(path)):
            continue
        for item, _targets in ws.exported(an):
            try:
                plan = match(trace(ws.program, path, item.name))
            except CompileError:
                continue
            if isinstance(plan, Departure):
                continue
            seen.add(plan.arch)
            computed = {t.name for t in plan.tensors if t.values}  # numbers, no param (llama3's rope_freqs)
            assert {t.name for t in plan.tensors} - computed <= FAMILIES[plan.arch].roles, (path, plan.arch)
            assert computed <= set(COMPUTED_TENSORS), (path, computed)
    assert {"llama", "qwen2", "gpt2", "gptneox", "phi2", "gemma2", "gemma3"} <= seen


def _imports(path: str) -> set:
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add((node.module or "").split(".")[0])
    return out


def test_arch_never_imports_gguf():
    """gguf-py's names live in gguf_format/ alone: arch/ is neutral of every target."""
    folder = os.path.join(ROOT, "shapescript_core", "arch")
    files = [f for f in sorted(os.listdir(folder)) if f.endswith(".py")]
    assert "roles.py" in files and "gguf_names.py" not in files
    for f in files:
        assert "gguf" not in _imports(os.path.join(folder, f)), f
