#!/usr/bin/env bash
# Same-run A/B of a library environment switch: `hopattn bench` alternately with VAR=A and VAR=B,
# ROUNDS times each (A B A B ...), so that drift over the run shows up in both arms.
# CSV and log per round (ab-<A|B>-<round>.csv/.log), bundled at the end into OUT_DIR/ab.tar.gz.
# The library reads no environment variable: VAR is for the process, e.g. VAR=LD_LIBRARY_PATH
# for two builds of the library (r76: "BUILD_A/lib:/usr/local/cuda/lib64" vs "BUILD_B/lib:...";
# the binary's RUNPATH yields to LD_LIBRARY_PATH). Experiments inside one build are bench flags
# (`hopattn bench --kernels NAME,... --override KEY=VALUE`).
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
# The device tool brings back only a handful of files per call (r75 lost the B arm's CSVs that
# way): bundle the rounds into one archive.
(cd "$out" && ls ab-*.csv ab-*.log 2>/dev/null | tar -czf ab.tar.gz -T - && rm -f ab-*.csv ab-*.log) || status=1
exit $status
