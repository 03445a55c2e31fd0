#!/usr/bin/env bash
# One command on a fresh clone: a .venv with the torch pair and the pack's requirements, then the no-weights demo
# (rig motion -> OpenPose frames -> motion scope -> transparent sprite sheet + GIF), and where its files are.
#
#   bash scripts/quickstart.sh [output folder]        (default: gameanim_demo)
#
# Re-running reuses .venv (pip only checks what is installed).  PYTHON picks the interpreter (default python3,
# 3.10 or newer); TORCH_INDEX_URL picks the torch wheels (e.g. https://download.pytorch.org/whl/cpu).
# Inside ComfyUI you do not need this: ComfyUI's own Python, `pip install -r requirements.txt`, and the demo run there.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-gameanim_demo}"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "quickstart: $python is older than 3.10; set PYTHON to a newer interpreter" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "quickstart: creating .venv with $("$python" --version)"
    "$python" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
torch_index=()
if [ -n "${TORCH_INDEX_URL:-}" ]; then
    torch_index=(--index-url "$TORCH_INDEX_URL")
fi
echo "quickstart: installing torch 2.14.1 + torchvision 0.29.1 and requirements.txt into .venv"
.venv/bin/pip install --quiet ${torch_index[@]+"${torch_index[@]}"} torch==2.14.1 torchvision==0.29.1
.venv/bin/pip install --quiet -r requirements.txt

echo "quickstart: running the demo (no weights needed)"
.venv/bin/python scripts/demo.py --out "$out"

echo
echo "quickstart: done. Open these:"
echo "  sprite sheet  $out/mannequin_sheet.png (+ mannequin_sheet.json, TexturePacker atlas)"
echo "  GIF           $out/mannequin.gif"
echo "  pose frames   $out/pose/ (OpenPose maps) and $out/pose_keypoints.json (POSE_KEYPOINT)"
echo "  motion scope  $out/motion_scope.json"
echo "Tests: bash .ci/run (sets up its own .venv, then runs the README's test command)."
