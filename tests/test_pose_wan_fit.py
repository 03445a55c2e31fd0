"""Rig renders meet Wan 2.1 VACE's control-video conventions: 16 fps, 4n+1 frames, sizes x16, black ground."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from gameanim.core.errors import InputError
from gameanim.nodes.pose import comfy_nodes as nodes
from gameanim.nodes.pose.wan_fit import reference_on_canvas, resample_pose, sample_times, snap_size, wan_frame_count


@pytest.fixture()
def base_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    (tmp_path / "input").mkdir()
    return tmp_path


def _run_cycle(step: int = 1):
    (pose,) = nodes.LoadMotion().load("sample:run_cycle.bvh", 0, -1, step, "auto")
    return pose


def _latent_frames(length: int) -> int:
    """ComfyUI's WanVaceToVideo / Wan VAE arithmetic: pixel frames -> latent frames."""
    return (length - 1) // 4 + 1


def test_sizes_and_counts_snap_to_wan_rules():
    assert [snap_size(v) for v in (8, 16, 500, 504, 520, 833)] == [16, 16, 496, 512, 512, 832]
    assert [wan_frame_count(n) for n in (1, 5, 6.9, 7.1, 13.3, 81, 200)] == [5, 5, 5, 9, 13, 81, 81]
    assert wan_frame_count(100, max_frames=50) == 49
    with pytest.raises(InputError, match="max_frames"):
        wan_frame_count(10, max_frames=4)


def test_sample_times_rules():
    source = np.arange(24) / 30.0  # 24 frames at 30 fps: 0.767 s
    whole = sample_times(source, 16.0, 81, "fit_whole_motion")
    assert len(whole) == 13 and whole[0] == 0.0 and whole[-1] == pytest.approx(source[-1])
    speed = sample_times(source, 16.0, 81, "keep_speed")
    assert len(speed) == 13 and np.allclose(np.diff(speed), 1 / 16)  # 12/16 = 0.75 s <= 0.767 s
    long = np.arange(300) / 30.0  # 10 s: cut to 81 frames at the motion's own speed
    assert np.allclose(sample_times(long, 16.0, 81, "fit_whole_motion"), np.arange(81) / 16)
    with pytest.raises(InputError, match="length rule"):
        sample_times(source, 16.0, 81, "stretch")


def test_resample_interpolates_the_motion_in_time():
    pose = _run_cycle()
    fitted = resample_pose(pose, 16.0, 81, "fit_whole_motion")
    assert fitted.frame_count == 13 and (fitted.frame_count - 1) % 4 == 0 and fitted.fps == 16.0
    assert np.allclose(fitted.points[0], pose.points[0]) and np.allclose(fitted.points[-1], pose.points[-1])
    # sample i sits at 23 * i / 12 source frames: check one in-between sample against the two neighbours
    t = 23 * 5 / 12
    lo = int(t)
    expected = pose.points[lo] * (lo + 1 - t) + pose.points[lo + 1] * (t - lo)
    assert np.allclose(fitted.points[5], expected, atol=1e-6)
    face = np.linalg.norm(fitted.normals, axis=-1)
    assert np.allclose(face[face > 0], 1.0)
    assert list(fitted.frame_numbers[[0, 5, -1]]) == [0, 10, 23]  # sample 5 sits at source frame 9.58
    # frame_step 3 keeps the true timing: the same 0.767 s still gives 13 frames at 16 fps
    stepped = resample_pose(_run_cycle(step=3), 16.0, 81, "keep_speed")
    assert stepped.frame_count == 9 and stepped.fps == 16.0  # frames 0..21 span 0.7 s: 9 frames (0.5 s) + tail
    # nearest picked rig frames for Blender renders: t = 0.125 s = source frame 3.75 -> frame 3 (of 0, 3, 6, ...)
    assert list(stepped.frame_numbers[:3]) == [0, 3, 3]


