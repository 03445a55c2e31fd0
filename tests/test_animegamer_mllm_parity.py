"""Parity with the original AnimeGamer code (fixture made by tests/fixtures/make_animegamer_mllm_fixture.py).

The fixture is a tiny ContinuousLVLM_Video with seeded weights in the released key layout, and what
the original code (transformers 4.38) produced for a 2-turn game: prompt ids, generated ids, the top
scores of every greedy step, the parsed states and the 226×W representations.
"""

from __future__ import annotations

import pytest
import torch
from animegamer_mllm_support import FIXTURE, reference, tiny_config, tokenizer_dir
from gameanim import api
from gameanim.nodes.animegamer import mllm_step
from gameanim.nodes.animegamer.mllm_tokenizer import build_prompt
from gameanim.weights import read_state_dict

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


def test_text_pass_scores_match_original(model, ref):
    record = ref["window1"][0]
    prompt = build_prompt(model.tokenizer, model.token_ids, ref["instructions"][0])
    embeds = mllm_step.prompt_embeddings(model, prompt, [])
    seen = []
    processor = mllm_step.ReleasedFrameProcessor(model.token_ids)
    with torch.no_grad():
        ids = list(prompt.ids)
        for _ in range(3):
            logits = model.causal_lm()(inputs_embeds=model.embed(ids)).logits[0, -1].float()
            scores = processor(ids[-1], logits)
            seen.append(scores.topk(5).values)
            ids.append(mllm_step.greedy_pick(scores))
    del embeds
    for got, expected in zip(seen, record["top_scores"], strict=False):
        assert torch.allclose(got, torch.tensor(expected), atol=TOL)


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
