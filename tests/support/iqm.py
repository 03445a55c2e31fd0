"""Inter-Quake Model (IQM v2) files read with numpy, and skinned the way the format's own demo skins them.

The layout follows the format's specification (``iqm.txt`` / ``iqm.h`` of the IQM SDK): a header of offsets,
a string table, meshes, vertex arrays (position, texcoord, normal, blend indexes, blend weights, …),
triangles, joints (name, parent, translate, rotate quaternion x y z w, scale), poses (per joint: a 10-channel
mask with offsets and scales), animations, frames (one ``uint16`` per masked channel per pose) and the
bounds the exporter computed for each animated frame.

Two users: ``.ci/iqm_to_glb.py`` builds a Blender character from what :func:`read_iqm` returns, and the tests
compare the converted character's deformed vertices with :func:`skin`, which re-implements the demo's
linear-blend skinning here, independent of Blender.  Only numpy is needed (it also runs under the bpy venv).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"INTERQUAKEMODEL\0"
HEADER = (
    "version filesize flags num_text ofs_text num_meshes ofs_meshes num_vertexarrays num_vertexes "
    "ofs_vertexarrays num_triangles ofs_triangles ofs_adjacency num_joints ofs_joints num_poses ofs_poses "
    "num_anims ofs_anims num_frames num_framechannels ofs_frames ofs_bounds num_comment ofs_comment "
    "num_extensions ofs_extensions"
).split()
ARRAYS = {0: "position", 1: "texcoord", 2: "normal", 3: "tangent", 4: "blendindexes", 5: "blendweights", 6: "color"}
FORMATS = {0: "i1", 1: "u1", 2: "<i2", 3: "<u2", 4: "<i4", 5: "<u4", 6: "<f2", 7: "<f4", 8: "<f8"}


@dataclass
class Mesh:
    name: str
    material: str
    first_vertex: int
    num_vertexes: int
    first_triangle: int
    num_triangles: int


@dataclass
class Anim:
    name: str
    first_frame: int
    num_frames: int
    framerate: float
    loop: bool


@dataclass
class Iqm:
    """An IQM file's content; ``arrays`` maps a vertex array's name to ``(num_vertexes, size)`` values."""

    meshes: list[Mesh]
    arrays: dict[str, np.ndarray]
    triangles: np.ndarray  # (num_triangles, 3) vertex indexes
    joint_names: list[str]
    parents: np.ndarray  # (num_joints,), -1 for a root
    joints: np.ndarray  # (num_joints, 10): translate xyz, rotate xyzw, scale xyz (the base pose, parent-relative)
    pose_parents: np.ndarray  # (num_poses,)
    frames: np.ndarray  # (num_frames, num_poses, 10): the same channels per animation frame
    anims: list[Anim]
    bounds: np.ndarray  # (num_frames, 8): the exporter's bbmin xyz, bbmax xyz, xy radius, radius of each frame

    @property
    def weights(self) -> np.ndarray:
        """Blend weights as floats summing to 1 per vertex (``ubyte`` weights are stored as n/255)."""
        raw = self.arrays["blendweights"].astype(np.float64)
        return raw / raw.sum(axis=1, keepdims=True)


def read_iqm(path: str | Path) -> Iqm:
    data = Path(path).read_bytes()
    if data[:16] != MAGIC:
        raise ValueError(f"{path}: not an IQM file")
    header = dict(zip(HEADER, struct.unpack_from("<27I", data, 16), strict=True))
    if header["version"] != 2:
        raise ValueError(f"{path}: IQM version {header['version']}, only version 2 is read")
    text = data[header["ofs_text"] : header["ofs_text"] + header["num_text"]]

    def string(offset: int) -> str:
        return text[offset : text.index(b"\0", offset)].decode("utf-8")

    meshes = []
    for i in range(header["num_meshes"]):
        name, material, *ranges = struct.unpack_from("<6I", data, header["ofs_meshes"] + 24 * i)
        meshes.append(Mesh(string(name), string(material), *ranges))
    count = header["num_vertexes"]
    arrays = {}
    for i in range(header["num_vertexarrays"]):
        kind, _flags, fmt, size, offset = struct.unpack_from("<5I", data, header["ofs_vertexarrays"] + 20 * i)
        values = np.frombuffer(data, FORMATS[fmt], count * size, offset).reshape(count, size)
        arrays[ARRAYS.get(kind, f"custom{kind}")] = values
    triangles = np.frombuffer(data, "<u4", 3 * header["num_triangles"], header["ofs_triangles"]).reshape(-1, 3)
    joint_dtype = np.dtype([("name", "<u4"), ("parent", "<i4"), ("channels", "<f4", 10)])
    joints = np.frombuffer(data, joint_dtype, header["num_joints"], header["ofs_joints"])
    pose_dtype = np.dtype([("parent", "<i4"), ("mask", "<u4"), ("offset", "<f4", 10), ("scale", "<f4", 10)])
    poses = np.frombuffer(data, pose_dtype, header["num_poses"], header["ofs_poses"])
    raw = np.frombuffer(data, "<u2", header["num_frames"] * header["num_framechannels"], header["ofs_frames"])
    raw = raw.reshape(header["num_frames"], header["num_framechannels"]).astype(np.float64)
    frames = np.repeat(poses["offset"][None].astype(np.float64), header["num_frames"], axis=0)
    column = 0
    for p, pose in enumerate(poses):  # channels are stored pose by pose, in channel order, masked ones only
        for c in range(10):
            if pose["mask"] & (1 << c):
                frames[:, p, c] += raw[:, column] * pose["scale"][c]
                column += 1
    anims = []
    for i in range(header["num_anims"]):
        name, first, num, rate, flags = struct.unpack_from("<3IfI", data, header["ofs_anims"] + 20 * i)
        anims.append(Anim(string(name), first, num, rate, bool(flags & 1)))
    bounds = np.zeros((header["num_frames"] if header["ofs_bounds"] else 0, 8))
    if header["ofs_bounds"]:
        bounds = np.frombuffer(data, "<f4", 8 * header["num_frames"], header["ofs_bounds"]).reshape(-1, 8)
    return Iqm(
        meshes=meshes,
        arrays=arrays,
        triangles=triangles,
        joint_names=[string(n) for n in joints["name"]],
        parents=joints["parent"].copy(),
        joints=joints["channels"].astype(np.float64),
        pose_parents=poses["parent"].copy(),
        frames=frames,
        anims=anims,
        bounds=bounds.astype(np.float64),
    )


def transform(channels: np.ndarray) -> np.ndarray:
    """4x4 matrices ``[R·diag(scale) | translate]`` from ``(..., 10)`` channels (the quaternion normalised)."""
    t, q, s = channels[..., 0:3], channels[..., 3:7], channels[..., 7:10]
    x, y, z, w = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    rot = np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )
    out = np.zeros(channels.shape[:-1] + (4, 4))
    out[..., :3, :3] = rot * s[..., None, :]
    out[..., :3, 3] = t
    out[..., 3, 3] = 1.0
    return out


def world(local: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Model-space matrices from parent-relative ones (IQM lists every parent before its children)."""
    out = local.copy()
    for i, parent in enumerate(parents):
        if parent >= 0:
            out[i] = out[parent] @ local[i]
    return out


def base_matrices(model: Iqm) -> np.ndarray:
    """Model-space matrices of the joints in the bind pose, ``(num_joints, 4, 4)``."""
    return world(transform(model.joints), model.parents)


def frame_matrices(model: Iqm, frame: int) -> np.ndarray:
    """Model-space matrices of the joints at one animation frame."""
    return world(transform(model.frames[frame]), model.pose_parents)


def skin(model: Iqm, frame: int | None) -> np.ndarray:
    """Vertex positions ``(num_vertexes, 3)`` at ``frame`` (None: the bind pose, i.e. the stored positions):
    each vertex moved by the weighted sum of its joints' ``posed · base⁻¹`` matrices."""
    positions = model.arrays["position"].astype(np.float64)
    if frame is None:
        return positions
    skinning = frame_matrices(model, frame) @ np.linalg.inv(base_matrices(model))
    blend = np.einsum("vk,vkij->vij", model.weights, skinning[model.arrays["blendindexes"].astype(np.intp)])
    return np.einsum("vij,vj->vi", blend[:, :3, :3], positions) + blend[:, :3, 3]
