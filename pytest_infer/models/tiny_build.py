"""Builds the built-in ``tiny`` model: a 2-layer Llama with a byte-level tokenizer.

Runs as a plain script under the *engine's* interpreter (which has torch and
transformers), so it imports nothing from pytest_infer. Deterministic: the same
TINY_VERSION always yields the same weights.

Random weights make greedy output a special token and sampled output arbitrary
bytes, so the output layer is shaped: a constant direction in the residual stream
(embedding column 0) carries a per-token bias through the final norm, lifting
printable ASCII and burying control bytes, non-ASCII bytes and special tokens;
the rest of the network adds context-dependent noise, so text varies.

The markup tokens that tool-call and reasoning parsers look for (``PARSER_TOKENS``) are added tokens, as in
the models those parsers serve, so that a parser finds them in the vocabulary and forced output can be written
with them. They are appended after the weights are shaped, with a fixed low logit: the base model is the same
(weights and text) as without them, and the model writes them only where a grammar allows them and the
request's ``logit_bias`` lifts them (pytest_infer.conformance.scripts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TINY_VERSION = 2
SPECIAL_TOKENS = ["<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>"]
# Thinking is off unless a request asks for it (chat_template_kwargs enable_thinking), as in models that think on
# request: SGLang reads that default from this very line; the model writes no thinking block by itself either way.
CHAT_TEMPLATE = (
    "{% if not enable_thinking is defined %}{% set enable_thinking = false %}{% endif %}"
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['content'] is string %}{% set text = message['content'] %}"
    "{% elif message['content'] %}{% set text = message['content'] | map(attribute='text') | join('') %}"
    "{% else %}{% set text = '' %}{% endif %}"
    "<|{{ message['role'] }}|>{{ text }}<|end|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
# Not special: an engine's detokenizer keeps them in the text, where the parsers read them.
PARSER_TOKENS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "[THINK]",
    "[/THINK]",
]
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE, MAX_POSITIONS = 128, 2, 2, 1, 256, 2048


def byte_level_symbols() -> dict[int, str]:
    """The byte -> printable symbol table of byte-level BPE (GPT-2's convention)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shifted = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


def build_tokenizer(out: Path):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    table = byte_level_symbols()
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    vocab = {table[b]: b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in PARSER_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=SPECIAL_TOKENS[3:],
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


# Logit bias per printable character. Whitespace is kept low, because constrained
# JSON decoding allows unbounded whitespace and a greedy model that likes spaces
# never closes the object; quotes and closers are kept high so strings, numbers
# and objects end.
_FAVOURED = {'"': 4.0, "}": 3.8, "]": 3.8, ",": 3.8, ":": 3.8, " ": 2.0}


def token_bias(tokenizer) -> list[float]:
    """Printable ASCII lifted (shaped by _FAVOURED), everything else buried."""
    bias = []
    for token_id in range(len(tokenizer) - len(PARSER_TOKENS)):
        text = tokenizer.decode([token_id])
        if len(text) == 1 and " " <= text <= "~":
            bias.append(_FAVOURED.get(text, 3.5 if text.isalnum() else 3.0))
        else:
            bias.append(-30.0)
    return bias


def build(out: Path) -> None:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(out)
    torch.manual_seed(20261129)
    config = LlamaConfig(
        vocab_size=len(tokenizer) - len(PARSER_TOKENS),  # the parser tokens come after shaping
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HIDDEN // HEADS,  # 64: the CPU attention kernel rejects 16
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        emb = model.model.embed_tokens.weight
        emb.normal_(0.0, 0.5)
        emb[:, 0] = 8.0  # the constant direction that carries the bias
        for layer in model.model.layers:
            for proj in (layer.self_attn.o_proj, layer.mlp.down_proj):
                proj.weight.mul_(0.5)
                proj.weight[0, :] = 0.0  # keep the constant direction constant
        head = model.lm_head.weight
        head.normal_(0.0, 0.25)
        norm_scale = HIDDEN**0.5 * 0.9  # |x0| / rms(x) with the constant column dominant
        head[:, 0] = torch.tensor(token_bias(tokenizer)) / norm_scale
        base = config.vocab_size
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        rows = torch.Generator().manual_seed(TINY_VERSION)
        model.model.embed_tokens.weight[base:] = torch.randn(len(PARSER_TOKENS), HIDDEN, generator=rows) * 0.5
        model.model.embed_tokens.weight[base:, 0] = 8.0
        model.lm_head.weight[base:] = 0.0
        model.lm_head.weight[base:, 0] = -30.0 / norm_scale  # buried like the other non-printable tokens
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(out, safe_serialization=True)
    (out / "pytest_infer_tiny.json").write_text(json.dumps({"tiny_version": TINY_VERSION}))


if __name__ == "__main__":
    build(Path(sys.argv[1]))
