"""DynamiCrafter's diffusion schedule: VC2's linear betas rescaled to zero terminal SNR, plus ``scale_arr``.

``inference_512_v1.0.yaml`` sets ``rescale_betas_zero_snr: True`` (Lin et al. 2023: the last timestep is
pure noise, so the model is trained with v-prediction and sampled from t = 999 with "uniform_trailing"
spacing) and ``use_dynamic_rescale`` with ``base_scale 0.7`` (the same ``scale_arr`` as VC2).  The
rescaling is diffusers' ``rescale_zero_terminal_snr``, run in float64 as the original's NumPy code.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ..vc2.schedule import LINEAR_END, LINEAR_START, NUM_TRAIN_TIMESTEPS, Schedule, vc2_schedule
from ..vc2.schedule import schedule_from_buffers as vc2_schedule_from_buffers


def dynamicrafter_schedule() -> Schedule:
    """Zero-terminal-SNR ``alphas_cumprod`` (float64 maths, stored float32) and VC2's ``scale_arr``."""
    from diffusers.schedulers.scheduling_ddim import rescale_zero_terminal_snr

    betas = torch.linspace(LINEAR_START**0.5, LINEAR_END**0.5, NUM_TRAIN_TIMESTEPS, dtype=torch.float64) ** 2
    betas = rescale_zero_terminal_snr(betas)
    alphas_cumprod = np.cumprod(1.0 - betas.numpy(), axis=0)
    return Schedule(
        alphas_cumprod=torch.tensor(alphas_cumprod, dtype=torch.float32), scale_arr=vc2_schedule().scale_arr
    )


def schedule_from_buffers(buffers: Mapping[str, torch.Tensor]) -> Schedule:
    """The checkpoint's own buffers when present (the original sampler reads those), else the default above."""
    return vc2_schedule_from_buffers(dict(buffers), dynamicrafter_schedule())
