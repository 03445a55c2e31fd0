"""Render action-LoRA training clips from rigged characters (batch form of GameAnim Render Training Clips).

    GAMEANIM_BLENDER=/path/to/blender python scripts/render_training_clips.py knight.fbx --out datasets/knight \
        --character "knight in red tunic" --actions "Run = running, Jump = jumping" --views side_right,front \
        --keys grey,white,green

Every (character, action, view) becomes one clip folder under ``<out>/train/`` in the layout the
Training Dataset: Action Clips node reads: keyed frames, per-frame captions in godmodeanimation's
form, the true alpha beside them in ``alpha/``, a preview GIF and ``render_params.json``.  Several
character files may be given; each clip is written atomically, so an interrupted batch leaves only
finished clips.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _pack import import_pack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("characters", type=Path, nargs="+", help="rigged characters (.fbx, .glb/.gltf, .blend)")
    parser.add_argument("--out", type=Path, required=True, help="dataset folder (clips go to <out>/train/)")
    parser.add_argument("--character", default="", help="caption words for the character (default: file name)")
    parser.add_argument(
        "--actions",
        default="",
        help="actions, comma-separated: a name in the file or an action .fbx/.bvh, optionally '= caption words' "
        "(default: every action of the file)",
    )
    parser.add_argument("--action-dir", type=Path, action="append", default=[], help="folder of action files")
    parser.add_argument("--views", default="side_right", help="comma-separated views (8 directions)")
    parser.add_argument("--keys", default="grey", help="comma-separated key colours (grey, white, green, #rrggbb …)")
    parser.add_argument("--key-mode", default="cycle", choices=("cycle", "all"), help="one key per clip or all keys")
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--height", type=int, default=320)
    parser.add_argument("--engine", default="workbench", choices=("workbench", "eevee", "cycles"))
    parser.add_argument("--samples", type=int, default=16, help="Eevee/Cycles samples per pixel")
    parser.add_argument("--toon", action="store_true", help="godmodeanimation's two-tone toon shader (Eevee)")
    parser.add_argument("--facing", default="-Y", choices=("-Y", "+Y", "+X", "-X"), help="the rig's forward axis")
    parser.add_argument("--no-follow", action="store_true", help="fixed camera instead of following the root")
    parser.add_argument("--blender", default="", help="Blender or bpy-Python executable (default: $GAMEANIM_BLENDER)")
    args = parser.parse_args(argv)

    import_pack()
    from gameanim.core.errors import GameAnimError
    from gameanim.nodes.pose.training_clips import (
        ClipSettings,
        parse_action_list,
        parse_keys,
        parse_views,
        render_training_clips,
    )

    settings = ClipSettings(
        frames=args.frames,
        width=args.width,
        height=args.height,
        engine=args.engine,
        toon=args.toon,
        samples=args.samples,
        facing=args.facing,
        follow_root=not args.no_follow,
    )
    start = time.perf_counter()
    count = 0
    try:
        for character in args.characters:
            search = [*args.action_dir, character.parent]
            clips = render_training_clips(
                character,
                args.out,
                args.character or character.stem.replace("_", " "),
                parse_action_list(args.actions, search),
                parse_views(args.views),
                parse_keys(args.keys),
                args.key_mode,
                settings,
                args.blender,
                progress=lambda done, total, name=character.name: print(
                    f"\r{name}: frame {done}/{total}", end="", flush=True
                ),
            )
            print()
            for clip in clips:
                print(f"{clip.folder}  {clip.caption!r}")
            count += len(clips)
    except GameAnimError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    print(f"{count} clips in {time.perf_counter() - start:.1f} s → {args.out / 'train'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
