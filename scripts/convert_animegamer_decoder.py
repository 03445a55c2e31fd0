"""Convert the released AnimeGamer decoder (SAT folder) to our compact safetensors, from the command line.

    python scripts/convert_animegamer_decoder.py models/animegamer/VDM_Decoder-Qiqi \\
        models/animegamer/animegamer_decoder_qiqi_fp16.safetensors [--dtype float16|bfloat16|float32] [--overwrite]

Same as the AnimeGamer Decoder Convert node: only the transformer tensors are streamed from the (~26.6 GB)
checkpoint, the LoRA is merged, and the architecture is stored in the file's metadata.
"""

from __future__ import annotations

import argparse
import time

from _pack import import_pack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="VDM_Decoder-<character>/ folder or its mp_rank_00_model_states.pt")
    parser.add_argument("target", help="output .safetensors")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()
    import_pack()
    from gameanim import api

    start = time.perf_counter()
    path = api.convert_animegamer_decoder(args.source, args.target, dtype=args.dtype, overwrite=args.overwrite)
    print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB) in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
