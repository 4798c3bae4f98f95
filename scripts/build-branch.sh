#!/usr/bin/env bash
# Builds a branch (or any commit) in a small configuration and keeps only what a device call
# needs, so that several builds fit one carry (64 MiB) and one call can A/B them
# (scripts/ab-builds.sh, or each build's GPU tests in turn):
#   scripts/build-branch.sh REF DEST [TARGETS...] [-- CMAKE_ARGS...]
# REF: a branch, tag or commit of this repository. DEST: a directory (e.g. build-ab/ldsm) that
# receives lib/ (libhopattn and the cuDNN plugin, no symlinks: recreate libhopattn.so.2 on the
# device) and bin/ with TARGETS' binaries (default: hopattn gpu_attention_fp8). The configuration:
# head dim 128, bf16 (and the FP8 kernels of HOPATTN_FP8_HEAD_DIMS), no GEMM; override or add with
# CMAKE_ARGS. ~4-5 min on 2 cores. The commit is written to DEST/COMMIT.
set -euo pipefail
ref=${1:?usage: scripts/build-branch.sh REF DEST [TARGETS...] [-- CMAKE_ARGS...]}
dest=${2:?usage: scripts/build-branch.sh REF DEST [TARGETS...] [-- CMAKE_ARGS...]}
shift 2
targets=() cmake_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift && cmake_args=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(hopattn_cli gpu_attention_fp8)
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$root" rev-parse --verify "$ref^{commit}")
wt=$(mktemp -d /tmp/build-branch.XXXXXX)
trap 'git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
git -C "$root" worktree add -q --detach "$wt" "$commit"
ln -s "$root/.deps" "$wt/.deps"
cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHOPATTN_DEPS="$root/.deps" \
  -DHOPATTN_HEAD_DIMS=128 -DHOPATTN_DTYPES=bf16 -DHOPATTN_BUILD_GEMM=OFF "${cmake_args[@]}" >"$wt/cmake.log"
ninja -C "$wt/build" -j "$(nproc)" "${targets[@]}" hopattn_cudnn >"$wt/build.log" 2>&1 || {
  tail -20 "$wt/build.log"; exit 1; }
rm -rf "$dest" && mkdir -p "$dest/lib" "$dest/bin"
cp "$wt/build/lib/libhopattn.so."*.*.* "$dest/lib/"
[ -f "$wt/build/lib/libhopattn_cudnn.so" ] && cp "$wt/build/lib/libhopattn_cudnn.so" "$dest/lib/"
for t in "${targets[@]}"; do
  name=$t
  [ "$t" = hopattn_cli ] && name=hopattn
  cp "$wt/build/bin/$name" "$dest/bin/"
done
echo "$commit" >"$dest/COMMIT"
grep -iE "spill|local memory" "$wt/build.log" >"$dest/ptxas-warnings.txt" || true
du -sh "$dest"
