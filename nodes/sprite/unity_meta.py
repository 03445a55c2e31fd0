"""Unity's importer settings for a sprite sheet: the ``<sheet>.png.meta`` file, and its timing beside it.

Unity slices a texture into sprites from the ``TextureImporter`` block of the texture's ``.meta``
(Unity Manual, "Sprite Editor" / Scripting API ``TextureImporter``, ``SpriteMetaData``):
``spriteMode: 2`` (``SpriteImportMode.Multiple``) and ``spriteSheet.sprites``, one entry per frame with
``name``, ``rect`` (pixels, **y from the bottom** of the texture), ``alignment`` (``SpriteAlignment``;
9 = ``Custom``) and ``pivot`` (normalised to the rect, 0..1 from its bottom-left corner).  The
settings are the ones pixel art needs: ``textureType: 8`` (Sprite), ``filterMode: 0`` (Point),
``textureCompression: 0`` (Uncompressed), no mip maps, no power-of-two rescale, clamp wrapping, and a
``maxTextureSize`` at least as large as the sheet (a smaller one makes Unity downscale it).  Each
sprite's pivot is the frame's anchor (the feet, from Stabilise), so frames line up when animated.

Unity writes ``.meta`` files as plain YAML without the ``%YAML`` / ``--- !u!`` document headers of
scenes and assets, so any YAML parser reads them; ``guid``, ``spriteID`` and ``internalID`` values
are derived from the sheet (stable for the same sheet) in the forms Unity writes: 32 hex digits, and
the classic sprite file IDs ``21300000 + 2 i``.  The ``nameFileIdTable`` / ``internalIDToNameTable``
tables keep the IDs bound to the names across re-imports (Unity 2021.2+ reads the first).

Unity's ``.meta`` has no place for per-frame durations or root motion, so :func:`unity_animations`
writes them to ``<sheet>.unity.json``: per animation, the sprite names in order with their duration
in ms and the root motion in pixels with y up (Unity's axis); divide by ``pixels_per_unit`` for units.
"""

from __future__ import annotations

import hashlib
import json
import re

from .sheet import FrameRect, Sheet

PIXELS_PER_UNIT = 100  # Unity's default; it can be changed in the import settings without losing the slices
SPRITE_FILE_ID = 213  # Unity's class ID of Sprite: the key of internalIDToNameTable entries
FIRST_INTERNAL_ID = 21300000
SPRITE_ALIGNMENT_CUSTOM = 9


def _hex_id(*parts: str) -> str:
    return hashlib.md5("\0".join(parts).encode("utf-8")).hexdigest()  # noqa: S324 - an identifier, not security


def texture_guid(sheet: Sheet, image: str) -> str:
    """A 32-hex-digit asset GUID, stable for the same sheet image and name."""
    return _hex_id(image, hashlib.sha256(sheet.rgba.tobytes()).hexdigest())


def unity_rect(sheet: Sheet, f: FrameRect) -> dict[str, int]:
    """The frame's rect in Unity's texture coordinates: x from the left, y from the bottom."""
    return {"x": f.x, "y": sheet.size[1] - f.y - f.h, "width": f.w, "height": f.h}


def unity_pivot(f: FrameRect) -> tuple[float, float]:
    """The frame's anchor normalised to its rect, from the rect's bottom-left corner (trim offsets applied)."""
    px, py = f.pivot_px
    return (px - f.src_x) / f.w, (f.src_y + f.h - py) / f.h


def _yaml_name(name: str) -> str:
    """A sprite name as a YAML scalar: plain when it cannot read as anything but text, else double-quoted."""
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", name) and name.lower() not in ("true", "false", "yes", "no", "null"):
        return name
    return json.dumps(name)


def _number(value: float) -> str:
    return f"{value:.6g}"


def _max_texture_size(sheet: Sheet) -> int:
    """The smallest of Unity's max-size choices (32..16384) that keeps the sheet at full size."""
    side, size = max(sheet.size), 32
    while size < side and size < 16384:
        size *= 2
    return max(size, 2048)


