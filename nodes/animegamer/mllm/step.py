"""One AnimeGamer turn: the greedy text pass (character-state strengths) and the representation pass.

Both passes read the same prompt (see :func:`.tokenizer.build_prompt`):

* **Text pass**: greedy decoding with a KV cache and the released logits processor
  (``AutoVideoTokenGenerationProcessor(num_vid_gen_tokens=100)``): after ``<frame>``/``<frame_i>``
  (i ≤ 99) the next frame token is forced with ``max + 10``; otherwise the scores of
  ``<frame_00000..00099>`` and ``</frame>`` are set to exactly 0.0 (not −inf), so a 0.0 tie is broken
  to the lowest id, as ``torch.argmax`` does in the released greedy search.
* **Representation pass**: one forward pass with a 4-D additive mask, causal everywhere except a
  bidirectional block over the current turn's 226 frame tokens; the last 226 final-norm hidden
  states (the released slice, three positions after the frame block start) go through the output
  resampler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ....core.errors import InputError, NumericalError
from ....core.progress import ProgressFn, no_progress
from ...motion.levels import released_flow
from .game_state import Game, Turn, updated_states
from .model import AnimeGamerMLLM
from .tokenizer import NUM_QUERY_TOKENS, STATE_TAGS, Prompt, TokenIds, build_prompt, check_instruction

NUM_VID_GEN_TOKENS = 100
STRENGTH_PATTERN = re.compile(r"<(ML|SC|ET|ST)>\s*<Strength_(-?\d+)>")


class ReleasedFrameProcessor:
    """The released logits processor's effect on one score row (the last token decides)."""

    def __init__(self, ids: TokenIds, num_tokens: int = NUM_VID_GEN_TOKENS) -> None:
        chain = [ids.frame_open, *ids.frames[:num_tokens], ids.frame_close]
        self._next = {chain[i]: chain[i + 1] for i in range(len(chain) - 1)}
        self._zeroed = torch.tensor(chain[1:], dtype=torch.long)

    def __call__(self, last_id: int, scores: torch.Tensor) -> torch.Tensor:
        forced = self._next.get(int(last_id))
        if forced is not None:
            scores[forced] = scores.max() + 10.0
        else:
            scores[self._zeroed.to(scores.device)] = 0.0
        return scores


def greedy_pick(scores: torch.Tensor) -> int:
    """The argmax; ties (e.g. several exact 0.0 scores) go to the lowest id."""
    return int(torch.argmax(scores).item())


@torch.no_grad()
def text_pass(
    model: AnimeGamerMLLM,
    prompt_ids: list[int],
    embeds: torch.Tensor,
    max_new_tokens: int = 200,
    progress: ProgressFn | None = None,
) -> list[int]:
    """Greedy decoding from ``embeds`` (plain causal attention, no mask); stops after ``</s>``."""
    from transformers import DynamicCache

    report = progress or no_progress
    processor = ReleasedFrameProcessor(model.token_ids)
    llm = model.causal_lm()
    cache = DynamicCache()
    out = llm(inputs_embeds=embeds, past_key_values=cache, use_cache=True, logits_to_keep=1)
    last = prompt_ids[-1]
    generated: list[int] = []
    position = embeds.shape[1]
    for step in range(max_new_tokens):
        scores = out.logits[0, -1].float()
        if not torch.isfinite(scores).all():
            raise NumericalError(
                "The AnimeGamer text pass produced NaN/inf scores. With float16 weights this is an overflow: "
                "load the MLLM in bfloat16 or float32."
            )
        last = greedy_pick(processor(last, scores))
        generated.append(last)
        report(step + 1, max_new_tokens)
        if last == model.token_ids.eos or step + 1 == max_new_tokens:
            break
        ids = torch.tensor([[last]], device=embeds.device)
        positions = torch.tensor([[position]], device=embeds.device)
        out = llm(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True, logits_to_keep=1)
        position += 1
    return generated


