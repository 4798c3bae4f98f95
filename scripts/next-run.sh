#!/usr/bin/env bash
# The next device call as the eighteenth session left it (docs/perf-diagnosis-fa3.md §11), one
# command whichever card comes: on an H200, the FA3 grid (bf16 and e4m3) and scripts/gqa-diag.sh;
# on an H100, branch lpt-dealing's tests and A/B (scripts/pending-run.sh lpt,lpt-fa3), which do not
# need an H200. Carry ["build-i8", "fa3-run-xz", "build-ab/lpt"] (~31 MB):
#   scripts/next-run.sh $OUT [DEADLINE_S=570]
set -uo pipefail
out=${1:?usage: scripts/next-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-570}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
export FA3_RUN=$root/fa3-run-xz
start=$SECONDS
if [[ $gpu == *H200* ]]; then
  mkdir -p "$out/g"
  BUILD=$root/build-i8 timeout 270 "$root/scripts/fa3-bench.sh" "$out/g" --fwd "--grid --fp8 --rounds 2" >"$out/g/out.txt" 2>&1
  echo "grid: exit $? ($((SECONDS - start)) s)"
  BUILD=$root/build-i8 "$root/scripts/gqa-diag.sh" "$out/d" 2 $((deadline - (SECONDS - start) - 10)) 2>&1 | grep -v "^ *$" | tail -60
else
  NEW=$root/build-ab/lpt BASE=$root/build-i8 "$root/scripts/pending-run.sh" "$out/p" "$deadline" lpt,lpt-fa3 2>&1 | tail -80
fi
