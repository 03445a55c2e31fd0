"""Shaded training clips of a rigged character (runs inside Blender; imported by ``worker.py``).

One request renders one clip: the character file is loaded fresh, an action is put on its armature
(one of the file's own, or one imported from an action-only FBX / a BVH whose bone names match), the
action is sampled to a fixed frame count, and every frame is rendered with a transparent film so the
PNG's alpha is the character's true coverage.  The key colour is composited afterwards by the client,
so the keyed frame and its alpha agree exactly.

The camera follows godmodeanimation's ``constraint_camera_to_armature`` idea: it moves with the
root's ground-plane travel (a run stays in place on screen, jumps and bobbing stay visible) and one
orthographic framing, fitted to the deformed meshes of every sampled frame, holds for the whole
clip, so the character's size is stable.  Views are placed around the character's facing (Blender's
convention: characters face -Y; ``facing`` overrides it).
"""

from __future__ import annotations

import math
import os
import re

import bpy
from mathutils import Matrix, Vector

VIEWS = {  # (forward, right) coefficients of the direction from the character to the camera
    "side_right": (0.0, 1.0),
    "side_left": (0.0, -1.0),
    "front": (1.0, 0.0),
    "back": (-1.0, 0.0),
    "front_right": (math.sqrt(0.5), math.sqrt(0.5)),
    "front_left": (math.sqrt(0.5), -math.sqrt(0.5)),
    "back_right": (-math.sqrt(0.5), math.sqrt(0.5)),
    "back_left": (-math.sqrt(0.5), -math.sqrt(0.5)),
}
FACINGS = {"-Y": (0.0, -1.0, 0.0), "+Y": (0.0, 1.0, 0.0), "+X": (1.0, 0.0, 0.0), "-X": (-1.0, 0.0, 0.0)}
ENGINES = {"workbench": "BLENDER_WORKBENCH", "eevee": "BLENDER_EEVEE", "cycles": "CYCLES"}
FIT_SHARE = 0.5  # an action must animate at least this share of its bones' channels on the armature's bones
_PREFIX = re.compile(r"^(?:.*:|mixamorig\d*_)")  # the namespaces the pack's skeleton mapping strips


class ClipError(ValueError):
    """A problem with the user's file or request, phrased for the user."""


def _name(path: str) -> str:
    return os.path.basename(path)


