"""ComfyUI nodes of the motion-scope estimator (thin adapters over the library modules)."""

from __future__ import annotations

from typing import Any

import torch

from ...core import host
from ..common import category, field
from .evaluate import evaluate_scopes, parse_targets, split_clips
from .flow import (
    DEFAULT_METHOD,
    METHODS,
    FlowSettings,
    cached_raft,
    estimate_flow,
    find_raft_weights,
    flow_to_hsv_image,
)
from .levels import DECODER_TABLES, DEFAULT_EDGES, DEFAULT_TABLE, decoder_value, level_of, parse_edges
from .scope import DEFAULT_MIN_TEXTURE, DEFAULT_QUANTILE, DEFAULT_R, plot_per_frame, scope_from_flow
from .synthetic import BACKGROUNDS, moving_sprite_clip

CATEGORY = category("Motion")
EDGES_TEXT = ", ".join(f"{e:g}" for e in DEFAULT_EDGES)


def _raft(method: str) -> Any:
    if not method.startswith("raft"):
        return None
    return cached_raft(find_raft_weights(method, host.folder_paths_for("optical_flow")), method)


def _method_field() -> tuple[Any, dict[str, Any]]:
    return field(
        list(METHODS),
        "Flow estimator. dis_medium: accurate, no weights, ~90 pairs/s per CPU core at 320x512 when the "
        "background is still (~45 when the whole frame moves). dis_fast/dis_ultrafast: faster, less exact. "
        "farneback: classic OpenCV. raft_small/raft_large: torchvision RAFT, needs its .pth in "
        "models/optical_flow/ (never downloaded), slow without a GPU.",
        default=DEFAULT_METHOD,
    )


def _r_field() -> tuple[Any, dict[str, Any]]:
    return field(
        "FLOAT",
        "Foreground cut: pixels moving faster than r x the clip's 99th-percentile speed count as the moving "
        "character. AnimeGamer uses 0.2.",
        default=DEFAULT_R,
        min=0.0,
        max=0.99,
        step=0.01,
    )


def _edges_field() -> tuple[Any, dict[str, Any]]:
    return field(
        "STRING",
        "Four increasing level edges in px/frame at 480x720. The default puts each of AnimeGamer's decoder values "
        "(both tables) in its own level.",
        default=EDGES_TEXT,
    )


class OpticalFlow:
    DESCRIPTION = (
        "Optical flow between consecutive frames of a clip. Outputs OPTICAL_FLOW [N-1,H,W,2] in pixels "
        "(as comfyui_controlnet_aux) and a colour view: hue = direction, brightness = speed. The OpenCV methods "
        "compute each pair's flow only in the box where its frames differ (plus a margin): zero where the picture "
        "is still."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("OPTICAL_FLOW", "IMAGE")
    RETURN_NAMES = ("flow", "flow_image")
    OUTPUT_TOOLTIPS = (
        "Flow of each frame pair i -> i+1, [N-1,H,W,2] float pixels (x right, y down).",
        "Flow as HSV colours, one image per frame pair, brightness scaled by the clip's 99th-percentile speed.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "images": field("IMAGE", "The clip, one image per frame (at least 2, all the same size)."),
                "method": _method_field(),
            },
            "optional": {
                "batch_size": field(
                    "INT", "Frame pairs per RAFT batch (and per progress update).", default=8, min=1, max=64
                ),
                "raft_updates": field(
                    "INT", "RAFT refinement iterations (12 as trained; fewer is faster).", default=12, min=1, max=32
                ),
            },
        }

    def run(self, images: torch.Tensor, method: str, batch_size: int = 8, raft_updates: int = 12) -> tuple:
        raft = _raft(method)
        device = host.torch_device() if raft is not None else "cpu"
        settings = FlowSettings(batch_size=batch_size, raft_updates=raft_updates, device=device)
        flow = estimate_flow(images, method, raft, settings, host.progress(max(int(images.shape[0]) - 1, 1)))
        if raft is not None:
            raft.to(host.offload_device())
        return (flow, flow_to_hsv_image(flow))


