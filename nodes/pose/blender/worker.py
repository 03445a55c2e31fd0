"""GameAnim's Blender worker: runs under Blender's Python and answers JSON requests on stdin.

Started by ``nodes/pose/blender_client.py`` either as ``blender -b -P worker.py`` or as
``<python with bpy> worker.py``.  One request per line; each answer is one stdout line starting
with ``GAMEANIM_JSON `` (Blender's own log lines are ignored by the client).  Progress lines
``{"progress": [done, total]}`` may precede an answer.

Requests: ``{"cmd": "ping"}``, ``{"cmd": "load", "path": ...}`` (.fbx, .bvh, .blend, .glb/.gltf),
``{"cmd": "motion", "armature": null, "start": null, "end": null, "step": 1}``,
``{"cmd": "render", "frames": [...], "camera": {...}, "width": W, "height": H, "engine": ..., "out_dir": ...}``
(mesh depth / alpha / normals per frame as .npy files; see :func:`render`),
``{"cmd": "clip", "character": ..., "action": ..., "out_dir": ...}`` (shaded RGBA frames of one training clip;
see ``clip.py``), ``{"cmd": "actions", "path": ...}``, ``{"cmd": "quit"}``.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
from clip import list_actions, render_clip  # noqa: E402
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


def _oiio():
    """OpenImageIO bundled with Blender (on sys.path inside Blender; next to the bpy module otherwise)."""
    try:
        import OpenImageIO
    except ImportError:
        lib = os.path.join(bpy.utils.resource_path("LOCAL"), "python", "lib")
        for name in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
            sys.path.append(os.path.join(lib, name, "site-packages"))
        import OpenImageIO
    return OpenImageIO


def _read_exr_parts(path: str) -> dict:
    """Every part of a multi-part EXR as float arrays keyed by pass name (Combined, Depth, Normal)."""
    import numpy as np

    oiio = _oiio()
    image = oiio.ImageInput.open(path)
    parts = {}
    index = 0
    while image.seek_subimage(index, 0):
        spec = image.spec()
        name = str(spec.getattribute("name") or "") + " " + " ".join(spec.channelnames)
        key = next((k for k in ("Combined", "Depth", "Normal") if k in name), str(index))
        parts[key] = np.asarray(image.read_image("float"))
        index += 1
    image.close()
    return parts


def render(request: dict) -> dict:
    """Render the scene's meshes from our camera per frame; save depth, alpha (and normals) as .npy.

    ``camera``: ``right``, ``up``, ``view`` (Blender world axes), ``eyes`` (one position per frame),
    ``perspective``, ``scale`` (px per unit or focal length in px) and ``principal`` (cx, cy) in
    pixels, y down: the same model as GameAnim's ``Camera``.  Workbench gives depth and alpha;
    Cycles also gives normals.
    """
    import numpy as np
    from mathutils import Matrix, Vector

    scene = bpy.context.scene
    cam_spec = request["camera"]
    width, height = int(request["width"]), int(request["height"])
    engine = request.get("engine") or "BLENDER_WORKBENCH"
    out_dir = request["out_dir"]
    if not any(o.type == "MESH" for o in scene.objects):
        raise ValueError("the file has no mesh to render; use the capsule depth/normal maps instead")
    data = bpy.data.cameras.new("GameAnimCamera")
    cam = bpy.data.objects.new("GameAnimCamera", data)
    scene.collection.objects.link(cam)
    scene.camera = cam
    big = max(width, height)
    data.sensor_fit = "AUTO"
    if cam_spec["perspective"]:
        data.type = "PERSP"
        data.lens = float(cam_spec["scale"]) * data.sensor_width / big
    else:
        data.type = "ORTHO"
        data.ortho_scale = big / float(cam_spec["scale"])
    data.shift_x = (width / 2.0 - cam_spec["principal"][0]) / big
    data.shift_y = (cam_spec["principal"][1] - height / 2.0) / big
    data.clip_start, data.clip_end = cam_spec.get("clip") or (1e-3, 1e6)
    right, up, view = (Vector(cam_spec[k]) for k in ("right", "up", "view"))
    scene.render.engine = engine
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = True
    if engine == "CYCLES":
        scene.cycles.device = "CPU"
        scene.cycles.samples = int(request.get("samples") or 8)
        scene.cycles.use_denoising = False
    layer = bpy.context.view_layer
    layer.use_pass_z = True
    if engine == "CYCLES":
        layer.use_pass_normal = True
    settings = scene.render.image_settings
    settings.media_type = "MULTI_LAYER_IMAGE"
    settings.file_format = "OPEN_EXR_MULTILAYER"
    settings.color_depth = "32"
    to_camera = Matrix((right, up, -view)).transposed()  # columns: camera x, y, z (looks along -z)
    written = []
    frames = request["frames"]
    for done, (frame, eye) in enumerate(zip(frames, cam_spec["eyes"], strict=True), start=1):
        scene.frame_set(int(frame))
        cam.matrix_world = Matrix.Translation(Vector(eye)) @ to_camera.to_4x4()
        exr = os.path.join(out_dir, f"frame_{done - 1:05d}.exr")
        scene.render.filepath = exr
        bpy.ops.render.render(write_still=True)
        parts = _read_exr_parts(exr)
        combined = parts.get("Combined")
        depth = parts.get("Depth")
        if combined is None or depth is None:
            raise RuntimeError(f"render pass missing in {exr}: found {sorted(parts)}")
        base = os.path.join(out_dir, f"frame_{done - 1:05d}")
        np.save(base + "_alpha.npy", combined[..., 3].astype(np.float32))
        np.save(base + "_depth.npy", depth[..., 0].astype(np.float32))
        if "Normal" in parts:
            np.save(base + "_normal.npy", parts["Normal"][..., :3].astype(np.float32))
        os.remove(exr)
        written.append(base)
        send({"progress": [done, len(frames)]})
    return {"frames": written, "normals": engine == "CYCLES"}


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
    if cmd == "render":
        return render(request)
    if cmd == "clip":
        return render_clip(request, send)
    if cmd == "actions":
        return list_actions(request["path"])
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
