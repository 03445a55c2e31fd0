"""Export the active armature's motion to a GameAnim JSON motion file (runs inside Blender).

Three ways to use it (Blender 4.2 – 5.0):

* Add-on: Edit > Preferences > Add-ons > Install from disk, pick this file; then
  File > Export > GameAnim motion (.json) exports the active (or first) armature.
* Script in the Text Editor: open it and press Run Script; the same menu entry appears.
* Command line: ``blender rig.blend -b -P gameanim_export_motion.py -- out.json [start end step]``.

The JSON holds, per frame, the world position of every bone head (plus ``<bone>_End`` for the
tip of each leaf bone) and each bone's world rotation, with the rest pose; see
``nodes/pose/joint_tracks.py`` in the GameAnim pack for the format.  ComfyUI's "GameAnim Load Motion"
node reads it with no Blender installed.
"""

from __future__ import annotations

import json
import sys

import bpy

bl_info = {
    "name": "GameAnim motion export",
    "author": "GameAnim",
    "version": (1, 0, 0),
    "blender": (4, 2, 0),
    "location": "File > Export > GameAnim motion (.json)",
    "description": "Export armature motion for GameAnim's orientation-true OpenPose rendering in ComfyUI",
    "category": "Import-Export",
}

FORMAT = "gameanim-motion"
VERSION = 1


def find_armature(name: str | None = None):
    """The named armature, else the active object if it is one, else the first armature."""
    if name:
        obj = bpy.data.objects.get(name)
        if obj is None or obj.type != "ARMATURE":
            raise ValueError(f"no armature object named {name!r} in the scene")
        return obj
    active = bpy.context.view_layer.objects.active if bpy.context.view_layer else None
    if active is not None and active.type == "ARMATURE":
        return active
    for obj in bpy.context.scene.objects:
        if obj.type == "ARMATURE":
            return obj
    raise ValueError("the scene has no armature; import or select a rigged character first")


def frame_range(arm) -> tuple[int, int]:
    """The armature action's frame range, else the scene's."""
    action = arm.animation_data.action if arm.animation_data else None
    if action is not None:
        start, end = action.frame_range
        return int(round(start)), int(round(end))
    scene = bpy.context.scene
    return scene.frame_start, scene.frame_end


def _ordered_bones(arm) -> list:
    """Bones parent-first (roots first), so joint 0 is a root."""
    ordered, queue = [], [b for b in arm.data.bones if b.parent is None]
    while queue:
        bone = queue.pop(0)
        ordered.append(bone)
        queue.extend(bone.children)
    return ordered


def _rotation(matrix) -> list[list[float]]:
    return [list(row) for row in matrix.to_quaternion().to_matrix()]


def armature_motion(arm, start: int | None = None, end: int | None = None, step: int = 1, report=None) -> dict:
    """The motion dict of ``arm`` over frames ``start..end`` (inclusive) every ``step`` frames."""
    scene = bpy.context.scene
    first, last = frame_range(arm)
    start = first if start is None else start
    end = last if end is None else end
    bones = _ordered_bones(arm)
    index = {b.name: i for i, b in enumerate(bones)}
    leaves = [b for b in bones if not b.children]
    names = [b.name for b in bones] + [f"{b.name}_End" for b in leaves]
    parents = [index[b.parent.name] if b.parent else -1 for b in bones] + [index[b.name] for b in leaves]
    world = arm.matrix_world

    def sample(matrices_head, matrices_tail, rotations) -> dict:
        return {
            "positions": [list(p) for p in matrices_head] + [list(p) for p in matrices_tail],
            "rotations": rotations + [rotations[index[b.name]] for b in leaves],
        }

    rest = sample(
        [world @ b.head_local for b in bones],
        [world @ b.tail_local for b in leaves],
        [_rotation(world @ b.matrix_local) for b in bones],
    )
    frames = []
    numbers = list(range(start, end + 1, max(1, step)))
    saved = scene.frame_current
    for done, frame in enumerate(numbers, start=1):
        scene.frame_set(frame)
        world = arm.matrix_world
        pose = arm.pose.bones
        entry = sample(
            [world @ pose[b.name].head for b in bones],
            [world @ pose[b.name].tail for b in leaves],
            [_rotation(world @ pose[b.name].matrix) for b in bones],
        )
        entry["frame"] = frame
        frames.append(entry)
        if report is not None:
            report(done, len(numbers))
    scene.frame_set(saved)
    fps = scene.render.fps / scene.render.fps_base
    return {
        "format": FORMAT,
        "version": VERSION,
        "up": "Z",
        "fps": fps,
        "source": bpy.path.basename(bpy.data.filepath) or arm.name,
        "armature": arm.name,
        "joints": names,
        "parents": parents,
        "rest": rest,
        "frames": frames,
    }


def export_file(path: str, start: int | None = None, end: int | None = None, step: int = 1) -> None:
    data = armature_motion(find_armature(), start, end, step)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


class GAMEANIM_OT_export_motion(bpy.types.Operator):
    """Export the active armature's motion for GameAnim (ComfyUI)"""

    bl_idname = "export_anim.gameanim_motion"
    bl_label = "Export GameAnim motion"
    filename_ext = ".json"
    filepath: bpy.props.StringProperty(subtype="FILE_PATH")
    step: bpy.props.IntProperty(name="Frame step", default=1, min=1)

    def execute(self, context):
        try:
            export_file(self.filepath, step=self.step)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"GameAnim motion written to {self.filepath}")
        return {"FINISHED"}

    def invoke(self, context, event):
        if not self.filepath:
            self.filepath = bpy.path.ensure_ext(
                bpy.path.abspath("//motion") if bpy.data.filepath else "motion", ".json"
            )
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


def _menu(self, context):
    self.layout.operator(GAMEANIM_OT_export_motion.bl_idname, text="GameAnim motion (.json)")


def register() -> None:
    bpy.utils.register_class(GAMEANIM_OT_export_motion)
    bpy.types.TOPBAR_MT_file_export.append(_menu)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_export.remove(_menu)
    bpy.utils.unregister_class(GAMEANIM_OT_export_motion)


def main(argv: list[str]) -> None:
    args = argv[argv.index("--") + 1 :] if "--" in argv else []
    if not args:
        register()
        return
    numbers = [int(a) for a in args[1:4]]
    export_file(args[0], *numbers)
    print(f"GameAnim motion written to {args[0]}")


if __name__ == "__main__":
    main(sys.argv)
