"""The motion nodes as ComfyUI calls them (plain Python: host falls back to silent progress, CPU)."""

from __future__ import annotations

import pytest
import torch
from gameanim.core.errors import InputError
from gameanim.nodes.motion import comfy_nodes as nodes


def test_every_node_has_description_category_and_tooltips():
    for node_id, cls in nodes.NODE_CLASS_MAPPINGS.items():
        assert node_id.startswith("GameAnim") and node_id in nodes.NODE_DISPLAY_NAME_MAPPINGS
        assert cls.DESCRIPTION and cls.CATEGORY == "GameAnim/Motion"
        assert len(cls.OUTPUT_TOOLTIPS) == len(cls.RETURN_TYPES) == len(cls.RETURN_NAMES)
        for group in cls.INPUT_TYPES().values():
            for name, spec in group.items():
                assert spec[1].get("tooltip"), f"{node_id}.{name} has no tooltip"


def test_synthetic_clip_to_flow_to_scope_to_decoder_chain():
    images, mask = nodes.SyntheticMotionClip().run(10, 512, 320, 6.0, 0.0, "plain", 0.0, 3)
    assert images.shape == (10, 320, 512, 3) and mask.shape == (10, 320, 512)
    flow, view = nodes.OpticalFlow().run(images, "dis_medium")
    assert flow.shape == (9, 320, 512, 2) and view.shape == (9, 320, 512, 3)
    scope, peak, level, plot = nodes.MotionScope().run(flow, 0.2, "0.7, 3.5, 12, 28", images=images, mask=mask)
    assert scope == pytest.approx(6.0, rel=0.1)  # the node's speed is already in 480x720 px
    assert peak >= scope and level == 3
    assert plot.shape == (1, 256, 512, 3) and 0.0 <= float(plot.min()) and float(plot.max()) <= 1.0
    assert nodes.MotionLevelToDecoder().run(level, "inference_decoder") == (10.0,)
    assert nodes.MotionLevelToDecoder().run(level, "app") == (5.0,)


def test_scope_node_accepts_controlnet_aux_style_flow_without_frames():
    flow = torch.zeros(3, 48, 64, 2)
    flow[:, 10:30, 10:30, 0] = 2.0
    scope, peak, level, _ = nodes.MotionScope().run(flow, 0.2, "0.7, 3.5, 12, 28")
    expected = 2.0 * (480 * 720 / (48 * 64)) ** 0.5
    assert scope == pytest.approx(expected, rel=1e-5) and peak == pytest.approx(expected, rel=1e-5) and level == 4
    with pytest.raises(InputError, match="four edges"):
        nodes.MotionScope().run(flow, 0.2, "1, 2")


def test_evaluate_node_reports_per_clip():
    slow, _ = nodes.SyntheticMotionClip().run(6, 256, 160, 2.0, 0.0, "plain", 0.0, 0)
    fast, _ = nodes.SyntheticMotionClip().run(6, 256, 160, 20.0, 0.0, "plain", 0.0, 1)
    acc, mae, report = nodes.MotionEvaluate().run(
        torch.cat([slow, fast]), 6, "2, 2", "dis_medium", 0.2, "0.7, 3.5, 12, 28"
    )
    assert (acc, mae) == (0.5, 1.0)
    assert report.splitlines()[0].startswith("ACC-F 0.500") and "level 4 target 2" in report
