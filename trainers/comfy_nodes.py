"""ComfyUI nodes for VC2 LoRA training as bounded, chainable steps (thin adapters over the trainer library).

Flow: Still Images Dataset (+ Action Clips Dataset) -> LoRA Train Init -> LoRA Train Steps (chain as many
as you like; each shows a progress bar and honours Cancel every step) -> LoRA Validate (a short preview
clip with the current LoRA) -> LoRA Save.  ``VC2 Apply LoRA`` merges saved LoRAs into a ``VC2_MODEL``.
The training nodes are ``EXPERIMENTAL`` like ComfyUI's own trainers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core import host
from ..core.errors import InputError, NumericalError, UnsafePathError
from ..core.paths import SAMPLE_DATA, confined, sanitize_relative
from ..nodes.common import category, field, output_files

MODEL_TYPE = "VC2_MODEL"
DATASET_TYPE = "GAMEANIM_TRAIN_DATASET"
RUN_TYPE = "GAMEANIM_LORA_RUN"
EXAMPLES = SAMPLE_DATA / "datasets"
TRAINING_EVENT = "gameanim.training"
DATA_CATEGORY = category("Training", "Dataset")
TRAIN_CATEGORY = category("Training", "LoRA")
SEED = field(
    "INT",
    "Seed for LoRA init, sample order, caption dropout, timesteps and noise.",
    default=0,
    min=0,
    max=2**31 - 1,
    control_after_generate=True,
)


def resolve_folder(name: str) -> Path:
    """``name`` under ComfyUI's input folder, else under the pack's shipped example datasets."""
    for base in (host.input_dir(), EXAMPLES):
        path = confined(base, name)
        if path.is_dir():
            return path
    raise InputError(
        f"Dataset folder '{name}' was found neither in ComfyUI's input folder ({host.input_dir()}) nor among the "
        f"pack's example datasets ({', '.join(sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())) or 'none'})."
    )


@contextmanager
def _training_device(run: Any) -> Iterator[Any]:
    """The base UNet loaded by the host (outside inference mode, so autograd can use it), the run's LoRA
    weights moved beside it; the base is unloaded afterwards when the loader's ``offload`` is on."""
    from .loop import grad_mode

    with host.on_device(run.host_model, keep_loaded=not run.offload, for_training=True) as device:
        with grad_mode():
            run.unet.to(device)
        yield device


def _checkpoint_path(run_name: str) -> Path:
    return host.output_path(f"gameanim_training/{run_name}/checkpoint.pt")


def _lora_folder() -> Path:
    return host.folder_paths_for("gameanim_loras")[0]


def _swap_model(loaded: Any, model: Any, suffix: str) -> Any:
    from dataclasses import replace

    return replace(loaded, model=model, name=f"{loaded.name}+{suffix}")


SIZE = {
    "width": field("INT", "Training width in pixels (multiple of 64).", default=256, min=64, max=1024, step=64),
    "height": field("INT", "Training height in pixels (multiple of 64).", default=256, min=64, max=1024, step=64),
}
TEMPLATE = field(
    "STRING",
    "Caption template: {trigger} = trigger word, {caption} = the .txt caption, {action} = the clip's action.",
    default="Game character {action}animation of {trigger}, {caption}",
)


def ds_template() -> str:
    """The default caption template (the godmodeanimation prompt form)."""
    return TEMPLATE[1]["default"]


