"""Parity with the original AnimeGamer code (fixture made by tests/fixtures/make_animegamer_mllm_fixture.py).

The fixture is a tiny ContinuousLVLM_Video with seeded weights in the released key layout, and what
the original code (transformers 4.38) produced for a 2-turn game: prompt ids, generated ids, the top
scores of every greedy step, the parsed states and the 226×W representations.
"""

from __future__ import annotations

import pytest
import torch
from gameanim import api
from gameanim.core.weights import read_state_dict
from gameanim.nodes.animegamer.mllm import step
from gameanim.nodes.animegamer.mllm.tokenizer import build_prompt
from support.animegamer_mllm_fixtures import FIXTURE, reference, tiny_config, tokenizer_dir

TOL = 1e-4


@pytest.fixture(scope="module")
def ref():
    return reference()


@pytest.fixture(scope="module")
def model(ref):
    torch.manual_seed(0)
    return api.load_animegamer_mllm(FIXTURE / "tiny_mllm.safetensors", tokenizer_dir(), config=tiny_config(ref))


@pytest.fixture(scope="module")
def reps():
    return read_state_dict(FIXTURE / "reference.safetensors")


def test_two_turn_game_matches_original(model, ref, reps):
    game = api.new_game("Qiqi", window=1)
    for turn, (instruction, record) in enumerate(zip(ref["instructions"], ref["window1"], strict=True)):
        prompt = build_prompt(model.tokenizer, model.token_ids, instruction)
        assert prompt.ids == record["prompt_ids"]
        game, step = api.game_step(model, game, instruction)
        assert step.generated_ids == record["generated_ids"]
        assert list(step.strengths) == record["states"]
        expected = reps[f"window1_turn{turn}"]
        assert step.representation.shape == expected.shape == (226, ref["width"])
        assert (step.representation - expected).abs().max().item() < TOL
    ml, sc, et, st = ref["window1"][1]["states"]
    assert game.states == {
        "stamina": max(0, min(100, 50 + 10 * st)),
        "social": max(0, min(100, 50 + 10 * sc)),
        "entertainment": max(0, min(100, 50 + 10 * et)),
    }
    assert step.level == ml and step.deltas == (sc, et, st)


def _processed_scores(model, prompt, history, steps):
    """Top-5 processed scores of the first greedy steps, recomputed without a cache."""
    processor = step.ReleasedFrameProcessor(model.token_ids)
    embeds = step.prompt_embeddings(model, prompt, history)
    ids, seen = list(prompt.ids), []
    with torch.no_grad():
        for _ in range(steps):
            logits = model.causal_lm()(inputs_embeds=embeds).logits[0, -1].float()
            scores = processor(ids[-1], logits)
            seen.append(scores.topk(5).values)
            ids.append(step.greedy_pick(scores))
            embeds = torch.cat([embeds, model.embed(ids[-1:])], dim=1)
    return seen


@pytest.mark.parametrize("window", [1, 2])
def test_text_pass_scores_match_original(model, ref, reps, window):
    """The original's text pass (transformers 4.38) sees the history representations, and so do we."""
    if window == 1:
        record, history, past = ref["window1"][0], [], []
        prompt = build_prompt(model.tokenizer, model.token_ids, ref["instructions"][0])
    else:
        record, history = ref["window2_turn1"], [reps["window1_turn0"]]
        past = [(ref["instructions"][0], ref["window1"][0]["states"])]
        prompt = build_prompt(model.tokenizer, model.token_ids, ref["instructions"][1], past)
    seen = _processed_scores(model, prompt, history, 4)
    for got, expected in zip(seen, record["top_scores"], strict=False):
        assert torch.allclose(got, torch.tensor(expected), atol=TOL)
    if history:
        raw = _processed_scores(model, prompt, [torch.zeros_like(history[0])], 1)[0]
        assert not torch.allclose(raw, torch.tensor(record["top_scores"][0]), atol=TOL)


def test_history_window_matches_original_generate_bi(model, ref, reps):
    first = ref["window1"][0]
    game = api.new_game("Qiqi", window=2)
    game, _ = api.game_step(model, game, ref["instructions"][0])
    game, step = api.game_step(model, game, ref["instructions"][1])
    record = ref["window2_turn1"]
    assert step.prompt_length == len(record["prompt_ids"])
    history = [(ref["instructions"][0], first["states"])]
    assert build_prompt(model.tokenizer, model.token_ids, ref["instructions"][1], history).ids == record["prompt_ids"]
    assert (step.representation - reps["window2_turn1"]).abs().max().item() < TOL
    assert (step.representation - reps["window1_turn1"]).abs().max().item() > 1e-3
