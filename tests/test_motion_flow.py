"""Flow output format, visualisation, progress/cancel, RAFT loading from user-placed weights, evaluation."""

from __future__ import annotations

import gameanim.nodes.motion.flow as flow_mod
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from gameanim.core.progress import Cancelled, CancelToken
from gameanim.nodes.motion.evaluate import level_metrics, parse_targets, split_clips
from gameanim.nodes.motion.synthetic import moving_sprite_clip


def small_clip(frames: int = 4, speed: float = 3.0) -> torch.Tensor:
    return torch.from_numpy(moving_sprite_clip(frames=frames, height=128, width=160, speed=speed)[0])


@pytest.mark.parametrize("method", ["dis", "dis_fast", "dis_ultrafast", "farneback"])
def test_flow_is_optical_flow_shaped_and_points_the_right_way(method):
    frames, mask = moving_sprite_clip(frames=4, height=128, width=160, speed=3.0)
    flow = flow_mod.estimate_flow(torch.from_numpy(frames), method)
    assert isinstance(flow, torch.Tensor) and flow.dtype == torch.float32
    assert flow.shape == (3, 128, 160, 2)
    sprite = torch.from_numpy(mask[:-1] > 0.5)
    assert flow[..., 0][sprite].mean() == pytest.approx(3.0, rel=0.15)
    assert abs(float(flow[..., 1][sprite].mean())) < 0.3


def test_progress_is_reported_per_batch_and_cancel_stops():
    calls = []
    flow_mod.estimate_flow(
        small_clip(frames=6), settings=flow_mod.FlowSettings(batch_size=2), progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(2, 5), (4, 5), (5, 5)]
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        flow_mod.estimate_flow(small_clip(), progress=token.progress())


def test_hsv_visualisation():
    flow = torch.zeros(2, 8, 8, 2)
    flow[0, ..., 0] = 4.0  # right -> red hue, full brightness
    image = flow_mod.flow_to_hsv_image(flow)
    assert image.shape == (2, 8, 8, 3) and image.dtype == torch.float32
    assert image[0, 0, 0].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=0.01)
    assert float(image[1].max()) == 0.0
    assert torch.isfinite(flow_mod.flow_to_hsv_image(torch.zeros(1, 4, 4, 2))).all()


def test_raft_missing_weights_error_names_the_file(tmp_path):
    with pytest.raises(ModelFileError) as info:
        flow_mod.find_raft_weights("raft_small", [tmp_path])
    message = str(info.value)
    assert "raft_small_C_T_V2-01064c6d.pth" in message and str(tmp_path) in message
    assert "never downloads" in message
    with pytest.raises(InputError, match="needs a loaded RAFT model"):
        flow_mod.estimate_flow(small_clip(), "raft_small")


@pytest.fixture(scope="module")
def raft_folder(tmp_path_factory):
    """A models folder holding a randomly initialised torchvision raft_small in torchvision's key layout."""
    from torchvision.models.optical_flow import raft_small

    torch.manual_seed(0)
    base = tmp_path_factory.mktemp("comfy")
    folder = base / "models" / "optical_flow"
    folder.mkdir(parents=True)
    torch.save(raft_small(weights=None).state_dict(), folder / flow_mod.RAFT_FILES["raft_small"])
    return base


def test_raft_small_loads_from_models_folder_and_runs(raft_folder):
    path = flow_mod.find_raft_weights("raft_small", [raft_folder / "models" / "optical_flow"])
    model = flow_mod.load_raft(path, "raft_small")
    calls = []
    frames = small_clip(frames=3)[:, :100, :140]  # not a multiple of 8: padded and cropped
    flow = flow_mod.estimate_flow(
        frames,
        "raft_small",
        raft_model=model,
        settings=flow_mod.FlowSettings(raft_updates=2),
        progress=lambda d, t: calls.append(d),
    )
    assert flow.shape == (2, 100, 140, 2) and torch.isfinite(flow).all()
    assert calls == [2]
    with pytest.raises(ModelFileError, match="choose raft_small"):
        flow_mod.load_raft(path, "raft_large")


def test_raft_through_api_and_node_uses_the_optical_flow_folder(raft_folder, monkeypatch):
    from gameanim.nodes.motion.comfy_nodes import OpticalFlow

    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(raft_folder))
    frames = small_clip(frames=2)
    flow, image = OpticalFlow().run(frames, "raft_small", batch_size=1, raft_updates=1)
    assert flow.shape == (1, 128, 160, 2) and image.shape == (1, 128, 160, 3)
    assert np.isfinite(api.motion_scope(frames, method="raft_small").scope)
    with pytest.raises(ModelFileError, match="raft_large_C_T_SKHT_V2-ff5fadd5.pth"):
        api.motion_scope(frames, method="raft_large")


# ----------------------------------------------------------------------------- evaluation


def test_level_metrics_match_hand_computation():
    assert level_metrics([1, 3, 5, 2], [1, 2, 5, 4]) == (0.5, 0.75)
    with pytest.raises(InputError):
        level_metrics([1, 2], [1])
    with pytest.raises(InputError):
        level_metrics([1], [6])
    assert parse_targets("1, 3 5") == (1, 3, 5)
    with pytest.raises(InputError):
        parse_targets("1, x")


def test_evaluate_motion_on_clips_with_known_levels():
    scale = 1.0 / api_scale()
    clips = [moving_sprite_clip(frames=6, speed=s * scale)[0] for s in (0.0, 2.0, 7.0, 18.0, 40.0)]
    result = api.evaluate_motion(clips, [1, 2, 3, 4, 5])
    assert result.levels == (1, 2, 3, 4, 5), result.scopes
    assert (result.acc_f, result.mae_f) == (1.0, 0.0)
    off = api.evaluate_motion(clips[:2], [3, 5])
    assert (off.acc_f, off.mae_f) == (0.0, 2.5)


def api_scale() -> float:
    from gameanim.nodes.motion.scope import reference_scale

    return reference_scale(320, 512)


def test_split_clips():
    frames = torch.zeros(12, 8, 8, 3)
    assert [c.shape[0] for c in split_clips(frames, 4)] == [4, 4, 4]
    with pytest.raises(InputError, match="cannot be split"):
        split_clips(frames, 5)