def unity_meta(sheet: Sheet, image: str) -> str:
    """The ``.meta`` text for ``image`` (the sheet's PNG): a Multiple-mode pixel-art sprite texture."""
    guid = texture_guid(sheet, image)
    ids = [FIRST_INTERNAL_ID + 2 * i for i in range(len(sheet.frames))]
    max_size = _max_texture_size(sheet)
    out = ["fileFormatVersion: 2", f"guid: {guid}", "TextureImporter:", "  internalIDToNameTable:"]
    for f, internal in zip(sheet.frames, ids, strict=True):
        out += ["  - first:", f"      {SPRITE_FILE_ID}: {internal}", f"    second: {_yaml_name(f.name)}"]
    out += [
        "  externalObjects: {}",
        "  serializedVersion: 12",
        "  mipmaps:",
        "    mipMapMode: 0",
        "    enableMipMap: 0",
        "    sRGBTexture: 1",
        "    linearTexture: 0",
        "    fadeOut: 0",
        "    borderMipMap: 0",
        "    mipMapsPreserveCoverage: 0",
        "    alphaTestReferenceValue: 0.5",
        "    mipMapFadeDistanceStart: 1",
        "    mipMapFadeDistanceEnd: 3",
        "  bumpmap:",
        "    convertToNormalMap: 0",
        "    externalNormalMap: 0",
        "    heightScale: 0.25",
        "    normalMapFilter: 0",
        "  isReadable: 0",
        "  streamingMipmaps: 0",
        "  streamingMipmapsPriority: 0",
        "  vTOnly: 0",
        "  grayScaleToAlpha: 0",
        "  generateCubemap: 6",
        "  cubemapConvolution: 0",
        "  seamlessCubemap: 0",
        "  textureFormat: 1",
        f"  maxTextureSize: {max_size}",
        "  textureSettings:",
        "    serializedVersion: 2",
        "    filterMode: 0",
        "    aniso: 1",
        "    mipBias: 0",
        "    wrapU: 1",
        "    wrapV: 1",
        "    wrapW: 1",
        "  nPOTScale: 0",
        "  lightmap: 0",
        "  compressionQuality: 50",
        "  spriteMode: 2",
        "  spriteExtrude: 1",
        "  spriteMeshType: 0",
        "  alignment: 0",
        "  spritePivot: {x: 0.5, y: 0.5}",
        f"  spritePixelsToUnits: {PIXELS_PER_UNIT}",
        "  spriteBorder: {x: 0, y: 0, z: 0, w: 0}",
        "  spriteGenerateFallbackPhysicsShape: 1",
        "  alphaUsage: 1",
        "  alphaIsTransparency: 1",
        "  spriteTessellationDetail: -1",
        "  textureType: 8",
        "  textureShape: 1",
        "  singleChannelComponent: 0",
        "  flipbookRows: 1",
        "  flipbookColumns: 1",
        "  maxTextureSizeSet: 0",
        "  compressionQualitySet: 0",
        "  textureFormatSet: 0",
        "  ignorePngGamma: 0",
        "  applyGammaDecoding: 0",
        "  platformSettings:",
        "  - serializedVersion: 3",
        "    buildTarget: DefaultTexturePlatform",
        f"    maxTextureSize: {max_size}",
        "    resizeAlgorithm: 0",
        "    textureFormat: -1",
        "    textureCompression: 0",
        "    compressionQuality: 50",
        "    crunchedCompression: 0",
        "    allowsAlphaSplitting: 0",
        "    overridden: 0",
        "    androidETC2FallbackOverride: 0",
        "    forceMaximumCompressionQuality_BC6H_BC7: 0",
        "  spriteSheet:",
        "    serializedVersion: 2",
        "    sprites:",
    ]
    for f, internal in zip(sheet.frames, ids, strict=True):
        rect = unity_rect(sheet, f)
        px, py = unity_pivot(f)
        out += [
            "    - serializedVersion: 2",
            f"      name: {_yaml_name(f.name)}",
            "      rect:",
            "        serializedVersion: 2",
            *(f"        {k}: {v}" for k, v in rect.items()),
            f"      alignment: {SPRITE_ALIGNMENT_CUSTOM}",
            f"      pivot: {{x: {_number(px)}, y: {_number(py)}}}",
            "      border: {x: 0, y: 0, z: 0, w: 0}",
            "      outline: []",
            "      physicsShape: []",
            "      tessellationDetail: -1",
            "      bones: []",
            f"      spriteID: {_hex_id(guid, f.name)}",
            f"      internalID: {internal}",
            "      vertices: []",
            "      indices: ",
            "      edges: []",
            "      weights: []",
        ]
    out += [
        "    outline: []",
        "    physicsShape: []",
        "    bones: []",
        "    spriteID: ",
        "    internalID: 0",
        "    vertices: []",
        "    indices: ",
        "    edges: []",
        "    weights: []",
        "    secondaryTextures: []",
        "    nameFileIdTable:",
        *(f"      {_yaml_name(f.name)}: {internal}" for f, internal in zip(sheet.frames, ids, strict=True)),
        "  spritePackingTag: ",
        "  pSDRemoveMatte: 0",
        "  pSDShowRemoveMatteOption: 0",
        "  userData: ",
        "  assetBundleName: ",
        "  assetBundleVariant: ",
    ]
    return "\n".join(out) + "\n"


def unity_animations(sheet: Sheet, image: str) -> str:
    """``<sheet>.unity.json``: per animation its sprites in order, duration (ms) and root motion (px, y up)."""
    animations = []
    for a, clip in sheet.clips():
        frames = []
        for f in clip:
            entry: dict = {"sprite": f.name, "duration_ms": f.duration_ms}
            if f.root is not None:
                entry["root"] = {"x": f.root[0], "y": -f.root[1] + 0.0}
            frames.append(entry)
        animations.append({"name": a.name, "frames": frames})
    data = {
        "texture": image,
        "texture_guid": texture_guid(sheet, image),
        "pixels_per_unit": PIXELS_PER_UNIT,
        "root_axes": "pixels, x right, y up (Unity's axes); divide by pixels_per_unit for world units",
        "animations": animations,
    }
    return json.dumps(data, indent=2)