class MotionScope:
    DESCRIPTION = (
        "AnimeGamer-style motion scope of a clip: mean speed of the moving pixels per frame pair, in px/frame of a "
        "480x720 frame (so resolution does not change it), its peak, its level 1-5 and a per-frame plot."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("FLOAT", "FLOAT", "INT", "IMAGE")
    RETURN_NAMES = ("scope", "peak", "level", "plot")
    OUTPUT_TOOLTIPS = (
        "Mean over frame pairs of the foreground's mean flow magnitude (px/frame at 480x720).",
        "Largest per-frame value.",
        "Motion level 1-5 of the scope with the given edges.",
        "Per-frame curve with the mean (dashed) and the level edges.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "flow": field("OPTICAL_FLOW", "Flow from GameAnim Optical Flow or comfyui_controlnet_aux."),
                "r": _r_field(),
                "edges": _edges_field(),
            },
            "optional": {
                "images": field(
                    "IMAGE",
                    "The frames the flow came from; enables the texture test that ignores flat areas, where flow "
                    "is guessed, not measured (strongly recommended on plain backgrounds).",
                ),
                "mask": field("MASK", "Only measure where the mask is > 0.5, e.g. the character matte."),
                "quantile": field(
                    "FLOAT",
                    "Which speed percentile of the clip r is relative to (0.99: one stray pixel cannot move the cut). "
                    "Raise to 0.999-1.0 for a character under ~2% of the frame on a busy background, or give a mask.",
                    default=DEFAULT_QUANTILE,
                    min=0.5,
                    max=1.0,
                    step=0.001,
                ),
                "min_texture": field(
                    "FLOAT",
                    "Texture test threshold (structure-tensor min eigenvalue on 0..1 grey); 0 disables it.",
                    default=DEFAULT_MIN_TEXTURE,
                    min=0.0,
                    max=0.01,
                    step=0.00001,
                ),
            },
        }

    def run(
        self,
        flow: torch.Tensor,
        r: float,
        edges: str,
        images: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        quantile: float = DEFAULT_QUANTILE,
        min_texture: float = DEFAULT_MIN_TEXTURE,
    ) -> tuple:
        bounds = parse_edges(edges)
        result = scope_from_flow(flow, frames=images, r=r, mask=mask, quantile=quantile, min_texture=min_texture)
        level = level_of(result.scope, bounds)
        return (result.scope, result.peak, level, plot_per_frame(result, bounds, level))


class MotionLevelToDecoder:
    DESCRIPTION = (
        "AnimeGamer's decoder 'flow' scalar for a motion level. inference_decoder: 0.5/2.5/10/15/40 "
        "(inference_Decoder.py); app: 0.5/1/5/20/40 (app.py)."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("FLOAT",)
    RETURN_NAMES = ("flow_scalar",)
    OUTPUT_TOOLTIPS = ("The scalar the AnimeGamer decoder is conditioned on for this level.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "level": field("INT", "Motion level 1 (still) to 5 (intense).", default=3, min=1, max=5),
                "table": field(
                    list(DECODER_TABLES),
                    "Which of AnimeGamer's two tables to use (they disagree for levels 2-4).",
                    default=DEFAULT_TABLE,
                ),
            }
        }

    def run(self, level: int, table: str) -> tuple:
        return (decoder_value(level, table),)


