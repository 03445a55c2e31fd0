"""GameAnim's Blender worker: runs under Blender's Python and answers JSON requests on stdin.

Started by ``nodes/pose/blender_worker.py`` either as ``blender -b -P worker.py`` or as
``<python with bpy> worker.py``.  One request per line; each answer is one stdout line starting
with ``GAMEANIM_JSON `` (Blender's own log lines are ignored by the client).  Progress lines
``{"progress": [done, total]}`` may precede an answer.

Requests: ``{"cmd": "ping"}``, ``{"cmd": "load", "path": ...}`` (.fbx, .bvh, .blend, .glb/.gltf),
``{"cmd": "motion", "armature": null, "start": null, "end": null, "step": 1}``,
``{"cmd": "quit"}``.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
from gameanim_export_motion import armature_motion, find_armature  # noqa: E402

PREFIX = "GAMEANIM_JSON "


def send(message: dict) -> None:
    sys.stdout.write(PREFIX + json.dumps(message) + "\n")
    sys.stdout.flush()


def load(path: str) -> dict:
    ext = os.path.splitext(path)[1].lower()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"file not found: {path}")
    if ext == ".blend":
        bpy.ops.wm.open_mainfile(filepath=path)
    else:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        if ext == ".fbx":
            bpy.ops.import_scene.fbx(filepath=path)
        elif ext == ".bvh":
            bpy.ops.import_anim.bvh(filepath=path)
        elif ext in (".glb", ".gltf"):
            bpy.ops.import_scene.gltf(filepath=path)
        else:
            raise ValueError(f"unsupported file type {ext!r} (use .fbx, .bvh, .blend, .glb or .gltf)")
    armatures = [o.name for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    return {"armatures": armatures, "blender": bpy.app.version_string}


def handle(request: dict) -> dict:
    cmd = request.get("cmd")
    if cmd == "ping":
        return {"blender": bpy.app.version_string}
    if cmd == "load":
        return load(request["path"])
    if cmd == "motion":
        arm = find_armature(request.get("armature"))
        report = lambda done, total: send({"progress": [done, total]})  # noqa: E731
        motion = armature_motion(arm, request.get("start"), request.get("end"), int(request.get("step") or 1), report)
        return {"motion": motion}
    raise ValueError(f"unknown command {cmd!r}")


def main() -> None:
    send({"ok": True, "ready": True, "blender": bpy.app.version_string})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if request.get("cmd") == "quit":
                send({"ok": True})
                break
            send({"ok": True, **handle(request)})
        except Exception as exc:  # every failure goes back to the client as a message
            send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


main()
