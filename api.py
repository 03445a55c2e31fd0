"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .core.errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .core.progress import Cancelled, CancelToken, ProgressFn

if TYPE_CHECKING:
    import torch

    from .nodes.animegamer.mllm.game_state import Game
    from .nodes.animegamer.mllm.model import AnimeGamerMLLM
    from .nodes.animegamer.mllm.step import StepResult
    from .nodes.dynamicrafter.model import DynamiCrafterModel
    from .nodes.vc2.model import VC2Model

__version__ = "0.1.0"


# ----------------------------------------------------------------------------- VideoCrafter2 sampler


def load_vc2(source: str | os.PathLike[str] | Mapping[str, Any], config: Mapping[str, Any] | None = None) -> VC2Model:
    """Load a VideoCrafter2 / godmodeanimation checkpoint (fp32, CPU) from a path or a state dict.

    Formats are detected by keys and shapes: the original ``model.ckpt``, godmodeanimation Lightning
    checkpoints (optimizer state never read), ``.safetensors`` conversions with or without prefixes,
    and UNet-only mappings (the sampler then uses VC2's own schedule and ``scale_arr``).  ``config``
    overrides the UNet hyper-parameters inferred from the shapes.  The result's
    ``unet(x, timesteps, context, fps)`` maps ``[B,4,T,H,W]`` latents to the noise prediction; move
    parts to a GPU with ``model.unet.to("cuda")``.  Non-VC2 files raise :class:`ModelFileError`.
    """
    from .nodes.vc2.model import load_model

    return load_model(source, config=config)


def encode_vc2_text(model: VC2Model, texts: str | Sequence[str]) -> torch.Tensor:
    """``[B, 77, 1024]`` conditioning from the checkpoint's OpenCLIP weights (``""`` = unconditional)."""
    from .nodes.vc2.model import encode_text

    return encode_text(model, texts)


def vc2_token_count(text: str) -> tuple[int, str]:
    """(OpenCLIP tokens including start/end, text cut off past the 77-token window; empty if none)."""
    from .nodes.vc2.text_encoder import token_report

    report = token_report(text)
    return report.tokens, report.cut_text


