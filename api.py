"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    import torch

    from .nodes.vc2.model import VC2Model

__version__ = "0.1.0"

__all__ = [
    "decode_vc2",
    "encode_vc2_text",
    "load_vc2",
    "sample_vc2",
    "vc2_token_count",
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
]


# ----------------------------------------------------------------------------- VideoCrafter2


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


def encode_vc2_text(model: VC2Model, texts: str | Sequence[str]) -> torch.Tensor:
    """``[B, 77, 1024]`` conditioning from the checkpoint's OpenCLIP weights (``""`` = unconditional)."""
    from .nodes.vc2.model import encode_text

    return encode_text(model, texts)


def vc2_token_count(text: str) -> tuple[int, str]:
    """(OpenCLIP tokens including start/end, text cut off past the 77-token window; empty if none)."""
    from .nodes.vc2.text_encoder import token_report

    report = token_report(text)
    return report.tokens, report.cut_text


def decode_vc2(model: VC2Model, latents: torch.Tensor, chunk: int = 1, tiled: bool = False) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` float32 0..1, decoded ``chunk`` frames at a time."""
    from .nodes.vc2.model import decode

    return decode(model, latents, chunk=chunk, tiled=tiled)
