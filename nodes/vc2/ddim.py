"""The original VideoCrafter DDIM step, reproduced step for step (``lvdm/models/samplers/ddim.py``).

What a plain diffusers ``DDIMScheduler`` would miss: VC2 was trained with ``scale_arr`` (the clean
latent shrunk towards 0.7x for t >= 400), so each step divides the predicted x0 by ``scale_arr[t]``
and re-applies ``scale_arr[t_prev]``.  Everything else is the usual DDIM: "leading" timesteps offset
by 1 (``range(0, 1000, 1000 // steps) + 1``), ``alphas_prev[0] = alphas_cumprod[0]``, eta-scaled
sigmas, and classifier-free guidance with a separate unconditional pass.

The same loop is DynamiCrafter's sampler (its ``ddim.py`` is this one plus three options):
``parameterization="v"`` (the model predicts v; eps and x0 follow from it), ``guidance_rescale``
(the CFG result's std pulled back towards the conditional prediction's) and the "uniform_trailing"
timestep spacing of :func:`~.schedule.ddim_timesteps`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ...core.errors import InputError, NumericalError
from ...core.progress import ProgressFn, no_progress
from .schedule import Schedule, ddim_timesteps

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

FP16_HINT = "This usually means fp16 overflow in the UNet: load the model with dtype bf16 (or fp32) and run again."


def ddim_coefficients(
    schedule: Schedule, steps: int, eta: float, spacing: str = "uniform", unfixed_last_scale: bool = False
) -> dict[str, torch.Tensor]:
    """Per-index DDIM coefficients (index 0 = last step), as the original ``make_schedule`` builds them.

    The last step re-applies ``scale_arr[0]`` (VideoCrafter's "fix a bug" line).  DynamiCrafter's sampler
    predates that fix and re-applies the last DDIM timestep's own scale: ``unfixed_last_scale=True``.
    """
    timesteps = torch.as_tensor(ddim_timesteps(steps, schedule.num_timesteps, spacing), dtype=torch.long)
    acp = schedule.alphas_cumprod.double()
    alphas = acp[timesteps]
    alphas_prev = torch.cat([acp[:1], acp[timesteps[:-1]]])
    sigmas = eta * torch.sqrt((1 - alphas_prev) / (1 - alphas) * (1 - alphas / alphas_prev))
    coeffs = {"timesteps": timesteps, "alphas": alphas, "alphas_prev": alphas_prev, "sigmas": sigmas}
    if schedule.scale_arr is not None:
        scale = schedule.scale_arr.double()
        coeffs["scale"] = scale[timesteps]
        first = scale[timesteps[:1]] if unfixed_last_scale else scale[:1]
        coeffs["scale_prev"] = torch.cat([first, scale[timesteps[:-1]]])
    return coeffs


def _check_finite(x: torch.Tensor, step: int, steps: int) -> None:
    if not torch.isfinite(x).all():
        raise NumericalError(f"The latents became NaN or inf at DDIM step {step} of {steps}. {FP16_HINT}")


def rescale_guidance(guided: torch.Tensor, cond: torch.Tensor, factor: float) -> torch.Tensor:
    """Guidance rescale (Lin et al. 2023, section 3.4): match the CFG output's per-sample std to the
    conditional prediction's, blended by ``factor``; counters over-exposure with zero-terminal-SNR models."""
    dims = list(range(1, cond.ndim))
    rescaled = guided * (cond.std(dim=dims, keepdim=True) / guided.std(dim=dims, keepdim=True))
    return factor * rescaled + (1 - factor) * guided


def q_sample(schedule: Schedule, x0: torch.Tensor, t: int, noise: torch.Tensor) -> torch.Tensor:
    """Noise a clean latent to timestep ``t`` the way VC2 was trained (with ``scale_arr``)."""
    acp = float(schedule.alphas_cumprod[t])
    scale = float(schedule.scale_arr[t]) if schedule.scale_arr is not None else 1.0
    return acp**0.5 * scale * x0 + (1 - acp) ** 0.5 * noise


def ddim_sample(
    eps_fn: EpsFn,
    schedule: Schedule,
    x_T: torch.Tensor,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    steps: int = 50,
    cfg: float = 12.0,
    eta: float = 1.0,
    fps: int | torch.Tensor = 16,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    start_step: int = 0,
    progress: ProgressFn | None = None,
    parameterization: str = "eps",
    guidance_rescale: float = 0.0,
    spacing: str = "uniform",
    unfixed_last_scale: bool = False,
    preview: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """Run DDIM from ``x_T`` and return the final latents ``[B,C,T,H,W]``.

    ``eps_fn(x, t, context, fps)`` is the UNet.  Per-step noise for eta > 0 comes from ``noise[i]``
    (sampling order, scaled by sigma_i) or else from ``generator`` on the CPU, so a seed gives the same
    clip on any device.  ``start_step`` skips the first (noisiest) steps for init-latent sampling.
    ``progress(done, total)`` is called after every step and may raise to cancel; ``preview`` gets the
    step's predicted clean latent just before it (what a live preview shows).  With
    ``parameterization="v"`` ``eps_fn`` returns the v prediction (see the module docstring).
    """
    if eta < 0:
        raise InputError(f"eta must be >= 0, got {eta}.")
    if parameterization not in ("eps", "v"):
        raise InputError(f"parameterization must be 'eps' or 'v', got {parameterization!r}.")
    coeffs = ddim_coefficients(schedule, steps, eta, spacing, unfixed_last_scale)
    report = progress or no_progress
    total = steps - start_step
    if noise is not None and eta > 0 and len(noise) < total:
        raise InputError(f"noise holds {len(noise)} per-step tensors but {total} steps will run.")
    guided = uncond_context is not None and cfg != 1.0
    x = x_T
    batch = x.shape[0]
    for i, index in enumerate(range(steps - 1 - start_step, -1, -1)):
        t = coeffs["timesteps"][index]
        ts = torch.full((batch,), int(t), dtype=torch.long, device=x.device)
        e = eps_fn(x, ts, context, fps).to(x.dtype)
        if guided:
            e_u = eps_fn(x, ts, uncond_context, fps).to(x.dtype)
            e_c, e = e, e_u + cfg * (e - e_u)
            if guidance_rescale > 0:
                e = rescale_guidance(e, e_c, guidance_rescale)
        a_t = float(coeffs["alphas"][index])
        a_prev = float(coeffs["alphas_prev"][index])
        sigma = float(coeffs["sigmas"][index])
        if parameterization == "v":
            pred_x0 = a_t**0.5 * x - (1 - a_t) ** 0.5 * e
            e = a_t**0.5 * e + (1 - a_t) ** 0.5 * x
        else:
            pred_x0 = (x - (1 - a_t) ** 0.5 * e) / a_t**0.5
        direction = max(0.0, 1 - a_prev - sigma**2) ** 0.5 * e  # rounding can dip below 0 at zero SNR
        if "scale" in coeffs:
            pred_x0 = pred_x0 / float(coeffs["scale"][index])
            x = a_prev**0.5 * float(coeffs["scale_prev"][index]) * pred_x0 + direction
        else:
            x = a_prev**0.5 * pred_x0 + direction
        if sigma > 0:
            if noise is not None:
                step_noise = noise[i].to(device=x.device, dtype=x.dtype)
            else:
                step_noise = torch.randn(x.shape, generator=generator, dtype=torch.float32).to(x.device, x.dtype)
            x = x + sigma * step_noise
        _check_finite(x, i + 1, total)
        if preview is not None:
            preview(pred_x0)
        report(i + 1, total)
    return x
