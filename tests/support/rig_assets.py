"""Rigged 3-D characters nobody here made, for the training-clip tests.

assimp's test models (Debian ``assimp-testmodels``, BSD-3-clause per its copyright file): ``Testwuson.X``
(a bull with ``Wuson_Run`` / ``Wuson_Walk`` actions, 37 bones) and ``BCN_Epileptic.X`` (a human body in
three meshes, 54 bones, one jumping action), untextured, converted to glTF binary by assimp's exporter; and
``IQM/mrfixit.iqm`` (the IQM SDK's textured humanoid: ``Body.jpg`` and ``Head.jpg``, 75 joints, a 101-frame
``idle`` animation; Z up, facing +X), converted by ``.ci/iqm_to_glb.py`` in Blender.  ``.ci/run`` fetches the
package with ``apt-get download`` and converts it with ``.ci/rig_assets.sh`` into ``.cache/test-assets``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHARACTERS = ("Testwuson", "BCN_Epileptic", "mrfixit")
FACING = {"mrfixit": "+X"}  # Render Training Clips' ``facing``; the others face Blender's -Y


def assets_dir() -> Path:
    return Path(os.environ.get("GAMEANIM_TEST_ASSETS", ROOT / ".cache" / "test-assets"))


def assimp_models() -> Path:
    return assets_dir() / "assimp-testmodels" / "usr" / "share" / "assimp" / "models"


def require_character(name: str = "Testwuson") -> Path:
    """The converted character, or a skip locally / a failure in CI (where ``.ci/run`` must have made it)."""
    return require_asset(assets_dir() / f"{name}.glb")


def require_asset(path: Path) -> Path:
    """``path`` (an asset ``.ci/rig_assets.sh`` unpacks or converts), or a skip locally / a failure in CI."""
    if not path.is_file():
        message = (
            f"{path} not found; run: (cd .cache/test-assets && apt-get download assimp-testmodels) && "
            "GAMEANIM_BLENDER=... bash .ci/rig_assets.sh .cache/test-assets   (needs assimp-utils; "
            "mrfixit.glb needs GAMEANIM_BLENDER)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
