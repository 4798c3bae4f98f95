#!/usr/bin/env bash
# FlashAttention-3's source for a same-run baseline (issue 39; not a dependency of hopattn): its
# hopper/ directory and the CUTLASS include/ tree its csrc/cutlass submodule pins, packed from git
# snapshots (the `fetch` tool's mirrors of Dao-AILab/flash-attention and NVIDIA/cutlass) into one
# tarball small enough to carry to the GPU machine (no network there), where scripts/fa3-build.sh
# builds it.
#   scripts/fa3-pack.sh FA_GIT_DIR CUTLASS_GIT_DIR [OUT=.deps/fa3.tar.gz]
# e.g. scripts/fa3-pack.sh /work/.mirror/Dao-AILab+flash-attention/repo /work/.mirror/NVIDIA+cutlass/repo
set -euo pipefail
fa=${1:?usage: scripts/fa3-pack.sh FA_GIT_DIR CUTLASS_GIT_DIR [OUT]}
cutlass=${2:?usage: scripts/fa3-pack.sh FA_GIT_DIR CUTLASS_GIT_DIR [OUT]}
out=${3:-.deps/fa3.tar.gz}
fa_commit=$(git -C "$fa" rev-parse HEAD)
cutlass_commit=$(git -C "$fa" ls-tree HEAD csrc/cutlass | awk '{print $3}')
[ -n "$cutlass_commit" ] || { echo "no csrc/cutlass submodule entry in $fa"; exit 1; }
git -C "$cutlass" cat-file -e "$cutlass_commit^{commit}" ||
  { echo "CUTLASS commit $cutlass_commit (FlashAttention's pin) is not in $cutlass"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/fa3/csrc/cutlass"
git -C "$fa" archive HEAD hopper README.md | tar -x -C "$tmp/fa3"
git -C "$cutlass" archive "$cutlass_commit" include | tar -x -C "$tmp/fa3/csrc/cutlass"
printf 'flash-attention %s\ncutlass %s (%s)\n' "$fa_commit" "$cutlass_commit" \
  "$(git -C "$cutlass" describe --tags --contains "$cutlass_commit" 2>/dev/null || echo untagged)" >"$tmp/fa3/VERSIONS"
mkdir -p "$(dirname "$out")"
tar -czf "$out" -C "$tmp" fa3
cat "$tmp/fa3/VERSIONS"
du -h "$out"
