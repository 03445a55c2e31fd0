"""The textured test character (assimp's ``IQM/mrfixit.iqm``) as ``.ci/iqm_to_glb.py`` converts it, checked against
the IQM file itself: its joints, bind pose, texture coordinates, face winding and, frame by frame, the
animation skinned by ``tests/support/iqm.py`` in numpy (the IQM demo's linear-blend skinning, no Blender).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gameanim.nodes.pose.blender_client import ENV_VAR
from PIL import Image, ImageDraw
from support.iqm import base_matrices, read_iqm, skin
from support.rig_assets import assimp_models, require_asset, require_character

BLENDER = os.environ.get(ENV_VAR, "")
FRAMES = (0, 17, 70, 90)


@pytest.fixture(scope="module")
def model():
    return read_iqm(require_asset(assimp_models() / "IQM" / "mrfixit.iqm"))


def _background_share(model, mesh, image: np.ndarray, flip: bool) -> float:
    """Share of the mesh's UV area (rasterised into the image) that lies on the atlas's black background."""
    height, width = image.shape[:2]
    uv = model.arrays["texcoord"].astype(np.float64)
    mask = Image.new("L", (width, height))
    draw = ImageDraw.Draw(mask)
    for triangle in model.triangles[mesh.first_triangle : mesh.first_triangle + mesh.num_triangles]:
        points = [(uv[i, 0] * width, (1.0 - uv[i, 1] if flip else uv[i, 1]) * height) for i in triangle]
        draw.polygon(points, fill=255)
    covered = np.asarray(mask) > 0
    return float((image.max(axis=2) < 12)[covered].mean())


def test_iqm_texcoords_count_v_from_the_images_top_row(model):
    """Which way v runs is read from the pictures, not assumed: with v counted from the image's top row the
    UV islands sit on the painted parts of both atlases; counted from the bottom (Blender's way) a large
    share of them lands on the black background.  Hence the converter's v = 1 - v."""
    folder = assimp_models() / "IQM"
    for mesh in model.meshes:
        image = np.asarray(Image.open(folder / mesh.material).convert("RGB")).astype(int)
        top, bottom = _background_share(model, mesh, image, False), _background_share(model, mesh, image, True)
        assert top < 0.1 and bottom > 2.5 * top, (mesh.name, top, bottom)


def test_iqm_front_faces_wind_clockwise(model):
    """The stored normals point along the clockwise triangle normals (so the converter reverses the winding)."""
    p, n, t = model.arrays["position"].astype(float), model.arrays["normal"].astype(float), model.triangles
    counter_clockwise = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    assert (np.einsum("ij,ij->i", counter_clockwise, n[t].sum(axis=1)) < 0).mean() > 0.99


def test_numpy_skinning_meets_the_exporters_frame_bounds(model):
    """The file stores each frame's bounding box and radii as its exporter skinned them: the numpy skinning of
    every frame reproduces them (to 0.02 units on an 8-unit figure), so frames, channels and joints are read
    right independently of the converter."""
    assert model.bounds.shape == (101, 8)
    for frame in range(len(model.frames)):
        points = skin(model, frame)
        ours = np.concatenate([points.min(axis=0), points.max(axis=0)])
        radii = [np.linalg.norm(points[:, :2], axis=1).max(), np.linalg.norm(points, axis=1).max()]
        assert np.abs(ours - model.bounds[frame, :6]).max() < 0.02, frame
        assert np.abs(np.array(radii) - model.bounds[frame, 6:]).max() < 0.02, frame


def test_numpy_skinning_is_the_bind_pose_at_the_base_frame(model):
    """Skinning with every joint at its base transform leaves the mesh where it is stored; the idle animation
    moves it by up to a few units (the character is 8 units tall)."""
    still = model.frames.copy()
    model.frames = np.repeat(model.joints[None], 1, axis=0)
    try:
        assert np.abs(skin(model, 0) - model.arrays["position"]).max() < 1e-4
    finally:
        model.frames = still
    moved = max(np.linalg.norm(skin(model, f) - model.arrays["position"], axis=1).max() for f in FRAMES)
    assert 2.0 < moved < 5.0


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    if not BLENDER:
        pytest.skip(f"{ENV_VAR} is not set (Blender or a bpy==5.0.1 venv python)")
    from gameanim.nodes.pose.blender_client import worker_command

    character = require_character("mrfixit")
    out = tmp_path_factory.mktemp("mrfixit") / "dump.npz"
    script = Path(__file__).parent / "fixtures" / "pose" / "dump_glb_character.py"
    cmd = worker_command(BLENDER, script, [str(character), str(out), *map(str, FRAMES)])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return dict(np.load(out))


@pytest.mark.skipif(not BLENDER, reason=f"{ENV_VAR} is not set")
def test_converted_skeleton_is_the_iqm_joint_tree(model, converted):
    bones = list(converted["bones"])
    assert sorted(bones) == sorted(model.joint_names)
    for name, parent in zip(model.joint_names, model.parents, strict=True):
        assert converted["parents"][bones.index(name)] == (model.joint_names[parent] if parent >= 0 else "")
    heads = np.array([converted["heads"][bones.index(n)] for n in model.joint_names])
    assert np.abs(heads - base_matrices(model)[:, :3, 3]).max() < 1e-4
    assert converted["action"][0] == "idle" and tuple(converted["frame_range"]) == (1.0, 101.0)


@pytest.mark.skipif(not BLENDER, reason=f"{ENV_VAR} is not set")
def test_converted_meshes_bind_pose_uvs_winding_and_textures(model, converted):
    positions, uv, normals = model.arrays["position"], model.arrays["texcoord"], model.arrays["normal"]
    assert list(converted["meshes"]) == sorted(m.name for m in model.meshes)
    for mesh in model.meshes:
        part = slice(mesh.first_vertex, mesh.first_vertex + mesh.num_vertexes)
        rest = converted[f"rest_{mesh.name}"]
        assert rest.shape == (mesh.num_vertexes, 3)  # the glTF round trip keeps the IQM's vertices, in order
        assert np.abs(rest - positions[part]).max() < 1e-4
        flipped = np.stack([uv[part, 0], 1.0 - uv[part, 1]], axis=1)
        assert np.abs(converted[f"uv_{mesh.name}"] - flipped).max() < 1e-5
        faces = converted[f"faces_{mesh.name}"]
        p = rest
        outward = np.cross(p[faces[:, 1]] - p[faces[:, 0]], p[faces[:, 2]] - p[faces[:, 0]])
        assert (np.einsum("ij,ij->i", outward, normals[part][faces].sum(axis=1)) > 0).mean() > 0.99
        assert list(converted[f"images_{mesh.name}"]) == [Path(mesh.material).stem]
        assert converted[f"packed_{mesh.name}"].all()


@pytest.mark.skipif(not BLENDER, reason=f"{ENV_VAR} is not set")
def test_converted_animation_deforms_as_iqm_skinning(model, converted):
    """Blender's deformation of the imported .glb at action frame 1 + k equals the numpy IQM skinning of frame k
    (to 1e-3 units on an 8-unit character), while the frames move vertices by units."""
    for frame in FRAMES:
        reference = skin(model, frame)
        for mesh in model.meshes:
            part = slice(mesh.first_vertex, mesh.first_vertex + mesh.num_vertexes)
            error = np.linalg.norm(converted[f"posed_{mesh.name}_{frame}"] - reference[part], axis=1)
            assert error.max() < 1e-3, (mesh.name, frame, error.max())
    body = model.meshes[0]
    part = slice(body.first_vertex, body.first_vertex + body.num_vertexes)
    posed = [converted[f"posed_{body.name}_{f}"] for f in FRAMES]
    assert max(np.linalg.norm(p - posed[0], axis=1).max() for p in posed[1:]) > 1.0
    assert np.linalg.norm(posed[0] - model.arrays["position"][part], axis=1).max() > 2.0  # T-pose → idle