class MotionEvaluate:
    DESCRIPTION = (
        "ACC-F / MAE-F (AnimeGamer's motion metric): measure each clip's level and compare with its target level. "
        "Clips are given as one IMAGE batch of equally long clips laid end to end."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("FLOAT", "FLOAT", "STRING")
    RETURN_NAMES = ("acc_f", "mae_f", "report")
    OUTPUT_TOOLTIPS = (
        "Fraction of clips whose measured level equals the target (0..1).",
        "Mean absolute difference between measured and target levels.",
        "One line per clip: scope, measured level, target level.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "images": field("IMAGE", "All clips, end to end, each frames_per_clip frames long."),
                "frames_per_clip": field("INT", "Frames in each clip.", default=16, min=2, max=4096),
                "target_levels": field(
                    "STRING", "Target level (1-5) of each clip, in order, e.g. '1, 3, 5'.", default="3"
                ),
                "method": _method_field(),
                "r": _r_field(),
                "edges": _edges_field(),
            }
        }

    def run(
        self, images: torch.Tensor, frames_per_clip: int, target_levels: str, method: str, r: float, edges: str
    ) -> tuple:
        from .measure import measure_clip

        bounds = parse_edges(edges)
        clips = split_clips(images, frames_per_clip)
        raft = _raft(method)
        settings = FlowSettings(device=host.torch_device() if raft is not None else "cpu")

        def measure(clip: torch.Tensor) -> float:
            return measure_clip(clip, method, r, raft_model=raft, settings=settings).result.scope

        result = evaluate_scopes(clips, parse_targets(target_levels), measure, bounds, host.progress(len(clips)))
        lines = [f"ACC-F {result.acc_f:.3f}  MAE-F {result.mae_f:.3f}  ({len(clips)} clips)"]
        for i, (scope, got, want) in enumerate(zip(result.scopes, result.levels, result.targets, strict=True), start=1):
            lines.append(f"clip {i}: scope {scope:.2f} level {got} target {want}")
        return (result.acc_f, result.mae_f, "\n".join(lines))


class SyntheticMotionClip:
    DESCRIPTION = (
        "A test clip with known motion: a textured sprite moving at a set speed, plus its mask. Use it to check "
        "which level a speed lands in, or to try the motion nodes without any input files."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK")
    RETURN_NAMES = ("images", "mask")
    OUTPUT_TOOLTIPS = ("The clip [T,H,W,3].", "The sprite's mask per frame [T,H,W].")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "frames": field("INT", "Number of frames.", default=16, min=2, max=256),
                "width": field("INT", "Frame width in px.", default=512, min=16, max=2048, step=8),
                "height": field("INT", "Frame height in px.", default=320, min=16, max=2048, step=8),
                "speed": field(
                    "FLOAT",
                    "Sprite speed in px/frame at 480x720 (the motion-scope unit), converted to this frame size.",
                    default=6.0,
                    min=0.0,
                    max=64.0,
                    step=0.1,
                ),
                "angle": field(
                    "FLOAT", "Direction in degrees (0 = right, 90 = down).", default=0.0, min=-360.0, max=360.0
                ),
                "background": field(list(BACKGROUNDS), "Plain colour or a random texture.", default="plain"),
                "background_speed": field(
                    "FLOAT",
                    "Horizontal scroll of the background in px/frame at 480x720 (camera motion to mask out).",
                    default=0.0,
                    min=-64.0,
                    max=64.0,
                    step=0.1,
                ),
                "seed": field(
                    "INT", "Seed of the random textures.", default=0, min=0, max=2**31 - 1, control_after_generate=True
                ),
            }
        }

    def run(
        self,
        frames: int,
        width: int,
        height: int,
        speed: float,
        angle: float,
        background: str,
        background_speed: float,
        seed: int,
    ) -> tuple:
        from .scope import reference_scale

        to_frame = 1.0 / reference_scale(height, width)
        clip, mask = moving_sprite_clip(
            frames, height, width, speed * to_frame, angle, background, background_speed * to_frame, seed
        )
        return (torch.from_numpy(clip), torch.from_numpy(mask))


NODE_CLASS_MAPPINGS = {
    "GameAnimOpticalFlow": OpticalFlow,
    "GameAnimMotionScope": MotionScope,
    "GameAnimMotionLevelToDecoder": MotionLevelToDecoder,
    "GameAnimMotionEvaluate": MotionEvaluate,
    "GameAnimSyntheticMotionClip": SyntheticMotionClip,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimOpticalFlow": "Optical Flow (GameAnim)",
    "GameAnimMotionScope": "Motion Scope (GameAnim)",
    "GameAnimMotionLevelToDecoder": "Motion Level to Decoder Scalar (GameAnim)",
    "GameAnimMotionEvaluate": "Motion ACC-F / MAE-F (GameAnim)",
    "GameAnimSyntheticMotionClip": "Synthetic Motion Clip (GameAnim)",
}