def bidirectional_mask(length: int, block: slice, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(1, 1, L, L)`` additive mask: causal (finfo.min above the diagonal) with ``block×block`` fully open."""
    mask = torch.full((length, length), torch.finfo(dtype).min, dtype=dtype, device=device).triu(1)
    mask[block, block] = 0.0
    return mask[None, None]


@torch.no_grad()
def representation_pass(model: AnimeGamerMLLM, prompt: Prompt, embeds: torch.Tensor) -> torch.Tensor:
    """The ``(226, width)`` representation: last 226 hidden states → output resampler (released slice)."""
    mask = bidirectional_mask(embeds.shape[1], prompt.query_slice, embeds.dtype, embeds.device)
    hidden = model.decoder()(inputs_embeds=embeds, attention_mask=mask, use_cache=False).last_hidden_state
    representation = model.output_resampler(hidden[:, -NUM_QUERY_TOKENS:])[0]
    if not torch.isfinite(representation).all():
        raise NumericalError(
            "The AnimeGamer representation contains NaN/inf; load the MLLM in bfloat16 or float32, not float16."
        )
    return representation


def prompt_embeddings(model: AnimeGamerMLLM, prompt: Prompt, history: Sequence[torch.Tensor]) -> torch.Tensor:
    """Token embeddings with each history turn's 226 frame slots replaced by ``input_resampler(rep)``."""
    embeds = model.embed(prompt.ids)
    for start, representation in zip(prompt.history_slots, history, strict=True):
        rep = representation.to(device=embeds.device, dtype=embeds.dtype)
        embeds[0, start : start + NUM_QUERY_TOKENS] = model.input_resampler(rep)
    return embeds


@dataclass(frozen=True)
class Strengths:
    """Parsed ``[ML, SC, ET, ST]`` and whether every field was found."""

    values: tuple[int, int, int, int]
    complete: bool


def parse_strengths(text: str) -> Strengths:
    """First ``<TAG><Strength_n>`` of each tag; a missing field is 0 (the released fallback)."""
    found: dict[str, int] = {}
    for tag, value in STRENGTH_PATTERN.findall(text):
        found.setdefault(tag, int(value))
    values = tuple(found.get(tag, 0) for tag in STATE_TAGS)
    return Strengths(values=values, complete=len(found) == len(STATE_TAGS))  # type: ignore[arg-type]


def text_ids(ids: TokenIds, generated: Sequence[int]) -> list[int]:
    """The ids the released ``generate`` decodes: ``<frame>`` and the 100 tokens before each ``</frame>`` dropped."""
    keep = [token != ids.frame_open for token in generated]
    for index, token in enumerate(generated):
        if token == ids.frame_close:
            # the released slice [index - 100 : index], negative start included (then usually empty)
            span = slice(index - NUM_VID_GEN_TOKENS, index)
            keep[span] = [False] * len(keep[span])
    return [token for token, kept in zip(generated, keep, strict=True) if kept]


def decode_generated(model: AnimeGamerMLLM, generated: Sequence[int]) -> str:
    """The generated text with special tokens kept, frame tokens removed as released."""
    return model.tokenizer.decode(text_ids(model.token_ids, generated), skip_special_tokens=False)


@dataclass(frozen=True)
class StepResult:
    """What one turn produced (``deltas`` are (SC, ET, ST); ``states`` the values after the turn)."""

    representation: torch.Tensor
    generated_ids: list[int]
    text: str
    strengths: tuple[int, int, int, int]
    parse_complete: bool
    level: int
    flow: float
    deltas: tuple[int, int, int]
    states: dict[str, int]
    prompt_length: int


def game_step(
    model: AnimeGamerMLLM,
    game: Game,
    instruction: str,
    max_new_tokens: int = 200,
    progress: ProgressFn | None = None,
) -> tuple[Game, StepResult]:
    """Play one turn: text pass → parsed strengths → states; representation pass → 226×D.

    ``progress`` is called after every generated token (it may raise to cancel) and once more after
    the representation pass.  ``game`` is not modified; the returned game has the new turn.
    """
    text_instruction = check_instruction(instruction)
    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be at least 1 (got {max_new_tokens}); the released value is 200.")
    history = game.history()
    prompt = build_prompt(
        model.tokenizer, model.token_ids, text_instruction, [(t.instruction, t.strengths) for t in history]
    )
    report = progress or no_progress
    total = max_new_tokens + 1
    embeds = prompt_embeddings(model, prompt, [t.representation for t in history])
    generated = text_pass(model, prompt.ids, embeds, max_new_tokens, lambda done, _total: report(done, total))
    text = decode_generated(model, generated)
    parsed = parse_strengths("<ML>" + text)
    representation = representation_pass(model, prompt, embeds).detach().cpu()
    report(total, total)
    level, social, entertainment, stamina = parsed.values
    states = updated_states(game.states, (social, entertainment, stamina))
    turn = Turn(
        instruction=text_instruction,
        representation=representation,
        strengths=parsed.values,
        generated_ids=tuple(generated),
        text=text,
        parse_complete=parsed.complete,
        states=states,
    )
    result = StepResult(
        representation=representation,
        generated_ids=list(generated),
        text=text,
        strengths=parsed.values,
        parse_complete=parsed.complete,
        level=level,
        flow=released_flow(level),
        deltas=(social, entertainment, stamina),
        states=states,
        prompt_length=len(prompt.ids),
    )
    return game.with_turn(turn), result
