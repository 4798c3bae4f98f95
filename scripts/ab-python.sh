#!/usr/bin/env bash
# Same-run A/B of two builds' forward attention through the Python package (bench/ab_forward.py):
# ROUNDS rounds, each running arm A and arm B in a process of its own, the arms' order alternating
# (A B, B A, ...) and the cells' order rotating, so that drift and the power cap's history fall on
# both arms alike. Needs torch; each arm is a directory whose python/ holds an importable hopattn
# (its libhopattn.so beside it). Works across versions: the old arm skips cells with options.
#
#   scripts/ab-python.sh OUT_DIR ARM_A_DIR ARM_B_DIR ROUNDS CELLS
# Writes OUT_DIR/ab-py-<arm>-<round>.csv and the log, and prints per cell the median ms of each arm
# and B / A (time ratio: < 1 means B is faster).
set -uo pipefail
out=${1:?usage: scripts/ab-python.sh OUT_DIR ARM_A_DIR ARM_B_DIR ROUNDS CELLS}
a=$2 b=$3 rounds=$4 cells=$5
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  arms="A B"
  [ $((r % 2)) -eq 0 ] && arms="B A"
  for arm in $arms; do
    dir=$a
    [ "$arm" = B ] && dir=$b
    (cd /tmp && PYTHONPATH="$dir/python" LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      python3 "$root/bench/ab_forward.py" --arm "$arm" --rounds 1 --offset "$r" --cells "$cells" \
      --csv "$out/ab-py-$arm-$r.csv") >>"$out/ab-py.log" 2>&1 || echo "arm $arm round $r failed (see ab-py.log)"
  done
done
python3 - "$out" <<'PY'
import csv, glob, math, os, statistics, sys
out = sys.argv[1]
ms = {}
for p in sorted(glob.glob(os.path.join(out, "ab-py-*-*.csv"))):
    for row in csv.DictReader(open(p)):
        ms.setdefault((row["cell"], row["arm"]), []).append(float(row["ms"]))
cells = []
for (cell, _arm) in ms:
    if cell not in cells:
        cells.append(cell)
logs = []
print("%-34s %10s %10s %8s" % ("cell", "A ms", "B ms", "B/A"))
for c in cells:
    x, y = ms.get((c, "A")), ms.get((c, "B"))
    xa = statistics.median(x) if x else float("nan")
    yb = statistics.median(y) if y else float("nan")
    ratio = yb / xa if x and y else float("nan")
    if x and y:
        logs.append(math.log(ratio))
    print("%-34s %10.4f %10.4f %8.4f" % (c, xa, yb, ratio))
if logs:
    print("geomean B/A time over %d cells: %.4f" % (len(logs), math.exp(sum(logs) / len(logs))))
PY
