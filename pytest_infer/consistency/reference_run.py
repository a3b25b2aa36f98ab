"""The reference's greedy continuation: run as a script under an engine's interpreter (torch and
transformers), it imports nothing from the package (like models/tiny_build.py).

    python reference_run.py MODEL_DIR REQUEST_JSON

REQUEST_JSON: ``{"prompts": [...], "max_tokens": N, "top_k": K}``. Prints one JSON object:
``{"steps": [[{"token", "logprob", "top": [[token, logprob], ...]}, ...] per prompt], "dtype":
...}``. Each prompt is tokenized as the completions route does (the tokenizer's special tokens
added), then continued greedily one token at a time, the model in its stored dtype and the
log-softmax of its logits in float32: the numbers a server's logprobs are held to.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    # lazy: only the engine's interpreter that runs this script has torch and transformers; the
    # package's has neither
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, request = sys.argv[1], json.loads(sys.argv[2])
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    model.eval()
    out = []
    with torch.no_grad():
        for prompt in request["prompts"]:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            past, steps, step_ids = None, [], ids
            for _ in range(request["max_tokens"]):
                result = model(input_ids=step_ids, past_key_values=past, use_cache=True)
                past = result.past_key_values
                logprobs = torch.log_softmax(result.logits[0, -1].float(), dim=-1)
                top = torch.topk(logprobs, request["top_k"])
                chosen = int(top.indices[0])
                steps.append(
                    {
                        "token": tokenizer.decode([chosen]),
                        "logprob": float(logprobs[chosen]),
                        "top": [
                            [tokenizer.decode([int(i)]), float(v)]
                            for v, i in zip(top.values, top.indices)
                        ],
                    }
                )
                if chosen == tokenizer.eos_token_id:
                    break
                step_ids = torch.tensor([[chosen]])
            out.append(steps)
    print(json.dumps({"steps": out, "dtype": str(model.dtype)}))


if __name__ == "__main__":
    main()
