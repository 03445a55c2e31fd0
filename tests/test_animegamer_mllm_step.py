"""The text-pass processor, the strength parser, the mask, the flow table and the loader's checks."""

from __future__ import annotations

import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from gameanim.core.progress import Cancelled, CancelToken
from gameanim.core.weights import read_state_dict
from gameanim.nodes.animegamer.mllm import step
from gameanim.nodes.animegamer.mllm.tokenizer import TokenIds
from gameanim.nodes.motion.levels import released_flow
from support.animegamer_mllm_fixtures import FIXTURE, reference, tiny_config, tokenizer_dir

IDS = TokenIds(
    bos=1,
    eos=2,
    frame_open=32260,
    frame_close=32261,
    frames=tuple(range(32000, 32256)),
    strengths={32262 + i: v for i, v in enumerate(range(-5, 6))},
)


def test_processor_zeroes_101_scores_and_ties_go_to_lowest_id():
    processor = step.ReleasedFrameProcessor(IDS)
    scores = torch.full((32284,), -3.0)
    out = processor(15, scores.clone())
    zeroed = (out == 0.0).nonzero().flatten().tolist()
    assert zeroed == [*range(32000, 32100), 32261]
    assert step.greedy_pick(out) == 32000  # 101 exact-0.0 ties: the lowest id wins
    scores[500] = 0.0
    assert step.greedy_pick(processor(15, scores.clone())) == 500


def test_processor_forces_the_next_frame_token():
    processor = step.ReleasedFrameProcessor(IDS)
    scores = torch.randn(32284)
    assert step.greedy_pick(processor(32260, scores.clone())) == 32000
    assert step.greedy_pick(processor(32050, scores.clone())) == 32051
    assert step.greedy_pick(processor(32099, scores.clone())) == 32261  # frame_00099 -> </frame>


def test_parser_reads_decodes_with_and_without_spaces():
    packed = "<ML><Strength_3></ML><SC><Strength_-2></SC><ET><Strength_0></ET><ST><Strength_5></ST></s>"
    spaced = "<ML> <Strength_3> </ML> <SC> <Strength_-2> </SC> <ET> <Strength_0> </ET> <ST> <Strength_5> </ST>"
    for text in (packed, spaced):
        parsed = step.parse_strengths(text)
        assert parsed.values == (3, -2, 0, 5) and parsed.complete
    partial = step.parse_strengths("<ML><Strength_2></ML> hello")
    assert partial.values == (2, 0, 0, 0) and not partial.complete


def test_text_ids_drop_frame_blocks_as_released():
    frames = list(range(32000, 32100))
    generated = [32270, 32260, *frames, 32261, 32275, 2]
    assert step.text_ids(IDS, generated) == [32270, 32261, 32275, 2]
    assert step.text_ids(IDS, [32260, 32270]) == [32270]
    # negative starts follow Python/torch slicing, as in the released ``text_mask[eoi - 100 : eoi]``
    assert step.text_ids(IDS, [32270, 32000, 32261, 2]) == [32261, 2]  # [-98:2] clamps to [0:2]
    long = [5] * 140 + [32261] + [7] * 10  # [40:140]: the 100 tokens before </frame>
    assert step.text_ids(IDS, long) == [5] * 40 + [32261] + [7] * 10
    late = [5] * 60 + [32261] + [7] * 89  # [-40:60] on 150 ids is [110:60]: empty, nothing removed
    assert step.text_ids(IDS, late) == late


def test_flow_tables():
    assert [released_flow(level) for level in range(6)] == [40.0, 0.5, 2.5, 10.0, 15.0, 40.0]
    assert [released_flow(level, "app") for level in range(1, 6)] == [0.5, 1.0, 5.0, 20.0, 40.0]


def test_mask_is_causal_with_one_open_block():
    mask = step.bidirectional_mask(8, slice(2, 5), torch.float32, torch.device("cpu"))[0, 0]
    allowed = mask == 0
    expected = torch.ones(8, 8).tril().bool()
    expected[2:5, 2:5] = True
    assert torch.equal(allowed, expected)
    assert mask.min().item() == torch.finfo(torch.float32).min


@pytest.fixture(scope="module")
def ref():
    return reference()


@pytest.fixture(scope="module")
def state():
    return read_state_dict(FIXTURE / "tiny_mllm.safetensors")


@pytest.fixture(scope="module")
def model(ref, state):
    return api.load_animegamer_mllm(state, tokenizer_dir(), config=tiny_config(ref))


