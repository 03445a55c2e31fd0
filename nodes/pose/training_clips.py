"""Training clips from a rigged character, as godmodeanimation made its data (through the Blender worker).

One clip per (character, action, view): a fixed number of frames sampled evenly over the action, the
camera following the root's ground travel with one framing for the whole action, lights, an optional
toon shader, rendered on a transparent film.  The key colour is composited here from that true alpha,
so a keyed frame and the alpha saved beside it agree exactly.  The dataset folder is the layout
**Training Dataset: Action Clips** reads (``trainers/datasets.py``)::

    <root>/train/v_<character>_<action>_<view>_<key>/
        v_..._0000.png …        keyed RGB frames (what the trainer reads)
        v_..._0000.txt …        the caption, one file per frame as in godmodeanimation's data
        alpha/v_..._0000.png …  the true alpha (8-bit, 255 = opaque) of each frame
        preview.gif             the clip at its fps, for a quick look
        render_params.json      everything that made the clip (action, frames, camera, lights, key, caption)

Captions come from the sampler's prompt builder (``nodes/vc2/prompts.py``): "Game character <action>
animation of <character>, side view, solid color background".  Each clip is rendered into
``<root>/.partial/`` and moved into ``train/`` with one rename, so an error or Cancel never leaves a
half-written clip where the trainer looks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from ..vc2.prompts import build_sprite_prompt
from .blender_client import RIG_SUFFIXES, BlenderError, BlenderWorker

KEYS: dict[str, tuple[int, int, int]] = {
    "grey": (128, 128, 128),
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "green": (0, 177, 64),
    "blue": (0, 71, 187),
    "magenta": (255, 0, 255),
}
VIEW_WORDS = {
    "side_right": "side view",
    "side_left": "side view facing left",
    "front": "front view",
    "back": "back view",
    "front_right": "three-quarter front view facing right",
    "front_left": "three-quarter front view facing left",
    "back_right": "three-quarter back view facing right",
    "back_left": "three-quarter back view facing left",
}
VIEWS = tuple(VIEW_WORDS)
ENGINES = ("workbench", "eevee", "cycles")
FACINGS = ("-Y", "+Y", "+X", "-X")
KEY_MODES = ("cycle", "all")
ACTION_SUFFIXES = (".fbx", ".bvh")
PARTIAL = ".partial"
_SLUG = re.compile(r"[^a-z0-9]+")
_ACTION_NOISE = re.compile(r"armature(\.\d+)?|mixamo\.com|layer\d+|action(\.\d+)?")


@dataclass
class ClipSettings:
    """How every clip is rendered (one set per batch)."""

    frames: int = 16
    width: int = 512
    height: int = 320
    engine: str = "workbench"
    toon: bool = False
    samples: int = 16
    margin: float = 0.08
    follow_root: bool = True
    facing: str = "-Y"
    background: str = "solid color background"
    fps: int = 8

    def check(self) -> None:
        if self.frames < 2:
            raise InputError(f"A training clip needs at least 2 frames, got {self.frames}.")
        if self.width < 16 or self.height < 16:
            raise InputError(f"Clip size {self.width}x{self.height} is too small; use at least 16x16.")
        if self.engine not in ENGINES:
            raise InputError(f"Unknown render engine {self.engine!r}; choose one of {', '.join(ENGINES)}.")
        if self.facing not in FACINGS:
            raise InputError(f"Unknown facing {self.facing!r}; choose one of {', '.join(FACINGS)}.")
        if not 0.0 <= self.margin < 0.5:
            raise InputError(f"margin must be in [0, 0.5), got {self.margin}.")


@dataclass
class ActionSpec:
    """One action to render: an action of the character file (``name``) or an action file, and its caption words."""

    name: str = ""
    file: Path | None = None
    words: str = ""

    @property
    def label(self) -> str:
        return self.file.stem if self.file is not None else self.name


@dataclass
class Clip:
    """A finished clip folder and what it holds."""

    folder: Path
    caption: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)


def action_words(name: str) -> str:
    """Caption words from an action name: exporter noise ('Armature|', 'mixamo.com|Layer0') dropped,
    CamelCase and '_' split ('Armature|GreatSwordSlash' → 'great sword slash')."""
    parts = re.split(r"[|:]", name)
    kept = [p for p in parts if p and not _ACTION_NOISE.fullmatch(p.strip().lower())]
    text = kept[-1] if kept else parts[-1]
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    return " ".join(re.sub(r"[_\-.]+", " ", text).lower().split())


def parse_action_list(text: str, search: Sequence[Path] = ()) -> list[ActionSpec]:
    """Actions typed one per line (or comma-separated): ``name`` or ``name = caption words``.

    A name ending in .fbx/.bvh is an action file, looked up in ``search`` folders; anything else is an
    action of the character file.  An empty list means every action of the character file.
    """
    specs: list[ActionSpec] = []
    for raw in text.replace("\n", ",").split(","):
        item = raw.strip()
        if not item:
            continue
        name, _, words = (s.strip() for s in item.partition("="))
        if name.lower().endswith(ACTION_SUFFIXES):
            found = next((Path(b) / name for b in search if (Path(b) / name).is_file()), None)
            if found is None:
                where = ", ".join(str(b) for b in search) or "(no folder)"
                raise InputError(f"Action file {name!r} was not found in {where}.")
            specs.append(ActionSpec(file=found, words=words or action_words(Path(name).stem)))
        else:
            specs.append(ActionSpec(name=name, words=words or action_words(name)))
    return specs


def key_colour(name: str) -> tuple[int, int, int]:
    """A named key colour or '#rrggbb'."""
    value = name.strip().lower()
    if value in KEYS:
        return KEYS[value]
    if re.fullmatch(r"#[0-9a-f]{6}", value):
        return tuple(int(value[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]
    raise InputError(f"Unknown key colour {name!r}; use one of {', '.join(KEYS)} or '#rrggbb'.")


def parse_keys(text: str) -> list[str]:
    keys = [k.strip().lower() for k in text.replace("\n", ",").split(",") if k.strip()]
    if not keys:
        raise InputError("No key colour given; list some, e.g. 'grey, white, green'.")
    for key in keys:
        key_colour(key)
    return keys


def parse_views(text: str) -> list[str]:
    views = [v.strip().lower() for v in text.replace("\n", ",").split(",") if v.strip()]
    unknown = [v for v in views if v not in VIEW_WORDS]
    if unknown or not views:
        raise InputError(f"Unknown view {', '.join(unknown) or '(none)'}; choose from {', '.join(VIEWS)}.")
    return views


def clip_caption(words: str, character: str, view: str, background: str) -> str:
    """The godmodeanimation caption, built by the sampler's prompt builder."""
    return build_sprite_prompt(words, character, VIEW_WORDS[view], background).text


