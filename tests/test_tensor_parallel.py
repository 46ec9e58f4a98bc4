"""Splitting a `--vllm` export across ranks, without running vLLM (test_vllm_parallel.py
runs it): E3307 from the settings, the CLI and the editor; the tp and pp plans in
config.json derived from the compiled graph's roles; the generated code vLLM needs
(modules called through `forward`, head counts read from the tensors, pipeline stages)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient

import checkout
from lsp_support import codes, config, initialize, open_doc, uri_of, wait_publishes, wait_version
from shapescript_core.settings import parse_settings
from shapescript_core.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "errors" / "E3307.md").read_text(encoding="utf-8")
BAD, GOOD = re.findall(r"```shapescript\n(.*?)```", PAGE, re.S)
LLAMA = ROOT / "examples" / "llama.ss"
FUSED = Path(checkout.program("hf", "llama_fused.ss"))
QWEN2 = Path(checkout.program("gguf", "qwen2.ss"))
GPT2 = Path(checkout.program("gguf", "gpt2_separate.ss"))
TINY = ["--dim", "V=256", "--dim", "D=256", "--dim", "H=4", "--dim", "Hkv=2", "--dim", "F=512", "--dim", "L=2"]


def diagnostics(text: str, ranks: int, path: str = "/tmp/shapescript-tp/model.ss") -> list:
    ws = Workspace()
    ws.set_tensor_parallel(ranks)
    ws.set_text(path, text)
    return ws.diagnostics(path)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_the_page_examples_raise_it_and_check_clean_with_four_ranks():
    d, = diagnostics(BAD, 4)
    assert d.code == "E3307"
    assert d.message == "vLLM can't split `forward` 4 ways: `H` is 6 query heads, which 4 ranks can't share"
    assert BAD[d.span.abs_start:d.span.abs_end] == "H" and line_of(BAD, d.span.abs_start) == 3
    assert [l.message for l in d.labels] == ["`Hkv` is 2 key/value heads, which 4 ranks can't share either"]
    assert d.helps == ["Serve it with a tensor-parallel size of 1 or 2, or change `H` or `Hkv`."]
    assert diagnostics(GOOD, 4) == []
    # not asked for: no E3307 (one rank, or two, which six heads and two kv heads allow)
    assert diagnostics(BAD, 1) == [] and diagnostics(BAD, 2) == []


def test_fused_params_split_part_by_part():
    """`w_qkv` (3 parts of 32 heads) and `w_gate_up` (2 parts of F = 11008 hidden units)
    are held as their parts, each split on its own: two ranks share them, three can't
    share the heads nor each part's hidden units."""
    text = FUSED.read_text(encoding="utf-8")
    assert diagnostics(text, 2) == [] and diagnostics(text, 1) == []
    d, = diagnostics(text, 3)
    assert d.message == "vLLM can't split `forward` 3 ways: `H` is 32 query heads, which 3 ranks can't share"
    assert [l.message for l in d.labels] == ["`F` is 11008 hidden units, which 3 ranks can't share either"]


