"""ComfyUI nodes for animation timing: Key Poses, Timing Chart (retime) and Smear Frames.

Thin adapters over :mod:`.keyposes`, :mod:`.retime` and :mod:`.smear`.  The timing chart travels
between nodes as ``GAMEANIM_TIMING`` (a dict: ``durations`` per output frame in source-frame units,
``keys`` = output indices of the key frames), which the sprite sheet and animation savers turn into
per-frame durations.
"""

from __future__ import annotations

import json
from typing import Any

from ...core import host
from ...core.frames import as_alpha, to_tensor
from ...core.preview import animation_preview
from ..common import IMAGE_TIP, category, field, mask_is_input
from .retime import INBETWEEN_MODES
from .smear import STYLES
from .spacing import SPACINGS

TIMING_TYPE = "GAMEANIM_TIMING"
MASK_TIP = "The sprite's alpha per frame (MASK [T,H,W]); gives exact contacts and clean in-betweens."
LOOP_TIP = (
    "The clip is a cycle (walk, run, idle): its first frame follows its last. The seam is timed like any other "
    "moment, the first and last frame are not forced to be keys, and the result loops without a doubled frame."
)
POSE_TIP = "POSE_KEYPOINT with one pose per frame (e.g. from GameAnim Render Pose): joints give exact motion and foot contacts."


def _measure_progress(image: Any, loop: bool) -> Any:
    """Progress for measuring a clip: one step per frame pair (a loop also measures its seam)."""
    return host.progress(max(1, len(image) - (0 if loop else 1)))


class GameAnimKeyPoses:
    """Find the key poses (extremes, holds, contacts, optional breakdowns) of a clip."""

    DESCRIPTION = (
        "Finds the frames an animator would draw first: holds, motion minima (a swing's extremes), sharp direction "
        "changes and contacts (a bounce, a foot plant), from optical flow, the sprite's alpha and, if connected, the "
        "rig's joints. Steady motion gives no keys. Outputs the key frame numbers (editable text for the Timing Chart "
        "node), the key frames themselves and a ranked report with the reason for each key."
    )
    CATEGORY = category("Timing")
    FUNCTION = "run"
    RETURN_TYPES = ("STRING", "IMAGE", "STRING")
    RETURN_NAMES = ("keys", "key_frames", "report")
    OUTPUT_TOOLTIPS = (
        "Key frame numbers in order, e.g. '0, 12, 24, 35' (first and last frame included).",
        "The key frames as an IMAGE batch.",
        "JSON: keys ranked strongest first, each with frame, score and reason.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "max_keys": field(
                    "INT", "Keep at most this many keys, strongest first (0 = all).", default=0, min=0, max=1024
                ),
                "breakdowns": field("BOOLEAN", "Also mark the fastest frame between each two keys.", default=False),
                "min_motion": field(
                    "FLOAT",
                    "Smallest speed change in px/frame that counts (raise it for noisy clips).",
                    default=0.5,
                    min=0.05,
                    max=50.0,
                    step=0.05,
                ),
                "turn_degrees": field(
                    "FLOAT",
                    "Smallest change of direction between two frame steps that makes a key.",
                    default=60.0,
                    min=10.0,
                    max=180.0,
                    step=1.0,
                ),
            },
            "optional": {
                "mask": field("MASK", MASK_TIP),
                "pose_keypoint": field("POSE_KEYPOINT", POSE_TIP),
                "loop": field("BOOLEAN", LOOP_TIP, default=False),
                "mask_is": mask_is_input(),
            },
        }

    def run(
        self,
        image: Any,
        max_keys: int,
        breakdowns: bool,
        min_motion: float,
        turn_degrees: float,
        mask: Any | None = None,
        pose_keypoint: Any | None = None,
        loop: bool = False,
        mask_is: str = "alpha",
    ) -> dict:
        from .clip_motion import measure
        from .keyposes import find_key_poses

        mask = None if mask is None else as_alpha(mask, mask_is)
        motion = measure(image, mask, pose_keypoint, _measure_progress(image, loop), loop)
        ranked = find_key_poses(motion, max_keys or None, breakdowns, min_motion, turn_degrees)
        frames = sorted(k.frame for k in ranked)
        report = [{"frame": k.frame, "score": round(min(k.score, 99.0), 3), "reason": k.reason} for k in ranked]
        keys = ", ".join(str(f) for f in frames)
        chosen = image[frames]
        ui = {"text": [keys]}
        ui.update(animation_preview(chosen[..., :3], 2.0, None if mask is None else mask[frames], caption="keys"))
        return {"ui": ui, "result": (keys, chosen, json.dumps(report))}


