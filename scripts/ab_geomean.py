#!/usr/bin/env python3
"""Per arm and round of a same-run A/B (scripts/ab-builds.sh, scripts/ab-fp8.sh: DIR/ab-ARM-ROUND.csv),
the geomean of hopattn's ratios to cuDNN over the cells, and each cell's TFLOP/s.

  scripts/ab_geomean.py DIR
"""
import csv
import glob
import math
import os
import sys


def main(directory):
    found = []
    for path in glob.glob(os.path.join(directory, "ab-*-*.csv")):
        arm, rnd = os.path.basename(path)[len("ab-"):-len(".csv")].rsplit("-", 1)
        found.append((arm, int(rnd), path))
    for arm, rnd, path in sorted(found):
        rows = [x for x in csv.DictReader(open(path)) if x["impl"] == "hopattn" and x["ratio_vs_cudnn"]]
        if rows:
            g = math.exp(sum(math.log(float(x["ratio_vs_cudnn"])) for x in rows) / len(rows))
            print("arm %s round %d: geomean vs cuDNN %.4f over %d cells; TFLOP/s %s"
                  % (arm, rnd, g, len(rows), ", ".join(x["tflops"] for x in rows)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
