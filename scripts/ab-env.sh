#!/usr/bin/env bash
# Same-run A/B of a library environment switch: `hopattn bench` alternately with VAR=A and VAR=B,
# ROUNDS times each (A B A B ...), so that drift over the run shows up in both arms.
# CSV and log per round into OUT_DIR (ab-<A|B>-<round>.csv). Used for HOPATTN_FWD_CAUSAL_GROUP
# (docs/perf-log.md, 2026-11-30 r51).
#
#   scripts/ab-env.sh OUT_DIR VAR A B ROUNDS [bench args...]
# An empty A or B runs with VAR unset. Uses $BUILD/bin/hopattn (default build/).
set -uo pipefail
out=${1:?usage: scripts/ab-env.sh OUT_DIR VAR A B ROUNDS [bench args...]}
var=$2 a=$3 b=$4 rounds=$5
shift 5
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
mkdir -p "$out"
export LD_LIBRARY_PATH=$build/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
for r in $(seq 1 "$rounds"); do
  for arm in A B; do
    val=$a
    [ "$arm" = B ] && val=$b
    if [ -n "$val" ]; then
      env "$var=$val" "$build/bin/hopattn" bench "$@" --csv "$out/ab-$arm-$r.csv" >"$out/ab-$arm-$r.log" 2>&1
    else
      env -u "$var" "$build/bin/hopattn" bench "$@" --csv "$out/ab-$arm-$r.csv" >"$out/ab-$arm-$r.log" 2>&1
    fi
    rc=$?
    [ $rc -eq 0 ] || status=1
    echo "round $r arm $arm ($var=${val:-unset}): exit $rc"
  done
done
exit $status
