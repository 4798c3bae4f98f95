#!/usr/bin/env bash
# Copies a build tree without its intermediate files (objects, static archives, dep files) so it
# fits the device tool's carry limit (64 MiB): the binaries, libraries and CTest files remain.
#   scripts/pack-build.sh [BUILD=build] [DEST=build-dev]
# Then: scripts/gpu-run.sh with BUILD=DEST (gpu-run.sh links the original build path to it).
set -euo pipefail
src=${1:-build}
dest=${2:-build-dev}
# An object with no recorded header dependencies never rebuilds when a header changes (seen
# 2026-12-06: decode_hd128.cu.o built hours before the headers it was packed with). Say so.
if command -v ninja >/dev/null && [ -f "$src/build.ninja" ]; then
  stale=$(ninja -C "$src" -t deps 2>/dev/null | grep '#deps 0' | grep '\.o:' || true)
  if [ -n "$stale" ]; then
    echo "warning: objects in $src with no recorded header dependencies (touch their sources and rebuild):" >&2
    echo "$stale" | sed 's/:.*//; s/^/  /' >&2
  fi
fi
rm -rf "$dest"
mkdir -p "$dest"
(cd "$src" && find . -type f ! -name '*.o' ! -name '*.a' ! -name '*.d' ! -name '*.ninja_log' ! -name '*.ninja_deps' \
   ! -path './Testing/*' -print0) | (cd "$src" && cpio -0 -pdm --quiet "$OLDPWD/$dest" 2>/dev/null) || {
  # cpio missing: fall back to tar
  rm -rf "$dest" && mkdir -p "$dest"
  (cd "$src" && find . -type f ! -name '*.o' ! -name '*.a' ! -name '*.d' ! -path './Testing/*' -print0 |
     tar --null -T - -cf -) | (cd "$dest" && tar -xf -)
}
du -sh "$dest"
