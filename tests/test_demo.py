"""The README's no-weights demo runs and writes everything it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def test_demo_renders_pose_scope_and_sprites(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--out", str(tmp_path), "--size", "256", "--step", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    frames = sorted((tmp_path / "pose").glob("pose_*.png"))
    keypoints = json.loads((tmp_path / "pose_keypoints.json").read_text())
    assert len(frames) == len(keypoints) == 8
    assert keypoints[0]["canvas_width"] == 256 and len(keypoints[0]["people"][0]["pose_keypoints_2d"]) == 54
    scope = json.loads((tmp_path / "motion_scope.json").read_text())
    assert scope["scope"] > 0 and 1 <= scope["level"] <= 5 and len(scope["per_frame"]) == 7
    atlas = json.loads((tmp_path / "mannequin_sheet.json").read_text())
    assert len(atlas["frames"]) == 8
    gif = Image.open(tmp_path / "mannequin.gif")
    assert gif.n_frames == 8 and "transparency" in gif.info
