"""Convert an Inter-Quake Model (.iqm) character into a rigged, textured glTF binary with Blender (bpy).

    python .ci/iqm_to_glb.py model.iqm out.glb      (the bpy venv's python, or blender -b -P … -- model.iqm out.glb)

Asset preparation for the tests (``.ci/rig_assets.sh``), never run by the pack: Blender reads no IQM and
assimp drops its skeleton.  The IQM is read by ``tests/support/iqm.py``; this script builds

- an armature whose bones' rest matrices are the joints' model-space base matrices (the IQM exporter writes
  Blender bones, whose Y axis runs along the bone, so each bone's matrix is the joint's own),
- one mesh object per IQM mesh with the file's vertex positions, normals and texture coordinates (IQM counts
  v from the image's top row, Blender from its bottom: Blender's v = 1 - v), its triangles turned round (IQM's
  front faces wind clockwise about the stored normals, Blender's counter-clockwise), and a vertex group per joint from
  the blend indexes and weights, deformed by an Armature modifier,
- an image-textured material per IQM material (the image file of that name beside the model, packed),
- an action per IQM animation: each joint's pose at each frame as the pose bone's basis transform
  (rest-relative: the joint's base transform inverted times its frame transform), linear between frames,
  at the animation's frame rate,

and exports them as .glb (skins, animations, the images embedded).  The model keeps the IQM's axes and
units (Z up; mrfixit faces +X).
"""

from __future__ import annotations

import sys
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import iqm  # noqa: E402  (the shared numpy reader; .ci/ is not a package)

CHANNELS = (("location", 3), ("rotation_quaternion", 4), ("scale", 3))


def build_armature(model: iqm.Iqm, name: str):
    base = iqm.base_matrices(model)
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    heads = base[:, :3, 3]
    bones = []
    for i, joint in enumerate(model.joint_names):
        bone = data.edit_bones.new(joint)
        children = [c for c in np.nonzero(model.parents == i)[0] if np.linalg.norm(heads[c] - heads[i]) > 1e-4]
        length = min((np.linalg.norm(heads[c] - heads[i]) for c in children), default=0.25)
        bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, float(length), 0.0)
        rotation = base[i, :3, :3] / np.linalg.norm(base[i, :3, :3], axis=0)
        matrix = np.eye(4)
        matrix[:3, :3], matrix[:3, 3] = rotation, heads[i]
        bone.matrix = Matrix(matrix.tolist())
        if model.parents[i] >= 0:
            bone.parent = bones[model.parents[i]]
        bones.append(bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def build_meshes(model: iqm.Iqm, arm, folder: Path) -> list:
    objects = []
    positions, normals = model.arrays["position"], model.arrays["normal"]
    texcoords, indexes, weights = model.arrays["texcoord"], model.arrays["blendindexes"], model.weights
    for part in model.meshes:
        first, count = part.first_vertex, part.num_vertexes
        triangles = model.triangles[part.first_triangle : part.first_triangle + part.num_triangles] - first
        triangles = triangles[:, ::-1]  # IQM's front faces wind clockwise, Blender's counter-clockwise
        mesh = bpy.data.meshes.new(part.name)
        mesh.from_pydata(positions[first : first + count].tolist(), [], triangles.tolist())
        uv = mesh.uv_layers.new(name="UVMap")
        loops = triangles.reshape(-1)
        flipped = texcoords[first : first + count][loops].astype(np.float64)
        flipped[:, 1] = 1.0 - flipped[:, 1]
        uv.data.foreach_set("uv", flipped.reshape(-1))
        mesh.polygons.foreach_set("use_smooth", [True] * len(mesh.polygons))
        mesh.normals_split_custom_set_from_vertices(normals[first : first + count].tolist())
        mesh.materials.append(textured_material(part.material, folder))
        obj = bpy.data.objects.new(part.name, mesh)
        bpy.context.scene.collection.objects.link(obj)
        obj.parent = arm
        groups = [obj.vertex_groups.new(name=n) for n in model.joint_names]
        for v in range(count):
            for joint, weight in zip(indexes[first + v], weights[first + v], strict=True):
                if weight > 0:
                    groups[joint].add([v], float(weight), "ADD")
        obj.modifiers.new("Armature", "ARMATURE").object = arm
        objects.append(obj)
    return objects


def textured_material(image_name: str, folder: Path):
    material = bpy.data.materials.new(Path(image_name).stem)
    nodes = material.node_tree.nodes
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Roughness"].default_value = 0.8
    texture = nodes.new("ShaderNodeTexImage")
    texture.image = bpy.data.images.load(str(folder / image_name))
    texture.image.pack()
    material.node_tree.links.new(texture.outputs["Color"], bsdf.inputs["Base Color"])
    nodes.active = texture  # Workbench's texture colour shows the active image node
    return material


def build_action(model: iqm.Iqm, arm, anim: iqm.Anim):
    """The animation's frames as keys at Blender frames 1, 2, … (IQM frame ``first_frame + k`` at ``k + 1``)."""
    rest_local = iqm.transform(model.joints)
    keys = np.arange(anim.num_frames, dtype=np.float64) + 1.0
    values = {}
    for j, joint in enumerate(model.joint_names):
        rows = []
        previous = None
        for k in range(anim.num_frames):
            basis = np.linalg.inv(rest_local[j]) @ iqm.transform(model.frames[anim.first_frame + k, j])
            location, rotation, scale = Matrix(basis.tolist()).decompose()
            quat = np.array(rotation)
            if previous is not None and np.dot(quat, previous) < 0:
                quat = -quat  # the shorter way round, so linear keys do not spin
            previous = quat
            rows.append(np.concatenate([np.array(location), quat, np.array(scale)]))
        values[joint] = np.array(rows)
    action = bpy.data.actions.new(anim.name)
    data = arm.animation_data_create()
    data.action = action
    for joint, table in values.items():
        column = 0
        for prop, size in CHANNELS:
            for index in range(size):
                curve = action.fcurve_ensure_for_datablock(
                    arm, f'pose.bones["{joint}"].{prop}', index=index, group_name=joint
                )
                curve.keyframe_points.add(anim.num_frames)
                co = np.stack([keys, table[:, column]], axis=1).reshape(-1)
                curve.keyframe_points.foreach_set("co", co)
                curve.keyframe_points.foreach_set("interpolation", [1] * anim.num_frames)  # LINEAR
                curve.update()
                column += 1
    for bone in arm.pose.bones:
        bone.rotation_mode = "QUATERNION"
    return action


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv = argv[argv.index("--") + 1 :]
    source, target = Path(argv[0]), Path(argv[1])
    model = iqm.read_iqm(source)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    arm = build_armature(model, source.stem)
    build_meshes(model, arm, source.parent)
    actions = [build_action(model, arm, anim) for anim in model.anims]
    if actions:
        scene.render.fps = round(model.anims[0].framerate)
        scene.frame_start, scene.frame_end = 1, model.anims[0].num_frames
        arm.animation_data.action = actions[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.export_scene.gltf(
        filepath=str(target),
        export_format="GLB",
        export_skins=True,
        export_animations=True,
        export_animation_mode="ACTIONS",
        export_image_format="AUTO",
        export_yup=True,
    )
    print(f"wrote {target}: {len(model.joint_names)} joints, {len(model.meshes)} meshes, actions {model.anims}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
