"""ComfyUI adapter for training clips rendered from rigged characters (thin layer over :mod:`.training_clips`)."""

from __future__ import annotations

from typing import Any

from ...core import host
from ...core.frames import images_tensor
from ...core.paths import confined
from ..common import category, field
from ..vc2.prompts import BACKGROUNDS
from .blender_client import RIG_SUFFIXES
from .comfy_nodes import _motion_choices, _resolve_motion
from .training_clips import (
    ENGINES,
    FACINGS,
    KEY_MODES,
    VIEWS,
    ClipSettings,
    parse_action_list,
    parse_keys,
    parse_views,
    read_clip,
    render_training_clips,
)

CAPTION_TEMPLATE = "{caption}"


class RenderTrainingClips:
    DESCRIPTION = (
        "Renders a rigged character (FBX / glTF / .blend in ComfyUI's input folder) doing each of its actions into "
        "an action-clip training set, as godmodeanimation made its data: a fixed frame count per clip, the camera "
        "following the character with one framing for the whole action, lights, optional toon shader, a solid key "
        "per clip, and the true alpha saved beside the frames. Captions are the VC2 sprite prompt ('Game character "
        "running animation of …, side view, solid color background'). Writes input/<dataset_folder>/train/<clip>/ — "
        "the layout Training Dataset: Action Clips reads (link 'folder' and 'caption_template' to it). Needs Blender "
        "(GAMEANIM_BLENDER or blender_executable)."
    )
    CATEGORY = category("Training", "Dataset")
    RETURN_TYPES = ("STRING", "STRING", "IMAGE", "MASK", "INT")
    RETURN_NAMES = ("folder", "caption_template", "first_clip", "first_clip_alpha", "clips")
    OUTPUT_TOOLTIPS = (
        "The dataset folder inside the input folder, for Training Dataset: Action Clips' 'folder'.",
        "'{caption}': the captions are complete prompts, for Action Clips' 'caption_template'.",
        "The first clip's keyed frames.",
        "The first clip's true alpha (1 = character).",
        "How many clips were written.",
    )
    FUNCTION = "render"
    OUTPUT_NODE = True

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        rigs = [c for c in _motion_choices() if c.lower().endswith(RIG_SUFFIXES)]
        return {
            "required": {
                "character": field(rigs, "The rigged character (.fbx, .glb/.gltf, .blend) in ComfyUI's input folder."),
                "character_words": field(
                    "STRING", "How the captions name the character, e.g. 'knight in red tunic'.", default="hero"
                ),
                "actions": field(
                    "STRING",
                    "One per line or comma: an action in the file, or an action .fbx/.bvh in the input folder (same "
                    "bone names), optionally '= caption words' (e.g. 'Armature|Run = running'). Empty: every action "
                    "of the file, its name as the words.",
                    default="",
                    multiline=True,
                ),
                "views": field(
                    "STRING",
                    "Comma-separated views around the character's facing: " + ", ".join(VIEWS) + ".",
                    default="side_right",
                ),
                "keys": field(
                    "STRING", "Key colours, e.g. 'grey, white, green' or '#rrggbb'.", default="grey, white, green"
                ),
                "key_mode": field(
                    list(KEY_MODES), "cycle: each clip gets the next key of the list; all: every clip on every key."
                ),
                "frames": field(
                    "INT", "Frames per clip, sampled evenly over the action (VC2: 16).", default=16, min=2, max=64
                ),
                "width": field("INT", "Clip width in pixels.", default=512, min=64, max=2048, step=8),
                "height": field("INT", "Clip height in pixels.", default=320, min=64, max=2048, step=8),
                "engine": field(
                    list(ENGINES),
                    "workbench: seconds per clip; eevee: shaded, slow without a GPU; cycles: path traced, slowest.",
                ),
                "toon": field(
                    "BOOLEAN", "godmodeanimation's two-tone toon shader (renders with Eevee).", default=False
                ),
                "background": field(list(BACKGROUNDS), "Background words of the caption."),
                "dataset_folder": field(
                    "STRING", "Dataset folder inside ComfyUI's input folder (created).", default="gameanim_clips/hero"
                ),
            },
            "optional": {
                "facing": field(list(FACINGS), "The axis the character faces in the file (Blender: -Y)."),
                "follow_root": field(
                    "BOOLEAN", "Camera follows the root's ground travel, so a run stays in place.", default=True
                ),
                "blender_executable": field(
                    "STRING",
                    "Blender executable or bpy-Python; empty = the GAMEANIM_BLENDER environment variable.",
                    default="",
                ),
            },
        }

    def render(
        self,
        character: str,
        character_words: str,
        actions: str,
        views: str,
        keys: str,
        key_mode: str,
        frames: int,
        width: int,
        height: int,
        engine: str,
        toon: bool,
        background: str,
        dataset_folder: str,
        facing: str = "-Y",
        follow_root: bool = True,
        blender_executable: str = "",
    ) -> tuple[Any, ...]:
        path = _resolve_motion(character)
        root = confined(host.input_dir(), dataset_folder)
        settings = ClipSettings(
            frames=frames,
            width=width,
            height=height,
            engine=engine,
            toon=toon,
            facing=facing,
            follow_root=follow_root,
            background=background,
        )
        view_list = parse_views(views)
        action_list = parse_action_list(actions, [host.input_dir(), path.parent])
        clips = render_training_clips(
            path,
            root,
            character_words,
            action_list,
            view_list,
            parse_keys(keys),
            key_mode,
            settings,
            blender_executable,
            host.progress(max(1, len(action_list)) * len(view_list) * frames),
        )
        rgb, alpha, _ = read_clip(clips[0].folder)
        folder = root.relative_to(host.input_dir().resolve()).as_posix()
        return (folder, CAPTION_TEMPLATE, images_tensor(rgb), images_tensor(alpha), len(clips))


NODE_CLASS_MAPPINGS = {"GameAnimRenderTrainingClips": RenderTrainingClips}
NODE_DISPLAY_NAME_MAPPINGS = {"GameAnimRenderTrainingClips": "GameAnim Render Training Clips (Blender rig → dataset)"}