class GameAnimTimingChart:
    """Rebuild a clip from its keys: holds, ones/twos/threes, spacing, variable frame durations."""

    DESCRIPTION = (
        "Retimes a clip like a 2D animator's timing chart: each key is held 'hold' frames, the in-betweens run on "
        "ones, twos or threes, and their spacing between keys follows even, ease-in, ease-out or ease-in-out (plus "
        "optional anticipation and overshoot). In-betweens are source frames where one sits at the wanted place, "
        "else warped along the optical flow. Key frames pass through untouched. Outputs the drawings, their "
        "durations (connect 'timing' to Save Sprite Sheet / Save Sprite Animation) and a picture of the chart."
    )
    CATEGORY = category("Timing")
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK", TIMING_TYPE, "STRING", "IMAGE")
    RETURN_NAMES = ("image", "mask", "timing", "durations", "chart")
    OUTPUT_TOOLTIPS = (
        "The drawings, one per exposure (keys unchanged).",
        "Their alpha (1 when the clip has none).",
        "Per-frame durations and key positions for the sprite savers.",
        "JSON list: each drawing's duration in source frames (at the clip's fps).",
        "The timing chart as an image.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "keys": field(
                    "STRING",
                    "Key frame numbers, e.g. '0, 12, 24' (connect Key Poses or type them); empty = find them. "
                    "The first and last frame are always keys.",
                    default="",
                ),
                "on": field("INT", "In-betweens on ones (1), twos (2) or threes (3).", default=2, min=1, max=8),
                "hold": field("INT", "Frames each key stays on screen.", default=2, min=1, max=48),
                "spacing": field(
                    list(SPACINGS),
                    "Spacing of the in-betweens between two keys: ease-in = slow out of the first key, ease-out = "
                    "slow into the second, ease-in-out = both.",
                    default="ease-in-out",
                ),
                "anticipation": field(
                    "FLOAT",
                    "Move against the motion before leaving a key (fraction of the key distance).",
                    default=0.0,
                    min=0.0,
                    max=1.0,
                    step=0.01,
                ),
                "overshoot": field(
                    "FLOAT",
                    "Go past the next key before settling (fraction of the key distance).",
                    default=0.0,
                    min=0.0,
                    max=1.0,
                    step=0.01,
                ),
                "inbetween": field(
                    list(INBETWEEN_MODES),
                    "Where no source frame sits at the wanted place: flow = warp the neighbours along the optical "
                    "flow; nearest = the closest source frame.",
                ),
            },
            "optional": {
                "mask": field("MASK", MASK_TIP),
                "pose_keypoint": field("POSE_KEYPOINT", POSE_TIP),
                "loop": field("BOOLEAN", LOOP_TIP, default=False),
                "mask_is": mask_is_input(),
            },
        }

    def run(
        self,
        image: Any,
        keys: str,
        on: int,
        hold: int,
        spacing: str,
        anticipation: float,
        overshoot: float,
        inbetween: str,
        mask: Any | None = None,
        pose_keypoint: Any | None = None,
        loop: bool = False,
        mask_is: str = "alpha",
    ) -> dict:
        import numpy as np

        from .chart import draw_chart
        from .clip_motion import measure
        from .keyposes import find_key_poses
        from .retime import retime
        from .spacing import parse_keys

        mask = None if mask is None else as_alpha(mask, mask_is)
        motion = measure(image, mask, pose_keypoint, _measure_progress(image, loop), loop)
        frames = parse_keys(keys) if keys.strip() else [k.frame for k in find_key_poses(motion)]
        result = retime(
            image,
            mask,
            motion,
            frames,
            on,
            hold,
            spacing,
            anticipation,
            overshoot,
            inbetween,
            host.progress(len(image)),
        )
        alpha = result.alpha if result.alpha is not None else np.ones(result.rgb.shape[:3], np.float32)
        title = f"on {on}s, hold {hold}, {spacing}" + (f", anticipation {anticipation}" if anticipation else "")
        title += (f", overshoot {overshoot}" if overshoot else "") + (", loop" if loop else "")
        chart = draw_chart(result.chart, title, cycle=len(image) if loop else None)
        ui: dict[str, Any] = {"text": [json.dumps(result.durations)]}
        ui.update(animation_preview(chart[None], 1.0, caption="timing chart"))
        outputs = (
            to_tensor(result.rgb),
            to_tensor(alpha),
            result.timing_info(),
            json.dumps(result.durations),
            to_tensor(chart[None]),
        )
        return {"ui": ui, "result": outputs}


