"""ComfyUI adapter for pose-from-rig: load a motion, pick a camera, render pose / depth / normal maps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...core import host
from ...core.errors import InputError
from ...core.frames import as_alpha, images_tensor
from ...core.paths import confined
from ...core.preview import animation_preview
from ..common import category, field, mask_is_input, next_free_name, output_files
from .blender_client import RIG_SUFFIXES, motion_from_rig, render_rig_maps
from .camera import ORBIT, PROJECTIONS, VIEWS
from .conditions import SAMPLE_DIR, CameraSettings, render_pose
from .directions import DIRECTION_CHOICES, action_names, direction_set, parse_directions
from .joint_tracks import load_motion
from .keypoints import keypoints_json
from .skeleton import BUILTIN_MAPPINGS, Pose3D, load_mapping, pose3d_from_motion
from .wan_fit import LENGTH_RULES, WAN_FPS, WAN_MAX_FRAMES, fit_camera, reference_on_canvas, resample_pose

POSE3D = "GAMEANIM_POSE3D"
POSE_CAMERA = "GAMEANIM_POSE_CAMERA"
SAMPLE_PREFIX = "sample:"
MOTION_SUFFIXES = (".bvh", ".json", *RIG_SUFFIXES)
CUSTOM_MAPPING = "custom (mapping_file)"
POSE3D_INPUT = field(POSE3D, "Motion from GameAnim Load Motion.")


def _motion_choices() -> list[str]:
    samples = sorted(SAMPLE_PREFIX + p.name for p in SAMPLE_DIR.glob("*.bvh"))
    found: list[str] = []
    root = host.input_dir()
    if root.is_dir():
        for dirpath, _, files in os.walk(root):
            found.extend(
                Path(dirpath, n).relative_to(root).as_posix() for n in files if n.lower().endswith(MOTION_SUFFIXES)
            )
            if len(found) >= 500:  # a huge input folder must not stall the node list
                break
    return samples + sorted(found)


def _resolve_motion(name: str) -> Path:
    if name.startswith(SAMPLE_PREFIX):
        return confined(SAMPLE_DIR, name[len(SAMPLE_PREFIX) :])
    path = confined(host.input_dir(), name)
    if not path.is_file():
        raise InputError(f"Motion file {name!r} was not found in ComfyUI's input folder ({host.input_dir()}).")
    return path


class LoadMotion:
    DESCRIPTION = (
        "Loads a character motion and maps its bones to the 18 OpenPose points in 3-D. BVH and GameAnim JSON "
        "motion files load in-process; FBX / .blend / glTF rigs are evaluated by Blender (set GAMEANIM_BLENDER or "
        "the blender_executable input). Left and right come from the rig's own bone names, never guessed."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = (POSE3D,)
    RETURN_NAMES = ("pose3d",)
    OUTPUT_TOOLTIPS = ("3-D OpenPose points per frame with head orientation, for the GameAnim render nodes.",)
    FUNCTION = "load"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "motion": field(
                    _motion_choices(),
                    "Motion file from ComfyUI's input folder (.bvh, .json, .fbx, .blend, .glb) or a sample shipped with GameAnim.",
                ),
                "frame_start": field("INT", "First frame to use (0-based).", default=0, min=0, max=100000),
                "frame_end": field(
                    "INT", "Frame to stop before (exclusive); -1 = to the end.", default=-1, min=-1, max=100000
                ),
                "frame_step": field(
                    "INT",
                    "Use every n-th frame (e.g. 2 turns a 32-frame action into 16 frames).",
                    default=1,
                    min=1,
                    max=1000,
                ),
                "skeleton_mapping": field(
                    ["auto", *BUILTIN_MAPPINGS, CUSTOM_MAPPING],
                    "Which bone names map to the OpenPose points. auto tries Mixamo, CMU and CMU-ASF names.",
                ),
            },
            "optional": {
                "mapping_file": field(
                    "STRING",
                    "JSON mapping for other rigs, relative to the input folder (see docs/pose.md).",
                    default="",
                ),
                "blender_executable": field(
                    "STRING",
                    "Blender executable or bpy-Python for FBX/.blend files; empty = the GAMEANIM_BLENDER environment variable.",
                    default="",
                ),
                "hands": field(
                    "BOOLEAN",
                    "Add 21-point OpenPose hands when the rig has Mixamo-named finger bones on both hands.",
                    default=True,
                ),
            },
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs: Any) -> str:
        try:
            path = _resolve_motion(kwargs.get("motion", ""))
            return f"{path}:{path.stat().st_mtime_ns}"
        except (InputError, OSError):
            return ""

    def load(
        self,
        motion: str,
        frame_start: int,
        frame_end: int,
        frame_step: int,
        skeleton_mapping: str,
        mapping_file: str = "",
        blender_executable: str = "",
        hands: bool = True,
    ) -> tuple[Pose3D]:
        path = _resolve_motion(motion)
        frames = (frame_start, None if frame_end < 0 else frame_end, frame_step)
        if path.suffix.lower() in RIG_SUFFIXES:
            loaded = motion_from_rig(path, frames, blender_executable, progress=host.progress(100))
        else:
            loaded = load_motion(path, frames)
        if skeleton_mapping == CUSTOM_MAPPING:
            if not mapping_file.strip():
                raise InputError(
                    "skeleton_mapping is 'custom' but mapping_file is empty; give a mapping JSON file name."
                )
            mapping: Any = load_mapping(confined(host.input_dir(), mapping_file))
        else:
            mapping = skeleton_mapping
        return (pose3d_from_motion(loaded, mapping, hands),)


class PoseCamera:
    DESCRIPTION = (
        "Camera for rendering rig motion: a preset around the character's own facing (side_right = the character "
        "faces screen-right), orthographic or perspective, auto-fitted to the whole motion with one scale so the "
        "size stays stable. Root follow keeps a running character centred. Any azimuth around the character and "
        "an elevation (30 = 2:1 pixel-art isometric, 35.26 = true isometric) for top-down and isometric games."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = (POSE_CAMERA,)
    RETURN_NAMES = ("camera",)
    OUTPUT_TOOLTIPS = ("Camera settings for the GameAnim pose render nodes.",)
    FUNCTION = "build"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "preset": field(
                    list(VIEWS),
                    "Where the camera stands relative to the character's facing; azimuth = the azimuth input.",
                    default="side_right",
                ),
                "projection": field(
                    list(PROJECTIONS), "Orthographic (sprite-like, no size change with depth) or perspective."
                ),
                "width": field("INT", "Output width in pixels.", default=512, min=64, max=4096, step=8),
                "height": field("INT", "Output height in pixels.", default=512, min=64, max=4096, step=8),
                "margin": field(
                    "FLOAT",
                    "Empty border around the motion, as a fraction of the canvas.",
                    default=0.08,
                    min=0.0,
                    max=0.45,
                    step=0.01,
                ),
                "follow_root": field(
                    "BOOLEAN", "Move the camera with the character's ground motion (running in place).", default=True
                ),
                "fov_degrees": field(
                    "FLOAT",
                    "Perspective only: the angle the whole motion spans. Wider = camera closer = stronger perspective; the fit keeps the character in frame.",
                    default=30.0,
                    min=5.0,
                    max=120.0,
                    step=1.0,
                ),
            },
            "optional": {
                "azimuth": field(
                    "FLOAT",
                    "preset azimuth only: degrees the camera moves from the character's front towards its right "
                    "(0 front, 45 three_quarter, 90 side_right, 180 back, 270 side_left).",
                    default=0.0,
                    min=0.0,
                    max=360.0,
                    step=1.0,
                ),
                "elevation": field(
                    "FLOAT",
                    "Degrees the camera is raised, looking down (not for top): 0 level, 30 = 2:1 pixel-art "
                    "isometric (tile edges at 26.57 deg), 35.26 = true isometric (edges at 30 deg), 90 straight down.",
                    default=0.0,
                    min=0.0,
                    max=90.0,
                    step=0.01,
                ),
            },
        }

    def build(
        self,
        preset: str,
        projection: str,
        width: int,
        height: int,
        margin: float,
        follow_root: bool,
        fov_degrees: float,
        azimuth: float = 0.0,
        elevation: float = 0.0,
    ) -> tuple[CameraSettings]:
        return (
            CameraSettings(preset, projection, width, height, margin, follow_root, fov_degrees, azimuth, elevation),
        )


class DirectionSet:
    DESCRIPTION = (
        "One motion (or up to four, one per action) seen from 4, 8 or listed directions in one queue: outputs lists "
        "with one motion, camera, animation name and prompt per (action, direction), so every node downstream "
        "(Fit to Wan, Render Pose, Wan VACE, the sprite stages) runs once per clip and Save Sprite Sheet puts "
        "them on one sheet, one animation each. Names are <action>_<compass point the character faces on "
        "screen>: run_e, run_se, run_s, ... (clockwise from east, the screen-angle order of Godot and Phaser). "
        "All clips share one scale, so the character keeps its size."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = (POSE3D, POSE_CAMERA, "STRING", "STRING")
    RETURN_NAMES = ("pose3d", "camera", "animation", "prompt")
    OUTPUT_IS_LIST = (True, True, True, True)
    OUTPUT_TOOLTIPS = (
        "The motion of each clip (a list: nodes downstream run once per clip).",
        "The camera of each clip: the direction's azimuth, the input camera's elevation, one shared scale.",
        "Animation name of each clip (<action>_<direction>), for Save Sprite Sheet's animation input.",
        "The prompt with {view}, {direction} and {action} filled in per clip, for the text encoder.",
    )
    FUNCTION = "expand"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "pose3d": POSE3D_INPUT,
                "camera": field(
                    POSE_CAMERA,
                    "Camera from Pose Camera: projection, size, margin, root follow and elevation are used; "
                    "the azimuth comes from each direction.",
                ),
                "actions": field(
                    "STRING",
                    "Animation name of each connected motion, comma-separated in input order (pose3d, pose3d_2, ...).",
                    default="run",
                ),
                "directions": field(
                    list(DIRECTION_CHOICES),
                    "8: e, se, s, sw, w, nw, n, ne; 4: e, s, w, n; list: the direction_list input.",
                ),
            },
            "optional": {
                "direction_list": field(
                    "STRING",
                    "For directions = list: compass points (s, e, n, w) or name=azimuth pairs (back=180), in sheet order.",
                    default="s, e, n, w",
                ),
                "prompt": field(
                    "STRING",
                    "Prompt template; {view} becomes e.g. 'back view' or 'side view facing left', {direction} the "
                    "compass name, {action} the action name.",
                    default="",
                    multiline=True,
                ),
                **{
                    f"pose3d_{i}": field(POSE3D, f"Motion of action {i} (optional; named by the {i}th action name).")
                    for i in range(2, 5)
                },
            },
        }

    def expand(
        self,
        pose3d: Pose3D,
        camera: CameraSettings,
        actions: str,
        directions: str,
        direction_list: str = "s, e, n, w",
        prompt: str = "",
        pose3d_2: Pose3D | None = None,
        pose3d_3: Pose3D | None = None,
        pose3d_4: Pose3D | None = None,
    ) -> tuple[list, list, list, list]:
        poses = [p for p in (pose3d, pose3d_2, pose3d_3, pose3d_4) if p is not None]
        motions = list(zip(action_names(actions, len(poses)), poses, strict=True))
        clips = direction_set(motions, camera, parse_directions(directions, direction_list))
        return (
            [c.pose for c in clips],
            [c.camera for c in clips],
            [c.name for c in clips],
            [c.prompt(prompt) for c in clips],
        )


class RenderPose:
    DESCRIPTION = (
        "Draws orientation-true OpenPose maps from 3-D rig motion: true left/right colours, face points hidden when "
        "the head faces away, limbs drawn far-to-near. Also outputs POSE_KEYPOINT exactly like comfyui_controlnet_aux."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = ("IMAGE", "POSE_KEYPOINT")
    RETURN_NAMES = ("pose_images", "pose_keypoint")
    OUTPUT_TOOLTIPS = (
        "OpenPose maps, one per frame.",
        "Keypoints per frame (controlnet_aux format, normalised coordinates).",
    )
    FUNCTION = "render"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "pose3d": POSE3D_INPUT,
                "camera": field(POSE_CAMERA, "Camera from GameAnim Pose Camera."),
                "stick_width": field(
                    "INT",
                    "Limb half-width in pixels (ControlNet's annotator uses 4 at 512px).",
                    default=4,
                    min=1,
                    max=32,
                ),
                "depth_shading": field("BOOLEAN", "Darken far limbs so front and back limbs differ.", default=False),
            }
        }

    def render(self, pose3d: Pose3D, camera: CameraSettings, stick_width: int, depth_shading: bool) -> dict[str, Any]:
        progress = host.progress(pose3d.frame_count)
        result = render_pose(pose3d, camera, stick_width, depth_shading, progress=progress, as_float=True)
        images = images_tensor(result.pose_maps)
        view = f"azimuth {camera.azimuth:g}°" if camera.preset == ORBIT else camera.preset
        if camera.elevation and camera.preset != "top":
            view += f" · elevation {camera.elevation:g}°"
        caption = f"{view} · {camera.projection}"
        return {"ui": animation_preview(images, pose3d.fps, caption=caption), "result": (images, result.keypoints)}


class RenderPoseDepthNormal:
    DESCRIPTION = (
        "Renders depth and normal maps of limb capsules and a head sphere from 3-D rig motion (no Blender needed), "
        "for a second ControlNet that tells front limbs from back limbs. Near is white in the depth map."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = ("IMAGE", "IMAGE", "MASK")
    RETURN_NAMES = ("depth", "normal", "silhouette")
    OUTPUT_TOOLTIPS = (
        "Depth maps (near = white).",
        "Normal maps (R right, G up, B towards the viewer).",
        "Body silhouette.",
    )
    FUNCTION = "render"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "pose3d": POSE3D_INPUT,
                "camera": field(
                    POSE_CAMERA, "Camera from GameAnim Pose Camera (use the same one as for the pose maps)."
                ),
            }
        }

    def render(self, pose3d: Pose3D, camera: CameraSettings) -> tuple[Any, Any, Any]:
        from .maps import render_capsule_maps

        depth, normal = render_capsule_maps(pose3d, camera.fit(pose3d), host.progress(pose3d.frame_count))
        depth_t = images_tensor(depth)
        return (depth_t[..., None].repeat(1, 1, 1, 3), images_tensor(normal), (depth_t > 0).float())


class RenderRigMesh:
    DESCRIPTION = (
        "Renders the rig's own mesh with Blender (Workbench, or Cycles for exact normals) from the same fitted "
        "camera as the pose maps: depth (near = white), normals and silhouette, pixel-aligned with the OpenPose maps. "
        "Needs Blender (GAMEANIM_BLENDER or blender_executable) and the rig file the motion was loaded from."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = ("IMAGE", "IMAGE", "MASK")
    RETURN_NAMES = ("depth", "normal", "silhouette")
    OUTPUT_TOOLTIPS = (
        "Mesh depth maps (near = white).",
        "Mesh normal maps (R right, G up, B towards the viewer).",
        "Mesh silhouette.",
    )
    FUNCTION = "render"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        rigs = [c for c in _motion_choices() if c.lower().endswith(RIG_SUFFIXES)] or ["(no rig files in input/)"]
        return {
            "required": {
                "pose3d": field(POSE3D, "Motion loaded from the same rig file (its frames are the frames rendered)."),
                "camera": field(POSE_CAMERA, "Camera from GameAnim Pose Camera (the same as for the pose maps)."),
                "rig": field(rigs, "The rig file (.fbx, .blend, .glb) in ComfyUI's input folder, with its mesh."),
                "engine": field(
                    ["workbench", "cycles"],
                    "Workbench: fast (about 0.3 s/frame), normals from depth. Cycles: exact normals, slower.",
                ),
            },
            "optional": {
                "blender_executable": field(
                    "STRING",
                    "Blender executable or bpy-Python; empty = the GAMEANIM_BLENDER environment variable.",
                    default="",
                ),
            },
        }

    def render(
        self, pose3d: Pose3D, camera: CameraSettings, rig: str, engine: str, blender_executable: str = ""
    ) -> tuple[Any, Any, Any]:
        path = _resolve_motion(rig)
        blender_engine = "CYCLES" if engine == "cycles" else "BLENDER_WORKBENCH"
        depth, normal, alpha = render_rig_maps(
            path, pose3d, camera.fit(pose3d), blender_executable, blender_engine, host.progress(pose3d.frame_count)
        )
        depth_t = images_tensor(depth)
        return (depth_t[..., None].repeat(1, 1, 1, 3), images_tensor(normal), images_tensor(alpha))


class SavePoseKeypoints:
    DESCRIPTION = "Saves POSE_KEYPOINT as a JSON file in ComfyUI's output folder (the controlnet_aux list format)."
    CATEGORY = category("Pose")
    RETURN_TYPES = ()
    OUTPUT_NODE = True
    FUNCTION = "save"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "pose_keypoint": field("POSE_KEYPOINT", "Keypoints from GameAnim Render Pose or any OpenPose node."),
                "filename_prefix": field(
                    "STRING",
                    "File name prefix inside the output folder (sub-folders allowed).",
                    default="gameanim/pose",
                ),
            }
        }

    def save(self, pose_keypoint: list, filename_prefix: str) -> dict[str, Any]:
        from ...core.atomic import write_text_atomic

        text = keypoints_json(pose_keypoint)
        path = host.output_path(next_free_name(filename_prefix) + ".json")
        write_text_atomic(path, text, overwrite=False)
        return {"ui": {"openpose_json": [text], **output_files([path]), "text": [path.name]}, "result": ()}


class FitPoseToWan:
    DESCRIPTION = (
        "Makes a rig motion and its camera meet Wan 2.1 VACE's control-video rules, so the pose / depth renders "
        "drive WanVaceToVideo without padding or cropping: 16 fps, 4n+1 frames, width and height multiples of 16. "
        "Wire width, height and length into WanVaceToVideo and fps into the sprite timing and savers."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = (POSE3D, POSE_CAMERA, "INT", "INT", "INT", "FLOAT")
    RETURN_NAMES = ("pose3d", "camera", "width", "height", "length", "fps")
    OUTPUT_TOOLTIPS = (
        "The motion resampled to 4n+1 frames at fps.",
        "The camera with its size snapped to multiples of 16.",
        "Control-video width (multiple of 16), for WanVaceToVideo.",
        "Control-video height (multiple of 16), for WanVaceToVideo.",
        "Frame count (4n+1), for WanVaceToVideo's length.",
        "Frame rate of the resampled motion, for the sprite timing and savers.",
    )
    FUNCTION = "fit"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "pose3d": POSE3D_INPUT,
                "camera": field(
                    POSE_CAMERA, "Camera from GameAnim Pose Camera; its size is snapped to multiples of 16."
                ),
                "fps": field(
                    "FLOAT",
                    "Frame rate of the control video; Wan 2.1 was trained on 16 fps.",
                    default=WAN_FPS,
                    min=1.0,
                    max=60.0,
                    step=1.0,
                ),
                "max_frames": field(
                    "INT",
                    "Longest clip (4n+1); 81 = 5 s at 16 fps, what Wan was trained on. Fewer frames use less VRAM.",
                    default=WAN_MAX_FRAMES,
                    min=5,
                    max=257,
                    step=4,
                ),
                "length_rule": field(
                    list(LENGTH_RULES),
                    "fit_whole_motion: the whole motion in the nearest 4n+1 frames (a loop stays a loop, speed changes "
                    "by under 3 % on long clips); keep_speed: exact fps, the tail that does not fill 4 frames is dropped.",
                ),
            }
        }

    def fit(
        self, pose3d: Pose3D, camera: CameraSettings, fps: float, max_frames: int, length_rule: str
    ) -> tuple[Pose3D, CameraSettings, int, int, int, float]:
        pose = resample_pose(pose3d, fps, max_frames, length_rule)
        cam = fit_camera(camera)
        return (pose, cam, cam.width, cam.height, pose.frame_count, float(fps))


class WanReferenceImage:
    DESCRIPTION = (
        "Puts a character picture on a white canvas of the control video's size, whole and centred, as Wan VACE "
        "expects a subject reference (WanVaceToVideo would otherwise centre-crop it and may cut off head or feet). "
        "Transparent pixels become white."
    )
    CATEGORY = category("Pose")
    RETURN_TYPES = ("IMAGE",)
    RETURN_NAMES = ("reference_image",)
    OUTPUT_TOOLTIPS = ("One frame, width x height, for WanVaceToVideo's reference_image.",)
    FUNCTION = "place"

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "image": field("IMAGE", "The character (first frame is used), ideally on a plain background."),
                "width": field(
                    "INT", "Canvas width: the control video's width.", default=512, min=16, max=4096, step=16
                ),
                "height": field(
                    "INT", "Canvas height: the control video's height.", default=512, min=16, max=4096, step=16
                ),
                "margin": field(
                    "FLOAT",
                    "White border around the character, as a fraction of the canvas.",
                    default=0.05,
                    min=0.0,
                    max=0.4,
                    step=0.01,
                ),
            },
            "optional": {
                "mask": field(
                    "MASK", "The character's matte, e.g. from Remove Background or Load Image; outside becomes white."
                ),
                "mask_is": mask_is_input(),
            },
        }

    def place(
        self, image: Any, width: int, height: int, margin: float, mask: Any = None, mask_is: str = "alpha"
    ) -> tuple[Any]:
        mask = None if mask is None else as_alpha(mask, mask_is)
        return (reference_on_canvas(image, width, height, mask, margin),)


NODE_CLASS_MAPPINGS = {
    "GameAnimLoadMotion": LoadMotion,
    "GameAnimPoseCamera": PoseCamera,
    "GameAnimDirectionSet": DirectionSet,
    "GameAnimRenderPose": RenderPose,
    "GameAnimRenderPoseDepthNormal": RenderPoseDepthNormal,
    "GameAnimRenderRigMesh": RenderRigMesh,
    "GameAnimSavePoseKeypoints": SavePoseKeypoints,
    "GameAnimPoseFitWan": FitPoseToWan,
    "GameAnimWanReferenceImage": WanReferenceImage,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimLoadMotion": "GameAnim Load Motion (BVH / JSON / Blender rig)",
    "GameAnimPoseCamera": "GameAnim Pose Camera",
    "GameAnimDirectionSet": "GameAnim Direction Set (4 / 8 directions)",
    "GameAnimRenderPose": "GameAnim Render Pose (OpenPose)",
    "GameAnimRenderPoseDepthNormal": "GameAnim Render Pose Depth / Normal",
    "GameAnimRenderRigMesh": "GameAnim Render Rig Mesh Depth / Normal (Blender)",
    "GameAnimSavePoseKeypoints": "GameAnim Save Pose Keypoints (JSON)",
    "GameAnimPoseFitWan": "GameAnim Fit Motion to Wan (16 fps, 4n+1, x16)",
    "GameAnimWanReferenceImage": "GameAnim Wan Reference Image (white canvas)",
}
