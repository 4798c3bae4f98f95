#!/usr/bin/env bash
# The next device call as the nineteenth session left it (docs/perf-diagnosis-fa3.md §9e, §11), one
# command whichever card comes: branch kv16-mma-swap's decode row (its tests, racecheck, and the
# row against kv16_split_1cta and cuDNN: scripts/pending-run.sh kv16-mma with NEW=build-ab/kv16),
# then branch lpt-dealing's short step (lpt-quick, NEW=build-ab/lpt). Neither needs an H200; the
# H200 grid and gqa-diag (§11 (a)) wait for a call of their own. Carry
# ["build-ab/kv16", "build-ab/lpt"] (~27 MB):
#   scripts/next-run.sh $OUT [DEADLINE_S=570]
set -uo pipefail
out=${1:?usage: scripts/next-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-570}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
start=$SECONDS
NEW=$root/build-ab/kv16 BASE=$root/build-ab/kv16 "$root/scripts/pending-run.sh" "$out/kv16" 310 kv16-mma 2>&1 | tail -60
NEW=$root/build-ab/lpt BASE=$root/build-ab/lpt "$root/scripts/pending-run.sh" "$out/lpt" \
  $((deadline - (SECONDS - start))) lpt-quick 2>&1 | tail -40