def test_more_ranks_than_key_value_heads_replicate_them_as_vllms_llama():
    """The native model's key/value split (the function the plugin holds verbatim): with
    more ranks than key/value heads each rank holds one, the head its query heads read."""
    from shapescript_core.compile.prelude import kv_head_shards
    assert [kv_head_shards(2, 4, r) for r in range(4)] == [(0, 2), (0, 2), (1, 2), (1, 2)]
    assert [kv_head_shards(2, 8, r) for r in range(8)] == [(0, 2)] * 4 + [(1, 2)] * 4
    assert [kv_head_shards(4, 2, r) for r in range(2)] == [(0, 2), (1, 2)]  # vLLM's own split
    assert [kv_head_shards(1, 2, r) for r in range(2)] == [(0, 1), (0, 1)]  # one head: on every rank
    for heads, kv, ranks in [(8, 2, 4), (4, 2, 4), (16, 2, 8), (4, 1, 2), (8, 4, 2), (8, 8, 8)]:
        group = heads // kv
        for r in range(ranks):
            shard, shards = kv_head_shards(kv, ranks, r)
            held = set(range(shard * kv // shards, (shard + 1) * kv // shards))
            assert len(held) == max(1, kv // ranks)  # the KV cache heads of each rank
            queries = range(r * heads // ranks, (r + 1) * heads // ranks)
            assert {q // group for q in queries} <= held, (heads, kv, ranks, r)
    for kv, ranks in [(3, 2), (2, 3), (4, 6)]:
        with pytest.raises(ValueError, match="E3307"):
            kv_head_shards(kv, ranks, 0)
    # E3307 holds to what the Transformers backend can too, and says the native model can
    text = GOOD.replace("dim Hkv = 4", "dim Hkv = 2")
    d, = diagnostics(text, 4)
    assert d.message == "vLLM can't split `forward` 4 ways: `Hkv` is 2 key/value heads, which 4 ranks can't share"
    assert d.notes == ["the native model of `vllm_plugin/` does split it 4 ways, each of the 2 key/value heads on "
                       "2 ranks as vLLM's Llama does; vLLM's Transformers backend can't"]
    assert diagnostics(text, 2) == [] and diagnostics(GOOD.replace("dim Hkv = 4", "dim Hkv = 3"), 4)[0].notes == []


def test_the_native_model_splits_key_value_heads_by_that_function(tmp_path):
    import inspect
    from shapescript_core.compile.prelude import kv_head_shards
    code = next((export(tmp_path, LLAMA, *TINY) / "vllm_plugin").glob("*/model.py")).read_text()
    assert inspect.getsource(kv_head_shards) in code
    assert "self.wk = ColumnParallelLinear(D, Hkv * Dh, bias=False, return_bias=False, **kv_shard(Hkv))" in code
    assert "kv_heads //= kv_head_shards(kv_heads, ranks, 0)[1]" in code  # the paged attention's KV heads
    fused = next((export(tmp_path / "fused", Path(checkout.program("gguf", "llama_fused.ss"))) / "vllm_plugin")
                 .glob("*/model.py")).read_text()
    assert ("self.w_kv = Parts([ColumnParallelLinear(D, ((2 * Hkv) * Dh) // 2, bias=False, return_bias=False, "
            "**kv_shard(Hkv)) for _ in range(2)])") in fused


def test_cli_check_takes_the_ranks_from_the_flag_or_the_settings(tmp_path):
    src = tmp_path / "llama.ss"
    src.write_text(LLAMA.read_text(encoding="utf-8"), encoding="utf-8")
    r = checkout.shapescript("check", src, "--target", "vllm", "--tensor-parallel", "3", *TINY, "--format", "json")
    assert r.returncode == 1
    d, = [json.loads(line) for line in r.stdout.splitlines()]
    assert (d["code"], d["range"]["start"]["line"]) == ("E3307", 6)
    assert "`H` is 4 query heads, which 3 ranks can't share" in d["message"]
    assert checkout.shapescript("check", src, "--target", "vllm", "--tensor-parallel", "2", *TINY).returncode == 0
    (tmp_path / "shapescript.toml").write_text("[export.vllm]\ntensor_parallel = 64\n", encoding="utf-8")
    r = checkout.shapescript("check", src, "--target", "vllm")
    assert r.returncode == 1 and "vLLM can't split `forward` 64 ways: `H` is 32 query heads" in r.stdout
    assert "help: Serve it with a tensor-parallel size of 1, 2, 4 or 8" in r.stdout


def test_export_refuses_a_split_it_cant_make_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    r = checkout.shapescript("export", LLAMA, "--vllm", "--random-weights", *TINY, "--tensor-parallel", "8",
                             "-o", out)
    assert r.returncode == 1 and "E3307" in r.stdout + r.stderr and not out.exists()
    r = checkout.shapescript("export", LLAMA, "--hf", "--random-weights", *TINY, "--tensor-parallel", "2",
                             "-o", out)
    assert r.returncode == 2 and "--tensor-parallel is for --vllm only" in r.stderr


def test_settings_read_the_ranks_and_report_a_bad_value():
    assert parse_settings({"export": {"vllm": {"tensorParallel": 4}}}).export["tensor_parallel"] == 4
    cfg = parse_settings({"export": {"vllm": {"tensor_parallel": 0}}}, "shapescript.toml")
    assert "tensor_parallel" not in cfg.export
    assert cfg.problems == ["shapescript.toml: `export.vllm.tensor_parallel` takes a number of ranks (1 or more), "
                            "got `0`"]


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, root=str(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def test_the_editor_setting_asks_for_the_check(client: LanguageClient):
    uri = uri_of(client.root / "lm.ss")
    open_doc(client, uri, BAD)
    p = await wait_version(client, uri, 1)
    assert codes(p) == []
    n = len([q for q in client.publishes if q.uri == uri])
    client.set_configuration({"export": {"vllm": {"tensorParallel": 4}}}, section="shapescript")
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
    ps = await wait_publishes(client, uri, n + 1)
    assert codes(ps[-1]) == ["E3307"] and ps[-1].diagnostics[0].range.start.line == 2


def export(tmp_path, src: Path, *dims) -> Path:
    out = tmp_path / src.stem
    checkout.shapescript("export", src, "--vllm", "--random-weights", *dims, "-o", out, check=True)
    return out


def test_the_plans_follow_the_roles_in_the_graph(tmp_path):
    llama = json.loads((export(tmp_path, LLAMA, *TINY) / "config.json").read_text())
    assert llama["base_model_tp_plan"] == {
        "layers.*.mlp.w_down": "rowwise", "layers.*.mlp.w_gate": "colwise", "layers.*.mlp.w_up": "colwise",
        "layers.*.attn.wk": "colwise", "layers.*.attn.wo": "rowwise", "layers.*.attn.wq": "colwise",
        "layers.*.attn.wv": "colwise"}
    assert llama["base_model_pp_plan"] == {"embed": [["input_ids"], ["inputs_embeds"]],
                                           "layers": [["hidden_states", "attention_mask"], ["hidden_states"]]}
    one_kv = export(tmp_path / "kv1", LLAMA, *TINY, "--dim", "Hkv=1")
    plan = json.loads((one_kv / "config.json").read_text())["base_model_tp_plan"]
    assert (plan["layers.*.attn.wk"], plan["layers.*.attn.wv"], plan["layers.*.attn.wq"]) == (
        "replicate", "replicate", "colwise")  # one key/value head: every rank holds it
    # biases ride with their linears; a helper function (`heads`) and a gelu MLP are followed
    qwen = json.loads((export(tmp_path, QWEN2) / "config.json").read_text())["base_model_tp_plan"]
    assert qwen["layers.*.attn.wq"] == "colwise" and qwen["layers.*.w_down"] == "rowwise"
    gpt2 = json.loads((export(tmp_path, GPT2) / "config.json").read_text())["base_model_tp_plan"]
    assert gpt2 == {"blocks.*.w_proj": "rowwise", "blocks.*.w_fc": "colwise", "blocks.*.w_o": "rowwise",
                    "blocks.*.wq": "colwise", "blocks.*.wk": "colwise", "blocks.*.wv": "colwise"}
    # fused params: each part is a linear of its own (`w_qkv.0` the queries, …), split as its role says
    fused = json.loads((export(tmp_path, FUSED, "--dim", "V=256", "--dim", "D=256", "--dim", "H=4",
                               "--dim", "F=512", "--dim", "L=2") / "config.json").read_text())
    assert fused["base_model_tp_plan"] == {
        "layers.*.w_gate_up.0": "colwise", "layers.*.w_gate_up.1": "colwise", "layers.*.w_qkv.0": "colwise",
        "layers.*.w_qkv.1": "colwise", "layers.*.w_qkv.2": "colwise", "layers.*.w_down": "rowwise",
        "layers.*.w_o": "rowwise"}
    assert "layers" in fused["base_model_pp_plan"]
    # a fused `w_kv` of one key/value head: both parts on every rank, the queries split
    kv1 = json.loads((export(tmp_path / "kv1", Path(checkout.program("gguf", "llama_fused.ss")), "--dim", "Hkv=1")
                      / "config.json").read_text())["base_model_tp_plan"]
    assert kv1 == {"layers.*.w_down": "rowwise", "layers.*.w_kv.0": "replicate", "layers.*.w_kv.1": "replicate",
                   "layers.*.w_gu.0": "colwise", "layers.*.w_gu.1": "colwise", "layers.*.wo": "rowwise",
                   "layers.*.wq": "colwise"}


def test_the_generated_code_is_what_vllm_splits(tmp_path):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    out = export(tmp_path, LLAMA, *TINY)
    code = (out / "modeling_llama.py").read_text()
    assert "def forward(self, x, pos, attention_mask=None" in code  # `fn attention`, Attention's forward
    assert "x = layer(x, position_ids, " in code and "self.attn(rms_norm(" in code and "self.mlp(rms_norm(" in code
    assert "self.wq(x).reshape(b, n, -1, Dh)" in code and "self.wk(x).reshape(b, n, -1, Dh)" in code
    assert "o.transpose(1, 2).reshape(b, n, -1)" in code
    class Missing(torch.nn.Identity):  # vLLM's PPMissingLayer: an Identity taking any arguments
        def forward(self, *args, **kwargs):
            return args[0] if args else next(iter(kwargs.values()))

    cfg = AutoConfig.from_pretrained(out, trust_remote_code=True)
    assert type(cfg).base_model_tp_plan["layers.*.attn.wq"] == "colwise"  # a class attribute, as transformers'
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    ids = torch.tensor([[5, 17, 99, 3]])
    with torch.no_grad():
        whole = model.model(ids).last_hidden_state
        # two pipeline stages by hand, as vLLM makes them
        layers = list(model.model.layers)
        model.model.layers[1] = Missing()
        first = model.model(ids).last_hidden_state
        model.model.layers[1], model.model.layers[0] = layers[1], Missing()
        second = model.model(inputs_embeds=first).last_hidden_state
    assert (second - whole).abs().max().item() < 1e-5
    assert (first - whole).abs().max().item() > 1e-2  # the first stage returns the hidden states before the norm


def test_a_fused_param_is_stored_as_its_parts_and_read_back_whole(tmp_path):
    """`w_qkv` [3*D D] is written as three [D D] tensors (blocks of its rows, in order),
    the mapping lists their keys, and `--weights DIR` reads them back as the param: the
    export of the export holds the same tensors. Parts that don't stack are refused."""
    from safetensors.numpy import load_file
    dims = ["--dim", "V=256", "--dim", "D=256", "--dim", "H=4", "--dim", "F=512", "--dim", "L=2"]
    first = export(tmp_path, FUSED, *dims)
    mapping = json.loads((first / "shapescript-weights.json").read_text())["keys"]
    assert mapping["layers.1.w_qkv"] == [f"model.layers.1.w_qkv.{i}.weight" for i in range(3)]
    assert mapping["layers.1.w_gate_up"] == [f"model.layers.1.w_gate_up.{i}.weight" for i in range(2)]
    stored = load_file(first / "model.safetensors")
    assert [stored[f"model.layers.1.w_qkv.{i}.weight"].shape for i in range(3)] == [(256, 256)] * 3
    again = tmp_path / "again"
    checkout.shapescript("export", FUSED, "--vllm", "--weights", first, *dims, "-o", again, check=True)
    back = load_file(again / "model.safetensors")
    assert sorted(back) == sorted(stored) and all((back[k] == stored[k]).all() for k in stored)
    # a mapping whose parts don't stack by rows: one message, nothing written
    mapping["layers.1.w_qkv"] = ["model.layers.1.w_qkv.0.weight", "model.layers.1.attn_norm"]
    (first / "shapescript-weights.json").write_text(json.dumps({"format": 1, "keys": mapping}))
    r = checkout.shapescript("export", FUSED, "--vllm", "--weights", first, *dims, "-o", tmp_path / "bad")
    assert r.returncode != 0 and not (tmp_path / "bad").exists()
    assert ("gives `layers.1.w_qkv` as parts that don't stack by rows: `model.layers.1.w_qkv.0.weight` f32 "
            "[256, 256], `model.layers.1.attn_norm` f32 [256]") in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("stack by rows") == 1, r.stderr
