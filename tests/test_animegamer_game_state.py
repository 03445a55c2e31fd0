"""Game state: the 5×delta update, the window, and persistence (resume equals an uninterrupted run)."""

from __future__ import annotations

import json

import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from gameanim.nodes.animegamer.mllm import game_state as gs
from support.animegamer_mllm_fixtures import FIXTURE, reference, tiny_config, tokenizer_dir


def _turn(i: int, dtype=torch.bfloat16) -> gs.Turn:
    generator = torch.Generator().manual_seed(i)
    return gs.Turn(
        instruction=f"Character: Qiqi; Motion: turn {i}; Background: day.",
        representation=torch.randn(226, 24, generator=generator).to(dtype),
        strengths=(i % 5 + 1, -1, 2, -3),
        generated_ids=(32270, 2),
        text="<Strength_1></s>",
        states={"stamina": 35, "social": 45, "entertainment": 60},
    )


def test_states_move_by_five_times_delta_and_clamp():
    start = {"stamina": 50, "social": 50, "entertainment": 50}
    assert gs.updated_states(start, (-2, 1, 4)) == {"stamina": 70, "social": 40, "entertainment": 55}
    assert gs.updated_states({"stamina": 98, "social": 3, "entertainment": 50}, (-5, 0, 5)) == {
        "stamina": 100,
        "social": 0,
        "entertainment": 50,
    }


def test_window_selects_history():
    game = api.new_game("Qiqi", window=3)
    for i in range(4):
        game = game.with_turn(_turn(i))
    assert [t.instruction for t in game.history()] == [_turn(2).instruction, _turn(3).instruction]
    assert api.new_game("Qiqi").with_turn(_turn(0)).history() == []
    with pytest.raises(InputError):
        api.new_game("Qiqi", window=0)
    with pytest.raises(InputError):
        api.new_game(" ")


def test_round_trip_is_bit_exact(tmp_path):
    game = api.new_game("Qiqi", window=2)
    for i in range(3):
        game = game.with_turn(_turn(i))
    path = api.save_game(game, tmp_path / "slot")
    assert path.name == "slot.game.json"
    loaded = api.load_game(tmp_path / "slot")
    assert (loaded.character, loaded.window, loaded.states) == (game.character, game.window, game.states)
    for a, b in zip(loaded.turns, game.turns, strict=True):
        assert a.representation.dtype == torch.bfloat16 and torch.equal(a.representation, b.representation)
        assert (a.instruction, a.strengths, a.generated_ids, a.states) == (
            b.instruction,
            b.strengths,
            b.generated_ids,
            b.states,
        )
    assert len(list(tmp_path.glob("slot.*.safetensors"))) == 1
    api.save_game(game.with_turn(_turn(9)), tmp_path / "slot")
    assert len(list(tmp_path.glob("slot.*.safetensors"))) == 1  # the superseded tensors file is gone


def test_empty_game_round_trip(tmp_path):
    api.save_game(api.new_game("Sosuke"), tmp_path / "fresh")
    loaded = api.load_game(tmp_path / "fresh.game.json")
    assert loaded.turns == () and loaded.states == {"stamina": 50, "social": 50, "entertainment": 50}


def _good_save(tmp_path):
    game = api.new_game("Qiqi").with_turn(_turn(1))
    path = api.save_game(game, tmp_path / "slot")
    return game, path, {p.name: p.read_bytes() for p in tmp_path.iterdir()}


def test_corrupt_json_is_reported_and_left_alone(tmp_path):
    _, path, _ = _good_save(tmp_path)
    path.write_text(path.read_text()[:-40])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ModelFileError, match="slot.game.json is corrupt.*not valid JSON"):
        api.load_game(tmp_path / "slot")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_corrupt_tensors_are_reported(tmp_path):
    _, path, _ = _good_save(tmp_path)
    tensors = next(tmp_path.glob("slot.*.safetensors"))
    data = bytearray(tensors.read_bytes())
    data[-5] ^= 0xFF
    tensors.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="does not match the checksum"):
        api.load_game(path)
    tensors.unlink()
    with pytest.raises(ModelFileError, match="is missing"):
        api.load_game(path)


def test_failed_save_keeps_the_good_one(tmp_path):
    game, path, before = _good_save(tmp_path)
    bad = gs.Turn(
        instruction="x", representation=torch.full((226, 24), float("nan")), strengths=(1, 0, 0, 0), states=game.states
    )
    with pytest.raises(InputError, match="NaN"):
        api.save_game(game.with_turn(bad), tmp_path / "slot")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert torch.equal(api.load_game(path).turns[0].representation, game.turns[0].representation)


def test_foreign_json_is_refused(tmp_path):
    (tmp_path / "x.game.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ModelFileError, match="not a version-1 AnimeGamer game file"):
        api.load_game(tmp_path / "x")
    with pytest.raises(ModelFileError, match="No saved game"):
        api.load_game(tmp_path / "missing")


def test_resume_after_save_equals_uninterrupted_run(tmp_path):
    ref = reference()
    model = api.load_animegamer_mllm(FIXTURE / "tiny_mllm.safetensors", tokenizer_dir(), config=tiny_config(ref))
    lines = [*ref["instructions"], "Character: Qiqi; Motion: gently sit on railing; Background: day town."]
    straight = api.new_game("Qiqi", window=2)
    steps = []
    for line in lines:
        straight, step = api.game_step(model, straight, line, max_new_tokens=20)
        steps.append(step)
    resumed = api.new_game("Qiqi", window=2)
    for line in lines[:2]:
        resumed, _ = api.game_step(model, resumed, line, max_new_tokens=20)
        api.save_game(resumed, tmp_path / "slot")
        resumed = api.load_game(tmp_path / "slot")
    resumed, last = api.game_step(model, resumed, lines[2], max_new_tokens=20)
    assert last.generated_ids == steps[2].generated_ids
    assert torch.equal(last.representation, steps[2].representation)
    assert resumed.states == straight.states
    assert [t.strengths for t in resumed.turns] == [t.strengths for t in straight.turns]