class GameAnimSmearFrames:
    """Motion smears or multiples on the fastest in-betweens."""

    DESCRIPTION = (
        "Draws smear frames where the motion is fastest: every frame that moved more than 'threshold' px from the "
        "previous one (never a key when 'timing' is connected) gets its sprite stretched back along its own motion "
        "('smear') or repeated as fainter copies ('multiples'), inside the area swept between the two poses. Other "
        "frames pass through unchanged."
    )
    CATEGORY = category("Timing")
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK", "STRING")
    RETURN_NAMES = ("image", "mask", "info")
    OUTPUT_TOOLTIPS = ("Frames with smears.", "Alpha with smears.", "JSON: smeared frames and every frame's motion.")

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "mask": field("MASK", MASK_TIP),
                "threshold": field(
                    "FLOAT",
                    "Smear frames that moved more than this many px since the previous frame.",
                    default=8.0,
                    min=0.0,
                    max=1024.0,
                    step=0.5,
                ),
                "strength": field(
                    "FLOAT",
                    "How far back toward the previous pose the smear reaches (1 = all the way).",
                    default=0.7,
                    min=0.0,
                    max=1.0,
                    step=0.05,
                ),
                "style": field(list(STYLES), "smear: a stretched streak; multiples: a few fainter copies."),
                "copies": field("INT", "multiples: number of copies behind the sprite.", default=3, min=1, max=16),
            },
            "optional": {
                "timing": field(TIMING_TYPE, "From the Timing Chart node: its key frames are never smeared."),
                "mask_is": mask_is_input(),
            },
        }

    def run(
        self,
        image: Any,
        mask: Any,
        threshold: float,
        strength: float,
        style: str,
        copies: int,
        timing: dict | None = None,
        mask_is: str = "alpha",
    ) -> tuple:
        from .smear import smear_frames

        mask = as_alpha(mask, mask_is)
        keys = list(timing.get("keys", [])) if timing else None
        result = smear_frames(
            image, mask, threshold, strength, style, copies, keys, host.progress(max(1, len(image) - 1))
        )
        info = {"smeared": result.smeared, "displacement": [round(d, 2) for d in result.displacement]}
        return to_tensor(result.rgb), to_tensor(result.alpha), json.dumps(info)


NODE_CLASS_MAPPINGS = {
    "GameAnimKeyPoses": GameAnimKeyPoses,
    "GameAnimTimingChart": GameAnimTimingChart,
    "GameAnimSmearFrames": GameAnimSmearFrames,
}

NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimKeyPoses": "Key Poses (GameAnim)",
    "GameAnimTimingChart": "Timing Chart: Holds, Twos, Spacing (GameAnim)",
    "GameAnimSmearFrames": "Smear Frames (GameAnim)",
}
