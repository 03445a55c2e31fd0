"""Write a tiny AnimeGamer decoder + CogVideoX VAE with random weights, in the real formats, for tests and CI.

    python scripts/make_tiny_animegamer_decoder.py MODELS_DIR [--input-dir INPUT_DIR]

Creates ``MODELS_DIR/animegamer/gameanim_tiny_decoder.safetensors`` (our converted format: the real key layout of
``AnimeGamerDecoder`` at width 64, 1 layer, 4 latent channels), ``MODELS_DIR/animegamer/gameanim_tiny_vae/`` (a
diffusers ``AutoencoderKLCogVideoX`` folder: 4 blocks so the 8x spatial / 4x temporal compression is real, 4 latent
channels) and, with ``--input-dir``, ``gameanim_tiny_representation.safetensors`` (a [1, 226, 64] representation)
there.  The integration tests write the same tiny models under the shipped workflow's real file names
(``tests/integration/workflow_models.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from _pack import import_pack

ROOT = Path(__file__).resolve().parents[1]
DECODER_NAME = "gameanim_tiny_decoder.safetensors"
VAE_NAME = "gameanim_tiny_vae"
REPRESENTATION_NAME = "gameanim_tiny_representation.safetensors"
TINY_CONFIG = {
    "num_attention_heads": 1,
    "attention_head_dim": 64,
    "in_channels": 4,
    "out_channels": 4,
    "time_embed_dim": 32,
    "num_layers": 1,
    "sample_height": 8,
    "sample_width": 8,
    "sample_frames": 17,
    "text_embed_dim": 32,
    "image_embed_dim": 32,
}


def make_decoder(path: Path, seed: int = 0, width: int = 64) -> Path:
    """A tiny random decoder whose token width is ``width`` (one head), saved as a converted file."""
    import_pack()
    from gameanim.core.weights import save_safetensors_atomic
    from gameanim.nodes.animegamer.decoder.convert import FORMAT, FORMAT_VERSION
    from gameanim.nodes.animegamer.decoder.model import DecoderConfig, build_decoder

    torch.manual_seed(seed)
    config = DecoderConfig.from_mapping({**TINY_CONFIG, "attention_head_dim": width})
    model = build_decoder(config)
    with torch.no_grad():  # the released zero-inits (adaLN, flow head) would make a dull model
        for param in model.parameters():
            param.add_(0.02 * torch.randn_like(param))
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": config.to_json(),
        "dtype": "float32",
        "source": "tiny random",
    }
    return save_safetensors_atomic(model.state_dict(), path, metadata=meta, overwrite=True)


def make_vae(folder: Path, seed: int = 0) -> Path:
    from diffusers import AutoencoderKLCogVideoX

    torch.manual_seed(seed)
    vae = AutoencoderKLCogVideoX(
        block_out_channels=(8, 8, 8, 8),
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=4,
        sample_height=64,
        sample_width=64,
    )
    vae.save_pretrained(str(folder), safe_serialization=True)
    return folder


def make_representation(path: Path, width: int = 64, seed: int = 0) -> Path:
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"representation": torch.randn((1, 226, width), generator=generator)}, str(path))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models_dir", help="ComfyUI models folder (animegamer/ is created inside)")
    parser.add_argument("--input-dir", help="ComfyUI input folder for the tiny representation file")
    args = parser.parse_args()
    folder = Path(args.models_dir) / "animegamer"
    folder.mkdir(parents=True, exist_ok=True)
    print(make_decoder(folder / DECODER_NAME))
    print(make_vae(folder / VAE_NAME))
    if args.input_dir:
        print(make_representation(Path(args.input_dir) / REPRESENTATION_NAME))


if __name__ == "__main__":
    main()
