"""LoRA on the VC2 UNet: target presets, peft injection for training, merging for inference.

Targets are module names of :class:`~..nodes.vc2.unet.VC2UNet` (diffusers ``UNet3DConditionModel``
names under ``unet.`` plus our ``fps_embedding``):

* ``concept``: the spatial transformers' attention projections (self + cross attention q/k/v/out).
  They see one frame at a time, so they carry appearance (the character) and not motion.
* ``action``: the temporal transformers (including the initial ``transformer_in``) and the temporal
  convolutions (Conv3d, kernel 3x1x1): the only layers that mix frames, so they carry motion.
* ``concept+action``: both.

Training injects peft adapters into a copy of the UNet that shares every base weight with the loaded
model (no second copy of 1.4 B parameters; the caller's model is never modified).  Applying a saved
LoRA merges ``strength * alpha/rank * up @ down`` into fresh copies of only the targeted weights, so
stacking is repeated merging and strength 0 is exactly the base model.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from ..core.errors import InputError, ModelFileError

ADAPTER = "gameanim"
KEY_FORMAT = "gameanim-vc2-lora-v1"
SIGNATURE_TENSORS = 64
SIGNATURE_VALUES = 4
SIGNATURE_TOLERANCE = 0.02  # relative L2; bf16/fp16 loads of one file differ by < 0.003

_ATTN = r"transformer_blocks\.\d+\.attn[12]\.(to_q|to_k|to_v|to_out\.0)"
_SPATIAL = re.compile(r"unet\.(down_blocks\.\d+\.|up_blocks\.\d+\.|mid_block\.)attentions\.\d+\." + _ATTN)
_TEMPORAL_ATTN = re.compile(
    r"unet\.((down_blocks\.\d+\.|up_blocks\.\d+\.|mid_block\.)temp_attentions\.\d+|transformer_in)\." + _ATTN
)
_TEMPORAL_CONV = re.compile(r"unet\.(down_blocks\.\d+\.|up_blocks\.\d+\.|mid_block\.)temp_convs\.\d+\.conv\d\.\d+")
TARGET_PRESETS = ("concept", "action", "concept+action")


def is_temporal(name: str) -> bool:
    """True for modules that mix frames (temporal attention or temporal conv)."""
    return bool(_TEMPORAL_ATTN.fullmatch(name) or _TEMPORAL_CONV.fullmatch(name))


def target_modules(unet: nn.Module, preset: str) -> list[str]:
    """Names (relative to the VC2 UNet) of the Linear/Conv3d layers a preset trains, in module order."""
    if preset not in TARGET_PRESETS:
        raise InputError(f"targets must be one of {', '.join(TARGET_PRESETS)}, got {preset!r}.")
    spatial = "concept" in preset
    temporal = "action" in preset
    names = []
    for name, module in unet.named_modules():
        if isinstance(module, nn.Linear) and (
            (spatial and _SPATIAL.fullmatch(name)) or (temporal and _TEMPORAL_ATTN.fullmatch(name))
        ):
            names.append(name)
        elif isinstance(module, nn.Conv3d) and temporal and _TEMPORAL_CONV.fullmatch(name):
            names.append(name)
    if not names:
        raise ModelFileError(f"The VC2 UNet has no layers for the '{preset}' LoRA targets: is it a VC2 UNet?")
    return names


def shared_copy(module: nn.Module) -> nn.Module:
    """A structural copy of ``module`` whose parameters and buffers ARE the original tensors.

    Replacing a layer or a weight in the copy leaves the original untouched, while no weight memory is
    duplicated; used for training copies and for LoRA-applied models.
    """
    memo: dict[int, Any] = {id(p): p for p in module.parameters()}
    memo.update({id(b): b for b in module.buffers()})
    return copy.deepcopy(module, memo)


# ----------------------------------------------------------------------------- base-model signature


def base_signature(unet: nn.Module) -> list[float]:
    """A few strided weight samples identifying the base UNet, robust to fp32/bf16/fp16 loading.

    A LoRA-applied or training copy reports the signature of the model it was derived from.
    """
    inherited = getattr(unet, "gameanim_base_signature", None)
    if inherited is not None:
        return list(inherited)
    state = {k.replace(".base_layer", ""): v for k, v in unet.state_dict().items() if ".lora_" not in k}
    keys = sorted(k for k, v in state.items() if v.is_floating_point() and v.numel() >= SIGNATURE_VALUES)
    pick = [
        keys[round(i * (len(keys) - 1) / max(1, SIGNATURE_TENSORS - 1))]
        for i in range(min(len(keys), SIGNATURE_TENSORS))
    ]
    values: list[float] = []
    for key in pick:
        flat = state[key].detach().reshape(-1)
        stride = max(1, flat.numel() // SIGNATURE_VALUES)
        values += [float(x) for x in flat[::stride][:SIGNATURE_VALUES].float().cpu()]
    return values


def signature_hash(signature: list[float]) -> str:
    """A short display hash of a signature (3 significant digits, so dtype rounding rarely changes it)."""
    text = json.dumps([float(f"{v:.3g}") for v in signature])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def signature_distance(a: list[float], b: list[float]) -> float:
    """Relative L2 distance between two signatures (inf when their lengths differ)."""
    if len(a) != len(b) or not a:
        return math.inf
    ta, tb = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    return float((ta - tb).norm() / tb.norm().clamp_min(1e-12))


# ----------------------------------------------------------------------------- training adapters


def inject(unet: nn.Module, preset: str, rank: int, alpha: float, seed: int) -> list[str]:
    """Add trainable peft LoRA adapters (B = 0, A seeded) to ``unet`` in place; returns the target names."""
    from peft import LoraConfig, inject_adapter_in_model

    if rank < 1:
        raise InputError(f"rank must be at least 1, got {rank}.")
    if alpha <= 0:
        raise InputError(f"alpha must be positive, got {alpha}.")
    names = target_modules(unet, preset)
    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=names, lora_dropout=0.0, init_lora_weights=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inject_adapter_in_model(config, unet, adapter_name=ADAPTER)
    for name, param in unet.named_parameters():
        param.requires_grad_(".lora_" in name)
    return names


def lora_layers(unet: nn.Module) -> dict[str, nn.Module]:
    """Module name -> peft LoRA layer, for every injected layer."""
    from peft.tuners.lora import LoraLayer

    return {n: m for n, m in unet.named_modules() if isinstance(m, LoraLayer) and ADAPTER in m.lora_A}


def lora_state(unet: nn.Module) -> dict[str, torch.Tensor]:
    """The adapters in our key format: ``<module>.lora_down.weight``, ``.lora_up.weight``, ``.alpha``."""
    out: dict[str, torch.Tensor] = {}
    for name, layer in lora_layers(unet).items():
        rank = layer.r[ADAPTER]
        out[f"{name}.lora_down.weight"] = layer.lora_A[ADAPTER].weight.detach().float().cpu().clone()
        out[f"{name}.lora_up.weight"] = layer.lora_B[ADAPTER].weight.detach().float().cpu().clone()
        out[f"{name}.alpha"] = torch.tensor(float(layer.scaling[ADAPTER] * rank))
    return out


def load_lora_state(unet: nn.Module, tensors: Mapping[str, torch.Tensor]) -> None:
    """Copy saved adapter weights into injected layers (resume); every layer must be present."""
    layers = lora_layers(unet)
    with torch.no_grad():
        for name, layer in layers.items():
            for part, module in (("lora_down", layer.lora_A[ADAPTER]), ("lora_up", layer.lora_B[ADAPTER])):
                key = f"{name}.{part}.weight"
                if key not in tensors or tuple(tensors[key].shape) != tuple(module.weight.shape):
                    raise ModelFileError(f"The training checkpoint does not match the adapters ({key}).")
                module.weight.copy_(tensors[key])


def temporal_lora_params(unet: nn.Module) -> list[nn.Parameter]:
    """The LoRA parameters of frame-mixing layers (frozen for still-image samples)."""
    params: list[nn.Parameter] = []
    for name, layer in lora_layers(unet).items():
        if is_temporal(name):
            params += [layer.lora_A[ADAPTER].weight, layer.lora_B[ADAPTER].weight]
    return params


# ----------------------------------------------------------------------------- saved LoRAs


def _modules_by_name(unet: nn.Module) -> dict[str, nn.Module]:
    return dict(unet.named_modules())


def group_lora(tensors: Mapping[str, torch.Tensor], where: str) -> dict[str, tuple[torch.Tensor, torch.Tensor, float]]:
    """``{module: (down, up, alpha)}`` from our key format, or a :class:`ModelFileError` naming foreign keys."""
    groups: dict[str, dict[str, torch.Tensor]] = {}
    foreign = []
    for key, value in tensors.items():
        match = re.fullmatch(r"(unet\..+)\.(lora_down\.weight|lora_up\.weight|alpha)", key)
        if match is None:
            foreign.append(key)
            continue
        groups.setdefault(match.group(1), {})[match.group(2)] = value
    if foreign or not groups:
        example = foreign[0] if foreign else "(no tensors)"
        raise ModelFileError(
            f"{where} is not a GameAnim VC2 LoRA: found keys like '{example}', expected "
            "'unet.<module>.lora_down.weight' / '.lora_up.weight' / '.alpha' (key format "
            f"{KEY_FORMAT}). LoRAs for SD/AnimateDiff/other models cannot be applied to VC2."
        )
    out = {}
    for module, parts in groups.items():
        if set(parts) != {"lora_down.weight", "lora_up.weight", "alpha"}:
            raise ModelFileError(f"{where} is incomplete: '{module}' has only {sorted(parts)}.")
        down, up = parts["lora_down.weight"].float(), parts["lora_up.weight"].float()
        if down.shape[0] != up.shape[1]:
            raise ModelFileError(f"{where}: '{module}' has down rank {down.shape[0]} but up rank {up.shape[1]}.")
        out[module] = (down, up, float(parts["alpha"]))
    return out


def lora_delta(down: torch.Tensor, up: torch.Tensor, alpha: float, weight_shape: torch.Size) -> torch.Tensor:
    """``alpha/rank * up @ down`` reshaped to the layer's weight (Linear or Conv3d)."""
    rank = down.shape[0]
    delta = (up.reshape(up.shape[0], -1) @ down.reshape(rank, -1)) * (alpha / rank)
    return delta.reshape(weight_shape)


