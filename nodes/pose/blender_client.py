"""Client for the Blender worker: FBX / .blend / glTF rigs → :class:`Motion`, through a subprocess.

bpy cannot live in the pack's environment (bpy 5.0.1 pins numpy<2 and Python 3.11 exactly), so
Blender runs as a separate process: either a Blender executable (``blender -b -P worker.py``) or a
Python that has the ``bpy`` module (``python worker.py``).  Its path comes from the node input or
the ``GAMEANIM_BLENDER`` environment variable.  The worker answers one JSON line per request on
stdout (prefixed, so Blender's own log lines are skipped) and streams progress while sampling frames.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from .joint_tracks import Motion, motion_from_dict, select_frames

ENV_VAR = "GAMEANIM_BLENDER"
WORKER_SCRIPT = Path(__file__).resolve().parent / "blender" / "worker.py"
EXPORT_SCRIPT = Path(__file__).resolve().parent / "blender" / "gameanim_export_motion.py"
PREFIX = "GAMEANIM_JSON "
RIG_SUFFIXES = (".fbx", ".blend", ".glb", ".gltf")


class BlenderError(InputError):
    """Blender is missing, failed to start, or reported an error."""


def blender_executable(explicit: str = "") -> str:
    """The Blender (or bpy-Python) executable from the node input, else ``$GAMEANIM_BLENDER``."""
    value = (explicit or os.environ.get(ENV_VAR, "")).strip()
    if not value:
        raise BlenderError(
            f"No Blender is configured. Set the environment variable {ENV_VAR} (or the node's "
            "'blender_executable' input) to a Blender executable (e.g. /opt/blender/blender) or to the "
            "python of a venv with 'pip install bpy==5.0.1' (Python 3.11). BVH and JSON motion files need no Blender."
        )
    found = shutil.which(value) or (value if Path(value).is_file() else None)
    if found is None:
        raise BlenderError(f"{ENV_VAR} / blender_executable is set to {value!r}, which is not an executable file.")
    return found


def worker_command(executable: str, script: Path = WORKER_SCRIPT, args: list[str] | None = None) -> list[str]:
    """The command line running ``script`` under ``executable`` (Blender binary or bpy Python)."""
    extra = list(args or [])
    if Path(executable).name.lower().startswith("blender"):
        return [executable, "-b", "--factory-startup", "--python-exit-code", "1", "-P", str(script), "--", *extra]
    return [executable, str(script), *extra]


class BlenderWorker:
    """A running worker process; use as a context manager."""

    def __init__(self, executable: str = "", timeout: float = 600.0) -> None:
        self.executable = blender_executable(executable)
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None
        self._log: list[str] = []

    def __enter__(self) -> BlenderWorker:
        try:
            self.proc = subprocess.Popen(
                worker_command(self.executable),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
            )
        except OSError as exc:
            raise BlenderError(f"Could not start Blender ({self.executable}): {exc}") from None
        ready = self._read()
        if not ready.get("ready"):
            raise BlenderError(f"The Blender worker did not start properly: {ready}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def _read(self, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Next answer line; Blender's log lines are kept for error messages; a watchdog enforces the timeout."""
        assert self.proc is not None and self.proc.stdout is not None
        report = progress or no_progress
        timer = threading.Timer(self.timeout, self.proc.kill)
        timer.start()
        try:
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    tail = "".join(self._log[-15:])
                    raise BlenderError(f"Blender exited unexpectedly (code {self.proc.poll()}). Last output:\n{tail}")
                if not line.startswith(PREFIX):
                    self._log.append(line)
                    continue
                message = json.loads(line[len(PREFIX) :])
                if "progress" in message:
                    try:
                        report(*message["progress"])
                    except BaseException:
                        self.proc.kill()
                        raise
                    continue
                return message
        finally:
            timer.cancel()

    def request(self, cmd: str, progress: ProgressFn | None = None, **params: Any) -> dict[str, Any]:
        """Send one request and return its answer, or raise :class:`BlenderError` with Blender's message."""
        if self.proc is None or self.proc.stdin is None:
            raise BlenderError("The Blender worker is not running.")
        self.proc.stdin.write(json.dumps({"cmd": cmd, **params}) + "\n")
        self.proc.stdin.flush()
        answer = self._read(progress)
        if not answer.get("ok"):
            raise BlenderError(f"Blender could not {cmd}: {answer.get('error')}")
        return answer


