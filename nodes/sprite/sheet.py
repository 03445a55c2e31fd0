"""Sprite sheets and the atlas files game engines read.

Layouts: ``grid`` (every frame in an equal cell, simple to slice by hand) or ``packed`` (each frame
trimmed to its opaque box and shelf-packed, the way TexturePacker's "trim" mode saves space; the
atlas records the trim offsets so engines restore the original frame size and pivot).
``padding`` leaves transparent pixels between frames; ``extrude`` repeats each frame's edge pixels
outward, which stops neighbouring frames bleeding in under bilinear filtering or mip-mapping.

A sheet holds one or more named animations (a character's action set on one texture); frames are
named ``<animation>_NNN`` and every writer names the animations the way its engine reads them.

Root motion (optional, per frame): the travel Stabilise took out of a locomotion clip, in sheet
pixels from the animation's first frame; the engine adds it to the sprite's position.  The JSON
atlases carry it as an extra per-frame key ``root: {x, y}`` (Phaser keeps unknown frame keys in
``frame.customData``); the Godot resources as the ``root_motion`` metadata (animation name →
one Vector2 per frame entry of that animation).

Atlas writers (all carry per-frame durations in ms):

- TexturePacker JSON hash/array — what Phaser (``load.atlas``) and PixiJS (``Spritesheet``) read,
  with PixiJS's ``animations`` table (animation name → frame names in order).
- Aseprite JSON hash/array — one ``meta.frameTags`` entry per animation, for Phaser's
  ``createFromAseprite``, and a ``pivot`` slice whose key per frame holds the frame's anchor.
- Unity: the sheet's ``.png.meta`` (Multiple-mode sprite texture, one sprite per frame with a custom
  pivot at its anchor) and ``.unity.json`` (durations, root motion); see :mod:`.unity_meta`.
- Godot 4 ``SpriteFrames`` ``.tres`` (``format=3``, per-frame relative ``duration``) and the
  Godot 3 ``format=2`` variant (no per-frame durations in Godot 3: longer frames are repeated),
  one animation entry per animation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from .options import ATLAS_FORMATS, LAYOUTS

APP_URL = "https://github.com/gameanim/gameanim"


@dataclass(frozen=True)
class FrameRect:
    """Where one frame sits on the sheet and which part of its source frame it holds."""

    name: str
    x: int
    y: int
    w: int
    h: int
    src_x: int
    src_y: int
    src_w: int
    src_h: int
    duration_ms: int
    root: tuple[float, float] | None = None  # root motion in sheet pixels from the animation's first frame
    pivot: tuple[float, float] | None = None  # the anchor in source-frame pixels (y down); None: bottom centre

    @property
    def pivot_px(self) -> tuple[float, float]:
        """The pivot in source-frame pixels (x right, y down); the bottom centre when none was given."""
        return self.pivot if self.pivot is not None else (self.src_w / 2.0, float(self.src_h))

    @property
    def trimmed(self) -> bool:
        return (self.w, self.h) != (self.src_w, self.src_h)


@dataclass(frozen=True)
class Animation:
    """A named run of consecutive frames of a sheet: ``frames[first : first + count]``."""

    name: str
    first: int
    count: int


@dataclass(frozen=True)
class Sheet:
    """A packed sheet: ``rgba`` uint8 ``[H,W,4]``, the frame rectangles in playback order, the animations."""

    rgba: np.ndarray
    frames: list[FrameRect]
    name: str
    animations: tuple[Animation, ...] = ()

    @property
    def size(self) -> tuple[int, int]:
        return int(self.rgba.shape[1]), int(self.rgba.shape[0])

    def clips(self) -> list[tuple[Animation, list[FrameRect]]]:
        """Each animation with its frames (one animation named after the sheet when none were given)."""
        runs = self.animations or (Animation(self.name, 0, len(self.frames)),)
        return [(a, self.frames[a.first : a.first + a.count]) for a in runs]


def animation_runs(names: list[str], counts: list[int]) -> tuple[Animation, ...]:
    """Consecutive :class:`Animation` runs for clips of ``counts`` frames, checking the names."""
    if len(names) != len(counts):
        raise InputError(f"Give one animation name per clip: {len(counts)} clips, {len(names)} names.")
    cleaned = [n.strip() for n in names]
    if any(not n for n in cleaned) or len(set(cleaned)) != len(cleaned):
        raise InputError(f"Animation names must be non-empty and distinct; got {names}.")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
    return tuple(Animation(n, int(f), int(c)) for n, f, c in zip(cleaned, starts, counts, strict=True))


def to_rgba8(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Float rgb ``[T,H,W,3]`` + alpha ``[T,H,W]`` (0..1) to uint8 RGBA ``[T,H,W,4]``."""
    rgba = np.concatenate([rgb, alpha[..., None]], axis=-1)
    return (np.clip(rgba, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def _next_pow2(v: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(v, 1))))


