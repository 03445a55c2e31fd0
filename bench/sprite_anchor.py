"""Benchmark of Anchor & Stabilise (not part of the test suite).

Run: ``python bench/sprite_anchor.py [--baseline-ref main]`` (needs the arcade wheel in
``.cache/test-assets``, see ``tests/support/sprite_real.py``).

1. Kenney's six CC0 walks at 512x320 with ±4 px planted jitter (true alpha, so the matte does not
   enter): ms/frame of stabilise and the head's horizontal span against the drawn walk's, new vs the
   ``nodes/sprite`` of ``--baseline-ref`` measured in the same run (interleaved).  Goal: <= 5 ms/frame.
2. The same walks at 1x and 2x with ±2/3/4 px shake on both axes (seeds 0-9): how far the feet line of the
   frames in contact still moves after ``lock``, new vs ``--baseline-ref``; and the offsets of the walks
   with no shake (0: nothing added).
3. The shipped run cycle (mannequin render) crossing the frame with a shaken camera: how far the hips
   wander after stabilising, by the rig root (pose_keypoint) and by the body estimate alone.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
from pathlib import Path

import numpy as np
from _common import import_pack, interleaved_best
from sprite import baseline_sprite


def kenney(ref: str) -> None:
    from gameanim.nodes.sprite import anchor

    from tests.support import sprite_real as real

    if real.wheel_path() is None:
        print(f"real art: skipped ({real.WHEEL} not in .cache/test-assets)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        baseline_sprite(ref, Path(tmp))
        base = importlib.import_module("gameanim_base.nodes.sprite.anchor")
        print(f"Kenney walks, 512x320, ±4 px jitter; head span drawn vs stabilised (|difference|), new / {ref}:")
        for character in real.CHARACTERS:
            _, source, _ = real.composite(character, (0, 0, 0), size=(320, 512))
            _, alpha, planted = real.composite(character, (0, 0, 0), size=(320, 512), jitter=4, seed=3)
            rgb = np.zeros((*alpha.shape, 3), np.float32)
            times = interleaved_best(
                {
                    "new": lambda c=rgb, a=alpha: anchor.stabilise(c, a),
                    "old": lambda c=rgb, a=alpha: base.stabilise(c, a),
                },
                5,
            )
            drawn = np.ptp(anchor.head_x(source))
            spans = {
                k: np.ptp(anchor.head_x(m.stabilise(rgb, alpha).alpha)) for k, m in (("new", anchor), ("old", base))
            }
            residual = {
                k: np.ptp(m.stabilise(rgb, alpha).offsets[:, 0] + planted[:, 0])
                for k, m in (("new", anchor), ("old", base))
            }
            print(
                f"  {character:18s} drawn {drawn:4.1f} px -> new {spans['new']:4.1f} (|d| {abs(spans['new'] - drawn):.2f})"
                f" / old {spans['old']:4.1f} (|d| {abs(spans['old'] - drawn):.2f}); jitter left x: new {residual['new']}"
                f" / old {residual['old']} px; {1000 * times['new'] / 8:.2f} / {1000 * times['old'] / 8:.2f} ms/frame"
            )


def vertical(ref: str) -> None:
    """Feet line of the frames in contact after ±4 px shake (both axes), new vs ``ref``, and a clip with no shake."""
    from gameanim.nodes.sprite import anchor

    from tests.support import sprite_real as real
    from tests.support import sprite_shake as shake

    if real.wheel_path() is None:
        print(f"vertical: skipped ({real.WHEEL} not in .cache/test-assets)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        baseline_sprite(ref, Path(tmp))
        base = importlib.import_module("gameanim_base.nodes.sprite.anchor")
        print(
            f"Kenney walks (all six), shake on both axes, seeds 0-9: feet-line spread of the frames in contact, new / {ref}:"
        )
        walks = {}
        for character in real.CHARACTERS:
            rgb, alpha = real.walk_cycle(character)
            walks[character, 1] = (rgb, alpha)
            walks[character, 2] = (np.zeros((8, 320, 384, 3), np.float32), real.composite(character, (0, 0, 0))[1])
        for scale in (1, 2):
            for amp in (2, 3, 4):
                spreads = {"new": [], "old": []}
                for character in real.CHARACTERS:
                    rgb, alpha = walks[character, scale]
                    drawn = anchor.ground_y(alpha)
                    contact = drawn == drawn.max()
                    for seed in range(10):
                        shifted, shaken, _ = shake.shaken(rgb, alpha, amp, seed)
                        for name, module in (("new", anchor), ("old", base)):
                            feet = anchor.ground_y(module.stabilise(shifted, shaken).alpha)
                            spreads[name].append(np.ptp(feet[contact]))
                print(
                    f"  {scale}x, ±{amp} px: worst {max(spreads['new']):.0f} / {max(spreads['old']):.0f} px, "
                    f"mean {np.mean(spreads['new']):.2f} / {np.mean(spreads['old']):.2f} px"
                )
        for scale in (1, 2):
            still = {
                k: max(np.ptp(m.stabilise(*walks[c, scale]).offsets, axis=0).max() for c in real.CHARACTERS)
                for k, m in (("new", anchor), ("old", base))
            }
            print(f"  {scale}x, no shake: largest offset spread {still['new']} / {still['old']} px")


def rig_root() -> None:
    from gameanim.nodes.sprite import operations

    from tests.support.sprite_rig import run_cycle_clip

    shaken, pose, _ = run_cycle_clip(512, 320, step=1, follow_root=False, shake=4, pad=4)
    t = len(shaken)
    rgb = np.zeros((*shaken.shape, 3), np.float32)
    hips = operations.rig_root_x(pose, 520, 328)
    times = interleaved_best(
        {
            "rig": lambda: operations.stabilise(rgb, shaken, pose_keypoint=pose),
            "body": lambda: operations.stabilise(rgb, shaken),
        },
        3,
    )
    for name, kwargs in (("rig root", {"pose_keypoint": pose}), ("body estimate", {})):
        offsets = operations.stabilise(rgb, shaken, **kwargs).offsets
        key = "rig" if kwargs else "body"
        print(
            f"run cycle ({t} frames, 520x328, crossing the frame, ±4 px shake), {name}: hips wander "
            f"{np.ptp(hips + offsets[:, 0]):.2f} px after lock; {1000 * times[key] / t:.2f} ms/frame"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default="main", help="git ref of the previous anchor")
    args = parser.parse_args()
    import_pack()
    kenney(args.baseline_ref)
    vertical(args.baseline_ref)
    rig_root()


if __name__ == "__main__":
    main()
