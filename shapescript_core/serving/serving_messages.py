"""Headlines and help lines of E3301-E3306, in one place (chapter 33's are verbatim)."""
from __future__ import annotations


def e3301(fn: str) -> str:
    return f"`{fn}` isn't a language model's forward function a serving engine can run"


E3302 = "a serving engine needs the logits to come from an output layer it can run"
E3302_HELP = "Return the output layer's result directly, and do anything else before it."


def e3303_table(field: str) -> str:
    return f"`{field}` is the embedding table, which a serving engine holds itself"


def e3303_output(field: str) -> str:
    return f"`{field}` is the output layer, which a serving engine holds itself"


def e3303_ids_twice(ids: str) -> str:
    return f"`{ids}` is used more than once, but a serving engine looks the tokens up once"


def e3303_ids_unused(ids: str) -> str:
    return f"`{ids}` goes into no embedding, but a serving engine looks the tokens up itself"


def e3303_ids_elsewhere(ids: str) -> str:
    return f"`{ids}` is used here, but a serving engine only looks the tokens up in its embedding"


def e3303_table_not_param(table: str, model: str) -> str:
    return f"the embedding table `{table}` must be a param of `{model}`, which a serving engine holds itself"


def e3304(axis: str) -> str:
    return f"a serving engine can't run this: this works along `{axis}`, which mixes its positions"


def e3304_help(n: str) -> str:
    return (f"Write attention as scaled_dot_product_attention(q, k, v, attn_mask=causal[{n} {n}]), "
            f"and take positions as a parameter.")


def e3305_none(fn: str) -> str:
    return f"`{fn}` has no attention"


E3305_HELP = "Repeat keys and values with fewer heads to H before attention."


def e3306(fn: str) -> str:
    return f"`{fn}` must take the model first, to be exported as one"


E3306_HELP = "Make the model the first parameter."


def e3307_dim(fn: str, n: int, dim: str, count: int, what: str) -> str:
    return f"vLLM can't split `{fn}` {n} ways: {dim} is {count} {what}, which {n} ranks can't share"


def _either(words: list) -> str:
    words = [str(w) for w in words]
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def e3307_help(sizes: list, dims: list) -> str:
    return f"Serve it with a tensor-parallel size of {_either(sizes)}, or change {_either(dims)}."


def e3307_kv_replicas(n: int, count: int) -> str:
    return (f"the native model of `vllm_plugin/` does split it {n} ways, each of the {count} key/value heads "
            f"on {n // count} ranks as vLLM's Llama does; vLLM's Transformers backend can't")


def e3307_unsplit(fn: str, n: int) -> str:
    return f"vLLM can't split `{fn}` {n} ways: this attention's projections aren't linears of the model"
