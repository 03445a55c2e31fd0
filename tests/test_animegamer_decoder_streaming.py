"""Converting a SAT decoder file streams: only the transformer's tensors are paged in, memory stays bounded.

A SAT file at the real width (1920, one layer, LoRA r=64) plus a large stand-in ``conditioner`` tensor (the T5 that
the released 26.6 GB file probably carries) is converted in a fresh process; its peak RSS growth must stay below
twice the transformer's size, which it could not if the conditioner were read.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "animegamer_decoder"
PREFIX = "model.diffusion_model."

CHILD = r"""
import importlib.util, json, resource, sys
from pathlib import Path
root, source, target = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("gameanim", Path(root) / "__init__.py", submodule_search_locations=[root])
pack = importlib.util.module_from_spec(spec); sys.modules["gameanim"] = pack; spec.loader.exec_module(pack)
import torch, diffusers  # noqa: F401  (baseline includes the libraries)
from gameanim.nodes.animegamer.decoder.convert import convert_to_file
import gameanim.nodes.animegamer.decoder.model  # noqa: F401
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
convert_to_file(source, target, dtype=torch.float16)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "after": after}))
"""


def _one_layer_real_width_state() -> dict[str, torch.Tensor]:
    with open(FIXTURE / "real_sat_keys.tsv") as handle:
        rows = {r["key"]: r["shape"] for r in csv.DictReader(handle, delimiter="\t")}
    layer = re.compile(r"(?:layers|_list|modulations)\.(\d+)\.")
    keep = {k: v for k, v in rows.items() if (m := layer.search(k)) is None or m.group(1) == "0"}
    state = {k: torch.full([int(d) for d in s.split("x")], 0.01) for k, s in keep.items()}
    for name, parts in (("attention.query_key_value", 3), ("attention.dense", 1)):
        base = f"{PREFIX}transformer.layers.0.{name}"
        state[base + ".original.weight"] = state.pop(base + ".weight")
        state[base + ".original.bias"] = state.pop(base + ".bias")
        out = state[base + ".original.weight"].shape[0] // parts
        for j in range(parts):
            state[f"{base}.matrix_A.{j}"] = torch.full((64, 1920), 0.01)
            state[f"{base}.matrix_B.{j}"] = torch.full((out, 64), 0.01)
    return state


def test_conversion_streams_with_bounded_memory(tmp_path):
    state = _one_layer_real_width_state()
    transformer_bytes = sum(v.numel() * v.element_size() for v in state.values())
    state["conditioner.embedders.0.transformer.shared.weight"] = torch.ones(int(1.5 * transformer_bytes) // 4)
    folder = tmp_path / "VDM_Decoder-Big"
    (folder / "7").mkdir(parents=True)
    (folder / "latest").write_text("7")
    torch.save({"module": state}, folder / "7" / "mp_rank_00_model_states.pt")
    del state
    target = tmp_path / "big.safetensors"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(folder), str(target)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rss = json.loads(done.stdout.strip().splitlines()[-1])
    growth = rss["after"] - rss["before"]
    assert target.is_file() and target.stat().st_size < transformer_bytes * 0.6
    assert growth < 2 * transformer_bytes, (growth / 2**20, transformer_bytes / 2**20)