def test_fit_node_feeds_a_control_video_that_wan_encodes_without_padding(base_dir):
    (camera,) = nodes.PoseCamera().build("side_right", "orthographic", 500, 300, 0.1, True, 30.0)
    pose3d, cam, width, height, length, fps = nodes.FitPoseToWan().fit(
        _run_cycle(), camera, 16.0, 81, "fit_whole_motion"
    )
    assert (width, height, length, fps) == (496, 304, 13, 16.0)
    images, keypoints = nodes.RenderPose().render(pose3d, cam, 4, False)["result"]
    assert tuple(images.shape) == (length, height, width, 3) and len(keypoints) == length
    # the Wan VAE turns 4n+1 frames into n+1 latents and back into exactly as many frames: nothing padded grey
    assert 4 * (_latent_frames(length) - 1) + 1 == length
    assert width % 16 == 0 and height % 16 == 0
    # black ground like VACE's pose annotator; the skeleton covers a small part of each frame
    lit = images.amax(dim=-1) > 0.02
    assert float(images[:, :4].abs().max()) == 0.0 and 0.005 < float(lit.float().mean()) < 0.2
    assert bool(lit.flatten(1).any(dim=1).all())
    depth, normal, silhouette = nodes.RenderPoseDepthNormal().render(pose3d, cam)
    assert tuple(depth.shape) == (length, height, width, 3)
    assert float(depth[silhouette == 0].max()) == 0.0  # depth background black, near = white


def test_reference_is_letterboxed_on_white():
    image = torch.zeros((2, 40, 20, 3))
    image[:, 10:30, 5:15] = torch.tensor([1.0, 0.0, 0.0])
    mask = torch.zeros((2, 40, 20))
    mask[:, 10:30, 5:15] = 1.0
    (ref,) = nodes.WanReferenceImage().place(image, 96, 64, 0.0, mask)
    assert tuple(ref.shape) == (1, 64, 96, 3)
    # 20x40 scaled by 64/40 -> 32x64, centred: columns 32..63 hold the picture, the rest is white
    assert torch.all(ref[:, :, :30] == 1.0) and torch.all(ref[:, :, 66:] == 1.0)
    assert torch.allclose(ref[0, 32, 48], torch.tensor([1.0, 0.0, 0.0]), atol=1e-3)
    assert torch.allclose(ref[0, 5, 48], torch.ones(3))  # masked-out area became white, not black
    rgba = torch.cat([image[:1], mask[:1, ..., None]], dim=-1)
    assert torch.allclose(reference_on_canvas(rgba, 96, 64, margin=0.0), ref)
    with pytest.raises(InputError, match="mask"):
        reference_on_canvas(image, 96, 64, torch.ones((1, 8, 8)))


def test_short_and_single_frame_motions_fill_one_latent_group():
    pose = _run_cycle()
    still = resample_pose(
        replace(
            pose,
            points=pose.points[:1],
            normals=pose.normals[:1],
            head_centre=pose.head_centre[:1],
            root=pose.root[:1],
            hands=None if pose.hands is None else pose.hands[:1],
            frame_numbers=pose.frame_numbers[:1],
        ),
        16.0,
        81,
        "keep_speed",
    )
    assert still.frame_count == 5 and np.allclose(still.points, pose.points[:1])  # a held pose, not grey padding
    (short,) = nodes.LoadMotion().load("sample:run_cycle.bvh", 0, 3, 1, "auto")  # 3 frames = 0.067 s
    fitted = resample_pose(short, 16.0, 81, "fit_whole_motion")
    assert fitted.frame_count == 5 and np.allclose(fitted.points[-1], short.points[-1])
    with pytest.raises(InputError, match="fps"):
        resample_pose(short, 0.0, 81, "keep_speed")


def test_reference_node_reads_a_transparency_mask_as_its_inverse():
    """Load Image's MASK is 1 where transparent: with ``mask_is='transparency'`` the canvas equals the alpha one."""
    image = torch.rand(1, 48, 32, 3, generator=torch.Generator().manual_seed(0))
    alpha = torch.zeros(1, 48, 32)
    alpha[:, 8:40, 6:26] = 1.0
    by_alpha = nodes.WanReferenceImage().place(image, 64, 64, 0.05, mask=alpha)[0]
    by_transparency = nodes.WanReferenceImage().place(image, 64, 64, 0.05, mask=1.0 - alpha, mask_is="transparency")[0]
    assert torch.equal(by_alpha, by_transparency)
    assert not torch.equal(by_alpha, nodes.WanReferenceImage().place(image, 64, 64, 0.05, mask=1.0 - alpha)[0])