class StillImagesDataset:
    DESCRIPTION = (
        "A folder of still character images (png/jpg/webp) with optional same-name .txt captions; kohya-style "
        "N_name sub-folders repeat their images N times. Images are cover-resized and centre-cropped."
    )
    CATEGORY = DATA_CATEGORY
    EXPERIMENTAL = True
    FUNCTION = "load"
    RETURN_TYPES = (DATASET_TYPE,)
    RETURN_NAMES = ("dataset",)
    OUTPUT_TOOLTIPS = ("Stills (single-frame samples) with their templated captions.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "folder": field(
                    "STRING",
                    "Folder inside ComfyUI's input folder (or a shipped example such as 'knight_concept').",
                    default="knight_concept",
                ),
                "trigger": field(
                    "STRING", "A rare word that will stand for this character in prompts.", default="gmknight"
                ),
                "caption_template": TEMPLATE,
                **SIZE,
                "bucketing": field(
                    "BOOLEAN", "Keep each image's aspect ratio (same pixel area, sides multiples of 64).", default=False
                ),
            }
        }

    def load(
        self, folder: str, trigger: str, caption_template: str, width: int, height: int, bucketing: bool
    ) -> tuple[Any]:
        from .datasets import TrainDataset, load_stills

        stills = load_stills(resolve_folder(folder), width, height, trigger, caption_template, bucketing)
        return (TrainDataset(stills=stills, trigger=trigger),)


class ActionClipsDataset:
    DESCRIPTION = (
        "Action clips (frame folders in the godmodeanimation/UCF layout, or video files) added to a dataset to "
        "teach motion; the still/clip mixing ratio decides how often each kind is drawn."
    )
    CATEGORY = DATA_CATEGORY
    EXPERIMENTAL = True
    FUNCTION = "load"
    RETURN_TYPES = (DATASET_TYPE,)
    RETURN_NAMES = ("dataset",)
    OUTPUT_TOOLTIPS = ("The dataset with the clips added.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "folder": field(
                    "STRING", "Folder inside ComfyUI's input folder holding clip folders or videos.", default="clips"
                ),
                "action": field("STRING", "Action words for the caption template, e.g. 'running'.", default="running"),
                "trigger": field(
                    "STRING", "Trigger word (use the stills' one to tie motion to the character).", default="gmknight"
                ),
                "caption_template": TEMPLATE,
                "frames": field("INT", "Frames per training clip (VC2 was trained on 16).", default=8, min=2, max=32),
                "frame_stride": field("INT", "Take every n-th frame of each clip.", default=1, min=1, max=8),
                "fps": field("INT", "The fps the UNet is conditioned on for these clips.", default=16, min=1, max=60),
                **SIZE,
                "still_ratio": field(
                    "FLOAT",
                    "Share of training samples drawn from stills (the rest from clips).",
                    default=0.5,
                    min=0.0,
                    max=1.0,
                    step=0.05,
                ),
            },
            "optional": {"dataset": field(DATASET_TYPE, "A stills dataset to add these clips to.")},
        }

    def load(
        self,
        folder: str,
        action: str,
        trigger: str,
        caption_template: str,
        frames: int,
        frame_stride: int,
        fps: int,
        width: int,
        height: int,
        still_ratio: float,
        dataset: Any = None,
    ) -> tuple[Any]:
        from .datasets import TrainDataset, load_clips

        clips = load_clips(
            resolve_folder(folder), frames, width, height, trigger, action, caption_template, frame_stride
        )
        added = TrainDataset(clips=clips, trigger=trigger, still_ratio=still_ratio, clip_fps=fps)
        return (dataset.merged(added, still_ratio) if dataset is not None else added,)


