#!/usr/bin/env bash
# The files FlashAttention-3's Python interface needs at run time, from a scripts/fa3-build.sh
# build (DEST/hopper), into a small folder the device tool can carry: flash_attn_interface.py,
# flash_attn_config.py and flash_attn_3/_C.abi3.so (a stable-ABI extension: built here for
# Python 3.11, it loads under the device's 3.12, against the same PyTorch 2.11).
#   scripts/fa3-runpack.sh [DEST=.deps/fa3] [OUT=.deps/fa3-run]
# Then: carry OUT and run scripts/fa3-bench.sh with FA3_RUN=OUT (no build on the device). The
# extension is stored xz-compressed (38 MB -> 3.5 MB: its device code is not compressed), so that it
# fits the device tool's carry beside a whole hopattn build; fa3-bench.sh decompresses it there.
set -euo pipefail
src=${1:-.deps/fa3}/hopper
out=${2:-.deps/fa3-run}
[ -f "$src/flash_attn_3/_C.abi3.so" ] || { echo "no $src/flash_attn_3/_C.abi3.so: build with scripts/fa3-build.sh first" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/flash_attn_3"
cp "$src/flash_attn_interface.py" "$src/flash_attn_config.py" "$out/"
cp "$src/flash_attn_3/_C.abi3.so" "$out/flash_attn_3/"
[ -f "${src%/hopper}/VERSIONS" ] && cp "${src%/hopper}/VERSIONS" "$out/"
xz -T0 -6 "$out/flash_attn_3/_C.abi3.so"
du -sh "$out"