def slug(*parts: str) -> str:
    return "v_" + "_".join(_SLUG.sub("-", p.lower()).strip("-") or "x" for p in parts)


def composite_on_key(rgba: np.ndarray, key: tuple[int, int, int]) -> np.ndarray:
    """Straight-alpha RGBA uint8 over a solid key → RGB uint8 (``rgb * a + key * (1 - a)``)."""
    alpha = rgba[..., 3:4].astype(np.float32) / 255.0
    rgb = rgba[..., :3].astype(np.float32) * alpha + np.asarray(key, np.float32) * (1.0 - alpha)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _write_clip(
    folder: Path, name: str, rgba: list[np.ndarray], key: str, caption: str, params: dict, fps: int
) -> None:
    from PIL import Image

    (folder / "alpha").mkdir(parents=True)
    keyed = [composite_on_key(frame, key_colour(key)) for frame in rgba]
    files = []
    for i, (rgb, frame) in enumerate(zip(keyed, rgba, strict=True)):
        stem = f"{name}_{i:04d}"
        Image.fromarray(rgb).save(folder / f"{stem}.png")
        Image.fromarray(frame[..., 3]).save(folder / "alpha" / f"{stem}.png")
        (folder / f"{stem}.txt").write_text(caption + "\n", encoding="utf-8")
        files.append(f"{stem}.png")
    pictures = [Image.fromarray(rgb) for rgb in keyed]
    pictures[0].save(
        folder / "preview.gif", save_all=True, append_images=pictures[1:], duration=round(1000 / fps), loop=0
    )
    record = {**params, "key": key, "key_rgb": list(key_colour(key)), "caption": caption, "saved_files": files}
    (folder / "render_params.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def _publish(staged: Path, target: Path, partial: Path) -> None:
    """Move a finished clip into place with one rename (an older clip of the same name is replaced)."""
    old = None
    if target.exists():
        old = partial / f"old_{target.name}_{os.getpid()}"
        os.replace(target, old)
    os.replace(staged, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _read_rgba(paths: list[str]) -> list[np.ndarray]:
    from PIL import Image

    frames = []
    for path in paths:
        with Image.open(path) as img:
            frames.append(np.asarray(img.convert("RGBA")))
    return frames


def _request_clip(worker: BlenderWorker, cmd: str = "clip", **params: Any) -> dict[str, Any]:
    """A worker request whose file problems (the worker's ClipError) come back as plain :class:`InputError`."""
    try:
        return worker.request(cmd, **params)
    except BlenderError as exc:
        marker = "ClipError: "
        text = str(exc)
        if marker in text:
            raise InputError(text.split(marker, 1)[1]) from None
        raise


def render_training_clips(
    character: str | os.PathLike[str],
    root: str | os.PathLike[str],
    character_words: str,
    actions: Sequence[ActionSpec] = (),
    views: Sequence[str] = ("side_right",),
    keys: Sequence[str] = ("grey",),
    key_mode: str = "cycle",
    settings: ClipSettings | None = None,
    blender: str = "",
    progress: ProgressFn | None = None,
    timeout: float = 1800.0,
) -> list[Clip]:
    """Render every (action, view) of ``character`` into the dataset folder ``root``; see the module docstring.

    ``key_mode`` 'cycle' gives clip *i* the key ``keys[i % len(keys)]``; 'all' writes one clip per key from the
    same render (compositing is free).  Progress counts rendered frames; raising from it cancels after
    the current frame, and the unfinished clip is removed.
    """
    settings = settings or ClipSettings()
    settings.check()
    character = Path(character)
    if not character.is_file():
        raise InputError(f"Character file not found: {character}")
    if character.suffix.lower() not in RIG_SUFFIXES:
        raise InputError(f"{character.name}: use a rigged character as .fbx, .glb/.gltf or .blend.")
    if key_mode not in KEY_MODES:
        raise InputError(f"Unknown key_mode {key_mode!r}; choose 'cycle' or 'all'.")
    for view in views:
        if view not in VIEW_WORDS:
            raise InputError(f"Unknown view {view!r}; choose one of {', '.join(VIEWS)}.")
    for key in keys:
        key_colour(key)
    if not keys or not views:
        raise InputError("Give at least one view and one key colour.")
    root = Path(root)
    train, partial = root / "train", root / PARTIAL
    train.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(partial, ignore_errors=True)  # left by a killed run; never read by the trainer
    partial.mkdir()
    report = progress or no_progress
    clips: list[Clip] = []
    try:
        with BlenderWorker(blender, timeout) as worker:
            specs = list(actions)
            if not specs:
                names = _request_clip(worker, "actions", path=str(character.resolve()))["actions"]
                if not names:
                    raise InputError(
                        f"{character.name} has no action that animates its armature; list action files "
                        "(FBX exported without skin, or BVH with the same bone names)."
                    )
                specs = [ActionSpec(name=n, words=action_words(n)) for n in names]
            jobs = [(spec, view) for spec in specs for view in views]
            total = len(jobs) * settings.frames
            for index, (spec, view) in enumerate(jobs):
                done_before = index * settings.frames
                staging = partial / f"render_{index}"
                staging.mkdir()
                answer = _request_clip(
                    worker,
                    progress=lambda done, _total, base=done_before: report(base + done, total),
                    character=str(character.resolve()),
                    action=spec.name or None,
                    action_file=str(spec.file.resolve()) if spec.file is not None else None,
                    view=view,
                    out_dir=str(staging),
                    frames=settings.frames,
                    width=settings.width,
                    height=settings.height,
                    engine=settings.engine,
                    toon=settings.toon,
                    samples=settings.samples,
                    margin=settings.margin,
                    follow=settings.follow_root,
                    facing=settings.facing,
                )
                rgba = _read_rgba(answer["frames"])
                params = {**answer["params"], "settings": asdict(settings), "action_words": spec.words}
                caption = clip_caption(spec.words, character_words, view, settings.background)
                clip_keys = list(keys) if key_mode == "all" else [keys[index % len(keys)]]
                for key in clip_keys:
                    name = slug(character.stem, spec.label, view, key)
                    staged = partial / name
                    _write_clip(staged, name, rgba, key, caption, params, settings.fps)
                    _publish(staged, train / name, partial)
                    clips.append(Clip(train / name, caption, key, params))
                shutil.rmtree(staging)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return clips


def read_clip(folder: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """A written clip back as keyed frames (F, H, W, 3) uint8, alpha (F, H, W) uint8 and its render params."""
    from PIL import Image

    folder = Path(folder)
    params = json.loads((folder / "render_params.json").read_text(encoding="utf-8"))
    frames, alphas = [], []
    for name in params["saved_files"]:
        with Image.open(folder / name) as img:
            frames.append(np.asarray(img.convert("RGB")))
        with Image.open(folder / "alpha" / name) as img:
            alphas.append(np.asarray(img.convert("L")))
    return np.stack(frames), np.stack(alphas), params