def merge_into(
    model: Any,
    groups: Mapping[str, tuple[torch.Tensor, torch.Tensor, float]],
    strength: float,
    where: str,
) -> Any:
    """A new VC2Model whose UNet has the LoRA merged at ``strength`` (the input model is unchanged)."""
    unet = model.unet
    modules = _modules_by_name(unet)
    for name, (down, up, _alpha) in groups.items():
        module = modules.get(name)
        if not isinstance(module, (nn.Linear, nn.Conv3d)):
            raise ModelFileError(
                f"{where} targets '{name}', which this VC2 UNet does not have: the LoRA was made for a "
                "different architecture (another UNet size or model)."
            )
        expected_in = module.weight[0].numel()
        if up.shape[0] != module.weight.shape[0] or down[0].numel() != expected_in:
            raise ModelFileError(
                f"{where}: '{name}' has LoRA shapes down {tuple(down.shape)} / up {tuple(up.shape)} but the "
                f"layer weight is {tuple(module.weight.shape)}: the LoRA was made for a different base model."
            )
    signature = base_signature(unet)
    new_unet = shared_copy(unet)
    new_unet.gameanim_base_signature = signature
    if strength != 0.0:
        new_modules = _modules_by_name(new_unet)
        with torch.no_grad():
            for name, (down, up, alpha) in groups.items():
                layer = new_modules[name]
                weight = layer.weight
                delta = lora_delta(down, up, alpha, weight.shape).to(weight.device)
                merged = (weight.float() + strength * delta).to(weight.dtype)
                layer.weight = nn.Parameter(merged, requires_grad=False)
    return replace(model, unet=new_unet)