def sample_vc2(
    model: VC2Model,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    steps: int = 50,
    cfg: float = 12.0,
    eta: float = 1.0,
    fps: int = 16,
    x_T: torch.Tensor | None = None,
    seed: int | None = None,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Run VC2's original DDIM (leading timesteps +1, eta, CFG, fps, ``scale_arr``); final latents ``[B,4,T,H,W]``.

    ``x_T`` is the start latent; without it the noise is drawn on the CPU from ``seed`` for one
    16-frame 320x512 clip per context row.  ``noise`` optionally gives the per-step noises for eta > 0
    (added as sigma_i * noise[i] in sampling order) so a run is reproducible exactly.  Step counts that
    do not divide 1000 keep the stride ``1000 // steps`` and run exactly ``steps`` steps.
    """
    from .nodes.vc2.model import sample

    return sample(
        model, context, uncond_context, steps=steps, cfg=cfg, eta=eta, fps=fps, x_T=x_T, seed=seed, noise=noise
    )


def decode_vc2(model: VC2Model, latents: torch.Tensor, chunk: int = 1, tiled: bool = False) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` float32 0..1, decoded ``chunk`` frames at a time."""
    from .nodes.vc2.model import decode

    return decode(model, latents, chunk=chunk, tiled=tiled)


# ----------------------------------------------------------------------------- DynamiCrafter / ToonCrafter image-to-video


def load_dynamicrafter(
    source: str | os.PathLike[str] | Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> DynamiCrafterModel:
    """Load a DynamiCrafter-family checkpoint (fp32, CPU) from a path or a state dict in the original layout.

    Accepted (detected by keys and shapes): DynamiCrafter 512 ``model.ckpt`` (and interp/loop variants),
    ToonCrafter ``model.ckpt``, the godmodeanimation Run Lightning checkpoint (optimizer state never read),
    ``.safetensors`` conversions, and mappings with ``model.diffusion_model.*`` + ``image_proj_model.*``
    (``embedder.*``, ``cond_stage_model.*``, ``first_stage_model.*`` optional).  ``config`` overrides
    hyper-parameters inferred from the shapes, in the original's names, flat or nested as the YAML
    (UNet: ``model_channels``, ``channel_mult``, ``attention_resolutions``, ``num_head_channels``,
    ``context_dim``, ``default_fs`` ...; Resampler: ``dim``, ``depth``, ``heads``, ``dim_head``,
    ``num_queries``, ``embedding_dim``, ``output_dim``, ``video_length``).  The result has
    ``unet(x, timesteps, context, fs)`` (``x`` ``[B,8,T,H,W]`` = noisy latent ⊕ conditioning latents,
    ``context`` ``[B,77+Q,D]`` = text then image tokens, ``fs`` ``[B]``) -> ``[B,4,T,H,W]`` (v-prediction),
    and ``project_image(features)`` mapping CLIP image features ``[B,257,E]`` to ``[B,Q,D]``.
    """
    from .nodes.dynamicrafter.model import load_model

    return load_model(source, config=config)


def dynamicrafter_conditioning(
    model: DynamiCrafterModel,
    image: torch.Tensor,
    prompt: str = "",
    frames: int = 16,
    end_image: torch.Tensor | None = None,
    cfg: float = 7.5,
) -> Any:
    """Contexts and conditioning latents for one clip per image row (``.context``, ``.uncond_context``, ``.latents``).

    ``image`` is an IMAGE ``[B,H,W,3]`` 0..1 (sizes multiples of 8; the models were trained at 320x512).
    Without ``end_image`` it is image-to-video (the first frame's latent on every frame); with it, keyframe
    inbetweening (first and last latents, zeros between; ToonCrafter).  The unconditional context (for
    ``cfg`` != 1) is the empty prompt with a mid-grey image, as the original.  Needs a full checkpoint.
    """
    from .nodes.dynamicrafter.model import build_conditioning

    return build_conditioning(model, image, prompt=prompt, frames=frames, end_image=end_image, cfg=cfg)


def sample_dynamicrafter(
    model: DynamiCrafterModel,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    cond_latents: torch.Tensor,
    steps: int = 50,
    cfg: float = 7.5,
    eta: float = 1.0,
    fs: int = 24,
    guidance_rescale: float = 0.7,
    spacing: str = "uniform_trailing",
    x_T: torch.Tensor | None = None,
    seed: int | None = None,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
) -> torch.Tensor:
    """DynamiCrafter's original DDIM: v-prediction, zero-terminal-SNR schedule, ``scale_arr``, eta, CFG,
    guidance rescale, "uniform_trailing" (or "uniform") timesteps; final latents ``[B,4,T,h,w]``.

    ``cond_latents`` (from :func:`dynamicrafter_conditioning`) are concatenated to the noisy latent on
    channels at every step.  ``x_T`` defaults to CPU noise from ``seed``; ``noise`` optionally fixes the
    per-step noises for eta > 0 (added as sigma_i * noise[i] in sampling order).  ``fs`` is the frame
    stride condition: 24 suits DynamiCrafter/Run image-to-video, 10 ToonCrafter inbetweening.
    """
    from .nodes.dynamicrafter.model import sample

    return sample(
        model, context, uncond_context, cond_latents, steps=steps, cfg=cfg, eta=eta, fs=fs,
        guidance_rescale=guidance_rescale, spacing=spacing, x_T=x_T, seed=seed, noise=noise,
    )  # fmt: skip


def decode_dynamicrafter(
    model: DynamiCrafterModel,
    latents: torch.Tensor,
    chunk: int = 1,
    keyframes: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` float32 0..1.

    DynamiCrafter / Run: decoded ``chunk`` frames at a time.  ToonCrafter (``model.dual_reference_vae``): its
    decoder reads the keyframes back, so ``keyframes`` = (first, last) IMAGEs ``[B or 1, 8h, 8w, 3]`` 0..1 (the
    images given to :func:`dynamicrafter_conditioning`) is required; it decodes up to 16 frames together and
    re-decodes the two middle frames as the released ToonCrafter scripts (``chunk`` does not apply).
    """
    from .nodes.dynamicrafter.model import decode

    return decode(model, latents, chunk=chunk, keyframes=keyframes)


# ----------------------------------------------------------------------------- LoRA training for VC2


def train_lora(model: VC2Model, dataset: Any, **settings: Any) -> Any:
    """Train a VC2 LoRA headless and return the finished :class:`~.trainers.loop.TrainingRun`.

    ``dataset`` is a :class:`~.trainers.datasets.TrainDataset` or a folder of still images (with
    same-name ``.txt`` captions and kohya ``N_name`` repeat folders).  ``settings`` are the fields of
    :class:`~.trainers.loop.TrainSettings` (targets, rank, alpha, learning_rate, lr_schedule, batch_size,
    grad_accum, gradient_checkpointing, precision, seed, caption_dropout, still_ratio, checkpoint_every,
    checkpoint_path, ...) plus: ``steps`` (default ``total_steps``), ``trigger``/``width``/``height``
    (folder datasets), ``resume`` (default True: continue from ``checkpoint_path``), ``progress``
    (may raise to cancel; a checkpoint is written first) and ``output_dir`` + ``name`` to save the
    LoRA there (never overwriting; the path is ``run.saved_path``).
    """
    from pathlib import Path

    from .trainers.datasets import TrainDataset, load_stills
    from .trainers.loop import TrainSettings, start_training, train
    from .trainers.lora_file import save_lora

    options = dict(settings)
    steps = options.pop("steps", None)
    progress = options.pop("progress", None)
    resume = options.pop("resume", True)
    output_dir = options.pop("output_dir", None)
    name = options.pop("name", "gameanim_lora")
    trigger = options.pop("trigger", "")
    width, height = options.pop("width", 256), options.pop("height", 256)
    config = TrainSettings.from_kwargs(**options)
    if not isinstance(dataset, TrainDataset):
        dataset = TrainDataset(stills=load_stills(Path(dataset), width, height, trigger=trigger), trigger=trigger)
    run = start_training(model, dataset, config, resume=resume)
    remaining = (steps if steps is not None else config.total_steps) - run.step
    if remaining > 0:
        train(run, remaining, progress)
    run.saved_path = save_lora(run.lora_state(), output_dir, name, run.metadata()) if output_dir else None
    return run


def apply_lora(
    model: VC2Model, path: str | os.PathLike[str], strength: float = 1.0, allow_other_base: bool = False
) -> VC2Model:
    """A new VC2 model with the GameAnim LoRA at ``path`` merged at ``strength`` (``model`` is unchanged).

    Apply again to stack LoRAs; strength 0 gives the base model's output exactly.  A LoRA from another
    tool (foreign keys), a damaged file or one trained on a different base model raises
    :class:`ModelFileError` (``allow_other_base=True`` skips only the base check).
    """
    from .trainers.lora_file import apply_lora_file

    return apply_lora_file(model, path, strength, allow_other_base)


# ----------------------------------------------------------------------------- sprite toolkit (frames are IMAGE-style tensors [T,H,W,3] float 0..1, alpha [T,H,W])


def remove_background(
    frames: Any,
    mask: Any | None = None,
    low: float = 1.0,
    high: float = 16.0,
    border: int = 4,
    cleanup: int = 1,
    progress: ProgressFn | None = None,
    min_hole: int = 24,
) -> tuple[Any, Any]:
    """Key out a (nearly) solid background: ``(rgb [T,H,W,3], alpha [T,H,W])`` float tensors.

    The background of each frame is a smooth surface (gradients and vignettes included) fitted to
    a ``border``-px band; the tolerance is measured from the clip's own background noise (never
    below ``low`` ΔE); background is what lies within it *and* connects to the frame border, plus
    enclosed pockets of at least ``min_hole`` px, except pockets the clip shows to be drawn parts
    (they stay enclosed, with their shape, in the frames where the body deforms, like a white visor
    on white).  The anti-aliased rim is unmixed and despilled; where a pixel keeps its colour from
    frame to frame its alpha is averaged over those frames.
    With an external ``mask`` (alpha, 1 = opaque; [T,H,W] or [H,W]) that mask is the alpha and only
    the edge despill runs.  Raises :class:`InputError` for an empty batch, NaN frames, a mask whose
    size does not match, or a background that is not solid (noise above ``high`` ΔE, a scene).
    """
    from .nodes.sprite import operations

    rgb, alpha, _ = operations.remove_background(frames, mask, low, high, border, cleanup, progress, min_hole)
    return rgb, alpha


def stabilise(
    rgb: Any,
    alpha: Any,
    anchor: str = "feet",
    mode: str = "lock",
    sigma: float = 2.0,
    padding: int = 2,
    progress: ProgressFn | None = None,
    pose_keypoint: Any | None = None,
) -> tuple[Any, Any, list[tuple[int, int]]]:
    """Anchor every frame at its pivot and crop all frames to one fixed canvas.

    ``anchor``: ``feet`` (x from the body: torso and hip bands matched across frames, not the feet,
    which alternate in a walk; y from the ground line of the frames in contact), ``centroid`` or
    ``bbox_center``.  ``mode``: ``lock`` (pivot at one canvas pixel in every
    frame: in-place cycles, or a walk with its root motion taken out), ``smooth`` (Gaussian-smoothed track with ``sigma`` frames, keeps
    slow motion, removes jitter) or ``none`` (only the common canvas).  Shifts are whole pixels.
    ``pose_keypoint`` (the POSE_KEYPOINT list the clip was rendered from, one per frame) makes
    the pivot's x the rig root (mid-hip, scaled from the pose canvas to the frame size); frames
    with hidden hips fall back to the body estimate.
    Returns ``(rgb, alpha, offsets)`` with ``offsets[t] = (dx, dy)``: input pixel ``(x, y)`` of
    frame ``t`` is at ``(x + dx, y + dy)`` on the canvas.
    """
    from .core.frames import to_tensor
    from .nodes.sprite import operations

    result = operations.stabilise(
        rgb,
        alpha,
        anchor=anchor,
        mode=mode,
        sigma=sigma,
        padding=padding,
        progress=progress,
        pose_keypoint=pose_keypoint,
    )
    offsets = [(int(dx), int(dy)) for dx, dy in result.offsets]
    return to_tensor(result.rgb), to_tensor(result.alpha), offsets


def sprite_sheet(
    rgb: Any,
    alpha: Any,
    columns: int | None = None,
    layout: str = "grid",
    padding: int = 1,
    extrude: int = 0,
    power_of_two: bool = False,
    fps: float = 12.0,
    durations_ms: Any | None = None,
    merge_holds: bool = False,
    name: str = "sprite",
    image: str = "sprite.png",
    root_motion: Any | None = None,
) -> tuple[Any, dict]:
    """Pack frames on one sheet: ``(sheet_rgba [1,H,W,4] float tensor, atlas)``.

    ``atlas`` is TexturePacker JSON-hash data (what Phaser's ``load.atlas`` and PixiJS read):
    ``frames[name] = {frame: {x,y,w,h}, trimmed, spriteSourceSize, sourceSize, duration}`` and
    ``meta = {image, size: {w,h}, ...}``.  ``layout`` is ``grid`` (``columns`` per row, default
    near-square) or ``packed`` (trimmed, shelf-packed).  Durations are ``1000 / fps`` ms or
    ``durations_ms``; ``merge_holds`` merges identical consecutive frames into longer durations.
    ``root_motion`` (Stabilise's offsets_json, text or dict) adds ``root: {x, y}`` to every frame:
    the travel taken out, in sheet pixels from the first frame, to add to the sprite's position.
    """
    from .core.frames import to_tensor
    from .nodes.sprite import operations
    from .nodes.sprite.sheet import texturepacker

    built = operations.build_sheet(
        rgb,
        alpha,
        columns,
        layout,
        padding,
        extrude,
        power_of_two,
        fps,
        durations_ms,
        merge_holds,
        name,
        root_motion=root_motion,
    )
    return to_tensor(built.rgba[None].astype("float32") / 255.0), texturepacker(built, image)


def save_sprite_sheet(
    rgb: Any,
    alpha: Any,
    directory: str | os.PathLike[str],
    name: str = "sprite",
    formats: tuple[str, ...] = ("texturepacker_hash", "aseprite_hash", "godot4"),
    **sheet_options: Any,
) -> list[Path]:
    """Build a sheet (options as :func:`sprite_sheet`) and write ``<name>.png`` plus atlas files.

    ``formats`` from ``texturepacker_hash``, ``texturepacker_array``, ``aseprite_hash``,
    ``aseprite_array``, ``godot4`` (SpriteFrames ``.tres``), ``godot3``.  ``name`` is confined to
    ``directory`` (no absolute paths, no ``..``).  Returns the written paths, PNG first.
    """
    from .nodes.sprite import operations

    built = operations.build_sheet(rgb, alpha, name=Path(name).name, **sheet_options)
    return operations.write_sheet(built, directory, name, tuple(formats))


def hold_frames(frames: Any, step: int = 2) -> Any:
    """Animate on twos (``step=2``), threes, ...: same frame count, each ``step``-th frame held.

    ``frames`` is anything indexed by frame first (IMAGE, MASK, RGBA): call it on each.
    """
    from .nodes.sprite.playback import hold_indices

    return frames[hold_indices(len(frames), step)]


def resample_frames(frames: Any, count: int) -> Any:
    """Drop or repeat evenly spread frames so exactly ``count`` remain."""
    from .nodes.sprite.playback import resample_indices

    return frames[resample_indices(len(frames), count)]


def retime(frames: Any, fps_in: float, fps_out: float) -> Any:
    """Resample a clip from ``fps_in`` to ``fps_out`` keeping its duration (nearest earlier frame)."""
    from .nodes.sprite.playback import retime_indices

    return frames[retime_indices(len(frames), fps_in, fps_out)]


def ping_pong(frames: Any) -> Any:
    """Forward then backward (``0..n-1, n-2..1``), a seamless loop from a one-way clip."""
    from .nodes.sprite.playback import ping_pong_indices

    return frames[ping_pong_indices(len(frames))]


def find_loop(frames: Any, alpha: Any | None = None, min_length: int = 4) -> tuple[int, int, float]:
    """Loop closure: ``(start, end, score)`` such that ``frames[start:end]`` loops seamlessly.

    ``frames[end]`` is the frame most like ``frames[start]`` (mean absolute thumbnail difference
    ``score``) among pairs at least ``min_length`` apart.
    """
    from .core.frames import rgb_alpha
    from .nodes.sprite.playback import find_loop as _find_loop

    rgb, a = rgb_alpha(frames, alpha)
    return _find_loop(rgb, a, min_length)


def load_palette(path: str | os.PathLike[str]) -> Any:
    """Read a Lospec ``.hex`` or GIMP ``.gpl`` palette as a float tensor ``[K,3]`` in 0..1."""
    from .core.frames import to_tensor
    from .nodes.sprite.pixelart import load_palette as _load

    return to_tensor(_load(path))


def pixelate(
    rgb: Any,
    alpha: Any,
    width: int,
    height: int,
    palette: str = "kmeans",
    colours: int = 16,
    palette_colours: Any | None = None,
    outline_colour: tuple[float, float, float] | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> tuple[Any, Any]:
    """Pixel art: nearest downscale to ``width x height``, one palette for the whole clip, binary alpha.

    ``palette``: ``none``, ``kmeans`` / ``median_cut`` (``colours`` entries, from the clip's
    opaque pixels), ``pico8``, or ``file`` with ``palette_colours`` from :func:`load_palette`.
    ``outline_colour`` (RGB 0..1) adds a 1-px outline around the sprite.
    """
    ((out_rgb, out_a),) = pixelate_clips(
        [(rgb, alpha)], width, height, palette, colours, True, palette_colours, outline_colour, seed, progress
    )
    return out_rgb, out_a


def pixelate_clips(
    clips: list[tuple[Any, Any]],
    width: int,
    height: int,
    palette: str = "kmeans",
    colours: int = 16,
    shared: bool = True,
    palette_colours: Any | None = None,
    outline_colour: tuple[float, float, float] | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> list[tuple[Any, Any]]:
    """Pixel art for every ``(rgb, alpha)`` clip of a character (its walk, attack, idle ...) at once.

    ``shared`` fits one ``kmeans`` / ``median_cut`` palette over the opaque pixels of all clips, so
    every animation uses the same <= ``colours`` colours; ``shared=False`` gives each clip its own.
    Other options as :func:`pixelate`.  Returns ``[(rgb, alpha)]`` tensors, one per clip.
    """
    from .core.frames import to_numpy, to_tensor
    from .nodes.sprite import operations

    pal = None if palette_colours is None else to_numpy(palette_colours, "palette_colours")
    results = operations.pixelate_clips(
        clips,
        width,
        height,
        palette=palette,
        colours=colours,
        palette_colours=pal,
        outline_colour=outline_colour,
        seed=seed,
        progress=progress,
        shared=shared,
    )
    return [(to_tensor(rgb), to_tensor(alpha)) for rgb, alpha, _ in results]


def export_animation(
    rgb: Any,
    alpha: Any | None,
    directory: str | os.PathLike[str],
    name: str,
    format: str = "gif",
    fps: float = 12.0,
    durations_ms: Any | None = None,
    loop: int = 0,
) -> list[Path]:
    """Save an animation with alpha: ``gif`` (1-bit alpha), ``apng``, ``webp`` or ``png_sequence``.

    ``name`` is confined to ``directory``; files are written atomically.  Returns the paths.
    """
    from .nodes.sprite import operations

    return operations.export_animation(rgb, alpha, directory, name, format, fps, durations_ms, loop)


# ----------------------------------------------------------------------------- animation timing (keys, timing charts, smears)


def key_poses(
    frames: Any,
    alpha: Any | None = None,
    max_keys: int | None = None,
    *,
    pose: Any | None = None,
    breakdowns: bool = False,
    loop: bool = False,
    progress: ProgressFn | None = None,
) -> list[int]:
    """Key poses of a clip as sorted frame indices, first and last frame included (unless ``loop``).

    Keys are holds (the frame a still pose is reached), motion minima (a swing's extremes), sharp
    direction changes and contacts, found from optical flow, the sprite's ``alpha`` ([T,H,W], or the
    4th channel of ``frames``) and optionally the rig's joints (``pose``: POSE_KEYPOINT, one entry per
    frame).  Steady motion yields no key.  ``max_keys`` keeps the strongest; ``breakdowns`` adds
    the fastest frame between each two keys.  ``loop=True`` reads the clip as a cycle (its first
    frame follows its last, e.g. a walk): the seam is searched too and no end is forced (frame 0 when
    nothing else is a key).  :func:`key_pose_report` gives the reasons.
    """
    report = key_pose_report(frames, alpha, max_keys, pose=pose, breakdowns=breakdowns, loop=loop, progress=progress)
    return sorted(k["frame"] for k in report)


def key_pose_report(
    frames: Any,
    alpha: Any | None = None,
    max_keys: int | None = None,
    *,
    pose: Any | None = None,
    breakdowns: bool = False,
    loop: bool = False,
    progress: ProgressFn | None = None,
) -> list[dict[str, Any]]:
    """The keys of :func:`key_poses` ranked strongest first: ``{"frame", "score", "reason"}`` each."""
    from .nodes.timing.clip_motion import measure
    from .nodes.timing.keyposes import find_key_poses

    ranked = find_key_poses(measure(frames, alpha, pose, progress, loop), max_keys, breakdowns)
    return [{"frame": k.frame, "score": k.score, "reason": k.reason} for k in ranked]


def time_animation(
    frames: Any,
    keys: Sequence[int],
    on: int = 2,
    hold: int = 2,
    spacing: str = "ease-in-out",
    *,
    alpha: Any | None = None,
    anticipation: float = 0.0,
    overshoot: float = 0.0,
    inbetween: str = "flow",
    pose: Any | None = None,
    loop: bool = False,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[int]]:
    """Rebuild a clip from its ``keys`` with a timing chart: ``(out_frames, durations)``.

    Each key is held ``hold`` frames; between two keys ``L`` frames apart come
    ``round((L - hold) / on)`` in-betweens of ``on`` frames each, spaced along the distance travelled
    by ``spacing`` (``even``, ``ease-in`` u², ``ease-out`` 1-(1-u)², ``ease-in-out`` piecewise
    quadratic; see ``docs/timing.md``), optionally with ``anticipation``/``overshoot``.  In-betweens
    are source frames where one sits at the wanted place, else warped along the optical flow
    (``inbetween="flow"``) or the nearest source frame (``"nearest"``).  The first and last frame
    always act as keys, unless ``loop=True``: then the clip is a cycle (its first frame follows its
    last), the segment from the last key back to the first is timed like the others, and the output
    starts at the first key and loops without repeating it.  ``out_frames`` is a float32 IMAGE tensor with the input's channels (RGBA in,
    RGBA out; with ``alpha`` given, ``[T,H,W,4]``); every key frame appears in it unchanged and in
    order.  ``durations`` holds one integer per output frame in source-frame units.
    """
    import numpy as np
    import torch

    from .nodes.timing.clip_motion import measure
    from .nodes.timing.retime import retime

    motion = measure(frames, alpha, pose, progress, loop)
    result = retime(frames, alpha, motion, list(keys), on, hold, spacing, anticipation, overshoot, inbetween, progress)
    out = result.rgb if result.alpha is None else np.concatenate([result.rgb, result.alpha[..., None]], axis=-1)
    return torch.from_numpy(np.ascontiguousarray(out, np.float32)), list(result.durations)


def smear_frames(
    frames: Any,
    alpha: Any,
    threshold: float = 8.0,
    strength: float = 0.7,
    style: str = "smear",
    copies: int = 3,
    keys: Sequence[int] | None = None,
) -> tuple[Any, Any, list[int]]:
    """Smears (``style="smear"``) or multiples on frames that moved more than ``threshold`` px.

    Returns ``(rgb [T,H,W,3], alpha [T,H,W], smeared frame indices)``; frames in ``keys`` and frames
    below the threshold come back unchanged.  ``strength`` (0..1) is how far back toward the
    previous pose the smear reaches.
    """
    import torch

    from .nodes.timing.smear import smear_frames as _smear

    result = _smear(frames, alpha, threshold, strength, style, copies, list(keys) if keys else None)
    return torch.from_numpy(result.rgb), torch.from_numpy(result.alpha), result.smeared


# ----------------------------------------------------------------------------- pose from rigs


def _pose_from_file(
    path: str | Path, camera: str, width: int, height: int, frames: Any, progress: ProgressFn | None
) -> tuple[Any, list[dict[str, Any]]]:
    import torch

    from .nodes.pose.conditions import CameraSettings, render_motion_file

    settings = CameraSettings(preset=camera, width=width, height=height)
    result = render_motion_file(path, settings, frames, progress=progress, as_float=True)
    return torch.from_numpy(result.pose_maps), result.keypoints


def pose_from_bvh(
    path: str | Path,
    camera: str = "side_right",
    width: int = 512,
    height: int = 512,
    frames: Any = None,
    *,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Render a BVH motion to orientation-true OpenPose maps, with no Blender and no weights.

    ``camera`` is a preset (front, back, side_left, side_right, three_quarter, top; orthographic,
    auto-fitted to the whole motion); ``frames`` is None (all), an int n (first n), a
    ``(start, stop, step)`` tuple or a list of frame indices.  The skeleton mapping is detected
    (Mixamo, CMU).  Returns ``(pose_images, pose_keypoint)``: a float32 tensor ``[T, H, W, 3]`` in
    0..1 (ComfyUI IMAGE) and the POSE_KEYPOINT list exactly as comfyui_controlnet_aux emits it.
    """
    return _pose_from_file(path, camera, width, height, frames, progress)


def pose_from_motion_json(
    path: str | Path,
    camera: str = "side_right",
    width: int = 512,
    height: int = 512,
    frames: Any = None,
    *,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Like :func:`pose_from_bvh` for a GameAnim JSON motion file (written by the Blender worker or
    the in-Blender export script ``nodes/pose/blender/gameanim_export_motion.py``)."""
    return _pose_from_file(path, camera, width, height, frames, progress)


# ----------------------------------------------------------------------------- motion scope


class MotionScope(NamedTuple):
    """Result of :func:`motion_scope`.

    ``scope``: mean foreground flow magnitude per frame pair, in pixels of a 480x720 reference frame
    (resolution-independent); ``level``: 1..5 with the default edges (0.7, 3.5, 12, 28);
    ``per_frame``: the value of each of the T-1 frame pairs.
    """

    scope: float
    level: int
    per_frame: tuple[float, ...]


def _raft_for(method: str) -> Any:
    """The RAFT model a RAFT ``method`` needs, from the ``optical_flow`` model folder (never downloaded)."""
    from .core.host import folder_paths_for
    from .nodes.motion.flow import cached_raft, find_raft_weights, resolve_method

    name = resolve_method(method)
    if not name.startswith("raft"):
        return None
    return cached_raft(find_raft_weights(name, folder_paths_for("optical_flow")), name)


def motion_scope(frames: Any, method: str = "dis", r: float = 0.2, mask: Any = None) -> MotionScope:
    """Measure a clip's motion scope the way AnimeGamer labels action intensity, from optical flow.

    ``frames``: IMAGE-style ``[T,H,W,3]`` float 0..1 (torch or numpy), T >= 2, all frames one size.
    ``method``: ``"dis"`` (= ``"dis_medium"``, default), ``"dis_fast"``, ``"dis_ultrafast"``,
    ``"farneback"``, or ``"raft_small"`` / ``"raft_large"`` with weights placed in
    ``models/optical_flow/`` (see docs/motion.md).  ``r``: foreground cut as a fraction of the clip's
    99th-percentile speed.  ``mask``: optional MASK ``[T,H,W]``/``[H,W]`` (>0.5 = measured), e.g.
    the character matte, so camera or background motion is ignored.  A clip without motion (static,
    all black) gives scope 0 and level 1, never NaN.
    """
    from .nodes.motion.measure import measure_clip

    measured = measure_clip(frames, method=method, r=r, mask=mask, raft_model=_raft_for(method))
    return MotionScope(measured.result.scope, measured.level, measured.result.per_frame)


def evaluate_motion(
    clips: Sequence[Any],
    targets: Sequence[int],
    method: str = "dis",
    r: float = 0.2,
    edges: Sequence[float] | None = None,
    progress: Any = None,
) -> Any:
    """ACC-F / MAE-F of generated ``clips`` against their target motion levels (1..5).

    Each clip is measured with :func:`motion_scope`'s estimator and binned with ``edges`` (default
    0.7, 3.5, 12, 28).  Returns a ``MotionEvaluation`` with ``acc_f`` (fraction of exact level
    matches), ``mae_f`` (mean absolute level difference), ``levels``, ``targets`` and ``scopes``.
    """
    from .nodes.motion.evaluate import evaluate_scopes
    from .nodes.motion.levels import DEFAULT_EDGES
    from .nodes.motion.measure import measure_clip

    raft = _raft_for(method)
    bounds = tuple(edges) if edges is not None else DEFAULT_EDGES

    def measure(clip: Any) -> float:
        return measure_clip(clip, method=method, r=r, raft_model=raft).result.scope

    return evaluate_scopes(clips, targets, measure, bounds, progress)


# ----------------------------------------------------------------------------- AnimeGamer MLLM step and game state


def load_animegamer_mllm(
    weights: str | os.PathLike[str] | Mapping[str, torch.Tensor],
    tokenizer: str | os.PathLike[str],
    base: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> AnimeGamerMLLM:
    """Load AnimeGamer's MLLM (Mistral-7B-Instruct-v0.1 + LoRA + resamplers) for :func:`game_step`.

    ``weights``: the path of ``MLLM-<char>/pytorch_model.bin`` (or a mapping in its key layout:
    ``llm.base_model.model.…`` with peft names, ``input_resampler.proj.*``, ``output_resampler.proj.*``).
    ``tokenizer``: AnimeGamer's ``animegamer_tokenizer`` folder (vocabulary and every added token are
    checked).  ``base``: the Mistral-7B-Instruct-v0.1 folder when ``weights`` lacks the base weights.
    ``config``: ``MistralConfig`` keyword overrides (``dtype`` picks the compute dtype, default bfloat16).
    The LoRA rank comes from the ``lora_A`` shapes (alpha = rank), the representation width from the
    resampler shapes.  Missing or mis-shaped tensors raise :class:`ModelFileError`.
    """
    from .nodes.animegamer.mllm.model import load_animegamer_mllm as load

    return load(weights, tokenizer, base=base, config=config)


def new_game(character: str, window: int = 1) -> Game:
    """A new AnimeGamer game (states at 50).  ``window`` 1 is the released behaviour (no history in the
    prompt); ``window`` > 1 shows the last ``window - 1`` turns with their own strengths and representations."""
    from .nodes.animegamer.mllm.game_state import new_game as make

    return make(character, window)


def game_step(
    model: AnimeGamerMLLM,
    game: Game,
    instruction: str,
    max_new_tokens: int = 200,
    progress: ProgressFn | None = None,
) -> tuple[Game, StepResult]:
    """Play one turn; returns the new game and the step (``representation`` 226×D, ``generated_ids``,
    ``text``, ``level``, ``flow``, ``deltas`` (SC, ET, ST), ``states``).  ``game`` itself is unchanged."""
    from .nodes.animegamer.mllm.step import game_step as step

    return step(model, game, instruction, max_new_tokens=max_new_tokens, progress=progress)


def save_game(game: Game, path: str | os.PathLike[str]) -> os.PathLike[str]:
    """Save a game atomically as ``<path>.game.json`` + a checksummed ``.safetensors``; returns the JSON path."""
    from .nodes.animegamer.mllm.game_state import save_game as save

    return save(game, path)


def load_game(path: str | os.PathLike[str]) -> Game:
    """Load a game saved by :func:`save_game`; a corrupt save raises :class:`ModelFileError`."""
    from .nodes.animegamer.mllm.game_state import load_game as load

    return load(path)


# ----------------------------------------------------------------------------- AnimeGamer shot decoder


def load_animegamer_decoder(source: str | os.PathLike[str], config: dict[str, Any] | None = None) -> Any:
    """Load the AnimeGamer shot decoder (CogVideoX-2B + flow embedding + E_a) on the CPU in float32.

    ``source``: the released SAT folder ``VDM_Decoder-<character>/`` (or its ``mp_rank_00_model_states.pt``; only
    the transformer tensors are streamed, the LoRA is merged), or a file written by
    :func:`convert_animegamer_decoder`.  ``config``: optional overrides in diffusers ``CogVideoXTransformer3DModel``
    names (the architecture is otherwise inferred from the tensor shapes).

    The returned module has ``transformer(latents [B,T,C,H,W], timestep [B] (0..999), cond_tokens [B,226,1920],
    flow [B]) -> v-prediction``, ``encode_conditions(t5_feats [B,30,4096], clip_patches [B,196,768]) -> tokens``
    (E_a) and ``decode_shot(representation, vae=None, motion_level=3, flow=None, steps=50, cfg_mode="released",
    cfg=6.0, seed=0, num_frames=17, height=480, width=720, vae_tiling=False, progress=None) -> Shot``.
    Move it with ``.to(device, dtype)``.
    """
    from .nodes.animegamer.decoder.convert import load_decoder

    return load_decoder(source, config)


def convert_animegamer_decoder(
    source: str | os.PathLike[str], target: str | os.PathLike[str], dtype: str = "float16", overwrite: bool = False
) -> Path:
    """Write the compact converted decoder (``dtype`` float16/bfloat16/float32, LoRA merged, config in metadata)."""
    import torch

    from .nodes.animegamer.decoder.convert import convert_to_file

    if dtype not in ("float16", "bfloat16", "float32"):
        raise InputError(f"dtype '{dtype}' is not supported; use float16, bfloat16 or float32.")
    return convert_to_file(source, target, dtype=getattr(torch, dtype), overwrite=overwrite)


def load_animegamer_vae(source: str | os.PathLike[str]) -> Any:
    """The CogVideoX VAE (diffusers ``AutoencoderKLCogVideoX``) from a diffusers ``vae/`` folder or SAT ``3d-vae.pt``."""
    from .nodes.animegamer.decoder.vae import load_vae

    return load_vae(source)


__all__ = [
    "apply_lora",
    "Cancelled",
    "CancelToken",
    "convert_animegamer_decoder",
    "decode_dynamicrafter",
    "decode_vc2",
    "dynamicrafter_conditioning",
    "encode_vc2_text",
    "evaluate_motion",
    "export_animation",
    "find_loop",
    "game_step",
    "GameAnimError",
    "hold_frames",
    "InputError",
    "key_pose_report",
    "key_poses",
    "load_animegamer_decoder",
    "load_animegamer_mllm",
    "load_animegamer_vae",
    "load_game",
    "load_palette",
    "load_dynamicrafter",
    "load_vc2",
    "ModelFileError",
    "motion_scope",
    "MotionScope",
    "new_game",
    "NumericalError",
    "ping_pong",
    "pixelate",
    "pixelate_clips",
    "pose_from_bvh",
    "pose_from_motion_json",
    "remove_background",
    "resample_frames",
    "retime",
    "sample_dynamicrafter",
    "sample_vc2",
    "save_game",
    "save_sprite_sheet",
    "smear_frames",
    "sprite_sheet",
    "stabilise",
    "time_animation",
    "train_lora",
    "UnsafePathError",
    "vc2_token_count",
    "__version__",
]
