#!/usr/bin/env bash
# One device call that tests and times several FP8 builds side by side (scripts/build-branch.sh
# makes them): for each build, `gpu_attention_fp8` (all tests) and compute-sanitizer racecheck and
# synccheck on Fp8Forward.SanitizerSmallShapes (seconds; RunToRun took ~235 s under racecheck);
# then `hopattn bench --dtype e4m3` of each build in rounds whose order
# rotates and reverses (A B C, C B A, ...), each build timing cuDNN's FP8 SDPA beside itself, so
# that each build's ratio to cuDNN compares within a round; the geomean per build and round at
# the end (scripts/ab_geomean.py, as scripts/ab-builds.sh).
#   scripts/ab-fp8.sh OUT_DIR ROUNDS BUILD... [-- BENCH_ARGS...]
# Default BENCH_ARGS: --hdim 128 --dtype e4m3 --seqlen 1024,4096,16384 --causal 0,1. What comes
# back: summary.txt, ab.csv (every arm and round), logs.txt.
set -uo pipefail
out=${1:?usage: scripts/ab-fp8.sh OUT_DIR ROUNDS BUILD... [-- BENCH_ARGS...]}
rounds=${2:?rounds}
shift 2
builds=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do builds+=("$1"); shift; done
[ $# -gt 0 ] && shift
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--hdim 128 --dtype e4m3 --seqlen 1024,4096,16384 --causal 0,1)
mkdir -p "$out"
cudnn=$(python3 -c 'import glob, site
f = [p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/cudnn/lib/libcudnn.so.9")]
print(f[0] if f else "")' 2>/dev/null)
env_of() {  # the library path of one build (its libhopattn.so.2 link made here)
  local d=$1 so
  so=$(ls "$d"/lib/libhopattn.so.*.*.* | head -1)
  ln -sf "$(basename "$so")" "$d/lib/libhopattn.so.2"
  echo "$d/lib${cudnn:+:$(dirname "$cudnn")}:/usr/local/cuda/lib64"
}
summary="$out/summary.txt"
: >"$summary"
for d in "${builds[@]}"; do
  name=$(basename "$d")
  lp=$(env_of "$d")
  echo "== $name ($(cat "$d/COMMIT" 2>/dev/null))" | tee -a "$summary"
  LD_LIBRARY_PATH=$lp timeout 120 "$d/bin/gpu_attention_fp8" >"$out/tests-$name.log" 2>&1
  echo "tests: exit $? ($(grep -cE '^\[       OK' "$out/tests-$name.log") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests-$name.log") failed)" | tee -a "$summary"
  for tool in racecheck synccheck; do
    LD_LIBRARY_PATH=$lp timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 "$d/bin/gpu_attention_fp8" \
      --gtest_filter='*SanitizerSmallShapes*' >"$out/$tool-$name.log" 2>&1
    echo "$tool: exit $? ($(grep -E 'SUMMARY' "$out/$tool-$name.log" | tail -1))" | tee -a "$summary"
  done
done
n=${#builds[@]}
for r in $(seq 1 "$rounds"); do
  order=()
  for i in $(seq 0 $((n - 1))); do
    j=$(( (i + r - 1) % n ))
    [ $((r % 2)) -eq 0 ] && j=$(( n - 1 - j ))
    order+=("${builds[$j]}")
  done
  for d in "${order[@]}"; do
    name=$(basename "$d")
    LD_LIBRARY_PATH=$(env_of "$d") timeout 150 "$d/bin/hopattn" bench --csv "$out/ab-$name-$r.csv" --rounds 1 \
      ${cudnn:+--cudnn-lib $cudnn} "${bench_args[@]}" >"$out/ab-$name-$r.log" 2>&1
    echo "bench $name round $r: exit $?" >>"$summary"
  done
done
python3 "$(dirname "$0")/ab_geomean.py" "$out" | tee -a "$summary"
# A lent machine returns only a handful of files (2026-12-06: 8 of 17 came back, main's CSVs not):
# every arm's CSV rows into one ab.csv (an `arm` and a `round` column first) and every log into
# logs.txt, the per-arm files removed.
python3 - "$out" <<'PY'
import csv, glob, os, sys
out = sys.argv[1]
paths = sorted(glob.glob(os.path.join(out, "ab-*-*.csv")))
with open(os.path.join(out, "ab.csv"), "w", newline="") as f:
    w = None
    for p in paths:
        arm, rnd = os.path.basename(p)[len("ab-"):-len(".csv")].rsplit("-", 1)
        for row in csv.DictReader(open(p)):
            if w is None:
                w = csv.DictWriter(f, fieldnames=["arm", "round"] + list(row.keys()))
                w.writeheader()
            w.writerow(dict(arm=arm, round=rnd, **row))
for p in paths:
    os.remove(p)
PY
for f in "$out"/tests-*.log "$out"/racecheck-*.log "$out"/synccheck-*.log "$out"/ab-*-*.log; do
  [ -f "$f" ] && { echo "===== $(basename "$f")"; tail -c 20000 "$f"; rm -f "$f"; }
done >"$out/logs.txt"