class LoraTrainInit:
    DESCRIPTION = (
        "Prepare LoRA training on a VC2 model: encode the dataset once (VAE + text), add peft LoRA adapters to a "
        "copy of the UNet that shares the base weights, set up AdamW and the lr schedule. With 'resume' it "
        "continues the run's last checkpoint exactly."
    )
    CATEGORY = TRAIN_CATEGORY
    EXPERIMENTAL = True
    FUNCTION = "init"
    RETURN_TYPES = (RUN_TYPE,)
    RETURN_NAMES = ("lora_run",)
    OUTPUT_TOOLTIPS = ("The training run; chain LoRA Train Steps nodes on it.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The VC2 model to train on (its weights stay frozen)."),
                "dataset": field(DATASET_TYPE, "Stills and/or clips."),
                "run_name": field(
                    "STRING", "Checkpoints go to output/gameanim_training/<run_name>/.", default="knight"
                ),
                "targets": field(
                    ["concept", "action", "concept+action"],
                    "concept = spatial attention (appearance, from stills); action = temporal attention and "
                    "convs (motion, from clips).",
                    default="concept",
                ),
                "rank": field("INT", "LoRA rank (capacity). 16 suits a character.", default=16, min=1, max=256),
                "alpha": field(
                    "FLOAT", "LoRA alpha; the update is scaled by alpha/rank.", default=16.0, min=0.01, max=1024.0
                ),
                "learning_rate": field("FLOAT", "AdamW learning rate.", default=1e-4, min=1e-7, max=1.0, step=1e-5),
                "lr_schedule": field(
                    ["constant", "constant_with_warmup", "linear", "cosine"],
                    "Learning-rate schedule.",
                    default="constant",
                ),
                "warmup_steps": field("INT", "Warm-up steps of the schedule.", default=0, min=0, max=100000),
                "total_steps": field(
                    "INT", "Planned steps (length of the linear/cosine schedule).", default=1000, min=1, max=1000000
                ),
                "batch_size": field("INT", "Samples per micro-batch (same size bucket).", default=1, min=1, max=64),
                "grad_accum": field("INT", "Micro-batches per optimizer step.", default=1, min=1, max=64),
                "gradient_checkpointing": field(
                    "BOOLEAN",
                    "Recompute activations in backward: much less VRAM, slower (one extra forward pass per step).",
                    default=True,
                ),
                "precision": field(
                    ["bf16", "fp16", "fp32"],
                    "Autocast precision for an fp32-loaded model; a model loaded in fp16/bf16 computes in its own dtype. LoRA weights stay fp32.",
                    default="bf16",
                ),
                "caption_dropout": field(
                    "FLOAT",
                    "Share of samples trained with an empty caption (keeps CFG working).",
                    default=0.1,
                    min=0.0,
                    max=1.0,
                    step=0.01,
                ),
                "checkpoint_every": field(
                    "INT", "Write a checkpoint every N steps (and always on Cancel).", default=50, min=0, max=100000
                ),
                "resume": field("BOOLEAN", "Continue from this run's checkpoint when one exists.", default=True),
                "seed": SEED,
            }
        }

    def init(self, vc2_model: Any, dataset: Any, run_name: str, resume: bool, **settings: Any) -> tuple[Any]:
        from .loop import TrainSettings, start_training

        config = TrainSettings.from_kwargs(checkpoint_path=str(_checkpoint_path(run_name)), **settings)
        model = vc2_model.model
        encoders = [vc2_model.part(k) for k in ("vae", "text_encoder") if getattr(model, k) is not None]
        with host.on_device(*encoders, keep_loaded=not vc2_model.offload) as device:
            run = start_training(
                model,
                dataset,
                config,
                resume=resume,
                progress=host.progress(len(dataset.stills) + len(dataset.clips)),
                device=device,
            )
        if run.step > 0:
            host.notify(
                "LoRA training resumed",
                f"Run '{run_name}' continues from its checkpoint at step {run.step} ({_checkpoint_path(run_name)}).",
                "info",
            )
        run.offload = vc2_model.offload
        run.host_model = vc2_model.part("unet")
        return (run,)


