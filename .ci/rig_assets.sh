#!/usr/bin/env bash
# Unpack assimp-testmodels_*.deb found in $1 and convert its rigged characters to .glb there (idempotent).
set -euo pipefail
dir="$1"
deb="$(ls "$dir"/assimp-testmodels_*.deb | head -1)"
models="$dir/assimp-testmodels"
if [ ! -d "$models" ]; then
    dpkg-deb -x "$deb" "$models.tmp" && mv "$models.tmp" "$models"
fi
for name in Testwuson BCN_Epileptic; do
    [ -f "$dir/$name.glb" ] || assimp export "$models/usr/share/assimp/models/X/$name.X" "$dir/$name.glb" -fglb2 >/dev/null
done
