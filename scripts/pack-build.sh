#!/usr/bin/env bash
# Copies a build tree without its intermediate files (objects, static archives, dep files) so it
# fits the device tool's carry limit (64 MiB): the binaries, libraries and CTest files remain.
#   scripts/pack-build.sh [--python-only] [BUILD=build] [DEST=build-dev]
# Then: scripts/gpu-run.sh with BUILD=DEST (gpu-run.sh links the original build path to it).
# --python-only: only lib/ and python/ (~14 MB), what the Python package and bench/*.py need:
# room beside a carried FlashAttention-3 build (scripts/fa3-runpack.sh, ~37 MB; scripts/fa3-bench.sh).
set -euo pipefail
python_only=""
if [ "${1:-}" = --python-only ]; then python_only=1; shift; fi
src=${1:-build}
dest=${2:-build-dev}
if [ -n "$python_only" ]; then
  rm -rf "$dest" && mkdir -p "$dest"
  cp -r "$src/lib" "$src/python" "$dest/"
  find "$dest" -type l -delete  # the device tool carries no links; fa3-bench.sh recreates the library's
  du -sh "$dest"
  exit 0
fi
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
