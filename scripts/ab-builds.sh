#!/usr/bin/env bash
# Same-run A/B of two builds: `hopattn bench` of build A, then of build B, ROUNDS times (A B A B
# ...), each with its own library (LD_LIBRARY_PATH), so that drift over the run shows in both arms
# and each build's ratio to cuDNN (timed beside it in the same process) is compared in one run.
# CSV and log per round (ab-A-<round>.csv ...); a summary of the geomean ratios to cuDNN per arm
# and round at the end (scripts/bench_table.py reads the CSVs).
#
#   scripts/ab-builds.sh OUT_DIR BUILD_A BUILD_B ROUNDS [bench args...]
# BUILD_X holds bin/hopattn and lib/ (a build tree or a packed copy: scripts/pack-build.sh).
set -uo pipefail
out=${1:?usage: scripts/ab-builds.sh OUT_DIR BUILD_A BUILD_B ROUNDS [bench args...]}
a=$2 b=$3 rounds=$4
shift 4
mkdir -p "$out"
status=0
for r in $(seq 1 "$rounds"); do
  for arm in A B; do
    dir=$a
    [ "$arm" = B ] && dir=$b
    echo "== round $r arm $arm ($dir)"
    LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$dir/bin/hopattn" bench --csv "$out/ab-$arm-$r.csv" "$@" >"$out/ab-$arm-$r.log" 2>&1 || status=1
    tail -n 3 "$out/ab-$arm-$r.log"
  done
done
python3 "$(dirname "$0")/ab_geomean.py" "$out"
exit $status