def _import(path: str) -> None:
    """Import an FBX / glTF / BVH into the current scene (FBX lights are skipped: Blender 5.0's importer
    fails on them, and the clip brings its own lights)."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".fbx":
        from io_scene_fbx import import_fbx

        original = import_fbx.blen_read_light
        import_fbx.blen_read_light = lambda tmpl, obj, settings: bpy.data.lights.new("fbx light", "POINT")
        try:
            bpy.ops.import_scene.fbx(filepath=path)
        finally:
            import_fbx.blen_read_light = original
    elif ext in (".glb", ".gltf"):
        bpy.ops.import_scene.gltf(filepath=path)
    elif ext == ".bvh":
        bpy.ops.import_anim.bvh(filepath=path)
    else:
        raise ClipError(
            f"{_name(path)}: unsupported file type {ext!r}; use .fbx, .glb/.gltf, .blend (or .bvh for actions)."
        )


def load_character(path: str):
    """Open or import the character file; return its armature."""
    if not os.path.isfile(path):
        raise ClipError(f"{path}: file not found.")
    if path.lower().endswith(".blend"):
        bpy.ops.wm.open_mainfile(filepath=path)
    else:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        _import(path)
    check_textures(path)
    armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    if not armatures:
        raise ClipError(
            f"{_name(path)} has no armature: export the character with its skeleton (FBX 'Armature' object type, "
            "glTF 'Skinning'), or rig it in Blender first."
        )
    skinned = [a for a in armatures if any(_deformed_by(m, a) for m in _meshes())]
    if not skinned:
        raise ClipError(
            f"{_name(path)}: no mesh is skinned to the armature {armatures[0].name!r}, so nothing would move; "
            "export the mesh together with its armature (parented, with an Armature modifier)."
        )
    return max(skinned, key=lambda a: len(a.data.bones))


def _meshes() -> list:
    return [o for o in bpy.context.scene.objects if o.type == "MESH" and not o.hide_render and o.visible_get()]


def _deformed_by(mesh, arm) -> bool:
    return any(m.type == "ARMATURE" and m.object == arm for m in mesh.modifiers)


def check_textures(path: str) -> None:
    """Raise when an image texture the file uses is neither packed nor on disk."""
    for image in bpy.data.images:
        if image.source != "FILE" or image.users == 0:
            continue
        if image.packed_file is not None:
            continue
        file = bpy.path.abspath(image.filepath, library=image.library)
        if not os.path.isfile(file):
            raise ClipError(
                f"{_name(path)}: texture {os.path.basename(image.filepath) or image.name!r} is missing (looked for "
                f"{file}). Put the texture files next to the character file as exported, or export with embedded "
                "textures (FBX: Path Mode 'Copy' + embed; glTF: .glb)."
            )


def _fcurves(action) -> list:
    """Every F-curve of a (layered) action."""
    curves = []
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", ()):
                curves.extend(bag.fcurves)
    return curves


def _bone_of(data_path: str) -> str | None:
    if not data_path.startswith('pose.bones["'):
        return None
    return data_path[len('pose.bones["') :].split('"]', 1)[0]


def action_bones(action) -> set[str]:
    return {b for b in (_bone_of(fc.data_path) for fc in _fcurves(action)) if b}


def armature_actions(arm) -> list:
    """Actions of the file that animate this armature's bones, by name; a single-frame pose (a bind or rest
    pose stored as an action) is not an action to render."""
    names = {b.name for b in arm.data.bones}
    fitting = []
    for action in bpy.data.actions:
        bones = action_bones(action)
        start, end = action.frame_range
        if end > start and bones and len(bones & names) >= FIT_SHARE * len(bones):
            fitting.append(action)
    return sorted(fitting, key=lambda a: a.name)


def bare_name(name: str) -> str:
    """A bone name without its namespace, as the pack's skeleton mapping reads it (``mixamorig:Hips``,
    ``mixamorig1_Hips`` → ``hips``)."""
    return _PREFIX.sub("", name).lower()


def import_action(path: str, arm):
    """The action of an action-only FBX / BVH, with its imported objects removed.

    Same bone names: the action is used as it is.  Bone names equal up to a namespace (the skeleton
    mapping's rule, e.g. a ``mixamorig:`` BVH on a rig named ``Hips``, ``Spine`` …): it is retargeted
    onto ``arm`` by :func:`retarget`, which carries each bone's world rotation change from its rest pose,
    so rigs whose bones have other rest orientations (roll) still take the motion.
    """
    if not os.path.isfile(path):
        raise ClipError(f"{path}: action file not found.")
    before_objects = set(bpy.data.objects)
    before_actions = set(bpy.data.actions)
    _import(path)
    new_actions = [a for a in bpy.data.actions if a not in before_actions and action_bones(a)]
    imported = [o for o in bpy.data.objects if o not in before_objects]
    if not new_actions:
        raise ClipError(f"{_name(path)} holds no bone animation; export the action with its armature.")
    action = max(new_actions, key=lambda a: len(action_bones(a)))
    bones, names = action_bones(action), {b.name for b in arm.data.bones}
    source = next((o for o in imported if o.type == "ARMATURE" and o.animation_data and o.animation_data.action), None)
    if len(bones & names) < FIT_SHARE * len(bones) and source is not None:
        action = retarget(source, arm, action) or action
    for obj in imported:
        bpy.data.objects.remove(obj, do_unlink=True)
    return action


def retarget(source, arm, action):
    """Bake ``source``'s motion onto ``arm`` for bones whose bare names match; None when too few match.

    Per frame and bone (parents first), the source bone's world rotation change from rest is applied to
    the target bone's rest orientation; the hips move by the source's travel scaled by the hip heights.
    """
    targets = {bare_name(b.name): b.name for b in arm.data.bones}
    pairs = {targets[bare_name(b.name)]: b.name for b in source.data.bones if bare_name(b.name) in targets}
    if len(pairs) < FIT_SHARE * len(source.data.bones):
        return None
    scene = bpy.context.scene
    src_world = source.matrix_world.to_3x3().normalized()
    tgt_world = arm.matrix_world.to_3x3().normalized()
    root = _root_bone(arm).bone
    root_src = source.data.bones.get(pairs.get(root.name, ""))
    src_rest_hips = source.matrix_world @ root_src.head_local if root_src else None
    tgt_rest_hips = arm.matrix_world @ root.head_local
    ratio = tgt_rest_hips.z / src_rest_hips.z if root_src and abs(src_rest_hips.z) > 1e-6 else 1.0
    baked = bpy.data.actions.new(f"{action.name} (retargeted to {arm.name})")
    data = arm.animation_data or arm.animation_data_create()
    for track in data.nla_tracks:
        track.mute = True
    data.action = baked
    order, queue = [], [b for b in arm.data.bones if b.parent is None]
    while queue:
        bone = queue.pop(0)
        order.append(bone)
        queue.extend(bone.children)
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
    start, end = (int(round(v)) for v in action.frame_range)
    for frame in range(start, end + 1):
        scene.frame_set(frame)
        posed = {}
        for bone in order:
            rest = bone.matrix_local
            parent = bone.parent
            base = posed[parent.name] @ parent.matrix_local.inverted() @ rest if parent else rest.copy()
            rotation = base.to_3x3().normalized()
            head = base.translation.copy()
            src_name = pairs.get(bone.name)
            if src_name is not None:
                src_pose = src_world @ source.pose.bones[src_name].matrix.to_3x3().normalized()
                src_rest = src_world @ source.data.bones[src_name].matrix_local.to_3x3().normalized()
                delta = src_pose @ src_rest.inverted()
                rotation = tgt_world.inverted() @ delta @ tgt_world @ rest.to_3x3().normalized()
                if parent is None and root_src is not None:
                    travel = (source.matrix_world @ source.pose.bones[src_name].head) - src_rest_hips
                    head = arm.matrix_world.inverted() @ (tgt_rest_hips + travel * ratio)
            target = Matrix.Translation(head) @ rotation.to_4x4()
            posed[bone.name] = target
            pb = arm.pose.bones[bone.name]
            pb.matrix_basis = base.inverted() @ target
            pb.keyframe_insert("rotation_quaternion", frame=frame)
            if parent is None:
                pb.keyframe_insert("location", frame=frame)
    return baked


def assign_action(arm, action, source: str) -> None:
    """Put ``action`` on ``arm`` alone (NLA tracks muted); raise when it does not fit the armature."""
    bones = action_bones(action)
    names = {b.name for b in arm.data.bones}
    hit = bones & names
    if not bones or len(hit) < FIT_SHARE * len(bones):
        missing = sorted(bones - names)
        raise ClipError(
            f"{source}: action {action.name!r} does not fit armature {arm.name!r}: it animates bones "
            f"{', '.join(missing[:6])}{' …' if len(missing) > 6 else ''} that the armature lacks ({len(hit)} of "
            f"{len(bones)} match). Use an action exported for this rig (same bone names, e.g. Mixamo 'without "
            "skin' for a Mixamo character) or a BVH retargeted to it."
        )
    data = arm.animation_data or arm.animation_data_create()
    for track in data.nla_tracks:
        track.mute = True
    data.action = action
    slots = list(getattr(action, "slots", ()))
    if slots and getattr(data, "action_slot", None) is None:
        data.action_slot = slots[0]


def sample_frames(action, count: int, start: float | None, end: float | None) -> list[float]:
    """``count`` evenly spaced frames over ``[start, end)`` of the action (a cycle's last key repeats its first)."""
    first, last = action.frame_range
    start = float(first if start is None else start)
    end = float(last if end is None else end)
    if end <= start:
        return [start] * count
    step = (end - start) / count
    return [start + i * step for i in range(count)]


def _set_frame(scene, frame: float) -> None:
    whole = math.floor(frame)
    scene.frame_set(int(whole), subframe=frame - whole)


def _root_bone(arm):
    roots = [b for b in arm.pose.bones if b.parent is None]
    return max(roots, key=lambda b: len(b.children_recursive))


def _mesh_points(depsgraph):
    """World positions (N, 3) of every deformed vertex of the rendered meshes, evaluated at the current frame."""
    import numpy as np

    parts = [np.zeros((0, 3))]
    for obj in _meshes():
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        world = np.array(evaluated.matrix_world)
        parts.append(co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])
        evaluated.to_mesh_clear()
    return np.concatenate(parts)


def camera_track(
    arm, frames: list[float], view: str, facing: str, follow: bool, margin: float, width: int, height: int
):
    """Per-frame camera matrices and the orthographic scale that frames the whole action."""
    import numpy as np

    scene = bpy.context.scene
    up = Vector((0.0, 0.0, 1.0))
    forward = Vector(FACINGS[facing])
    right = forward.cross(up)
    f_coef, r_coef = VIEWS[view]
    to_camera = (forward * f_coef + right * r_coef).normalized()
    view_dir = -to_camera
    screen_right = view_dir.cross(up).normalized()
    root = _root_bone(arm)
    shifts, extents = [], []
    depsgraph = bpy.context.evaluated_depsgraph_get()
    origin = None
    for frame in frames:
        _set_frame(scene, frame)
        depsgraph.update()
        head = arm.matrix_world @ root.head
        if origin is None:
            origin = head.copy()
        moved = head - origin
        shift = moved - up * moved.dot(up) if follow else Vector((0.0, 0.0, 0.0))
        shifts.append(shift)
        points = _mesh_points(depsgraph) - np.array(shift)
        extents.append(points @ np.array([screen_right, up, view_dir]).T)
    extents = np.concatenate(extents)
    if not len(extents):
        raise ClipError("the character has no visible mesh to render")
    lo, hi = extents.min(axis=0).tolist(), extents.max(axis=0).tolist()
    cx, cy = (lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0
    span_x, span_y = max(hi[0] - lo[0], 1e-6), max(hi[1] - lo[1], 1e-6)
    usable = 1.0 - 2.0 * margin
    # Blender's ortho_scale spans the larger image side.
    scale = max(span_x / (usable * width), span_y / (usable * height)) * max(width, height)
    depth = hi[2] - lo[2]
    # The eye sits one unit in front of the nearest vertex along the view axis (orthographic: only the
    # direction matters for the image, the clip range just has to hold the character).
    eye = screen_right * cx + up * cy + view_dir * (lo[2] - 1.0)
    rotation = Matrix((screen_right, up, -view_dir)).transposed().to_4x4()
    matrices = [Matrix.Translation(eye + shift) @ rotation for shift in shifts]
    clip_end = depth + 2.0
    return matrices, scale, clip_end, {"view_direction": list(view_dir), "facing": facing, "follow_root": follow}


def add_lights(scene, view_dir: Vector, engine: str) -> dict:
    """A key sun from the camera's upper left, a rim sun from behind, and a grey world for ambient light."""
    world = bpy.data.worlds.new("GameAnimWorld")
    scene.world = world
    world.use_nodes = True
    background = world.node_tree.nodes.get("Background")
    ambient = 0.35
    if background is not None:
        background.inputs[0].default_value = (ambient, ambient, ambient, 1.0)
        background.inputs[1].default_value = 1.0
    up = Vector((0.0, 0.0, 1.0))
    side = view_dir.cross(up).normalized()
    params = {"ambient": ambient, "lights": []}
    for name, direction, energy in (
        ("key", (-view_dir + up * 1.2 - side * 0.6).normalized(), 3.0),
        ("rim", (view_dir + up * 0.8 + side * 0.5).normalized(), 1.5),
    ):
        light = bpy.data.lights.new(f"GameAnim {name}", "SUN")
        light.energy = energy
        obj = bpy.data.objects.new(light.name, light)
        scene.collection.objects.link(obj)
        obj.rotation_euler = (-direction).to_track_quat("-Z", "Y").to_euler()
        params["lights"].append({"name": name, "type": "SUN", "energy": energy, "towards_light": list(direction)})
    if engine == "BLENDER_WORKBENCH":
        shading = scene.display.shading
        shading.light = "STUDIO"
        shading.color_type = "TEXTURE"
        shading.show_shadows = False
        shading.show_cavity = False
        params["workbench"] = {"light": "STUDIO", "color_type": "TEXTURE"}
    return params


def add_toon_shader() -> int:
    """godmodeanimation's simple toon look: shading quantised to two tones (0.5 grey below 0.286, white
    above) and multiplied with the base colour.  Needs Eevee (Shader to RGB); returns materials changed."""
    changed = 0
    for material in bpy.data.materials:
        if not material.use_nodes or material.node_tree is None:
            continue
        nodes, links = material.node_tree.nodes, material.node_tree.links
        bsdf = next((n for n in nodes if n.type == "BSDF_PRINCIPLED"), None)
        output = next((n for n in nodes if n.type == "OUTPUT_MATERIAL"), None)
        if bsdf is None or output is None:
            continue
        base = bsdf.inputs["Base Color"]
        colour_source = base.links[0].from_socket if base.links else None
        to_rgb = nodes.new("ShaderNodeShaderToRGB")
        ramp = nodes.new("ShaderNodeValToRGB")
        ramp.color_ramp.interpolation = "CONSTANT"
        ramp.color_ramp.elements[0].color = (0.5, 0.5, 0.5, 1.0)
        ramp.color_ramp.elements[1].position = 0.286
        mix = nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        mix.blend_type = "MULTIPLY"
        mix.inputs["Factor"].default_value = 1.0
        links.new(bsdf.outputs["BSDF"], to_rgb.inputs["Shader"])
        links.new(to_rgb.outputs["Color"], ramp.inputs["Fac"])
        if colour_source is not None:
            links.new(colour_source, mix.inputs[6])
        else:
            mix.inputs[6].default_value = base.default_value
        links.new(ramp.outputs["Color"], mix.inputs[7])
        emission = nodes.new("ShaderNodeEmission")
        links.new(mix.outputs[2], emission.inputs["Color"])
        links.new(emission.outputs["Emission"], output.inputs["Surface"])
        changed += 1
    return changed


def render_clip(request: dict, send) -> dict:
    """Render one clip's RGBA frames into ``out_dir``; see the module docstring."""
    path = request["character"]
    view = request.get("view") or "side_right"
    if view not in VIEWS:
        raise ClipError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}.")
    facing = request.get("facing") or "-Y"
    if facing not in FACINGS:
        raise ClipError(f"unknown facing {facing!r}; choose one of {', '.join(FACINGS)}.")
    engine_key = (request.get("engine") or "workbench").lower()
    if engine_key not in ENGINES:
        raise ClipError(f"unknown render engine {engine_key!r}; choose one of {', '.join(ENGINES)}.")
    toon = bool(request.get("toon"))
    engine = ENGINES["eevee"] if toon else ENGINES[engine_key]
    width, height, count = int(request["width"]), int(request["height"]), int(request["frames"])
    arm = load_character(path)
    action_file = request.get("action_file")
    if action_file:
        action = import_action(action_file, arm)
        source = _name(action_file)
    else:
        wanted = request.get("action")
        fitting = armature_actions(arm)
        if not fitting:
            raise ClipError(
                f"{_name(path)} has no action for armature {arm.name!r}; add action files (FBX exported 'without "
                "skin', or BVH with the same bone names)."
            )
        action = next((a for a in fitting if a.name == wanted), None) if wanted else fitting[0]
        if action is None:
            raise ClipError(
                f"{_name(path)} has no action {wanted!r}; its actions are: {', '.join(a.name for a in fitting)}."
            )
        source = _name(path)
    assign_action(arm, action, source)
    scene = bpy.context.scene
    frames = sample_frames(action, count, request.get("start"), request.get("end"))
    margin = float(request.get("margin", 0.08))
    matrices, ortho, clip_end, cam_params = camera_track(
        arm, frames, view, facing, bool(request.get("follow", True)), margin, width, height
    )
    cam_data = bpy.data.cameras.new("GameAnimClipCamera")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = ortho
    cam_data.clip_start, cam_data.clip_end = 0.01, clip_end
    camera = bpy.data.objects.new("GameAnimClipCamera", cam_data)
    scene.collection.objects.link(camera)
    scene.camera = camera
    for obj in [o for o in scene.objects if o.type in ("LIGHT", "CAMERA") and o is not camera]:
        bpy.data.objects.remove(obj, do_unlink=True)
    light_params = add_lights(scene, Vector(cam_params["view_direction"]), engine)
    if toon:
        light_params["toon_materials"] = add_toon_shader()
    render = scene.render
    render.engine = engine
    render.resolution_x, render.resolution_y, render.resolution_percentage = width, height, 100
    render.film_transparent = True
    render.use_compositing = False
    render.use_sequencer = False
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    if engine == "CYCLES":
        scene.cycles.device = "CPU"
        scene.cycles.samples = int(request.get("samples") or 16)
        scene.cycles.use_denoising = False
    elif engine == "BLENDER_EEVEE":
        scene.eevee.taa_render_samples = int(request.get("samples") or 16)
    settings = render.image_settings
    settings.file_format = "PNG"
    settings.color_mode = "RGBA"
    settings.color_depth = "8"
    out_dir = request["out_dir"]
    written = []
    for done, (frame, matrix) in enumerate(zip(frames, matrices, strict=True), start=1):
        _set_frame(scene, frame)
        camera.matrix_world = matrix
        target = os.path.join(out_dir, f"rgba_{done - 1:04d}.png")
        render.filepath = target
        bpy.ops.render.render(write_still=True)
        written.append(target)
        send({"progress": [done, len(frames)]})
    return {
        "frames": written,
        "params": {
            "character": _name(path),
            "armature": arm.name,
            "action": action.name,
            "action_source": source,
            "action_frame_range": list(action.frame_range),
            "sampled_frames": frames,
            "fps": scene.render.fps / scene.render.fps_base,
            "view": view,
            "engine": engine,
            "toon": toon,
            "width": width,
            "height": height,
            "textures": sorted(i.name for i in bpy.data.images if i.source == "FILE" and i.users),
            "camera": {"type": "ORTHO", "ortho_scale": ortho, "margin": margin, **cam_params},
            "light": light_params,
            "blender": bpy.app.version_string,
        },
    }


def list_actions(path: str) -> dict:
    """The armature and the names of the actions in a character file that fit it."""
    arm = load_character(path)
    return {"armature": arm.name, "actions": [a.name for a in armature_actions(arm)]}
