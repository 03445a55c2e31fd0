"""The LoRA training loop for VC2: faithful forward process, exact checkpoints, cancel-safe steps.

Objective (as godmodeanimation's ``train.py`` / LVDM ``p_losses``): eps-prediction MSE with
``t ~ U{0..999}`` and VC2's forward process ``x_t = sqrt(a_t) * scale_arr[t] * x0 + sqrt(1 - a_t) * eps``
(``use_scale``: the clean latent shrinks towards 0.7x above t = 400; omitting it trains a different
process than the sampler inverts).  Clips are conditioned on their fps (16 by default, the value the
godmodeanimation checkpoints were trained and sampled with).

Still images train as **single-frame clips** (T = 1) with the **temporal LoRA parameters frozen for
those samples**.  Why not a repeated-frame static clip: with the same noise on every frame a repeated
clip is the T = 1 case again (temporal attention over identical frames returns the value projection),
only T times slower; with independent noise it teaches the frame-mixing layers that this character
never moves, which is exactly the "image-only LoRA makes static video" failure users report.  Spatial
layers see one frame at a time either way, so appearance is learnt the same.  ``still_mode="repeat"``
is available (same fps as clips) for experiments.

Randomness (sample choice, caption dropout, t, noise) comes from ONE CPU ``torch.Generator`` whose
state is checkpointed with the LoRA, optimizer, scheduler and grad-scaler states, so a resumed run
reproduces the uninterrupted run's losses and weights.  Dropout stays off (the UNet is in inference
mode; only LoRA weights train), so no global RNG is involved.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core.atomic import atomic_target
from ..core.errors import InputError, ModelFileError, NumericalError
from ..core.progress import ProgressFn, no_progress
from . import lora as lora_mod
from .datasets import TrainDataset, TrainItem

CHECKPOINT_FORMAT = "gameanim-lora-train-v1"
PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
SCHEDULES = ("constant", "constant_with_warmup", "linear", "cosine")
STILL_MODES = ("single_frame", "repeat")
# settings that must match for a checkpoint to be resumed (others, e.g. the lr, may change between runs)
RESUME_KEYS = ("targets", "rank", "alpha", "seed", "still_mode", "frames")


@dataclass
class TrainSettings:
    """Everything that shapes a training run (all have defaults suited to a 16 GB GPU and a concept LoRA)."""

    targets: str = "concept"
    rank: int = 16
    alpha: float = 16.0
    learning_rate: float = 1e-4
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    total_steps: int = 1000
    batch_size: int = 1
    grad_accum: int = 1
    gradient_checkpointing: bool = True
    precision: str = "fp32"
    seed: int = 0
    caption_dropout: float = 0.1
    still_ratio: float | None = None
    still_mode: str = "single_frame"
    frames: int = 8
    fps: int = 16
    weight_decay: float = 1e-2
    max_grad_norm: float = 1.0
    checkpoint_every: int = 50
    checkpoint_path: str | None = None

    def validate(self) -> None:
        if self.precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}.")
        if self.lr_schedule not in SCHEDULES:
            raise InputError(f"lr_schedule must be one of {', '.join(SCHEDULES)}, got {self.lr_schedule!r}.")
        if self.still_mode not in STILL_MODES:
            raise InputError(f"still_mode must be one of {', '.join(STILL_MODES)}, got {self.still_mode!r}.")
        checks = {
            "batch_size": self.batch_size >= 1,
            "grad_accum": self.grad_accum >= 1,
            "total_steps": self.total_steps >= 1,
            "warmup_steps": self.warmup_steps >= 0,
            "learning_rate": self.learning_rate > 0,
            "caption_dropout": 0.0 <= self.caption_dropout <= 1.0,
            "still_ratio": self.still_ratio is None or 0.0 <= self.still_ratio <= 1.0,
            "frames": self.frames >= 1,
            "fps": self.fps >= 1,
            "checkpoint_every": self.checkpoint_every >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise InputError(f"Invalid training settings: {', '.join(f'{b}={getattr(self, b)!r}' for b in bad)}.")

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> TrainSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise InputError(f"Unknown training settings {unknown}; known: {', '.join(sorted(known))}.")
        settings = cls(**kwargs)
        settings.validate()
        return settings


@contextmanager
def grad_mode() -> Iterator[None]:
    """Autograd on, inference mode off: hosts such as ComfyUI run every node under ``torch.inference_mode()``."""
    with torch.inference_mode(False), torch.enable_grad():
        yield


def release_inference_tensors(module: nn.Module) -> int:
    """Replace parameters/buffers created under ``torch.inference_mode()`` by normal copies, one at a time.

    Autograd cannot save inference tensors for backward (a frozen Linear weight is needed for the
    gradient of its input), and ComfyUI loads models under inference mode.  The values are unchanged;
    the old tensors are freed as they are replaced, so peak memory grows by one tensor.  Only frozen
    parameters are replaced (trainable ones belong to an optimizer).  Returns how many were replaced.
    """
    replaced = 0
    with grad_mode():
        for sub in module.modules():
            for name, param in list(sub._parameters.items()):
                if param is not None and param.is_inference() and not param.requires_grad:
                    sub._parameters[name] = nn.Parameter(param.clone(), requires_grad=param.requires_grad)
                    replaced += 1
            for name, buf in list(sub._buffers.items()):
                if buf is not None and buf.is_inference():
                    sub._buffers[name] = buf.clone()
                    replaced += 1
    return replaced


def enable_checkpointing(unet: nn.Module) -> None:
    """Recompute each down, mid and up block of a VC2UNet in the backward pass instead of keeping activations."""
    unet.gradient_checkpointing = True


@dataclass
class EncodedItem:
    latents: torch.Tensor  # [1,4,T,h,w] on the CPU
    caption: str
    kind: str
    weight: int


@dataclass
class TrainingRun:
    """A LoRA being trained: the chained training nodes pass this object along and mutate it."""

    model: Any
    unet: nn.Module
    settings: TrainSettings
    items: list[EncodedItem]
    contexts: dict[str, torch.Tensor]
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: Any
    generator: torch.Generator
    still_ratio: float
    dataset_size: int
    dataset_hash: str
    trigger: str
    target_names: list[str]
    clip_fps: int
    step: int = 0
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    saved_path: Path | None = None
    offload: bool = False  # hosts: park the base weights on the offload device between nodes
    host_model: Any = None  # hosts: the host-managed handle of the base UNet (see core.host.manage)

    @property
    def params(self) -> list[nn.Parameter]:
        return [p for n, p in self.unet.named_parameters() if ".lora_" in n]

    def lora_state(self) -> dict[str, torch.Tensor]:
        return lora_mod.lora_state(self.unet)

    def preview_model(self) -> Any:
        """The VC2Model with the current (unmerged) adapters, for sampling a validation clip."""
        return replace(self.model, unet=self.unet)

    def metadata(self) -> dict[str, Any]:
        """Header fields for a saved LoRA file."""
        signature = lora_mod.base_signature(self.model.unet)
        return {
            "base_model": getattr(self.model, "description", "VideoCrafter2"),
            "base_model_hash": lora_mod.signature_hash(signature),
            "base_signature": signature,
            "targets": self.settings.targets,
            "target_modules": sorted(self.target_names),
            "rank": self.settings.rank,
            "alpha": self.settings.alpha,
            "steps": self.step,
            "dataset_size": self.dataset_size,
            "dataset_hash": self.dataset_hash,
            "trigger": self.trigger,
            "still_mode": self.settings.still_mode,
            "learning_rate": self.settings.learning_rate,
            "fps": self.clip_fps,
        }


# ----------------------------------------------------------------------------- setup


def _dataset_hash(items: list[TrainItem]) -> str:
    digest = hashlib.sha256()
    for item in items:
        digest.update(f"{item.kind}|{item.caption}|{item.repeats}|{tuple(item.frames.shape)}|".encode())
        digest.update(item.frames[:, ::8, ::8].mul(255).round().to(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def encode_dataset(
    model: Any, dataset: TrainDataset, progress: ProgressFn | None = None
) -> tuple[list[EncodedItem], dict[str, torch.Tensor]]:
    """VAE latents of every item and the text context of every caption (plus ``""`` for dropout), once.

    Encoding up front keeps the VAE and text encoder out of the training steps (they can be offloaded)
    and makes every step cost only the UNet.  Latents are the posterior mean (deterministic).
    """
    from ..nodes.vc2.model import encode_text
    from ..nodes.vc2.vae import encode_frames

    if model.vae is None:
        raise ModelFileError(f"{model.description} has no VAE: training needs a full VC2 checkpoint.")
    all_items = dataset.stills + dataset.clips
    if not all_items:
        raise InputError("The dataset is empty: add still images and/or action clips.")
    report = progress or no_progress
    encoded = []
    for i, item in enumerate(all_items):
        latents = encode_frames(model.vae, item.frames)
        encoded.append(EncodedItem(latents, item.caption, item.kind, item.repeats))
        report(i + 1, len(all_items))
    captions = sorted({item.caption for item in all_items} | {""})
    contexts = dict(zip(captions, encode_text(model, captions).float().cpu(), strict=True))
    return encoded, contexts


def _build_scheduler(optimizer: torch.optim.Optimizer, settings: TrainSettings) -> Any:
    from diffusers.optimization import get_scheduler

    return get_scheduler(
        settings.lr_schedule,
        optimizer,
        num_warmup_steps=settings.warmup_steps,
        num_training_steps=settings.total_steps,
    )


def start_training(
    model: Any,
    dataset: TrainDataset,
    settings: TrainSettings,
    resume: bool = True,
    progress: ProgressFn | None = None,
    device: torch.device | str | None = None,
) -> TrainingRun:
    """Encode the dataset, then :func:`start_training_encoded`.

    With ``resume`` and an existing ``settings.checkpoint_path`` the run continues from that
    checkpoint (LoRA, optimizer, schedule, step, losses and RNG state restored exactly).  ``device``
    moves the training UNet there; its base weights are shared with ``model.unet``, so they move too.
    """
    settings.validate()
    with grad_mode():
        items, contexts = encode_dataset(model, dataset, progress)
    return start_training_encoded(
        model,
        items,
        contexts,
        settings,
        still_ratio=dataset.still_ratio if settings.still_ratio is None else settings.still_ratio,
        dataset_size=len(dataset),
        dataset_hash=_dataset_hash(dataset.stills + dataset.clips),
        trigger=dataset.trigger,
        clip_fps=dataset.clip_fps if dataset.clips else settings.fps,
        resume=resume,
        device=device,
    )


def start_training_encoded(
    model: Any,
    items: list[EncodedItem],
    contexts: dict[str, torch.Tensor],
    settings: TrainSettings,
    still_ratio: float = 0.5,
    dataset_size: int | None = None,
    dataset_hash: str = "",
    trigger: str = "",
    clip_fps: int = 16,
    resume: bool = True,
    device: torch.device | str | None = None,
) -> TrainingRun:
    """Add adapters to a shared copy of the UNet and build AdamW + schedule for pre-encoded ``items``."""
    settings.validate()
    if not items:
        raise InputError("The dataset is empty: add still images and/or action clips.")
    with grad_mode():
        return _start(
            model, items, contexts, settings, still_ratio, dataset_size, dataset_hash, trigger, clip_fps, resume, device
        )


def _start(
    model: Any,
    items: list[EncodedItem],
    contexts: dict[str, torch.Tensor],
    settings: TrainSettings,
    still_ratio: float,
    dataset_size: int | None,
    dataset_hash: str,
    trigger: str,
    clip_fps: int,
    resume: bool,
    device: torch.device | str | None,
) -> TrainingRun:
    release_inference_tensors(model.unet)
    items = [replace(i, latents=i.latents.clone()) if i.latents.is_inference() else i for i in items]
    contexts = {k: v.clone() if v.is_inference() else v for k, v in contexts.items()}
    unet = lora_mod.shared_copy(model.unet)
    unet.gameanim_base_signature = lora_mod.base_signature(model.unet)
    if settings.gradient_checkpointing:
        enable_checkpointing(unet)
    names = lora_mod.inject(unet, settings.targets, settings.rank, settings.alpha, settings.seed)
    if device is not None:
        unet.to(device)
    params = [p for n, p in unet.named_parameters() if ".lora_" in n]
    for p in params:
        p.data = p.data.float()
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    half = autocast_dtype(settings.precision, model.unet.dtype)
    scaler = torch.amp.GradScaler(params[0].device.type, enabled=half == torch.float16)
    run = TrainingRun(
        model=model,
        unet=unet,
        settings=settings,
        items=items,
        contexts=contexts,
        optimizer=optimizer,
        scheduler=_build_scheduler(optimizer, settings),
        scaler=scaler,
        generator=torch.Generator().manual_seed(settings.seed),
        still_ratio=still_ratio,
        dataset_size=dataset_size if dataset_size is not None else sum(i.weight for i in items),
        dataset_hash=dataset_hash,
        trigger=trigger,
        target_names=names,
        clip_fps=clip_fps,
    )
    if resume and settings.checkpoint_path and Path(settings.checkpoint_path).is_file():
        load_checkpoint(run, settings.checkpoint_path)
    return run


# ----------------------------------------------------------------------------- checkpoints


def save_checkpoint(run: TrainingRun, path: str | os.PathLike[str] | None = None) -> Path | None:
    """Write LoRA + optimizer + schedule + scaler + step + losses + RNG state atomically (old file kept on failure)."""
    target = path or run.settings.checkpoint_path
    if not target:
        return None
    state = {
        "format": CHECKPOINT_FORMAT,
        "lora": run.lora_state(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "scaler": run.scaler.state_dict(),
        "step": run.step,
        "losses": list(run.losses),
        "rng": run.generator.get_state(),
        "settings": asdict(run.settings),
        "dataset_hash": run.dataset_hash,
        "base_signature": lora_mod.base_signature(run.model.unet),
    }
    with atomic_target(target, overwrite=True) as tmp:
        torch.save(state, tmp)
    return Path(target)


def load_checkpoint(run: TrainingRun, path: str | os.PathLike[str]) -> None:
    """Restore ``run`` from a checkpoint written by :func:`save_checkpoint` for the same model and data."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same explanation
        raise ModelFileError(
            f"The training checkpoint {path} could not be read ({exc}); delete it to start over."
        ) from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ModelFileError(f"{path} is not a GameAnim LoRA training checkpoint.")
    saved = state["settings"]
    mismatched = [k for k in RESUME_KEYS if saved.get(k) != getattr(run.settings, k)]
    if mismatched:
        raise InputError(
            f"The checkpoint {path} was made with different settings ({', '.join(f'{k}={saved.get(k)!r}' for k in mismatched)}). "
            "Use the same settings to resume, or another run name / checkpoint path to start a new run."
        )
    if state["dataset_hash"] != run.dataset_hash:
        raise InputError(
            f"The checkpoint {path} was made with a different dataset; use another run name to start over."
        )
    distance = lora_mod.signature_distance(state["base_signature"], lora_mod.base_signature(run.model.unet))
    if distance > lora_mod.SIGNATURE_TOLERANCE:
        raise InputError(f"The checkpoint {path} was made on a different base model; use another run name.")
    lora_mod.load_lora_state(run.unet, state["lora"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    run.scaler.load_state_dict(state["scaler"])
    run.step = int(state["step"])
    run.losses = [float(x) for x in state["losses"]]
    run.generator.set_state(state["rng"])


# ----------------------------------------------------------------------------- steps


def _rand(run: TrainingRun) -> float:
    return float(torch.rand((), generator=run.generator))


def _draw(run: TrainingRun) -> tuple[torch.Tensor, torch.Tensor, str]:
    """One micro-batch: ``(x0 [B,4,T,h,w], context [B,77,D], kind)`` from a single kind and bucket."""
    stills = [i for i in run.items if i.kind == "still"]
    clips = [i for i in run.items if i.kind == "clip"]
    use_stills = bool(stills) and (not clips or _rand(run) < run.still_ratio)
    pool = stills if use_stills else clips
    weights = torch.tensor([float(i.weight) for i in pool])
    first = pool[int(torch.multinomial(weights, 1, generator=run.generator))]
    same = [i for i in pool if i.latents.shape == first.latents.shape]
    picks = [first]
    if run.settings.batch_size > 1:
        same_w = torch.tensor([float(i.weight) for i in same])
        more = torch.multinomial(same_w, run.settings.batch_size - 1, replacement=True, generator=run.generator)
        picks += [same[int(k)] for k in more]
    latents, contexts = [], []
    for item in picks:
        x0 = item.latents
        if item.kind == "still" and run.settings.still_mode == "repeat":
            x0 = x0.expand(-1, -1, run.settings.frames, -1, -1)
        latents.append(x0)
        dropped = _rand(run) < run.settings.caption_dropout
        contexts.append(run.contexts["" if dropped else item.caption])
    return torch.cat(latents), torch.stack(contexts), "still" if use_stills else "clip"


def forward_noise(schedule: Any, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """VC2's training forward process per sample: ``sqrt(a_t) * scale_arr[t] * x0 + sqrt(1 - a_t) * noise``."""
    acp = schedule.alphas_cumprod.to(x0.device)[t].view(-1, 1, 1, 1, 1)
    scale = schedule.scale_arr.to(x0.device)[t].view(-1, 1, 1, 1, 1) if schedule.scale_arr is not None else 1.0
    return acp.sqrt() * scale * x0 + (1 - acp).sqrt() * noise


def autocast_dtype(precision: str, base: torch.dtype) -> torch.dtype | None:
    """The autocast dtype: the base weights' dtype when they are half precision, else the setting.

    A half-precision base dictates it: fp32 LoRA layers next to fp16 base layers need one compute
    dtype, and autocasting an fp16 base to bf16 (or the reverse) would feed bf16 activations into fp16
    LayerNorm weights, which PyTorch refuses.
    """
    if base in (torch.float16, torch.bfloat16):
        return base
    return PRECISIONS[precision]


def _micro_step(run: TrainingRun) -> float:
    x0, context, kind = _draw(run)
    batch = x0.shape[0]
    t = torch.randint(0, run.model.schedule.num_timesteps, (batch,), generator=run.generator)
    noise = torch.randn(x0.shape, generator=run.generator)
    device = run.params[0].device
    x0, noise, t, context = x0.to(device), noise.to(device), t.to(device), context.to(device)
    x_t = forward_noise(run.model.schedule, x0, t, noise)
    frozen = lora_mod.temporal_lora_params(run.unet) if kind == "still" else []
    for p in frozen:
        p.requires_grad_(False)
    try:
        dtype = autocast_dtype(run.settings.precision, run.model.unet.dtype)
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            eps = run.unet(x_t, t, context, run.clip_fps if kind == "clip" else run.settings.fps)
        loss = torch.nn.functional.mse_loss(eps.float(), noise)
        if not torch.isfinite(loss):
            raise NumericalError(
                f"The training loss became {float(loss)} at step {run.step + 1}. Lower the learning rate, or use "
                "bf16/fp32 instead of fp16."
            )
        run.scaler.scale(loss / run.settings.grad_accum).backward()
    finally:
        for p in frozen:
            p.requires_grad_(True)
    return float(loss.detach())


def train_step(run: TrainingRun) -> float:
    """One optimizer step (``grad_accum`` micro-batches); returns the mean loss.  Exact on restart:
    if anything fails inside the step, the RNG is rewound and gradients dropped, so a checkpoint
    written afterwards equals the state before the step."""
    rng = run.generator.get_state()
    try:
        losses = [_micro_step(run) for _ in range(run.settings.grad_accum)]
        if run.settings.max_grad_norm > 0:
            run.scaler.unscale_(run.optimizer)
            torch.nn.utils.clip_grad_norm_(run.params, run.settings.max_grad_norm)
        run.scaler.step(run.optimizer)
        run.scaler.update()
    except BaseException:
        run.generator.set_state(rng)
        run.optimizer.zero_grad(set_to_none=True)
        raise
    run.optimizer.zero_grad(set_to_none=True)
    run.scheduler.step()
    run.step += 1
    loss = sum(losses) / len(losses)
    run.losses.append(loss)
    return loss


def train(run: TrainingRun, steps: int, progress: ProgressFn | None = None) -> TrainingRun:
    """Run ``steps`` optimizer steps; ``progress(done, steps)`` after each one may raise to cancel.

    A checkpoint is written every ``checkpoint_every`` steps, at the end, and whenever the loop stops
    early (Cancel or an error), so nothing finished is lost; re-running with the same settings resumes.
    """
    if steps < 1:
        raise InputError(f"steps must be at least 1, got {steps}.")
    report = progress or no_progress
    run.unet.train(False)
    every = run.settings.checkpoint_every
    with grad_mode():
        release_inference_tensors(run.unet)  # e.g. base weights moved by a host under inference mode
        _loop(run, steps, report, every)
    return run


def _loop(run: TrainingRun, steps: int, report: ProgressFn, every: int) -> None:
    try:
        for done in range(1, steps + 1):
            started = time.perf_counter()
            train_step(run)
            run.seconds += time.perf_counter() - started
            if every and run.step % every == 0:
                save_checkpoint(run)
            report(done, steps)
    except BaseException:
        save_checkpoint(run)
        raise
    if not every or run.step % every:
        save_checkpoint(run)  # the end of a chained Train node is a resume point too


def validation_loss(run: TrainingRun, samples: int = 4, seed: int = 0) -> float:
    """Loss on a fixed draw (items, t, noise from ``seed``, no caption dropout): comparable across steps."""
    generator = torch.Generator().manual_seed(seed)
    device = run.params[0].device
    total = 0.0
    with torch.no_grad():
        for i in range(samples):
            item = run.items[i % len(run.items)]
            x0 = item.latents
            if item.kind == "still" and run.settings.still_mode == "repeat":
                x0 = x0.expand(-1, -1, run.settings.frames, -1, -1)
            t = torch.randint(0, run.model.schedule.num_timesteps, (1,), generator=generator)
            noise = torch.randn(x0.shape, generator=generator)
            x_t = forward_noise(run.model.schedule, x0.to(device), t.to(device), noise.to(device))
            fps = run.clip_fps if item.kind == "clip" else run.settings.fps
            dtype = autocast_dtype(run.settings.precision, run.model.unet.dtype)
            with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                eps = run.unet(x_t, t.to(device), run.contexts[item.caption][None].to(device), fps)
            total += float(torch.nn.functional.mse_loss(eps.float(), noise.to(device)))
    return total / samples
