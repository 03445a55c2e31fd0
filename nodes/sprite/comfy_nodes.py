"""ComfyUI nodes of the sprite toolkit (thin adapters over :mod:`.operations` and friends).

The library modules (OpenCV, scipy, Pillow) are imported inside the node functions, so importing
the pack stays fast and a missing library only breaks the node that needs it, with its own error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ...core import host
from ...core.errors import InputError
from ...core.paths import SAMPLE_DATA, confined
from ...core.preview import animation_preview
from ..common import (
    IMAGE_TIP,
    MASK_TIP,
    category,
    field,
    mask_inputs,
    mask_is_input,
    next_free_name,
    output_entry,
    output_files,
)
from .options import ANCHORS, EXPORT_FORMATS, GODOT_CHOICES, LAYOUTS, PALETTE_METHODS, PALETTE_SCOPES, TIMING_OPS
from .options import STABILISE_MODES as MODES

NOT_SOLID_CHOICES = ("stop", "keep opaque")

PREFIX_TIP = (
    "File name prefix under ComfyUI's output folder; sub-folders allowed (sprites/knight), no '..' or absolute paths."
)


TIMING_TIP = (
    "Per-frame durations from the Timing Chart node (in source frames; each lasts duration x 1000/fps ms). "
    "Without it every frame lasts 1000/fps ms."
)


def _durations_ms(timing: dict | None, fps: float, frames: int) -> list[float] | None:
    """Milliseconds per frame from a GAMEANIM_TIMING value (durations in source frames), or None."""
    if not timing:
        return None
    durations = list(timing.get("durations", []))
    if len(durations) != frames:
        raise InputError(
            f"The timing holds {len(durations)} durations but {frames} frames arrived; connect the image and the "
            "timing of the same Timing Chart node (frame-count changes in between break the pairing)."
        )
    return [d * 1000.0 / fps for d in durations]


class GameAnimSpriteLoadFrames:
    """Load a folder of frames (PNG/JPG/WebP, sorted by name) as IMAGE + MASK."""

    DESCRIPTION = (
        "Loads every image of a folder (sorted by name) as one IMAGE batch plus its alpha as MASK. "
        "'input' reads a sub-folder of ComfyUI's input folder; 'pack_sample' reads the sample frames "
        "shipped with GameAnim (its sample_data folder, e.g. sprite_frames)."
    )
    CATEGORY = category("Sprite", "IO")
    FUNCTION = "load"
    RETURN_TYPES = ("IMAGE", "MASK", "INT")
    RETURN_NAMES = ("image", "mask", "frame_count")
    OUTPUT_TOOLTIPS = ("Frames [T,H,W,3].", "Alpha of the frames (1 when the files have none).", "Number of frames.")

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "source": field(
                    ["input", "pack_sample"],
                    "Where the folder lives: ComfyUI's input folder or GameAnim's sample data.",
                ),
                "folder": field(
                    "STRING", "Folder name relative to the source (no '..', no absolute path).", default="sprite_frames"
                ),
                "max_frames": field("INT", "Load at most this many frames (0 = all).", default=0, min=0, max=4096),
            }
        }

    def load(self, source: str, folder: str, max_frames: int) -> tuple:
        from ...core.frames import to_tensor
        from .loader import load_frame_folder

        base = host.input_dir() if source == "input" else SAMPLE_DATA
        rgb, alpha = load_frame_folder(base, folder, max_frames, host.progress(max(1, max_frames)))
        return to_tensor(rgb), to_tensor(alpha), len(rgb)


class GameAnimSpriteRemoveBackground:
    """Solid-colour background to alpha, or an external mask with despill."""

    DESCRIPTION = (
        "Turns a sprite on a (nearly) solid background into RGB + alpha. The background of every frame is "
        "modelled as a smooth surface (gradients, vignettes), the tolerance is measured from the clip's own "
        "noise, and background is what matches it AND connects to the frame border (plus enclosed gaps between "
        "arm and body or the legs), so sprite colours close to a white or grey key survive. Anti-aliased "
        "edges are unmixed and despilled. A background that is not solid stops with a message saying what "
        "matched and what to do. Connect a MASK to use it as alpha instead (only despill runs)."
    )
    CATEGORY = category("Sprite", "Matte")
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK", "IMAGE")
    RETURN_NAMES = ("image", "mask", "rgba")
    OUTPUT_TOOLTIPS = (
        "Despilled RGB frames.",
        "Alpha (MASK).",
        "RGBA frames (4-channel IMAGE) for savers that keep alpha.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "low": field(
                    "FLOAT",
                    "Smallest background tolerance in ΔE (CIE Lab). The tolerance is measured from the clip's "
                    "background noise; this is its floor (raise it only if background specks remain).",
                    default=1.0,
                    min=0.0,
                    max=100.0,
                    step=0.5,
                ),
                "high": field(
                    "FLOAT",
                    "Largest background tolerance in ΔE accepted: a background noisier than this is not solid "
                    "and the node stops with a message (raise it for very noisy keys).",
                    default=16.0,
                    min=0.5,
                    max=150.0,
                    step=0.5,
                ),
                "border": field(
                    "INT", "Width in px of the border band used to estimate the key colour.", default=4, min=1, max=64
                ),
                "cleanup": field(
                    "INT",
                    "Speck removal: opaque islands smaller than (2r+3)^2 px (or 0.5% of the sprite) are dropped (0 = off).",
                    default=1,
                    min=0,
                    max=8,
                ),
            },
            "optional": {
                "mask": field("MASK", "External alpha (e.g. from a segmentation node); when set, only despill runs."),
                "mask_is": mask_is_input(),
                "min_hole": field(
                    "INT",
                    "Key-coloured pockets enclosed by the sprite of at least this many px are background (gaps "
                    "between arm and body) unless the clip shows them as drawn parts (enclosed in the frames "
                    "where the body changes shape, moving with it: a white visor on white); smaller ones stay. "
                    "0 = keep every pocket.",
                    default=24,
                    min=0,
                    max=100000,
                ),
                "if_not_solid": field(
                    list(NOT_SOLID_CHOICES),
                    "What to do when the background is not a solid key: stop with the numbers and what to do, or "
                    "keep the frames opaque (alpha 1) and show the same message as a warning.",
                    default="stop",
                ),
            },
        }

    def run(
        self,
        image: Any,
        low: float,
        high: float,
        border: int,
        cleanup: int,
        mask: Any | None = None,
        mask_is: str = "alpha",
        min_hole: int = 24,
        if_not_solid: str = "stop",
    ) -> tuple:
        from ...core.frames import split_image, to_tensor
        from . import operations
        from .matte import NotSolidError

        try:
            rgb, alpha, _ = operations.remove_background(
                image, mask, low, high, border, cleanup, host.progress(len(image)), min_hole, mask_is
            )
        except NotSolidError as exc:
            if if_not_solid != "keep opaque":
                raise
            host.notify("Remove Background kept the frames opaque", str(exc))
            frames, _ = split_image(image)
            rgb, alpha = to_tensor(frames), to_tensor(np.ones(frames.shape[:3], np.float32))
        return rgb, alpha, to_tensor(np.concatenate([rgb.numpy(), alpha.numpy()[..., None]], axis=-1))


class GameAnimSpriteStabilise:
    """Anchor frames at the feet/centroid and crop them onto one fixed canvas."""

    DESCRIPTION = (
        "Removes jitter and drift: finds each frame's pivot (feet = body centre over the ground line, so a walk "
        "drawn in place stays in place; or centroid / box centre; x on the rig root when the pose the clip was "
        "rendered from is connected), moves it to a locked or smoothed track by whole pixels, and crops every frame "
        "to one canvas (union box + padding). lock also takes the root motion out of a walk that travels; "
        "offsets_json carries the per-frame offsets and root_motion (connect it to Save Sprite Sheet). "
        "Any IMAGE works: alpha from the MASK, a 4th channel, or opaque."
    )
    CATEGORY = category("Sprite", "Anchor")
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK", "STRING")
    RETURN_NAMES = ("image", "mask", "offsets_json")
    OUTPUT_TOOLTIPS = (
        "Frames on the fixed canvas.",
        "Alpha on the fixed canvas.",
        "JSON: offsets [[dx,dy],...] (input pixel (x,y) lands on (x+dx,y+dy)); root_motion [[x,y],...] (the steady "
        "travel taken out, px from frame 0: add it to the sprite's position; connect to Save Sprite Sheet's "
        "root_motion); pivot [[x,y],...] (each frame's anchor on the canvas, px; the sheet's sprite pivots); "
        "canvas; anchor.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "anchor": field(
                    list(ANCHORS),
                    "Pivot: feet (body centre over the ground line), centroid (alpha-weighted) or bbox_center.",
                ),
                "mode": field(
                    list(MODES),
                    "lock: pivot fixed (in-place cycles; removes a walk's travel, see root_motion); smooth: keep "
                    "slow motion, remove jitter; none: canvas only.",
                ),
                "sigma": field(
                    "FLOAT", "Smoothing width in frames for mode=smooth.", default=2.0, min=0.1, max=50.0, step=0.1
                ),
                "padding": field("INT", "Transparent pixels around the union box.", default=2, min=0, max=256),
            },
            "optional": {
                **mask_inputs(),
                "pose_keypoint": field(
                    "POSE_KEYPOINT",
                    "The pose the clip was rendered from (e.g. GameAnim Render Pose), one per frame: the pivot's x "
                    "is then the rig root (mid-hip, scaled from the pose canvas to the frame), exact instead of "
                    "estimated; frames with hidden hips use the body estimate.",
                ),
            },
        }

    def run(
        self,
        image: Any,
        anchor: str,
        mode: str,
        sigma: float,
        padding: int,
        mask: Any | None = None,
        mask_is: str = "alpha",
        pose_keypoint: Any | None = None,
    ) -> tuple:
        from ...core.frames import to_tensor
        from . import operations
        from .anchor import root_travel

        result = operations.stabilise(
            image,
            mask,
            mask_is,
            anchor=anchor,
            mode=mode,
            sigma=sigma,
            padding=padding,
            progress=host.progress(len(image)),
            pose_keypoint=pose_keypoint,
        )
        h, w = result.alpha.shape[1:]
        info = {
            "offsets": result.offsets.tolist(),
            "root_motion": np.round(root_travel(result.offsets), 2).tolist(),
            "pivot": [None if np.isnan(p).any() else np.round(p, 2).tolist() for p in result.anchor],
            "canvas": {"w": int(w), "h": int(h)},
            "anchor": anchor,
            "x_from": "rig_root" if pose_keypoint is not None else anchor,
            "mode": mode,
        }
        return to_tensor(result.rgb), to_tensor(result.alpha), json.dumps(info)


class GameAnimSpriteTiming:
    """Holds (on twos), frame counts, fps changes, ping-pong and loop closure."""

    DESCRIPTION = (
        "Retimes a clip. hold: animate on twos/threes (step); repeat: each frame step times; resample_count: "
        "exactly 'count' frames; retime_fps: fps_in to fps_out; ping_pong: forward then back; loop_trim: find the "
        "two most similar frames at least min_loop apart and keep the seamless loop between them."
    )
    CATEGORY = category("Sprite", "Timing")
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "MASK", "STRING")
    RETURN_NAMES = ("image", "mask", "info")
    OUTPUT_TOOLTIPS = ("Retimed frames.", "Retimed alpha.", "JSON: source frame indices (and loop start/end/score).")

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "operation": field(list(TIMING_OPS), "What to do with the frames (see the node description)."),
                "step": field(
                    "INT", "hold: hold length (2 = on twos); repeat: copies per frame.", default=2, min=1, max=16
                ),
                "count": field("INT", "resample_count: target number of frames.", default=8, min=1, max=4096),
                "fps_in": field(
                    "FLOAT", "retime_fps: frame rate of the input.", default=24.0, min=0.1, max=240.0, step=0.1
                ),
                "fps_out": field("FLOAT", "retime_fps: wanted frame rate.", default=12.0, min=0.1, max=240.0, step=0.1),
                "min_loop": field("INT", "loop_trim: shortest loop length in frames.", default=4, min=1, max=4096),
            },
            "optional": {"mask": field("MASK", MASK_TIP), "mask_is": mask_is_input()},
        }

    def run(
        self,
        image: Any,
        operation: str,
        step: int,
        count: int,
        fps_in: float,
        fps_out: float,
        min_loop: int,
        mask: Any | None = None,
        mask_is: str = "alpha",
    ) -> tuple:
        from ...core.frames import rgb_alpha, to_tensor
        from . import playback

        rgb, alpha = rgb_alpha(image, mask, mask_is)
        n = len(rgb)
        info: dict[str, Any] = {"operation": operation}
        if operation == "hold":
            idx = playback.hold_indices(n, step)
        elif operation == "repeat":
            idx = playback.repeat_indices(n, step)
        elif operation == "resample_count":
            idx = playback.resample_indices(n, count)
        elif operation == "retime_fps":
            idx = playback.retime_indices(n, fps_in, fps_out)
        elif operation == "ping_pong":
            idx = playback.ping_pong_indices(n)
        elif operation == "loop_trim":
            start, end, score = playback.find_loop(rgb, alpha, min_loop)
            idx = np.arange(start, end)
            info.update(start=start, end=end, score=score)
        else:
            raise InputError(f"Unknown timing operation {operation!r}; choose one of {', '.join(TIMING_OPS)}.")
        host.progress(1)(1, 1)
        info["indices"] = [int(i) for i in idx]
        return to_tensor(rgb[idx]), to_tensor(alpha[idx]), json.dumps(info)


class GameAnimSpritePixelArt:
    """Nearest downscale, one palette for all the clips of a character, binary alpha, optional outline."""

    DESCRIPTION = (
        "Converts frames to pixel art: nearest-neighbour downscale to width x height, one palette (k-means or median "
        "cut, PICO-8, or a .hex/.gpl file from the input folder), binary alpha, optional 1-px outline. A list of clips "
        "(e.g. VC2 Action Set's actions) is converted together: with palette_scope all_clips one palette is fitted "
        "over every clip, so each animation of the character uses the same colours; each_clip fits one per clip."
    )
    CATEGORY = category("Sprite", "PixelArt")
    FUNCTION = "run"
    INPUT_IS_LIST = True  # every clip of an action set at once, so one palette can be fitted over all of them
    RETURN_TYPES = ("IMAGE", "MASK")
    RETURN_NAMES = ("image", "mask")
    OUTPUT_IS_LIST = (True, True)
    OUTPUT_TOOLTIPS = ("Pixel-art frames (one clip per input clip).", "Binary alpha (one per input clip).")

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP + " A list of clips is converted together (see palette_scope)."),
                "width": field("INT", "Sprite width in pixels after downscaling.", default=64, min=1, max=4096),
                "height": field("INT", "Sprite height in pixels after downscaling.", default=64, min=1, max=4096),
                "palette": field(
                    list(PALETTE_METHODS), "Palette: none, kmeans / median_cut (from the clips), pico8, or file."
                ),
                "colours": field("INT", "Palette size for kmeans / median_cut.", default=16, min=1, max=256),
                "palette_file": field(
                    "STRING", "palette=file: a .hex or .gpl file in ComfyUI's input folder.", default=""
                ),
                "outline": field("BOOLEAN", "Add a 1-px outline around the sprite.", default=False),
                "outline_colour": field("STRING", "Outline colour as hex RRGGBB.", default="000000"),
                "seed": field(
                    "INT",
                    "Seed of the k-means initialisation.",
                    default=0,
                    min=0,
                    max=2**31 - 1,
                    control_after_generate=True,
                ),
            },
            "optional": {
                **mask_inputs(),
                "palette_scope": field(
                    list(PALETTE_SCOPES),
                    "For a list of clips (a character's actions): all_clips fits one kmeans / median_cut palette over "
                    "every clip, so all animations share the same colours; each_clip fits one palette per clip.",
                    default="all_clips",
                ),
            },
        }

    def run(
        self,
        image: list[Any],
        width: list[int],
        height: list[int],
        palette: list[str],
        colours: list[int],
        palette_file: list[str],
        outline: list[bool],
        outline_colour: list[str],
        seed: list[int],
        mask: list[Any] | None = None,
        mask_is: list[str] | None = None,
        palette_scope: list[str] | None = None,
    ) -> tuple:
        from ...core.frames import to_tensor
        from . import operations
        from .pixelart import hex_palette, load_palette

        masks = list(mask) if mask else [None] * len(image)
        if len(masks) != len(image):
            raise InputError(f"{len(image)} clips arrived with {len(masks)} masks; give one mask per clip or none.")
        scope = palette_scope[0] if palette_scope else "all_clips"
        if scope not in PALETTE_SCOPES:
            raise InputError(f"Unknown palette_scope {scope!r}; choose one of {', '.join(PALETTE_SCOPES)}.")
        pal = load_palette(confined(host.input_dir(), palette_file[0])) if palette[0] == "file" else None
        colour = hex_palette([outline_colour[0]])[0] if outline[0] else None
        results = operations.pixelate_clips(
            list(zip(image, masks, strict=True)),
            width[0],
            height[0],
            mask_is[0] if mask_is else "alpha",
            palette=palette[0],
            colours=colours[0],
            palette_colours=pal,
            outline_colour=colour,
            seed=seed[0],
            progress=host.progress(sum(len(clip) for clip in image)),
            shared=scope == "all_clips",
        )
        return [to_tensor(rgb) for rgb, _, _ in results], [to_tensor(alpha) for _, alpha, _ in results]


class GameAnimSpriteSheet:
    """Sprite sheet PNG + atlas files (TexturePacker, Aseprite, Godot) in the output folder."""

    DESCRIPTION = (
        "Packs the frames on one sheet (grid or trimmed+packed, padding, edge extrusion, optional power-of-two size) "
        "and saves <prefix>_NNNNN.png with atlas files: TexturePacker JSON (Phaser/PixiJS), Aseprite JSON (with a "
        "pivot slice), Godot SpriteFrames .tres, and Unity's <sheet>.png.meta (Multiple sprite mode, point filter, "
        "no compression, one sprite per frame pivoted at its anchor) with <sheet>.unity.json (durations, root "
        "motion). Frame durations come from fps (merge_holds turns repeated frames into longer durations). "
        "A list of clips (e.g. VC2 Action Set's clips, through any sprite nodes) becomes one sheet with one named "
        "animation per clip: Aseprite tags, PixiJS/Phaser animations, one Godot animation each."
    )
    CATEGORY = category("Sprite", "Export")
    FUNCTION = "run"
    OUTPUT_NODE = True
    INPUT_IS_LIST = True  # several clips arrive as a list and become the animations of one sheet
    RETURN_TYPES = ("IMAGE", "MASK", "STRING")
    RETURN_NAMES = ("sheet", "sheet_mask", "atlas_json")
    OUTPUT_TOOLTIPS = ("The sheet as RGB.", "The sheet's alpha.", "TexturePacker JSON-hash atlas text.")

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP + " A list of clips gives one animation per clip."),
                "filename_prefix": field("STRING", PREFIX_TIP, default="gameanim/sprite"),
                "layout": field(
                    list(LAYOUTS), "grid: equal cells; packed: frames trimmed to their opaque box and packed."
                ),
                "columns": field("INT", "Frames per row for grid (0 = near-square).", default=0, min=0, max=1024),
                "padding": field("INT", "Transparent pixels between frames.", default=1, min=0, max=64),
                "extrude": field(
                    "INT",
                    "Repeat edge pixels outward by this much (stops bleeding under filtering).",
                    default=0,
                    min=0,
                    max=16,
                ),
                "power_of_two": field("BOOLEAN", "Round the sheet size up to powers of two.", default=False),
                "fps": field(
                    "FLOAT",
                    "Playback rate; each frame lasts 1000/fps ms in the atlas.",
                    default=12.0,
                    min=0.1,
                    max=240.0,
                    step=0.1,
                ),
                "merge_holds": field(
                    "BOOLEAN", "Merge identical consecutive frames into one longer frame.", default=True
                ),
                "aseprite_json": field("BOOLEAN", "Also write Aseprite JSON (hash) with a frame tag.", default=True),
                "godot": field(
                    list(GODOT_CHOICES), "Godot SpriteFrames .tres to write (Godot 4 format=3, Godot 3 format=2)."
                ),
            },
            "optional": {
                **mask_inputs(),
                "animation": field(
                    "STRING",
                    "Animation name (one per clip for a list, e.g. VC2 Action Set's action_names). "
                    "Empty: the file name for one clip, animation_1, animation_2, ... for several.",
                    default="",
                ),
                "timing": field("GAMEANIM_TIMING", TIMING_TIP + " One per clip for a list."),
                "root_motion": field(
                    "STRING",
                    "Stabilise's offsets_json (one per clip for a list): each frame of the atlas gets root {x, y}, "
                    "the travel Stabilise took out in sheet pixels from the animation's first frame; the engine "
                    "adds it to the sprite's position (JSON: frame key root, Phaser frame.customData.root; Godot: "
                    "root_motion metadata; Unity: .unity.json). Its pivot track becomes the sprites' pivots (Unity, "
                    "Aseprite slice); without it the pivot is the bottom centre of the frame.",
                    forceInput=True,
                ),
            },
        }

    def run(
        self,
        image: list[Any],
        filename_prefix: list[str],
        layout: list[str],
        columns: list[int],
        padding: list[int],
        extrude: list[int],
        power_of_two: list[bool],
        fps: list[float],
        merge_holds: list[bool],
        aseprite_json: list[bool],
        godot: list[str],
        mask: list[Any] | None = None,
        animation: list[str] | None = None,
        timing: list[dict] | None = None,
        mask_is: list[str] | None = None,
        root_motion: list[str] | None = None,
    ) -> dict:
        from ...core.frames import to_tensor
        from . import operations

        count = len(image)
        masks = list(mask) if mask else [None] * count
        rates = list(fps) if len(fps) == count else [fps[0]] * count
        if len(masks) != count:
            raise InputError(f"{count} clips arrived with {len(masks)} masks; give one mask per clip or none.")
        timings = list(timing) if timing else [None] * count
        if len(timings) != count:
            raise InputError(f"{count} clips arrived with {len(timings)} timings; give one timing per clip or none.")
        durations = [_durations_ms(t, r, len(c)) for t, r, c in zip(timings, rates, image, strict=True)]
        name = next_free_name(filename_prefix[0])
        names = [n for n in (animation or []) if n.strip()]
        if not names:
            names = [Path(name).name] if count == 1 else [f"animation_{i + 1}" for i in range(count)]
        built = operations.build_animation_sheet(
            list(zip(image, masks, strict=True)),
            names,
            rates,
            columns[0] or None,
            layout[0],
            padding[0],
            extrude[0],
            power_of_two[0],
            merge_holds[0],
            Path(name).name,
            host.progress(sum(len(clip) for clip in image)),
            durations,
            mask_is[0] if mask_is else "alpha",
            list(root_motion) if root_motion else None,
            source_times=[t.get("source_times") if t else None for t in timings],
        )
        aseprite_json, godot = aseprite_json[0], godot[0]
        formats = ["texturepacker_hash"] + (["aseprite_hash"] if aseprite_json else [])
        formats += {"godot4": ["godot4"], "godot3": ["godot3"], "both": ["godot4", "godot3"], "none": []}[godot]
        formats += ["unity_meta", "unity_json"]
        written = operations.write_sheet(built, host.output_dir(), name, tuple(formats))
        atlas = Path(written[1]).read_text(encoding="utf-8")
        rgba = built.rgba.astype(np.float32) / 255.0
        return {
            "ui": {
                "images": [output_entry(written[0])],
                **output_files(written[1:]),
                "text": [", ".join(p.name for p in written)],
            },
            "result": (to_tensor(rgba[None, ..., :3]), to_tensor(rgba[None, ..., 3]), atlas),
        }


class GameAnimSpriteExport:
    """Animated GIF / APNG / WebP with alpha, or a PNG sequence, in the output folder."""

    DESCRIPTION = (
        "Saves the frames with transparency: GIF (1-bit alpha, one palette for the clip), APNG and animated WebP "
        "(full alpha, lossless), or a PNG sequence, under ComfyUI's output folder."
    )
    CATEGORY = category("Sprite", "Export")
    FUNCTION = "run"
    OUTPUT_NODE = True
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("files",)
    OUTPUT_TOOLTIPS = ("Written files, relative to the output folder, one per line.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {
                "image": field("IMAGE", IMAGE_TIP),
                "filename_prefix": field("STRING", PREFIX_TIP, default="gameanim/sprite"),
                "format": field(list(EXPORT_FORMATS), "File format (all keep transparency; GIF only 1-bit)."),
                "fps": field("FLOAT", "Playback rate.", default=12.0, min=0.1, max=100.0, step=0.1),
                "loop": field("INT", "Times to loop (0 = forever).", default=0, min=0, max=65535),
            },
            "optional": {**mask_inputs(), "timing": field("GAMEANIM_TIMING", TIMING_TIP)},
        }

    def run(
        self,
        image: Any,
        filename_prefix: str,
        format: str,
        fps: float,
        loop: int,
        mask: Any | None = None,
        timing: dict | None = None,
        mask_is: str = "alpha",
    ) -> dict:
        from ...core.frames import rgb_alpha, to_tensor
        from . import operations

        name = next_free_name(filename_prefix)
        durations = _durations_ms(timing, fps, len(image))
        paths = operations.export_animation(
            image, mask, host.output_dir(), name, format, fps, durations, loop, host.progress(len(image)), mask_is
        )
        rgb, alpha = rgb_alpha(image, mask, mask_is)
        image, mask = to_tensor(rgb), to_tensor(alpha)
        entries = [output_entry(p) for p in paths]
        ui: dict[str, Any] = {"images": entries}
        if format != "png_sequence":
            ui["animated"] = (True,)
        # The pack's web player (play, scrub, onion skin, checkerboard behind alpha) on the node.
        ui.update(animation_preview(image, fps, mask))
        rel = "\n".join(f"{e['subfolder']}/{e['filename']}".lstrip("/") for e in entries)
        return {"ui": ui, "result": (rel,)}


NODE_CLASS_MAPPINGS = {
    "GameAnimSpriteLoadFrames": GameAnimSpriteLoadFrames,
    "GameAnimSpriteRemoveBackground": GameAnimSpriteRemoveBackground,
    "GameAnimSpriteStabilise": GameAnimSpriteStabilise,
    "GameAnimSpriteTiming": GameAnimSpriteTiming,
    "GameAnimSpritePixelArt": GameAnimSpritePixelArt,
    "GameAnimSpriteSheet": GameAnimSpriteSheet,
    "GameAnimSpriteExport": GameAnimSpriteExport,
}

NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimSpriteLoadFrames": "Load Sprite Frames (GameAnim)",
    "GameAnimSpriteRemoveBackground": "Sprite Remove Background (GameAnim)",
    "GameAnimSpriteStabilise": "Sprite Anchor & Stabilise (GameAnim)",
    "GameAnimSpriteTiming": "Sprite Timing (GameAnim)",
    "GameAnimSpritePixelArt": "Sprite Pixel Art (GameAnim)",
    "GameAnimSpriteSheet": "Save Sprite Sheet (GameAnim)",
    "GameAnimSpriteExport": "Save Sprite Animation (GameAnim)",
}
