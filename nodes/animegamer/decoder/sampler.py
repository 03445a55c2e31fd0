"""The released AnimeGamer decoder sampler: VP-SDE DPM-Solver++(2M), zero-SNR schedule (shift 3), v-prediction.

Reproduced from the SAT ``VPSDEDPMPP2MSampler`` + ``ZeroSNRDDPMDiscretization(shift_scale=3)`` +
``DiscreteDenoiser``/``VideoScaling`` + ``DynamicCFG(scale=6, exp=5)`` that AnimeGamer's configs select, including
the details that change the numbers:

* the step schedule is ``linspace(999, 0, steps, endpoint=False)`` reversed; the zero-SNR rescale is applied to
  the ``sqrt(alpha_bar)`` of *those* steps, but the denoiser's ``c_skip``/``c_out`` use the nearest entry of the
  full 1000-step rescaled table (``DiscreteDenoiser.possibly_quantize_sigma``);
* the network gets the discrete timestep index; CFG batches are ``[uncond, cond]``;
* SDE noise is drawn in the original order (initial noise, then one draw per step and a second one on
  second-order steps, whose first draw is discarded), so a seed gives the released sampler's result;
* "released" dynamic CFG evaluates ``1 + s(1 - cos(pi ((N - t) / N)^5)) / 2`` with the timestep ``t`` where a
  step count was meant (so the scale jumps between 1 and 7); "intended" uses the step index ``i``; "constant"
  uses ``s``.

All noise comes from one seeded CPU ``torch.Generator`` (same result on every device).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ....core.errors import InputError, NumericalError
from ....core.progress import ProgressFn

CFG_MODES = ("released", "intended", "constant")
NUM_TRAIN_STEPS = 1000
ModelFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _shifted_alphas_cumprod(shift: float) -> np.ndarray:
    betas = torch.linspace(0.00085**0.5, 0.012**0.5, NUM_TRAIN_STEPS, dtype=torch.float64) ** 2
    alphas_cumprod = np.cumprod(1.0 - betas.numpy(), axis=0)
    return alphas_cumprod / (shift + (1 - shift) * alphas_cumprod)


def _zero_snr_sqrt(alphas_cumprod: np.ndarray) -> torch.Tensor:
    """sqrt(alpha_bar) rescaled so the last entry is exactly 0 (float32, as the original)."""
    root = torch.tensor(alphas_cumprod, dtype=torch.float32).sqrt()
    first, last = root[0].clone(), root[-1].clone()
    root -= last
    root *= first / (first - last)
    return root


@dataclass(frozen=True)
class Schedule:
    """``alpha_sqrt[i]`` for loop step i (plus a trailing 1), the timestep fed at step i, the full quantisation table."""

    alpha_sqrt: torch.Tensor
    timesteps: list[int]
    table: torch.Tensor

    def quantize(self, value: torch.Tensor) -> torch.Tensor:
        """Nearest entry of the 1000-step table (what the released denoiser uses for c_skip/c_out)."""
        idx = (value - self.table[:, None]).abs().argmin(dim=0)
        return self.table[idx].view(value.shape)


def make_schedule(steps: int, shift: float = 3.0) -> Schedule:
    if not 1 <= steps <= NUM_TRAIN_STEPS:
        raise InputError(f"steps={steps}; choose 1..{NUM_TRAIN_STEPS} (the released sampler uses 50).")
    base = _shifted_alphas_cumprod(shift)
    idx = np.linspace(NUM_TRAIN_STEPS - 1, 0, steps, endpoint=False).astype(int)[::-1]
    subset = torch.flip(_zero_snr_sqrt(base[idx]), (0,))
    alpha_sqrt = torch.cat([subset, subset.new_ones([1])])
    table = _zero_snr_sqrt(base)  # index i = timestep i
    return Schedule(alpha_sqrt=alpha_sqrt, timesteps=[int(t) for t in idx[::-1]], table=table)


def cfg_scale(mode: str, scale: float, step: int, timestep: int, steps: int, exp: float = 5.0) -> float:
    """The guidance scale of a step under ``mode`` (see the module docstring)."""
    if mode == "constant":
        return scale
    if mode == "released":
        position = steps - timestep
    elif mode == "intended":
        position = step
    else:
        raise InputError(f"cfg mode '{mode}' is unknown; choose one of {CFG_MODES}.")
    return 1 + scale * (1 - math.cos(math.pi * (position / steps) ** exp)) / 2


def sample(
    model_fn: ModelFn,
    cond_tokens: torch.Tensor,
    uncond_tokens: torch.Tensor,
    flow: float,
    shape: tuple[int, int, int, int],
    *,
    steps: int = 50,
    seed: int = 0,
    cfg_mode: str = "released",
    cfg: float = 6.0,
    shift: float = 3.0,
    noise: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
    progress: ProgressFn | None = None,
    preview: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """Sample one shot's latents ``[B, T, C, H, W]`` (B from ``cond_tokens``).

    ``model_fn(latents, timestep, tokens, flow)`` returns the v-prediction (``AnimeGamerDecoder.transformer``).
    ``shape`` is ``(T, C, H, W)`` of the latents; ``noise`` (optional) replaces the first draw; the
    per-step SDE noise still follows ``seed``.  ``preview`` receives each step's denoised estimate
    ``[B, T, C, H, W]`` (for a live preview) before ``progress``.
    """
    if cfg_mode not in CFG_MODES:
        raise InputError(f"cfg mode '{cfg_mode}' is unknown; choose one of {CFG_MODES}.")
    if not flow:
        raise InputError("flow (motion scope) must be non-zero: the released decoder skips the flow embedding at 0.")
    sched = make_schedule(steps, shift)
    generator = torch.Generator().manual_seed(int(seed))
    batch = cond_tokens.shape[0]

    def draw(like: torch.Tensor) -> torch.Tensor:
        return torch.randn(like.shape, generator=generator, dtype=torch.float32).to(like.device)

    x = torch.randn(
        (batch, *shape), generator=generator, dtype=torch.float32
    )  # drawn even when replaced: keeps the SDE stream
    x = (x if noise is None else noise.float().clone()).to(device)
    tokens = torch.cat([uncond_tokens.expand(batch, -1, -1), cond_tokens], dim=0)
    flows = torch.full((2 * batch,), float(flow), device=device)
    old_denoised: torch.Tensor | None = None
    a = sched.alpha_sqrt.to(device)
    for i in range(steps):
        timestep = sched.timesteps[i]
        alpha = a[i]
        q = sched.quantize(sched.alpha_sqrt[i : i + 1]).to(device)[0]
        v = model_fn(torch.cat([x, x]), torch.full((2 * batch,), float(timestep), device=device), tokens, flows).float()
        both = v * -((1 - q**2) ** 0.5) + torch.cat([x, x]) * q
        uncond, cond = both.chunk(2)
        denoised = uncond + cfg_scale(cfg_mode, cfg, i, timestep, steps) * (cond - uncond)
        if not torch.isfinite(denoised).all():
            raise NumericalError(
                f"NaN/inf at sampler step {i + 1}/{steps}: the model overflowed (fp16 on a device without fp16 "
                "range?). Retry with bf16 or fp32."
            )
        if i == steps - 1:
            x = denoised
        else:
            x, old_denoised = _dpmpp_2m_step(
                x, denoised, old_denoised, a[i - 1] if i > 0 else None, alpha, a[i + 1], draw
            )
        if preview is not None:
            preview(denoised)
        if progress is not None:
            progress(i + 1, steps)
    return x


def _dpmpp_2m_step(
    x: torch.Tensor,
    denoised: torch.Tensor,
    old_denoised: torch.Tensor | None,
    previous: torch.Tensor | None,
    alpha: torch.Tensor,
    next_alpha: torch.Tensor,
    draw: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """One VP-SDE DPM-Solver++(2M) update in the original's arithmetic (log-SNR steps, -inf at zero SNR)."""

    def lam(a: torch.Tensor) -> torch.Tensor:
        return ((a**2 / (1 - a**2)) ** 0.5).log()

    h = lam(next_alpha) - lam(alpha)
    mult1 = ((1 - next_alpha**2) / (1 - alpha**2)) ** 0.5 * (-h).exp()
    mult2 = (-2 * h).expm1() * next_alpha
    mult_noise = (1 - next_alpha**2) ** 0.5 * (1 - (-2 * h).exp()) ** 0.5
    x_standard = mult1 * x - mult2 * denoised + mult_noise * draw(x)
    if old_denoised is None or previous is None:
        return x_standard, denoised
    r = (lam(alpha) - lam(previous)) / h
    denoised_d = (1 + 1 / (2 * r)) * denoised - (1 / (2 * r)) * old_denoised
    return mult1 * x - mult2 * denoised_d + mult_noise * draw(x), denoised
