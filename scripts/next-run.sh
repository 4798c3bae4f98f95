#!/usr/bin/env bash
# The next device calls as the twentieth session left them (docs/perf-diagnosis-fa3.md §11), each
# one command whichever card comes:
#   scripts/next-run.sh $OUT [DEADLINE_S=570] [PART=1]
# PART 1, carry ["build-ab/kv16p", "build-ab/kv16o"] (~29 MB): main's decode default as merged
#   (kv16_mma_swap_8w_1cta for <= 8 packed rows without options, contiguous and paged, splits of
#   >= 512 keys; NEW=build-ab/kv16p = 0a0ff24 with main's python/) with `pending-run.sh ...
#   kv16-final`, then branch kv16-mma-options' window / softcap / sinks tests and window A/B
#   (`kv16-options`, build-ab/kv16o = 7d9a1df).
# PART 2, carry ["build-ab/kv16h"] (15 MB): branch kv16-mma-hd256 (b1a3dc7, options included), the
#   row at hdim 256 (`kv16-hd256`).
set -uo pipefail
out=${1:?usage: scripts/next-run.sh OUT_DIR [DEADLINE_S] [PART]}
deadline=${2:-570}
part=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
start=$SECONDS
if [ "$part" = 1 ]; then
  NEW=$root/build-ab/kv16p BASE=$root/build-ab/kv16p "$root/scripts/pending-run.sh" "$out/kf" 320 kv16-final 2>&1 | tail -60
  if [ -d "$root/build-ab/kv16o/lib" ]; then
    NEW=$root/build-ab/kv16o BASE=$root/build-ab/kv16o "$root/scripts/pending-run.sh" "$out/ko" \
      $((deadline - (SECONDS - start))) kv16-options 2>&1 | tail -60
  fi
else
  NEW=$root/build-ab/kv16h BASE=$root/build-ab/kv16h "$root/scripts/pending-run.sh" "$out/kh" "$deadline" kv16-hd256 2>&1 | tail -80
fi
