"""VC2's fixed diffusion schedule: LDM "linear" betas, ``scale_arr`` and DDIM timestep selection.

The numbers are computed the way the original ``LatentDiffusion.register_schedule`` computes them
(float64 NumPy, stored as float32) so a UNet-only checkpoint samples exactly like the full one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...core.errors import InputError

NUM_TRAIN_TIMESTEPS = 1000
LINEAR_START = 0.00085
LINEAR_END = 0.012
SCALE_A = 1.0
SCALE_B = 0.7
SCALE_MID_STEP = 400


@dataclass(frozen=True)
class Schedule:
    """The buffers the DDIM sampler needs (float32, CPU)."""

    alphas_cumprod: torch.Tensor
    scale_arr: torch.Tensor | None

    @property
    def num_timesteps(self) -> int:
        return int(self.alphas_cumprod.shape[0])


def vc2_schedule() -> Schedule:
    """The schedule of ``inference_t2v_512_v2.0.yaml``: scaled-linear betas and ``use_scale`` (0.7)."""
    betas = np.linspace(LINEAR_START**0.5, LINEAR_END**0.5, NUM_TRAIN_TIMESTEPS, dtype=np.float64) ** 2
    alphas_cumprod = np.cumprod(1.0 - betas, axis=0)
    scale = np.concatenate(
        (
            np.linspace(SCALE_A, SCALE_B, SCALE_MID_STEP),
            np.full(NUM_TRAIN_TIMESTEPS, SCALE_B),
        )
    )
    return Schedule(
        alphas_cumprod=torch.tensor(alphas_cumprod, dtype=torch.float32),
        scale_arr=torch.tensor(scale, dtype=torch.float32),
    )


def schedule_from_buffers(buffers: dict[str, torch.Tensor], default: Schedule | None = None) -> Schedule:
    """The checkpoint's own schedule buffers when present (the original sampler reads those), else ``default``
    (VC2's when not given)."""
    default = default or vc2_schedule()
    acp = buffers.get("alphas_cumprod")
    scale = buffers.get("scale_arr")
    if acp is None or acp.ndim != 1 or acp.shape[0] != NUM_TRAIN_TIMESTEPS:
        acp = default.alphas_cumprod
    if scale is None or scale.ndim != 1 or scale.shape[0] < NUM_TRAIN_TIMESTEPS:
        scale = default.scale_arr
    return Schedule(alphas_cumprod=acp.detach().float().cpu().clone(), scale_arr=scale.detach().float().cpu().clone())


SPACINGS = ("uniform", "uniform_trailing")


def ddim_timesteps(steps: int, num_timesteps: int = NUM_TRAIN_TIMESTEPS, spacing: str = "uniform") -> np.ndarray:
    """Ascending DDIM timesteps: ``range(0, 1000, 1000 // steps) + 1`` trimmed to exactly ``steps``.

    ``spacing="uniform_trailing"`` is DynamiCrafter's rule for zero-terminal-SNR models, which must start
    at the last timestep: ``round(arange(1000, 0, -1000 / steps)) - 1`` ascending (4 steps: 249 .. 999).

    When ``steps`` divides 1000 this is the original's "uniform" rule unchanged (50 steps:
    1, 21, ..., 981).  For other counts the original keeps every element of the range, so it runs
    more steps than asked (e.g. 30 -> 31 steps) or crashes on an index past the schedule (3 steps ->
    timestep 1000).  We keep the same stride and the first ``steps`` values of the range, which is
    the original result for divisors and never indexes past timestep 999.
    """
    if not isinstance(steps, int) or steps < 1:
        raise InputError(f"steps must be a whole number >= 1, got {steps!r}.")
    if steps > num_timesteps // 2:
        raise InputError(
            f"steps must be at most {num_timesteps // 2} (DDIM keeps a stride of at least 2 so the last "
            f"timestep stays inside the {num_timesteps}-step schedule), got {steps}."
        )
    if spacing == "uniform_trailing":
        return np.flip(np.round(np.arange(num_timesteps, 0, -num_timesteps / steps))).astype(np.int64) - 1
    if spacing != "uniform":
        raise InputError(f"timestep spacing must be one of {', '.join(SPACINGS)}, got {spacing!r}.")
    stride = num_timesteps // steps
    return np.arange(0, num_timesteps, stride)[:steps] + 1
