"""Converts the built-in ``tiny`` folder into the GGUF llama.cpp loads, with llama.cpp's own converter.

Runs as a plain script under the llama.cpp engine's interpreter (torch, transformers and the ``gguf`` package of the
same llama.cpp source), so it imports nothing from pytest_infer:
``python tiny_gguf_build.py TINY_FOLDER CONVERTER_FOLDER OUT.gguf``, where CONVERTER_FOLDER holds
``convert_hf_to_gguf.py`` and its ``conversion`` package. Two facts of tiny need saying to the converter:

- Its pre-tokenizer: the converter names a BPE pre-tokenizer by hashing how the tokenizer splits a probe text, and
  tiny's hash is in no table. Tiny's is GPT-2's byte-level split (``ByteLevel(use_regex=True)``), llama.cpp's
  ``gpt-2``; with no merges the split cannot change a token either way.
- Its merges: tiny's byte-level BPE has none (every byte is its own token), the GGUF writer drops an empty list and
  llama.cpp refuses a ``gpt2`` vocabulary without the key ("cannot find tokenizer merges in model file"). So one
  merge is written that can never apply: llama.cpp starts every word from single characters and joins only pairs
  it finds ranked, so a merge of two multi-character tokens (``PLACEHOLDER_MERGE``) is never met, and every text
  splits into the same byte tokens as under the Hugging Face tokenizer. A merge of two characters would not be
  inert: ``Ġ Ġ`` joins two spaces of one word into ``ĠĠ``, which is no token, and llama.cpp then drops them (it
  falls back to the raw UTF-8 bytes of the joined text, which a byte-level vocabulary does not hold): ``a   b``
  (three spaces, split as ``a``, two spaces, `` b``) became ``a b``.
"""

from __future__ import annotations

import sys
from pathlib import Path

PRE_TOKENIZER = "gpt-2"
PLACEHOLDER_MERGE = "<s> </s>"  # two multi-character tokens: no BPE step of llama.cpp ever meets this pair


def convert(tiny: Path, converter: Path, out: Path) -> None:
    sys.path.insert(0, str(converter))
    import convert_hf_to_gguf
    import gguf
    from conversion import base

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: PRE_TOKENIZER
    add_to_gguf = gguf.SpecialVocab.add_to_gguf

    def with_placeholder_merge(self, gw, quiet: bool = False):
        if not self.merges:
            self.merges = [PLACEHOLDER_MERGE]
        return add_to_gguf(self, gw, quiet=quiet)

    gguf.SpecialVocab.add_to_gguf = with_placeholder_merge
    sys.argv = ["convert_hf_to_gguf.py", str(tiny), "--outfile", str(out), "--outtype", "f32", "--model-name", "tiny"]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    convert(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
