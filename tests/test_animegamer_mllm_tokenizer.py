"""AnimeGamer's tokenizer: every added token at its documented id, the 254-token prompt, bad folders."""

from __future__ import annotations

import pytest
from gameanim.core.errors import InputError, ModelFileError
from gameanim.nodes.animegamer.mllm import tokenizer as mt
from support.animegamer_mllm_fixtures import tokenizer_dir


@pytest.fixture(scope="module")
def loaded():
    return mt.load_tokenizer(tokenizer_dir())


def test_every_added_token_has_its_documented_id(loaded):
    tokenizer, ids = loaded
    assert len(tokenizer) == mt.VOCAB_SIZE == 32284
    documented = mt.documented_token_ids()
    assert len([t for t, i in documented.items() if i >= 32000]) == 284
    for token, expected in documented.items():
        assert tokenizer.convert_tokens_to_ids(token) == expected, token
    assert ids.frame_open == 32260 and ids.frame_close == 32261
    assert ids.frames[0] == 32000 and ids.frames[225] == 32225
    assert ids.strengths[32262] == -5 and ids.strengths[32272] == 5


def test_current_turn_prompt_is_254_tokens(loaded):
    tokenizer, ids = loaded
    line = "Character: Qiqi; Motion: quickly flying on broomstick; Background: day sky."
    prompt = mt.build_prompt(tokenizer, ids, line)
    assert len(prompt.ids) == 254
    assert prompt.ids[0] == 1 and prompt.ids[1] == 32282 and prompt.ids[-1] == 32274
    caption = tokenizer.encode("<TURN>" + line, add_special_tokens=False)
    assert len(caption) == 22
    assert prompt.ids[prompt.query_start - 2 : prompt.query_start] == [32256, 32260]
    assert prompt.ids[prompt.query_slice] == list(range(32000, 32226))
    # the released representation slice: the last 226 positions start three after the frame block
    assert len(prompt.ids) - 226 == prompt.query_start + 3


def test_history_turn_layout_uses_its_own_strengths(loaded):
    tokenizer, ids = loaded
    prompt = mt.build_prompt(
        tokenizer,
        ids,
        "Character: Qiqi; Motion: sit; Background: town.",
        [("Character: Qiqi; Motion: fly; Background: sky.", (3, -2, 1, 4))],
    )
    text = tokenizer.decode(prompt.ids, skip_special_tokens=False).replace(" ", "")
    assert "<ML><Strength_3></ML><SC><Strength_-2></SC><ET><Strength_1></ET><ST><Strength_4></ST></TURN>" in text
    assert text.count("</ST>") == 1
    start = prompt.history_slots[0]
    assert prompt.ids[start : start + 226] == list(range(32000, 32226))


def test_wrong_vocabulary_size_is_refused(loaded):
    tokenizer, _ = loaded
    grown = type(tokenizer).from_pretrained(str(tokenizer_dir()), legacy=False)
    grown.add_tokens(["<extra_token>"])
    with pytest.raises(ModelFileError, match="32285 tokens.*32284"):
        mt.validate_tokenizer(grown)


class _ShiftedTokenizer:
    """A tokenizer whose added tokens sit one id too high (e.g. an extra token inserted first)."""

    bos_token_id, eos_token_id = 1, 2

    def __len__(self) -> int:
        return 32284

    def convert_tokens_to_ids(self, token: str) -> int:
        known = mt.documented_token_ids()[token]
        return known + 1 if known >= 32000 else known


def test_moved_special_token_is_refused():
    with pytest.raises(ModelFileError, match=r"<frame_00000>: 32001 \(expected 32000\)"):
        mt.validate_tokenizer(_ShiftedTokenizer())


def test_missing_tokenizer_folder_names_the_files(tmp_path):
    with pytest.raises(ModelFileError, match="tokenizer.model"):
        mt.load_tokenizer(tmp_path / "nope")


@pytest.mark.parametrize("bad", ["", "   ", "<TURN>hack", "a <frame_00001> b"])
def test_bad_instruction_is_refused(bad):
    with pytest.raises(InputError):
        mt.check_instruction(bad)