def motion_from_rig(
    path: str | Path,
    frames: Any = None,
    blender: str = "",
    armature: str | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 600.0,
) -> Motion:
    """Evaluate a rig file's armature per frame in Blender and return its :class:`Motion`."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Rig file not found: {path}")
    with BlenderWorker(blender, timeout) as worker:
        worker.request("load", path=str(path.resolve()))
        data = worker.request("motion", progress=progress, armature=armature)["motion"]
    total = len(data.get("frames") or [])
    picked = select_frames(total, frames) if total else None
    return motion_from_dict(data, path.name, None if picked is None else picked.tolist())


# Y-up (ours) → Blender Z-up: the inverse of motion._Z_TO_Y.
_Y_TO_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def normals_from_depth(depth: np.ndarray, alpha: np.ndarray, px_per_unit: float) -> np.ndarray:
    """Camera-space normals (x right, y down, z away) from a depth map's gradients (Workbench has no normal pass)."""
    dz_dy, dz_dx = np.gradient(np.where(alpha > 0.5, depth, np.nan).astype(np.float64))
    n = np.stack([dz_dx * px_per_unit, dz_dy * px_per_unit, -np.ones_like(depth, dtype=np.float64)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    bad = ~np.isfinite(n).all(axis=-1)
    n[bad] = (0.0, 0.0, -1.0)
    return n.astype(np.float32)


def render_rig_maps(
    path: str | Path,
    pose: Any,
    camera: Any,
    blender: str = "",
    engine: str = "BLENDER_WORKBENCH",
    progress: ProgressFn | None = None,
    timeout: float = 1800.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mesh depth (F, H, W), normals (F, H, W, 3) in [0, 1] and silhouette (F, H, W) rendered by Blender.

    ``pose`` must come from the same rig file (its frame numbers are Blender frames) and ``camera``
    is a fitted GameAnim camera, so the maps line up with the pose maps pixel for pixel.  Depth is
    normalised over the whole motion (near 1.0, far 0.2, background 0) like the capsule maps.
    """
    from .render import depth_image, normal_image

    path = Path(path)
    if path.suffix.lower() not in RIG_SUFFIXES:
        raise InputError(f"{path.name}: mesh maps need the rig file (.fbx, .blend, .glb, .gltf) the motion came from.")
    basis = camera.basis @ _Y_TO_Z.T  # rows: right, up, view in Blender axes
    eyes = camera.eye @ _Y_TO_Z.T
    if not camera.perspective:  # our ortho eye sits inside the motion; Blender clips behind the camera
        eyes = eyes - basis[2] * (10.0 * max(camera.width, camera.height) / camera.scale)
    # A tight clip range keeps the (non-linear, perspective) depth buffer precise.
    cam_pts = np.einsum("ij,fkj->fki", basis, (pose.points @ _Y_TO_Z.T) - eyes[:, None, :])
    extent = float(np.ptp(cam_pts.reshape(-1, 3), axis=0).max()) + 4.0 * pose.head_radius
    clip = (max(float(cam_pts[..., 2].min()) - extent, 1e-3 * extent), float(cam_pts[..., 2].max()) + extent)
    spec = {
        "clip": [clip[0], clip[1]],
        "right": basis[0].tolist(),
        "up": basis[1].tolist(),
        "view": basis[2].tolist(),
        "eyes": eyes.tolist(),
        "perspective": bool(camera.perspective),
        "scale": float(camera.scale),
        "principal": [float(camera.principal[0]), float(camera.principal[1])],
    }
    with tempfile.TemporaryDirectory(prefix="gameanim_render_") as out_dir:
        with BlenderWorker(blender, timeout) as worker:
            worker.request("load", path=str(path.resolve()))
            answer = worker.request(
                "render",
                progress=progress,
                frames=[int(f) for f in pose.frame_numbers],
                camera=spec,
                width=camera.width,
                height=camera.height,
                engine=engine,
                out_dir=out_dir,
            )
        alphas = np.stack([np.load(base + "_alpha.npy") for base in answer["frames"]])
        depths = np.stack([np.load(base + "_depth.npy") for base in answer["frames"]])
        world_normals = [np.load(base + "_normal.npy") for base in answer["frames"]] if answer.get("normals") else None
    inside = alphas > 0.5
    zbuf = np.where(inside, depths, np.inf).astype(np.float32)
    near = float(zbuf[inside].min()) if inside.any() else 0.0
    far = float(zbuf[inside].max()) if inside.any() else 1.0
    depth_maps = np.stack([depth_image(z, near, far) for z in zbuf])
    normal_maps = np.empty((*zbuf.shape, 3), dtype=np.float32)
    for f in range(zbuf.shape[0]):
        if world_normals is not None:
            n = world_normals[f] @ basis.T  # → camera x right, y up, z along the view
            n = n * np.array([1.0, -1.0, 1.0])
        else:
            scale = (
                camera.scale / max(float(np.median(depths[f][inside[f]])), 1e-6)
                if camera.perspective and inside[f].any()
                else camera.scale
            )
            n = normals_from_depth(depths[f], alphas[f], scale)
        n = np.where(inside[f][..., None], n, np.array([0.0, 0.0, -1.0])).astype(np.float32)
        normal_image(n, out=normal_maps[f])
    return depth_maps, normal_maps, alphas.clip(0.0, 1.0).astype(np.float32)