class LoraTrain:
    DESCRIPTION = (
        "Train the LoRA for N more steps. Progress bar and Cancel work every step; a checkpoint is written every "
        "K steps and on Cancel, so re-running resumes exactly. Outputs the loss curve."
    )
    CATEGORY = TRAIN_CATEGORY
    EXPERIMENTAL = True
    FUNCTION = "train"
    RETURN_TYPES = (RUN_TYPE, "IMAGE", "FLOAT")
    RETURN_NAMES = ("lora_run", "loss_curve", "last_loss")
    OUTPUT_TOOLTIPS = (
        "The same run, trained further.",
        "Loss per step (grey) and its moving average (blue).",
        "The loss of the last step.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "lora_run": field(RUN_TYPE, "The run from LoRA Train Init or a previous LoRA Train Steps."),
                "steps": field("INT", "Optimizer steps to run now.", default=100, min=1, max=100000),
            },
            "hidden": {"unique_id": "UNIQUE_ID"},
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs: Any) -> float:
        return float("nan")  # training always advances the run, never reuse a cached result

    def train(self, lora_run: Any, steps: int, unique_id: str | None = None) -> dict[str, Any]:
        from .loop import train
        from .loss_plot import loss_curve_image

        bar = host.progress(steps)

        def report(done: int, total: int) -> None:
            # web/js/loss_chart.js draws these on the node while the loop runs
            lr = lora_run.optimizer.param_groups[0]["lr"]
            host.send_ui_event(
                TRAINING_EVENT, {"node": unique_id, "step": lora_run.step, "loss": lora_run.losses[-1], "lr": lr}
            )
            bar(done, total)

        with _training_device(lora_run), host.notify_on(NumericalError, "LoRA training loss became NaN"):
            train(lora_run, steps, report)
        checkpoint = lora_run.settings.checkpoint_path
        # The resume checkpoint is a file in the output folder: listed so headless clients fetch it too.
        ui = output_files([Path(checkpoint)]) if checkpoint and Path(checkpoint).is_file() else {}
        return {"ui": ui, "result": (lora_run, loss_curve_image(lora_run.losses), float(lora_run.losses[-1]))}


class LoraValidate:
    DESCRIPTION = "Sample a short preview clip with the LoRA as trained so far (VC2 DDIM sampler, the run's adapters)."
    CATEGORY = TRAIN_CATEGORY
    EXPERIMENTAL = True
    FUNCTION = "validate"
    RETURN_TYPES = (RUN_TYPE, "IMAGE")
    RETURN_NAMES = ("lora_run", "preview")
    OUTPUT_TOOLTIPS = ("The same run (chain on).", "The preview frames.")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "lora_run": field(RUN_TYPE, "The training run."),
                "prompt": field(
                    "STRING",
                    "Prompt; include the trigger word.",
                    multiline=True,
                    default="Game character running animation of gmknight, side view, solid color background",
                ),
                "width": field("INT", "Preview width (multiple of 8).", default=256, min=64, max=1024, step=8),
                "height": field("INT", "Preview height (multiple of 8).", default=256, min=64, max=1024, step=8),
                "frames": field("INT", "Preview frames.", default=8, min=1, max=32),
                "steps": field("INT", "DDIM steps (fewer = faster preview).", default=25, min=1, max=500),
                "cfg": field("FLOAT", "Classifier-free guidance scale.", default=12.0, min=1.0, max=30.0, step=0.5),
                "seed": field(
                    "INT",
                    "Noise seed (keep it fixed to compare checkpoints).",
                    default=123,
                    min=0,
                    max=2**63 - 1,
                    control_after_generate=False,
                ),
            }
        }

    def validate(
        self, lora_run: Any, prompt: str, width: int, height: int, frames: int, steps: int, cfg: float, seed: int
    ) -> tuple[Any, Any]:
        from .validate import preview_clip

        with _training_device(lora_run):
            frames_out = preview_clip(lora_run, prompt, width, height, frames, steps, cfg, seed, host.progress(steps))
        return (lora_run, frames_out)


