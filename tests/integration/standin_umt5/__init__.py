"""Test-only ComfyUI custom node: a STAND-IN for UMT5-XXL behind ``CLIPLoader`` (never shipped, never in a workflow).

UMT5-XXL has 5.7 B parameters and ComfyUI builds it at that size whatever the file holds, so the
rig-to-sprites integration test swaps the workflow's ``CLIPLoader`` for this node.  Its CLIP object
answers ``CLIPTextEncode`` with what ComfyUI's Wan text encoder gives the DiT: a [1, 512, 4096]
embedding (here deterministic noise seeded by the text) and no pooled output.
"""

from __future__ import annotations

import hashlib

import torch

TEXT_LEN = 512  # ComfyUI's WanT5Tokenizer pads to 512 tokens
TEXT_DIM = 4096  # UMT5-XXL width


class StandInUMT5:
    """Duck-types the two CLIP methods CLIPTextEncode calls."""

    def tokenize(self, text: str) -> dict:
        return {"text": text}

    def encode_from_tokens_scheduled(self, tokens: dict, **_: object) -> list:
        seed = int.from_bytes(hashlib.sha256(tokens["text"].encode("utf-8")).digest()[:8], "little")
        gen = torch.Generator().manual_seed(seed)
        cond = torch.randn((1, TEXT_LEN, TEXT_DIM), generator=gen) * 0.1
        return [[cond, {"pooled_output": None}]]


class StandInUMT5Loader:
    """Takes CLIPLoader's inputs unchanged so the test only swaps the class type."""

    CATEGORY = "testing"
    DESCRIPTION = "Test-only stand-in for UMT5-XXL (tensors of the real shape)."
    RETURN_TYPES = ("CLIP",)
    FUNCTION = "load"

    @classmethod
    def INPUT_TYPES(cls) -> dict:
        return {
            "required": {"clip_name": ("STRING", {}), "type": ("STRING", {})},
            "optional": {"device": ("STRING", {})},
        }

    def load(self, clip_name: str, type: str, device: str = "default") -> tuple:  # noqa: A002 - CLIPLoader's name
        return (StandInUMT5(),)


NODE_CLASS_MAPPINGS = {"GameAnimTestStandInUMT5Loader": StandInUMT5Loader}
