#!/usr/bin/env bash
# Unpack assimp-testmodels_*.deb found in $1 and convert its rigged characters to .glb there (idempotent):
# the DirectX .x ones with assimp's exporter, the IQM one with .ci/iqm_to_glb.py in Blender when
# GAMEANIM_BLENDER (a Blender binary or a bpy venv's python) is set.
set -euo pipefail
dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
deb="$(ls "$dir"/assimp-testmodels_*.deb | head -1)"
models="$dir/assimp-testmodels"
if [ ! -d "$models" ]; then
    dpkg-deb -x "$deb" "$models.tmp" && mv "$models.tmp" "$models"
fi
for name in Testwuson BCN_Epileptic; do
    [ -f "$dir/$name.glb" ] || assimp export "$models/usr/share/assimp/models/X/$name.X" "$dir/$name.glb" -fglb2 >/dev/null
done
blender="${GAMEANIM_BLENDER:-}"
out="$dir/mrfixit.glb"
if [ -n "$blender" ]; then
    if [ ! -f "$out" ] || [ "$here/iqm_to_glb.py" -nt "$out" ] || [ "$here/../tests/support/iqm.py" -nt "$out" ]; then
        args=("$models/usr/share/assimp/models/IQM/mrfixit.iqm" "$out.tmp.glb")
        case "$(basename "$blender")" in
        blender*) "$blender" -b --factory-startup --python-exit-code 1 -P "$here/iqm_to_glb.py" -- "${args[@]}" >/dev/null ;;
        *) "$blender" "$here/iqm_to_glb.py" "${args[@]}" >/dev/null ;;
        esac
        mv "$out.tmp.glb" "$out"
    fi
else
    echo "warning: GAMEANIM_BLENDER is not set; mrfixit.glb (the textured IQM character) is not converted"
fi