def test_loaded_model_has_released_layout(model, ref):
    assert model.width == ref["width"]
    keys = model.state_dict().keys()
    assert "llm.base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight" in keys
    assert "llm.base_model.model.model.norm.modules_to_save.default.weight" in keys
    lora = model.llm.base_model.model.model.layers[0].self_attn.q_proj
    assert lora.scaling["default"] == 1.0 and lora.r["default"] == ref["rank"]
    assert model.unexpected_keys == []


def test_missing_and_unexpected_keys(ref, state):
    broken = {k: v for k, v in state.items() if "layers.1.mlp.up_proj.lora_B" not in k}
    with pytest.raises(ModelFileError, match="layers.1.mlp.up_proj.lora_B"):
        api.load_animegamer_mllm(broken, tokenizer_dir(), config=tiny_config(ref))
    extra = {**state, "llm.something_new.weight": torch.zeros(2)}
    loaded = api.load_animegamer_mllm(extra, tokenizer_dir(), config=tiny_config(ref))
    assert loaded.unexpected_keys == ["llm.something_new.weight"]


def test_unknown_dtype(ref, state):
    with pytest.raises(InputError, match="dtype 'int8'"):
        api.load_animegamer_mllm(state, tokenizer_dir(), config={**ref["config"], "dtype": "int8"})


def test_wrong_vocabulary_in_weights(ref, state):
    key = "llm.base_model.model.model.embed_tokens.weight"
    small = {**state, key: state[key][:32000]}
    with pytest.raises(ModelFileError, match="32000 rows.*32284"):
        api.load_animegamer_mllm(small, tokenizer_dir(), config=tiny_config(ref))


def _trained_only(state):
    frozen = (".base_layer.", ".original_module.")
    return {k: v for k, v in state.items() if not any(f in k for f in frozen)}


def test_missing_base_model_names_folder_and_files(ref, state, tmp_path):
    with pytest.raises(ModelFileError, match="Mistral-7B-Instruct-v0.1.*config.json"):
        api.load_animegamer_mllm(_trained_only(state), tokenizer_dir(), config=tiny_config(ref))
    with pytest.raises(ModelFileError, match=r"nowhere.*config\.json.*models/LLM/Mistral-7B-Instruct-v0\.1"):
        api.load_animegamer_mllm(
            _trained_only(state), tokenizer_dir(), base=tmp_path / "nowhere", config=tiny_config(ref)
        )


def test_base_folder_supplies_the_frozen_weights(ref, state, model, tmp_path):
    from transformers import MistralConfig, MistralForCausalLM

    config = {k: v for k, v in ref["config"].items()}
    config["vocab_size"] = 32000
    base = MistralForCausalLM(MistralConfig(**config))
    prefix = "llm.base_model.model."
    plain = {}
    for key, value in state.items():
        if key.startswith(prefix) and ("lora_" not in key and "modules_to_save" not in key):
            name = key[len(prefix) :].replace(".base_layer.", ".").replace(".original_module.", ".")
            plain[name] = value[:32000] if "embed_tokens" in name or "lm_head" in name else value
    base.load_state_dict(plain)
    base.save_pretrained(tmp_path / "mistral")
    overrides = {"dtype": "float32"}
    from_base = api.load_animegamer_mllm(
        _trained_only(state), tokenizer_dir(), base=tmp_path / "mistral", config=overrides
    )
    line = ref["instructions"][0]
    _, a = api.game_step(from_base, api.new_game("Qiqi"), line, max_new_tokens=4)
    _, b = api.game_step(model, api.new_game("Qiqi"), line, max_new_tokens=4)
    assert a.generated_ids == b.generated_ids
    assert torch.allclose(a.representation, b.representation, atol=1e-5)


def test_progress_per_token_and_cancel(model, ref):
    calls = []
    api.game_step(
        model,
        api.new_game("Qiqi"),
        ref["instructions"][0],
        max_new_tokens=5,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert calls == [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        api.game_step(model, api.new_game("Qiqi"), ref["instructions"][0], progress=token.progress())


def test_empty_instruction_and_bad_token_budget(model):
    with pytest.raises(InputError, match="empty"):
        api.game_step(model, api.new_game("Qiqi"), "  ")
    with pytest.raises(InputError, match="max_new_tokens"):
        api.game_step(model, api.new_game("Qiqi"), "Character: Qiqi; Motion: run; Background: day.", max_new_tokens=0)
