"""Benchmark of the AnimeGamer MLLM step on the CPU (not part of the test suite).

Run: ``python bench/animegamer_mllm.py [--tokens 200] [--real-tokens 20]``.  Uses AnimeGamer's tokenizer
committed under ``tests/data/animegamer_tokenizer``.  Two random-weight
models of the real architecture: a tiny one (hidden 16, 2 layers) and the real width (hidden 4096,
14336 MLP, 32/8 heads, vocabulary 32284, resamplers 1920) with 2 layers instead of 32.

* text pass: our greedy loop (KV cache, released frame-token processor) in tokens/s, against
  transformers' ``generate()`` (greedy, same processor, same number of tokens) in the same run;
* representation pass: the forward pass with the 4-D bidirectional-block mask, against a plain
  causal forward of the same 254-token prompt (the cost of the custom mask).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from _common import best_of, import_pack

TINY = {
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
}
REAL_WIDTH = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 2,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}
LINE = "Character: Qiqi; Motion: quickly flying on broomstick; Background: day sky."


def build(shape: dict, width: int, tokenizer_dir: Path):
    from gameanim.nodes.animegamer.mllm import model as mllm_model
    from gameanim.nodes.animegamer.mllm.tokenizer import load_tokenizer
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    tokenizer, ids = load_tokenizer(tokenizer_dir)
    config = MistralConfig(vocab_size=32284, **shape)
    llm = mllm_model._wrap_lora(MistralForCausalLM._from_config(config, dtype=torch.float32), rank=32)
    model = mllm_model.AnimeGamerMLLM(llm, width, shape["hidden_size"], tokenizer, ids)
    return model.train(False).requires_grad_(False)


class _HFProcessor:
    """The same released frame-token rule, as a transformers LogitsProcessor, for the baseline."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __call__(self, input_ids, scores):
        scores[0] = self.inner(int(input_ids[0, -1]), scores[0])
        return scores


def run(name: str, shape: dict, width: int, tokens: int, tokenizer_dir: Path) -> None:
    from gameanim.nodes.animegamer.mllm import step
    from gameanim.nodes.animegamer.mllm.tokenizer import build_prompt
    from transformers import LogitsProcessorList

    model = build(shape, width, tokenizer_dir)
    prompt = build_prompt(model.tokenizer, model.token_ids, LINE)
    embeds = step.prompt_embeddings(model, prompt, [])
    # random weights never emit </s> here, so both loops produce exactly ``tokens`` tokens
    ours = best_of(lambda: step.text_pass(model, prompt.ids, embeds, tokens))
    processors = LogitsProcessorList([_HFProcessor(step.ReleasedFrameProcessor(model.token_ids))])

    def hf_generate() -> None:
        with torch.no_grad():
            model.causal_lm().generate(
                input_ids=torch.tensor([prompt.ids]),
                inputs_embeds=embeds,
                attention_mask=torch.ones(1, embeds.shape[1], dtype=torch.long),
                max_new_tokens=tokens,
                min_new_tokens=tokens,
                do_sample=False,
                logits_processor=processors,
                pad_token_id=2,
            )

    baseline = best_of(hf_generate)
    rep = best_of(lambda: step.representation_pass(model, prompt, embeds))

    def causal() -> None:
        with torch.no_grad():
            model.decoder()(inputs_embeds=embeds, use_cache=False)

    plain = best_of(causal)
    print(f"[{name}] prompt {len(prompt.ids)} tokens, {tokens} new tokens")
    print(
        f"  text pass     ours {tokens / ours:8.1f} tok/s ({ours:.2f} s)   transformers generate() {tokens / baseline:8.1f} tok/s"
        f"   ratio ours/baseline speed {baseline / ours:.2f}x"
    )
    print(
        f"  repr. pass    ours {rep * 1000:8.1f} ms   plain causal forward {plain * 1000:8.1f} ms   ratio {rep / plain:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200, help="new tokens at the tiny size")
    parser.add_argument("--real-tokens", type=int, default=20, help="new tokens at the real width (slow on CPU)")
    args = parser.parse_args()
    import_pack()
    from tests.support.animegamer_mllm_fixtures import tokenizer_dir as committed_tokenizer

    tokenizer_dir = committed_tokenizer()
    torch.set_num_threads(2)
    run("tiny", TINY, 24, args.tokens, tokenizer_dir)
    run("real width, 2 layers", REAL_WIDTH, 1920, args.real_tokens, tokenizer_dir)


if __name__ == "__main__":
    main()
