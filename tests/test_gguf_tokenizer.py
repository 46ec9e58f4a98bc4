"""`--tokenizer DIR` embeds a Hugging Face tokenizer in the GGUF: with a byte-level BPE
trained here (the `tokenizers` package, saved through PreTrainedTokenizerFast), llama.cpp
tokenizes and detokenizes text as the Hugging Face tokenizer does, and greedy generation
through llama.cpp gives the tokens transformers gives on the `--hf` export."""
import os

import pytest

from gguf_support import (CONFORMANCE, LLAMA_DIMS, export_gguf, export_hf, hf_llama, llama_cpp_model,
                          llama_to_source, load_hf_export, save_weights, state)

V = 320  # the tokenizer's vocabulary: 256 bytes, merges, one special token
DIMS = {**LLAMA_DIMS, "V": V}
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Shapes are names: [b n D] is a batch of token vectors.",
    "def forward(m, ids): return linear(x, m.W)  # 1234 5678",
    "Ünïcödé text, émojis 🚀 and 日本語 too.\n\tTabs and  double  spaces.",
    "llama.cpp runs GGUF files; transformers runs Hugging Face directories.",
] * 20
TEXTS = [
    "The quick brown fox.",
    "  leading spaces and trailing  ",
    "numbers 3 33 333 3333 and 1.5e-3",
    "Ünïcödé 🚀 日本語\nnew line\ttab",
    "it's, we'll, they'd -- punctuation!?",
]
PROMPTS = ["The quick brown", "def forward(m,", "Shapes are"]


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def train(directory: str, llama3_split: bool = False):
    """A byte-level BPE of V tokens trained on CORPUS, saved through PreTrainedTokenizerFast:
    GPT-2's ByteLevel pre-tokenizer, or Llama 3's regex split before a ByteLevel."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    if llama3_split:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=V, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    assert tok.get_vocab_size() == V
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    fast.save_pretrained(directory)
    return fast


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf_tok")
    tok_dir = str(d / "tokenizer")
    fast = train(tok_dir)
    model = hf_llama(seed=7, V=V, scale=0.3)
    weights = save_weights(str(d / "w.safetensors"), llama_to_source(state(model), DIMS["L"]))
    source = os.path.join(CONFORMANCE, "llama.ss")
    out = str(d / "tok.gguf")
    r = export_gguf(source, out, weights, DIMS, tokenizer=tok_dir)
    hf = load_hf_export(export_hf(source, str(d / "hf"), weights, DIMS, tokenizer=tok_dir))
    return {"fast": fast, "file": out, "stderr": r.stderr, "hf": hf, "tok_dir": tok_dir}


@pytest.fixture(scope="module")
def llm(exported):
    m = llama_cpp_model(exported["file"])
    yield m
    m.close()


def test_the_vocabulary_is_embedded_as_convert_hf_to_gguf_writes_it(exported):
    from gguf import GGUFReader, TokenType
    r = GGUFReader(exported["file"])
    f = r.fields
    assert f["tokenizer.ggml.model"].contents() == "gpt2"
    assert f["tokenizer.ggml.pre"].contents() == "gpt-2"
    tokens = f["tokenizer.ggml.tokens"].contents()
    assert len(tokens) == V and tokens[0] == "<|endoftext|>"
    assert f["tokenizer.ggml.token_type"].contents()[0] == TokenType.CONTROL
    assert len(f["tokenizer.ggml.merges"].contents()) == V - 257
    assert f["tokenizer.ggml.eos_token_id"].contents() == 0
    assert 'tokenizer.ggml.model = "none"' not in exported["stderr"]


@pytest.mark.parametrize("text", TEXTS)
def test_llama_cpp_tokenizes_and_detokenizes_like_the_hf_tokenizer(exported, llm, text):
    fast = exported["fast"]
    ids = fast.encode(text, add_special_tokens=False)
    assert llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) == ids
    assert llm.detokenize(ids).decode("utf-8") == fast.decode(ids) == text


def test_llama_cpp_adds_no_bos_as_the_hf_tokenizer(exported, llm):
    # the HF tokenizer adds no special token; llama.cpp's default (add_bos) must agree
    text = TEXTS[0]
    assert llm.tokenize(text.encode("utf-8")) == exported["fast"].encode(text)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_generation_matches_transformers_on_the_hf_export(exported, llm, prompt):
    import torch
    ids = exported["fast"].encode(prompt, add_special_tokens=False)
    with torch.no_grad():
        out = exported["hf"].generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False,
                                      eos_token_id=None, pad_token_id=0)
    want = out[0, len(ids):].tolist()
    llm.reset()
    got = []
    for t in llm.generate(ids, top_k=1, temp=0.0, reset=True):
        got.append(t)
        if len(got) == 8:
            break
    assert got == want
    assert len(set(want)) > 2  # a model that says something, not one token over and over


def test_a_llama3_style_split_is_embedded_as_llama_bpe(tmp_path):
    from gguf import GGUFReader
    fast = train(str(tmp_path / "tok"), llama3_split=True)
    out = str(tmp_path / "l3.gguf")
    export_gguf(os.path.join(CONFORMANCE, "llama.ss"), out, None, DIMS, tokenizer=str(tmp_path / "tok"))
    assert GGUFReader(out).fields["tokenizer.ggml.pre"].contents() == "llama-bpe"
    llm = llama_cpp_model(out)
    try:
        for text in TEXTS:
            ids = fast.encode(text, add_special_tokens=False)
            assert llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) == ids, text
            assert llm.detokenize(ids).decode("utf-8") == text
    finally:
        llm.close()