def _trim_box(alpha8: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.nonzero(alpha8.any(axis=1))[0], np.nonzero(alpha8.any(axis=0))[0]
    if len(rows) == 0:
        return 0, 0, 1, 1  # an empty frame keeps one transparent pixel so every engine can index it
    return int(cols[0]), int(rows[0]), int(cols[-1] + 1), int(rows[-1] + 1)


def _shelf_pack(sizes: list[tuple[int, int]], gap: int, max_width: int) -> tuple[list[tuple[int, int]], int, int]:
    """Shelf packing, tallest first: positions (of the padded boxes) and the used width/height."""
    order = sorted(range(len(sizes)), key=lambda k: (-sizes[k][1], -sizes[k][0], k))
    pos: list[tuple[int, int]] = [(0, 0)] * len(sizes)
    x = y = shelf_h = used_w = 0
    for k in order:
        w, h = sizes[k]
        if x > 0 and x + w > max_width:
            y += shelf_h + gap
            x = shelf_h = 0
        pos[k] = (x, y)
        used_w = max(used_w, x + w)
        x += w + gap
        shelf_h = max(shelf_h, h)
    return pos, used_w, y + shelf_h


def build_sheet(
    rgba: np.ndarray,
    durations_ms: np.ndarray | list[float] | None = None,
    columns: int | None = None,
    layout: str = "grid",
    padding: int = 1,
    extrude: int = 0,
    power_of_two: bool = False,
    name: str = "sprite",
    progress: ProgressFn | None = None,
    animations: tuple[Animation, ...] = (),
    root_motion: np.ndarray | None = None,
    pivots: np.ndarray | None = None,
) -> Sheet:
    """Lay out uint8 RGBA frames ``[T,H,W,4]`` on one sheet (see the module docstring).

    ``animations`` splits the frames into named runs (see :func:`animation_runs`); without it the
    whole sheet is one animation named ``name``.  ``root_motion`` ``[T,2]`` (sheet pixels; NaN
    rows for frames without) becomes each frame's ``root``; ``pivots`` ``[T,2]`` (frame pixels,
    y down; NaN rows: the bottom centre) each frame's ``pivot``.
    """
    if rgba.ndim != 4 or rgba.shape[-1] != 4:
        raise InputError(f"Sheet frames must be RGBA [T,H,W,4]; got shape {tuple(rgba.shape)}.")
    t, fh, fw = rgba.shape[:3]
    if t == 0:
        raise InputError("Cannot build a sprite sheet from an empty batch (0 frames).")
    if layout not in LAYOUTS:
        raise InputError(f"Unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}.")
    if padding < 0 or extrude < 0:
        raise InputError(f"padding and extrude must be >= 0; got padding={padding}, extrude={extrude}.")
    if columns is not None and columns < 1:
        raise InputError(f"columns must be >= 1 (or None for a near-square grid); got {columns}.")
    durations = np.full(t, 100.0) if durations_ms is None else np.asarray(durations_ms, np.float64)
    if durations.shape != (t,) or (durations <= 0).any():
        raise InputError(f"Give one positive duration (ms) per frame: {t} frames, got {durations.tolist()}.")
    roots = np.full((t, 2), np.nan) if root_motion is None else np.asarray(root_motion, np.float64)
    if roots.shape != (t, 2):
        raise InputError(f"Give one root motion (x, y) per frame: {t} frames, got shape {roots.shape}.")
    pivot = np.full((t, 2), np.nan) if pivots is None else np.asarray(pivots, np.float64)
    if pivot.shape != (t, 2):
        raise InputError(f"Give one pivot (x, y) per frame: {t} frames, got shape {pivot.shape}.")
    if animations and (animations[0].first != 0 or sum(a.count for a in animations) != t):
        raise InputError(f"The animations cover {sum(a.count for a in animations)} frames; the sheet has {t}.")
    frame_names = [f"{a.name}_{i:03d}" for a in (animations or (Animation(name, 0, t),)) for i in range(a.count)]
    report = progress or no_progress
    if layout == "grid":
        boxes = [(0, 0, fw, fh)] * t
    else:
        boxes = [_trim_box(rgba[i, :, :, 3]) for i in range(t)]
    sizes = [(x1 - x0 + 2 * extrude, y1 - y0 + 2 * extrude) for x0, y0, x1, y1 in boxes]
    cols = columns or math.ceil(math.sqrt(t))
    if layout == "grid":
        cw, ch = sizes[0]
        positions = [(padding + (i % cols) * (cw + padding), padding + (i // cols) * (ch + padding)) for i in range(t)]
        width = padding + min(cols, t) * (cw + padding)
        height = padding + math.ceil(t / cols) * (ch + padding)
    else:
        area = sum((w + padding) * (h + padding) for w, h in sizes)
        max_w = max(max(w for w, _ in sizes), int(math.sqrt(area) * 1.1)) if columns is None else None
        if max_w is None:
            max_w = sum(sorted((w for w, _ in sizes), reverse=True)[:cols]) + padding * (cols - 1)
        placed, used_w, used_h = _shelf_pack(sizes, padding, max_w)
        positions = [(x + padding, y + padding) for x, y in placed]
        width, height = used_w + 2 * padding, used_h + 2 * padding
    if power_of_two:
        width, height = _next_pow2(width), _next_pow2(height)
    sheet = np.zeros((height, width, 4), np.uint8)
    frames = []
    for i, ((x0, y0, x1, y1), (px, py)) in enumerate(zip(boxes, positions, strict=True)):
        crop = rgba[i, y0:y1, x0:x1]
        if extrude:
            crop = np.pad(crop, ((extrude, extrude), (extrude, extrude), (0, 0)), mode="edge")
        sheet[py : py + crop.shape[0], px : px + crop.shape[1]] = crop
        frames.append(
            FrameRect(
                name=frame_names[i],
                x=px + extrude,
                y=py + extrude,
                w=x1 - x0,
                h=y1 - y0,
                src_x=x0,
                src_y=y0,
                src_w=fw,
                src_h=fh,
                duration_ms=int(round(durations[i])),
                root=None if np.isnan(roots[i]).any() else (round(float(roots[i, 0]), 2), round(float(roots[i, 1]), 2)),
                pivot=None
                if np.isnan(pivot[i]).any()
                else (round(float(pivot[i, 0]), 2), round(float(pivot[i, 1]), 2)),
            )
        )
        report(i + 1, t)
    return Sheet(sheet, frames, name, tuple(animations))


# ----------------------------------------------------------------------------- atlas writers


def _frame_entry(f: FrameRect) -> dict:
    return {
        "frame": {"x": f.x, "y": f.y, "w": f.w, "h": f.h},
        "rotated": False,
        "trimmed": f.trimmed,
        "spriteSourceSize": {"x": f.src_x, "y": f.src_y, "w": f.w, "h": f.h},
        "sourceSize": {"w": f.src_w, "h": f.src_h},
        "duration": f.duration_ms,
        **({"root": {"x": f.root[0], "y": f.root[1]}} if f.root is not None else {}),
    }


def texturepacker(sheet: Sheet, image: str, array: bool = False) -> dict:
    """TexturePacker "JSON (Hash)" / "JSON (Array)" data, as Phaser and PixiJS load it."""
    w, h = sheet.size
    meta = {
        "app": APP_URL,
        "version": "1.0",
        "image": image,
        "format": "RGBA8888",
        "size": {"w": w, "h": h},
        "scale": "1",
    }
    if array:
        frames: dict | list = [{"filename": f.name, **_frame_entry(f)} for f in sheet.frames]
    else:
        frames = {f.name: _frame_entry(f) for f in sheet.frames}
    animations = {a.name: [f.name for f in clip] for a, clip in sheet.clips()}
    return {"frames": frames, "animations": animations, "meta": meta}


def aseprite(sheet: Sheet, image: str, array: bool = False) -> dict:
    """Aseprite ``--data`` JSON (hash or array) with one forward ``frameTag`` per animation.

    Frames are named by their index (``"0"``, ``"1"``, ...), as Aseprite writes them with
    ``--filename-format {frame}``: Phaser's ``anims.createFromAseprite`` looks frames up by index
    and builds an empty animation from Aseprite's default ``"name 0.aseprite"`` keys.
    """
    w, h = sheet.size
    names = [str(i) for i in range(len(sheet.frames))]
    if array:
        frames: dict | list = [{"filename": n, **_frame_entry(f)} for n, f in zip(names, sheet.frames, strict=True)]
    else:
        frames = {n: _frame_entry(f) for n, f in zip(names, sheet.frames, strict=True)}
    meta = {
        "app": "https://www.aseprite.org/",
        "version": "1.3",
        "image": image,
        "format": "RGBA8888",
        "size": {"w": w, "h": h},
        "scale": "1",
        "frameTags": [
            {"name": a.name, "from": a.first, "to": a.first + a.count - 1, "direction": "forward", "color": "#000000ff"}
            for a, _ in sheet.clips()
        ],
        "layers": [{"name": "Layer 1", "opacity": 255, "blendMode": "normal"}],
        "slices": [aseprite_pivot_slice(sheet)],
    }
    return {"frames": frames, "meta": meta}


def aseprite_pivot_slice(sheet: Sheet) -> dict:
    """One Aseprite slice named ``pivot`` with a key per frame: bounds = the whole frame, pivot = its anchor.

    Aseprite stores a slice's bounds in sprite (untrimmed frame) coordinates and its pivot in whole
    pixels relative to the bounds' top-left; a key holds from its frame until the next key.
    """
    keys = []
    for i, f in enumerate(sheet.frames):
        px, py = f.pivot_px
        keys.append(
            {
                "frame": i,
                "bounds": {"x": 0, "y": 0, "w": f.src_w, "h": f.src_h},
                "pivot": {"x": int(math.floor(px)), "y": int(math.floor(py))},
            }
        )
    return {"name": "pivot", "color": "#0000ffff", "keys": keys}


def _base_duration(frames: list[FrameRect]) -> float:
    """The shortest frame duration (ms) of an animation: Godot's ``speed`` is 1000 / this."""
    return float(min(f.duration_ms for f in frames))


def _repeats(frame: FrameRect, base: float) -> int:
    """How often Godot 3 (no per-frame durations) lists a frame: its duration in base durations."""
    return max(1, int(round(frame.duration_ms / base)))


def _godot_string(value: str) -> str:
    return json.dumps(value)


def _godot_root_motion(sheet: Sheet, array_type: str, repeats: bool) -> str | None:
    """The ``root_motion`` metadata value: animation name → one Vector2 per frame entry, or None.

    ``repeats`` (Godot 3) lists a frame as often as the resource repeats it for its duration.
    """
    entries = []
    for a, clip in sheet.clips():
        if any(f.root is None for f in clip):
            continue
        base = _base_duration(clip)
        counts = [_repeats(f, base) if repeats else 1 for f in clip]
        values = [f"{v:.6g}" for f, n in zip(clip, counts, strict=True) for _ in range(n) for v in f.root]
        entries.append(f"{_godot_string(a.name)}: {array_type}({', '.join(values)})")
    return "{\n" + ",\n".join(entries) + "\n}" if entries else None


def godot4_tres(sheet: Sheet, image: str, loop: bool = True) -> str:
    """A Godot 4 ``SpriteFrames`` resource: one animation per sheet animation, AtlasTexture regions,
    durations relative to each animation's shortest frame.

    ``image`` is the texture path as Godot sees it (``res://...``).  Trimmed frames get an
    AtlasTexture ``margin`` so the sprite keeps its full frame size and pivot.
    """
    n = len(sheet.frames)
    out = [f'[gd_resource type="SpriteFrames" load_steps={n + 2} format=3]', ""]
    out += [f'[ext_resource type="Texture2D" path={_godot_string(image)} id="1_sheet"]', ""]
    for i, f in enumerate(sheet.frames):
        out += [f'[sub_resource type="AtlasTexture" id="AtlasTexture_{i}"]', 'atlas = ExtResource("1_sheet")']
        out.append(f"region = Rect2({f.x}, {f.y}, {f.w}, {f.h})")
        if f.trimmed:
            out.append(f"margin = Rect2({f.src_x}, {f.src_y}, {f.src_w - f.w}, {f.src_h - f.h})")
        out.append("")
    blocks = []
    for a, clip in sheet.clips():
        base = _base_duration(clip)
        entries = ",\n".join(
            f'{{\n"duration": {f.duration_ms / base:.6g},\n"texture": SubResource("AtlasTexture_{a.first + i}")\n}}'
            for i, f in enumerate(clip)
        )
        block = [f'"frames": [{entries}],', f'"loop": {"true" if loop else "false"},']
        block += [f'"name": &{_godot_string(a.name)},', f'"speed": {1000.0 / base:.6g}']
        blocks.append("{\n" + "\n".join(block) + "\n}")
    out += ["[resource]", "animations = [" + ", ".join(blocks) + "]"]
    root = _godot_root_motion(sheet, "PackedVector2Array", repeats=False)
    if root is not None:
        out.append(f"metadata/root_motion = {root}")
    return "\n".join(out + [""])


def godot3_tres(sheet: Sheet, image: str, loop: bool = True) -> str:
    """A Godot 3 ``SpriteFrames`` resource (``format=2``); a frame lasting k base durations repeats k times."""
    n = len(sheet.frames)
    out = [f'[gd_resource type="SpriteFrames" load_steps={n + 2} format=2]', ""]
    out += [f'[ext_resource path={_godot_string(image)} type="Texture" id=1]', ""]
    for i, f in enumerate(sheet.frames):
        out += [f'[sub_resource type="AtlasTexture" id={i + 1}]', "atlas = ExtResource( 1 )"]
        out.append(f"region = Rect2( {f.x}, {f.y}, {f.w}, {f.h} )")
        if f.trimmed:
            out.append(f"margin = Rect2( {f.src_x}, {f.src_y}, {f.src_w - f.w}, {f.src_h - f.h} )")
        out.append("")
    blocks = []
    for a, clip in sheet.clips():
        base = _base_duration(clip)
        refs = []
        for i, f in enumerate(clip):
            refs += [f"SubResource( {a.first + i + 1} )"] * _repeats(f, base)
        block = [f'"frames": [ {", ".join(refs)} ],', f'"loop": {"true" if loop else "false"},']
        block += [f'"name": {_godot_string(a.name)},', f'"speed": {1000.0 / base:.6g}']
        blocks.append("{\n" + "\n".join(block) + "\n}")
    out += ["[resource]", "animations = [ " + ", ".join(blocks) + " ]"]
    root = _godot_root_motion(sheet, "PoolVector2Array", repeats=True)
    if root is not None:
        out.append(f'__meta__ = {{\n"root_motion": {root}\n}}')
    return "\n".join(out + [""])


def atlas_text(sheet: Sheet, fmt: str, image: str) -> str:
    """The text of atlas format ``fmt`` (one of :data:`ATLAS_FORMATS`) for a sheet saved as ``image``."""
    if fmt == "texturepacker_hash":
        return json.dumps(texturepacker(sheet, image), indent=2)
    if fmt == "texturepacker_array":
        return json.dumps(texturepacker(sheet, image, array=True), indent=2)
    if fmt == "aseprite_hash":
        return json.dumps(aseprite(sheet, image), indent=2)
    if fmt == "aseprite_array":
        return json.dumps(aseprite(sheet, image, array=True), indent=2)
    if fmt == "godot4":
        return godot4_tres(sheet, f"res://{image}")
    if fmt == "godot3":
        return godot3_tres(sheet, f"res://{image}")
    if fmt in ("unity_meta", "unity_json"):
        from .unity_meta import unity_animations, unity_meta

        return unity_meta(sheet, image) if fmt == "unity_meta" else unity_animations(sheet, image)
    raise InputError(f"Unknown atlas format {fmt!r}; choose one of {', '.join(ATLAS_FORMATS)}.")


ATLAS_SUFFIX = {
    "texturepacker_hash": ".json",
    "texturepacker_array": ".array.json",
    "aseprite_hash": ".aseprite.json",
    "aseprite_array": ".aseprite-array.json",
    "godot4": ".tres",
    "godot3": ".godot3.tres",
    "unity_meta": ".png.meta",
    "unity_json": ".unity.json",
}
