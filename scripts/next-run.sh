#!/usr/bin/env bash
# The next device call as the twentieth session left it (docs/perf-diagnosis-fa3.md §11), one
# command whichever card comes: main's decode default as merged (kv16_mma_swap_8w_1cta for <= 8
# packed rows, contiguous and paged, splits of >= 512 keys; NEW=build-ab/kv16p = 0a0ff24, the
# library main carries) with `pending-run.sh ... kv16-final`, then, when branch kv16-mma-options'
# pack exists (build-ab/kv16o), its options tests and A/B (`kv16-options`). Carry
# ["build-ab/kv16p", "build-ab/kv16o"] (~28 MB):
#   scripts/next-run.sh $OUT [DEADLINE_S=570]
set -uo pipefail
out=${1:?usage: scripts/next-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-570}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
start=$SECONDS
NEW=$root/build-ab/kv16p BASE=$root/build-ab/kv16p "$root/scripts/pending-run.sh" "$out/kf" 320 kv16-final 2>&1 | tail -60
if [ -d "$root/build-ab/kv16o/lib" ]; then
  NEW=$root/build-ab/kv16o BASE=$root/build-ab/kv16o "$root/scripts/pending-run.sh" "$out/ko" \
    $((deadline - (SECONDS - start))) kv16-options 2>&1 | tail -60
fi
