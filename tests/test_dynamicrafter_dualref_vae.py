"""ToonCrafter's dual-reference VAE decoder: real layout, parity with the original, keyframes through the API."""

from __future__ import annotations

import pytest
import torch
from gameanim.core.errors import InputError, ModelFileError
from gameanim.core.progress import Cancelled, CancelToken
from gameanim.nodes.dynamicrafter import dualref_vae
from safetensors.torch import load_file
from support.dynamicrafter_fixtures import FIXTURES, manifest_state_dict

TC_WEIGHTS = FIXTURES / "tc_vae_tiny.safetensors"
TC_PARITY = FIXTURES / "tc_vae_parity.safetensors"


def _vae_part(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k.removeprefix("first_stage_model."): v for k, v in sd.items() if k.startswith("first_stage_model.")}


@pytest.fixture(scope="module")
def tiny():
    return dualref_vae.build_dual_reference_vae(_vae_part(load_file(TC_WEIGHTS))), load_file(TC_PARITY)


def _images(keyframes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixture's keyframes ``[1,3,2,H,W]`` in -1..1 -> two IMAGE batches 0..1."""
    images = (keyframes[0].permute(1, 2, 3, 0) + 1) / 2
    return images[:1], images[1:]


def test_real_tooncrafter_decoder_layout_loads_with_no_missing_or_unexpected_keys():
    sd = manifest_state_dict("tooncrafter_512_interp")
    vae = dualref_vae.build_dual_reference_vae(
        _vae_part(sd), dtype=torch.float32
    )  # strict: raises on any missing/unexpected key
    decoder = vae.decoder
    expected = sum(v.numel() for k, v in sd.items() if k.startswith("first_stage_model.decoder."))
    assert sum(p.numel() for p in decoder.parameters()) == expected
    assert [type(m).__name__ for m in decoder.refinement] == [
        "KeyframeAdd", "KeyframeAdd", "KeyframeAttention", "KeyframeAttention", "KeyframeAdd"
    ]  # fmt: skip
    assert decoder.refinement[3].heads == 8 and len(decoder.up_blocks[0].resnets) == 3


def test_keyframe_features_match_the_original_encoder(tiny):
    vae, parity = tiny
    features = dualref_vae.keyframe_hidden_states(vae, *_images(parity["keyframes"]))
    assert len(features) == 5
    for i, feature in enumerate(features):
        torch.testing.assert_close(feature, parity[f"hidden_{i}"], atol=1e-4, rtol=0)


@pytest.mark.parametrize("clip", ["short", "long"])  # 8 frames: one window; 18 frames: windows of 16 + 2
def test_decoder_matches_the_original(tiny, clip):
    vae, parity = tiny
    keyframes = [parity[f"hidden_{i}"] for i in range(5)]
    ours = dualref_vae.decode_clip(vae.decoder, parity[f"z_{clip}"], keyframes, redecode_middle=False)
    assert (ours - parity[f"decode_{clip}"]).abs().max() < 1e-4
    full = dualref_vae.decode_clip(vae.decoder, parity[f"z_{clip}"], keyframes)
    assert (full - parity[f"pipeline_{clip}"]).abs().max() < 1e-4
    t = full.shape[2]
    assert not torch.equal(full[:, :, t // 2 - 1 : t // 2 + 1], ours[:, :, t // 2 - 1 : t // 2 + 1])


def test_a_batch_of_clips_decodes_each_with_its_own_keyframes(tiny):
    vae, parity = tiny
    first, last = _images(parity["keyframes"])
    z = parity["z_short"][:, :, :6]
    both = dualref_vae.decode_dual_reference(
        vae, torch.cat([z, z.flip(2)]), torch.cat([first, last]), torch.cat([last, first])
    )
    alone = dualref_vae.decode_dual_reference(vae, z.flip(2), last, first)
    assert both.shape == (12, 32, 48, 3)
    torch.testing.assert_close(both[6:], alone, atol=1e-5, rtol=0)
    assert (both[:6] - both[6:].flip(0)).abs().max() > 1e-3


def test_decode_from_keyframe_images_progress_cancel_and_half_precision(tiny):
    vae, parity = tiny
    first, last = _images(parity["keyframes"])
    seen = []
    frames = dualref_vae.decode_dual_reference(
        vae, parity["z_short"], first, last, progress=lambda d, t: seen.append(t)
    )
    expected = ((parity["pipeline_short"].clamp(-1, 1) + 1) / 2)[0].permute(1, 2, 3, 0)
    assert frames.shape == (8, 32, 48, 3) and (frames - expected).abs().max() < 1e-4
    assert len(seen) == 8 and seen[-1] == 8  # 4 levels x (decode + middle re-decode)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        dualref_vae.decode_dual_reference(vae, parity["z_short"], first, last, progress=token.progress())
    short = parity["z_short"][:, :, :3]  # half precision is slow on a CPU: 3 frames (no middle re-decode)
    full = dualref_vae.decode_dual_reference(vae, short, first, last)
    for dtype in (torch.float16, torch.bfloat16):
        half = dualref_vae.build_dual_reference_vae(_vae_part(load_file(TC_WEIGHTS)), dtype=dtype)
        frames16 = dualref_vae.decode_dual_reference(half, short, first, last)
        assert frames16.dtype == torch.float32 and (frames16 - full).abs().mean() < 0.02


def test_wrong_keyframes_are_clear_errors(tiny):
    vae, parity = tiny
    first, last = _images(parity["keyframes"])
    with pytest.raises(InputError, match="clip's size 48x32"):
        dualref_vae.decode_dual_reference(vae, parity["z_short"], first[:, :16], last[:, :16])
    with pytest.raises(ModelFileError, match="incomplete"):
        dualref_vae.build_dual_reference_vae(
            {k: v for k, v in _vae_part(load_file(TC_WEIGHTS)).items() if "conv_in" not in k}
        )