class LoraSave:
    DESCRIPTION = (
        "Save the LoRA to models/loras/gameanim/<name>.safetensors (never overwriting: a taken name gets _001, "
        "...), with base model hash, targets, rank, alpha, steps, dataset size and trigger word in the header."
    )
    CATEGORY = TRAIN_CATEGORY
    EXPERIMENTAL = True
    OUTPUT_NODE = True
    FUNCTION = "save"
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("lora_name",)
    OUTPUT_TOOLTIPS = ("The saved file name inside models/loras/gameanim (for VC2 Apply LoRA).",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "lora_run": field(RUN_TYPE, "The training run to save."),
                "name": field("STRING", "File name (without extension).", default="gmknight_concept"),
            }
        }

    def save(self, lora_run: Any, name: str) -> dict[str, Any]:
        from .lora_file import save_lora

        folder = _lora_folder()
        path = save_lora(lora_run.lora_state(), folder, name, lora_run.metadata())
        rel = path.relative_to(folder.resolve()).as_posix() if path.is_relative_to(folder.resolve()) else path.name
        note = f"Saved {rel} after {lora_run.step} steps."
        return {"ui": {"text": [note]}, "result": (rel,)}


class ApplyLora:
    DESCRIPTION = (
        "Merge a GameAnim VC2 LoRA into a VC2 model at a strength; chain several to stack. The input model is not "
        "changed. LoRAs from other tools or other base models are refused with an explanation. Link LoRA Save's "
        "lora_name to saved_lora to apply the LoRA the same workflow has just trained."
    )
    CATEGORY = category("VC2")
    FUNCTION = "apply"
    RETURN_TYPES = (MODEL_TYPE,)
    RETURN_NAMES = ("vc2_model",)
    OUTPUT_TOOLTIPS = ("The VC2 model with the LoRA merged (only the targeted weights are copied).",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The VC2 model (or the output of another Apply LoRA to stack)."),
                "lora_name": field(host.model_list("gameanim_loras"), "A LoRA from models/loras/gameanim."),
                "strength": field(
                    "FLOAT", "LoRA strength (0 = off, 1 = as trained).", default=1.0, min=-2.0, max=2.0, step=0.05
                ),
                "allow_other_base": field(
                    "BOOLEAN",
                    "Apply even if the LoRA was trained on a different VC2 (e.g. a godmodeanimation fine-tune of it).",
                    default=False,
                ),
            },
            "optional": {
                "saved_lora": field(
                    "STRING",
                    "Link LoRA Save's lora_name here: applies the LoRA this workflow just saved (replaces lora_name).",
                    forceInput=True,
                ),
            },
        }

    @classmethod
    def VALIDATE_INPUTS(cls, lora_name: str) -> bool | str:
        """Accept a LoRA that does not exist yet: a trainer earlier in the same queue may write it.

        A name that is still missing when the node runs gets the folder's "not found" explanation.
        """
        try:
            sanitize_relative(lora_name)
        except UnsafePathError as exc:
            return str(exc)
        return True

    def apply(
        self, vc2_model: Any, lora_name: str, strength: float, allow_other_base: bool, saved_lora: str | None = None
    ) -> tuple[Any]:
        from .lora_file import apply_lora_file

        lora_name = saved_lora or lora_name
        path = host.model_path("gameanim_loras", lora_name)
        merged = apply_lora_file(vc2_model.model, path, strength, allow_other_base)
        return (_swap_model(vc2_model, merged, f"{Path(lora_name).stem}@{strength:g}"),)


NODE_CLASS_MAPPINGS = {
    "GameAnimTrainStillImages": StillImagesDataset,
    "GameAnimTrainActionClips": ActionClipsDataset,
    "GameAnimLoraTrainInit": LoraTrainInit,
    "GameAnimLoraTrain": LoraTrain,
    "GameAnimLoraValidate": LoraValidate,
    "GameAnimLoraSave": LoraSave,
    "GameAnimVC2ApplyLora": ApplyLora,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimTrainStillImages": "Training Dataset: Still Images",
    "GameAnimTrainActionClips": "Training Dataset: Action Clips",
    "GameAnimLoraTrainInit": "LoRA Train Init (VC2)",
    "GameAnimLoraTrain": "LoRA Train Steps (VC2)",
    "GameAnimLoraValidate": "LoRA Validate Preview (VC2)",
    "GameAnimLoraSave": "LoRA Save (VC2)",
    "GameAnimVC2ApplyLora": "VC2 Apply LoRA",
}
