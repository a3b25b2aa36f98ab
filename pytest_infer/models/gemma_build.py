"""Makes the ``gemma-3-270m`` folder that vLLM, SGLang and transformers serve load: the Q4_K_M GGUF dequantized into
bfloat16 safetensors, with its tokenizer.

Runs as a plain script under an *engine's* interpreter (torch and transformers), so it imports nothing from
pytest_infer. ``gguf`` and ``accelerate``, which transformers needs to read a GGUF, come from the folder given as
the last argument, searched after the interpreter's own packages (the engine's own versions win where it has them).

What the GGUF does not carry is set here: the chat template (the file given), a tokenizer that starts every text
with ``<bos>`` as the GGUF's ``tokenizer.ggml.add_bos_token`` says (the tokenizer transformers reads from the GGUF
adds none, and without it the model repeats itself), ``<end_of_turn>`` as a stop token beside ``<eos>`` (as Gemma's
instruction-tuned releases have it, so that a chat answer ends with its turn), and no ``quantization_config`` (the
weights written are plain bfloat16).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MARKER = "pytest_infer_gemma.json"
TURN_TOKENS = ("<start_of_turn>", "<end_of_turn>")


def build(gguf: Path, template: Path, out: Path) -> None:
    import torch
    from tokenizers import processors
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    missing = [t for t in TURN_TOKENS if tokenizer.convert_tokens_to_ids(t) in (None, tokenizer.unk_token_id)]
    if missing:
        raise SystemExit(f"the GGUF's tokenizer lacks the turn tokens of the chat template: {missing}")
    bos = (tokenizer.bos_token, tokenizer.bos_token_id)
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos[0]} $A", pair=f"{bos[0]} $A {bos[0]} $B:1", special_tokens=[bos]
    )
    tokenizer.chat_template = template.read_text()
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    tokenizer.model_max_length = model.config.max_position_embeddings
    # save_pretrained refuses a GGUF-quantized model; its weights are already dequantized into bfloat16 tensors
    model.hf_quantizer = None
    del model.config.quantization_config
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<end_of_turn>")]
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    probe = AutoTokenizer.from_pretrained(out)
    if probe("x").input_ids[0] != bos[1] or not probe.chat_template:
        raise SystemExit(f"the saved tokenizer in {out} does not start with {bos[0]} or lacks the chat template")
    (out / MARKER).write_text(json.dumps({"gguf": gguf.name, "parameters": model.num_parameters()}))


if __name__ == "__main__":
    sys.path.append(sys.argv[4])
    build(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
