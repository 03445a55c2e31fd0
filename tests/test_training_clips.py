"""Training clips rendered from real rigged characters through the Blender worker, and their dataset layout.

The Blender tests need ``GAMEANIM_BLENDER`` (a Blender or a bpy==5.0.1 venv python) and the assimp test
characters, untextured and textured (``tests/support/rig_assets.py``); they render tiny Workbench clips so they
stay fast.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from gameanim.core.errors import InputError
from gameanim.nodes.pose.blender_client import ENV_VAR
from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE
from gameanim.nodes.pose.training_clips import (
    VIEW_WORDS,
    ActionSpec,
    ClipSettings,
    action_words,
    clip_caption,
    composite_on_key,
    key_colour,
    parse_action_list,
    parse_keys,
    parse_views,
    read_clip,
    render_training_clips,
    slug,
)
from gameanim.nodes.vc2.prompts import build_sprite_prompt
from gameanim.trainers.datasets import _REPEAT_DIR, load_clips
from support.rig_assets import FACING, assimp_models, require_character

BLENDER = os.environ.get(ENV_VAR, "")
needs_blender = pytest.mark.skipif(not BLENDER, reason=f"{ENV_VAR} is not set (Blender or a bpy==5.0.1 venv python)")
SMALL = ClipSettings(frames=4, width=128, height=80)


def test_action_words_and_lists(tmp_path):
    assert action_words("Armature|mixamo.com|Layer0") == "layer0"
    assert action_words("Armature.001|Standard Run") == "standard run"
    assert action_words("Wuson_Run") == "wuson run"
    assert action_words("GreatSwordSlash") == "great sword slash"
    (tmp_path / "Jump.fbx").write_bytes(b"")
    specs = parse_action_list("Wuson_Run = running\nJump.fbx, Walk", [tmp_path])
    assert [(s.name, s.file, s.words) for s in specs] == [
        ("Wuson_Run", None, "running"),
        ("", tmp_path / "Jump.fbx", "jump"),
        ("Walk", None, "walk"),
    ]
    with pytest.raises(InputError, match="Kick.fbx.*not found"):
        parse_action_list("Kick.fbx", [tmp_path])
    assert parse_keys("grey, White,#102030") == ["grey", "white", "#102030"]
    assert key_colour("#102030") == (16, 32, 48)
    with pytest.raises(InputError, match="Unknown key colour 'teal'"):
        parse_keys("grey, teal")
    assert parse_views("side_right, back_left") == ["side_right", "back_left"]
    with pytest.raises(InputError, match="Unknown view diagonal.*side_right"):
        parse_views("diagonal")


def test_caption_is_the_sampler_prompt():
    for view, words in VIEW_WORDS.items():
        caption = clip_caption("running", "knight in red tunic", view, "solid color background")
        assert caption == build_sprite_prompt("running", "knight in red tunic", words).text
    assert (
        clip_caption("running", "knight", "side_right", "solid color background")
        == "Game character running animation of knight, side view, solid color background"
    )


def test_clip_folder_names_are_not_repeat_folders():
    name = slug("1_knight", "2 Run", "side_right", "grey")
    assert name == "v_1-knight_2-run_side-right_grey" and not _REPEAT_DIR.match(name)


def test_composite_follows_alpha():
    rgba = np.array([[[200, 10, 10, 255], [200, 10, 10, 0], [200, 10, 10, 128]]], np.uint8)
    out = composite_on_key(rgba, (0, 255, 0))
    assert out.tolist() == [[[200, 10, 10], [0, 255, 0], [100, 132, 5]]]


def test_bad_settings_are_named(tmp_path):
    character = tmp_path / "hero.fbx"
    character.write_bytes(b"x")
    with pytest.raises(InputError, match="Unknown view 'sideways'"):
        render_training_clips(character, tmp_path / "ds", "hero", views=["sideways"])
    with pytest.raises(InputError, match="at least 2 frames"):
        render_training_clips(character, tmp_path / "ds", "hero", settings=ClipSettings(frames=1))
    with pytest.raises(InputError, match="hero.obj: use a rigged character"):
        (tmp_path / "hero.obj").write_bytes(b"x")
        render_training_clips(tmp_path / "hero.obj", tmp_path / "ds", "hero")
    assert not (tmp_path / "ds").exists()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    if not BLENDER:
        pytest.skip(f"{ENV_VAR} is not set")
    character = require_character("Testwuson")
    root = tmp_path_factory.mktemp("clips")
    seen = []
    clips = render_training_clips(
        character,
        root,
        "brown bull",
        [ActionSpec(name="Wuson_Run", words="running")],
        views=["side_right", "front_left"],
        keys=["grey", "white"],
        key_mode="all",
        settings=SMALL,
        progress=lambda done, total: seen.append((done, total)),
    )
    return root, clips, seen


@needs_blender
def test_clips_layout_captions_and_true_alpha(dataset):
    root, clips, seen = dataset
    assert seen == [(i, 8) for i in range(1, 9)]
    names = sorted(p.name for p in (root / "train").iterdir())
    assert names == sorted(c.folder.name for c in clips) and len(names) == 4
    assert not (root / ".partial").exists()
    for clip in clips:
        frames, alpha, params = read_clip(clip.folder)
        assert frames.shape == (4, 80, 128, 3) and alpha.shape == (4, 80, 128)
        view = "side_right" if "side-right" in clip.folder.name else "front_left"
        assert clip.caption == build_sprite_prompt("running", "brown bull", VIEW_WORDS[view]).text
        captions = sorted(clip.folder.glob("*.txt"))
        assert len(captions) == 4 and all(p.read_text().strip() == clip.caption for p in captions)
        assert params["action"] == "Wuson_Run" and params["view"] == view and len(params["sampled_frames"]) == 4
        assert params["key_rgb"] == list(key_colour(clip.key)) and params["engine"] == "BLENDER_WORKBENCH"
        # The character covers a real share of every frame and the framing holds it whole.
        coverage = (alpha > 127).mean(axis=(1, 2))
        assert (coverage > 0.05).all() and (coverage < 0.8).all(), coverage
        border = np.concatenate([alpha[:, 0], alpha[:, -1], alpha[:, :, 0], alpha[:, :, -1]], axis=1)
        assert border.max() == 0
        # Outside the alpha the frame is exactly the key; inside it is the character.
        key = np.array(key_colour(clip.key))
        assert (frames[alpha == 0] == key).all()
        assert np.abs(frames[alpha == 255].astype(int) - key).max() > 20
        assert (clip.folder / "preview.gif").is_file()
    # The same render under two keys: identical alpha.
    by_view = {}
    for clip in clips:
        by_view.setdefault(clip.folder.name.rsplit("_", 1)[0], []).append(read_clip(clip.folder)[1])
    assert all(np.array_equal(a, b) for a, b in by_view.values())
    # The run moves: frames differ, and the camera follows the root (the body stays in frame).
    frames, alpha, _ = read_clip(clips[0].folder)
    assert np.abs(np.diff(alpha.astype(int), axis=0)).max() == 255


@needs_blender
def test_action_clips_dataset_reads_the_folder(dataset):
    root, clips, _ = dataset
    items = load_clips(root, frames=4, width=128, height=64, template="{caption}")
    assert len(items) == 4
    assert sorted(i.caption for i in items) == sorted(c.caption for c in clips)
    assert all(tuple(i.frames.shape) == (4, 64, 128, 3) for i in items)


@needs_blender
def test_second_character_and_every_file_action(tmp_path):
    character = require_character("BCN_Epileptic")
    clips = render_training_clips(character, tmp_path, "man", settings=ClipSettings(frames=2, width=64, height=64))
    assert [c.params["action"] for c in clips] == ["Epileptisch"]
    assert clips[0].caption == "Game character epileptisch animation of man, side view, solid color background"
    _, alpha, _ = read_clip(clips[0].folder)
    assert (alpha > 127).mean() > 0.02


@needs_blender
def test_textured_character_renders_with_its_texture_colours(tmp_path):
    """assimp's IQM Mr. Fixit (olive-green skin, dark armour; ``.ci/iqm_to_glb.py``) renders in Workbench with its
    packed textures: an eighth of the body shows the skin's olive (red and green well above blue), which a
    flat material grey (the untextured characters) never shows, and the alpha holds the whole figure."""
    character = require_character("mrfixit")
    settings = ClipSettings(frames=2, width=96, height=96, facing=FACING["mrfixit"])
    spec = [ActionSpec(name="idle", words="standing")]
    (clip,) = render_training_clips(character, tmp_path, "green ogre", spec, ["front"], ["white"], settings=settings)
    frames, alpha, params = read_clip(clip.folder)
    assert params["textures"] == ["Body", "Head"] and params["light"]["workbench"]["color_type"] == "TEXTURE"
    assert clip.caption == "Game character standing animation of green ogre, front view, solid color background"
    body = frames[alpha == 255].astype(int)
    olive = (np.minimum(body[:, 0], body[:, 1]) > body[:, 2] + 15).mean()
    assert 0.05 < olive < 0.5, olive
    assert body.mean() < 100  # dark armour and skin, far from the white key
    coverage = (alpha > 127).mean(axis=(1, 2))
    assert (coverage > 0.1).all() and (coverage < 0.5).all(), coverage
    border = np.concatenate([alpha[:, 0], alpha[:, -1], alpha[:, :, 0], alpha[:, :, -1]], axis=1)
    assert border.max() == 0 and (frames[alpha == 0] == 255).all()
    assert ((alpha > 0) & (alpha < 255)).any()  # antialiased edges: a true coverage, not a threshold


@needs_blender
def test_bad_files_give_clear_errors(tmp_path):
    wuson = require_character("Testwuson")
    box = assimp_models() / "glTF2" / "BoxTextured-glTF-Binary" / "BoxTextured.glb"
    with pytest.raises(InputError, match="^BoxTextured.glb has no armature: export the character with its skeleton"):
        render_training_clips(box, tmp_path / "a", "box", settings=SMALL)
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(assimp_models() / "glTF2" / "BoxTextured-glTF" / "BoxTextured.gltf", lonely)
    shutil.copy(assimp_models() / "glTF2" / "BoxTextured-glTF" / "BoxTextured0.bin", lonely)
    with pytest.raises(InputError, match="^BoxTextured.gltf: texture 'CesiumLogoFlat.png' is missing"):
        render_training_clips(lonely / "BoxTextured.gltf", tmp_path / "b", "box", settings=SMALL)
    bvh = ActionSpec(file=SAMPLE_RUN_CYCLE, words="running")
    with pytest.raises(InputError, match="^run_cycle.bvh: action .* does not fit armature 'Root'"):
        render_training_clips(wuson, tmp_path / "c", "bull", [bvh], settings=SMALL)
    with pytest.raises(InputError, match="^Testwuson.glb has no action 'Fly'; its actions are: .*Wuson_Run"):
        render_training_clips(wuson, tmp_path / "d", "bull", [ActionSpec(name="Fly", words="flying")], settings=SMALL)
    for name in "abcd":
        assert not (tmp_path / name / ".partial").exists()
        assert list((tmp_path / name / "train").iterdir()) == []


@needs_blender
def test_cancel_leaves_no_partial_clip(tmp_path):
    wuson = require_character("Testwuson")
    render_training_clips(wuson, tmp_path, "bull", [ActionSpec(name="Wuson_Walk", words="walking")], settings=SMALL)
    before = sorted(p.name for p in (tmp_path / "train").iterdir())

    def cancel(done, total):
        if done == 2:
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        render_training_clips(
            wuson, tmp_path, "bull", [ActionSpec(name="Wuson_Run", words="running")], settings=SMALL, progress=cancel
        )
    assert sorted(p.name for p in (tmp_path / "train").iterdir()) == before
    assert not (tmp_path / ".partial").exists()
    params = json.loads((tmp_path / "train" / before[0] / "render_params.json").read_text())
    assert params["action"] == "Wuson_Walk"


@needs_blender
def test_node_writes_a_dataset_the_action_lora_trains_on(tmp_path, monkeypatch):
    import gameanim.nodes.vc2.comfy_nodes as vc2n
    import gameanim.trainers.comfy_nodes as tn
    import torch
    from gameanim.nodes.pose.clip_nodes import RenderTrainingClips
    from safetensors.torch import save_file
    from support.vc2_fixtures import tiny_full_checkpoint

    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    (tmp_path / "input" / "rigs").mkdir(parents=True)
    shutil.copy(require_character("Testwuson"), tmp_path / "input" / "rigs" / "bull.glb")
    models = tmp_path / "models" / "videocrafter"
    models.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in tiny_full_checkpoint().items()}, str(models / "tiny_vc2.safetensors"))
    assert "rigs/bull.glb" in RenderTrainingClips.INPUT_TYPES()["required"]["character"][0]
    folder, template, rgb, alpha, count = RenderTrainingClips().render(
        "rigs/bull.glb", "brown bull", "Wuson_Run = running", "side_right", "grey, green", "all", 4, 64, 64,
        "workbench", False, "solid color background", "clips/bull",
    )  # fmt: skip
    assert (folder, template, count) == ("clips/bull", "{caption}", 2)
    assert tuple(rgb.shape) == (4, 64, 64, 3) and tuple(alpha.shape) == (4, 64, 64) and 0 < float(alpha.mean()) < 1
    (dataset,) = tn.ActionClipsDataset().load(folder, "running", "bull", template, 4, 1, 8, 64, 64, 0.0)
    caption = build_sprite_prompt("running", "brown bull", "side view").text
    assert [i.caption for i in dataset.clips] == [caption, caption] and dataset.stills == []
    torch.set_num_threads(1)
    (loaded,) = vc2n.VC2Loader().load("tiny_vc2.safetensors", "fp32", True)
    settings = {
        "run_name": "bull_run", "targets": "action", "rank": 4, "alpha": 4.0, "learning_rate": 1e-2,
        "lr_schedule": "constant", "warmup_steps": 0, "total_steps": 4, "batch_size": 1, "grad_accum": 1,
        "gradient_checkpointing": False, "precision": "fp32", "caption_dropout": 0.0, "checkpoint_every": 2,
        "resume": False, "seed": 0,
    }  # fmt: skip
    with torch.inference_mode():
        (run,) = tn.LoraTrainInit().init(loaded, dataset, **settings)
        run, _curve, last = tn.LoraTrain().train(run, 2, unique_id="1")["result"]
    assert run.step == 2 and np.isfinite(last)


@needs_blender
def test_bvh_and_fbx_actions_with_the_rigs_bone_names(tmp_path):
    """A Mixamo-named rig (FBX with a mesh on its head) takes the shipped Mixamo-named BVH run, and an
    action-only FBX ('without skin') of the same skeleton, as its actions."""
    import subprocess

    from gameanim.nodes.pose.blender_client import worker_command

    make = Path(__file__).parent / "fixtures" / "pose" / "make_mixamo_fbx.py"
    rig, action_fbx = tmp_path / "mixamo_head.fbx", tmp_path / "actions" / "Run.fbx"
    action_fbx.parent.mkdir()
    for target, extra in ((rig, ["--head-sphere"]), (action_fbx, [])):
        cmd = worker_command(BLENDER, make, [str(SAMPLE_RUN_CYCLE), str(target), *extra])
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    spec = parse_action_list("run_cycle.bvh = running, Run.fbx", [SAMPLE_RUN_CYCLE.parent, action_fbx.parent])
    clips = render_training_clips(rig, tmp_path / "ds", "head", spec, settings=SMALL)
    assert [c.caption for c in clips] == [
        "Game character running animation of head, side view, solid color background",
        "Game character run animation of head, side view, solid color background",
    ]
    alphas = []
    for clip, source in zip(clips, ("run_cycle.bvh", "Run.fbx"), strict=True):
        _, alpha, params = read_clip(clip.folder)
        assert params["action_source"] == source
        # The head bobs while running: its silhouette moves between frames, and the camera keeps it in frame.
        tops = [np.nonzero((a > 127).any(axis=1))[0][0] for a in alpha]
        assert len(set(tops)) > 1 and alpha[:, 0].max() == 0 and alpha[:, -1].max() == 0
        alphas.append(alpha.astype(int))
    # The same motion from either file: the same frames up to a pixel of rim.
    assert np.abs(alphas[0] - alphas[1]).mean() < 2.0


@needs_blender
def test_bvh_retargeted_onto_a_rig_with_other_names_and_rest_rolls(tmp_path):
    """The shipped mixamorig: BVH onto a rig named without the namespace whose bones are rolled 90° at rest:
    the retarget carries world rotations, so the head moves as on the rig the BVH was made for."""
    import subprocess

    from gameanim.nodes.pose.blender_client import worker_command

    make = Path(__file__).parent / "fixtures" / "pose" / "make_mixamo_fbx.py"
    same, other = tmp_path / "same.fbx", tmp_path / "other.fbx"
    for target, extra in ((same, ["--head-sphere", "--nose"]), (other, ["--head-sphere", "--nose", "--bare-rolled"])):
        cmd = worker_command(BLENDER, make, [str(SAMPLE_RUN_CYCLE), str(target), *extra])
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    spec = parse_action_list("run_cycle.bvh = running", [SAMPLE_RUN_CYCLE.parent])
    alphas = []
    for rig in (same, other):
        (clip,) = render_training_clips(rig, tmp_path / rig.stem, "head", spec, settings=SMALL)
        _, alpha, params = read_clip(clip.folder)
        alphas.append(alpha.astype(int))
    assert "retargeted" in params["action"]
    centres = np.array([[_centroid(a) for a in clip] for clip in alphas])  # (rig, frame, yx)
    assert np.ptp(centres[0], axis=0).max() > 3  # the head travels on screen ...
    assert np.abs(centres[0] - centres[1]).max() < 1.0  # ... the same way on the retargeted rig


def _centroid(alpha: np.ndarray) -> tuple[float, float]:
    ys, xs = np.nonzero(alpha > 127)
    return float(ys.mean()), float(xs.mean())
