#!/usr/bin/env python3
"""Summarises a same-run A/B of scripts/ab-env.sh: for every (implementation, hdim, causal) one
line of cells "seqlen: B/A of TFLOP/s (mean over rounds), then each round's ratio to cuDNN in A and
in B". Controls (cuDNN, schedules the switch does not touch) should read ~1.00 B/A: their spread
is the run's noise. Also prints the geomean of B/A per implementation.

  tar -xzf OUT/ab.tar.gz -C DIR && scripts/ab_table.py DIR   (DIR holds ab-A-1.csv, ab-B-1.csv, ...)
"""
import csv
import glob
import math
import os
import sys
from collections import OrderedDict


def load(path):
    cells = {}
    for r in csv.DictReader(open(path)):
        if r["op"] != "attn_fwd" or not r["tflops"]:
            continue
        key = (r["impl"], int(r["hdim"]), int(r["causal"]), int(r["seqlen_q"]))
        ratio = float(r["ratio_vs_cudnn"]) if r["ratio_vs_cudnn"] else float("nan")
        cells[key] = (float(r["tflops"]), ratio)
    return cells


def main(directory):
    arms = {}
    for path in sorted(glob.glob(os.path.join(directory, "ab-*-*.csv"))):
        arm = os.path.basename(path).split("-")[1]
        arms.setdefault(arm, []).append(load(path))
    if "A" not in arms or "B" not in arms:
        sys.exit(f"{directory}: needs ab-A-*.csv and ab-B-*.csv")
    a_runs, b_runs = arms["A"], arms["B"]
    common = set.intersection(*(set(run) for run in a_runs + b_runs))
    lines = OrderedDict()
    for impl, hdim, causal, seqlen in sorted(common, key=lambda k: (k[1], k[2], k[0], k[3])):
        key = (impl, hdim, causal, seqlen)
        ta = sum(run[key][0] for run in a_runs) / len(a_runs)
        tb = sum(run[key][0] for run in b_runs) / len(b_runs)
        ra = "/".join(f"{run[key][1]:.3f}" for run in a_runs)
        rb = "/".join(f"{run[key][1]:.3f}" for run in b_runs)
        lines.setdefault((impl, hdim, causal), []).append((seqlen, tb / ta, ra, rb))
    per_impl = {}
    for (impl, hdim, causal), cells in lines.items():
        text = "  ".join(f"{s}: {q:.3f} (A {ra} B {rb})" for s, q, ra, rb in cells)
        print(f"{impl} hdim {hdim} {'causal' if causal else 'non-causal'}: {text}")
        per_impl.setdefault(impl, []).extend(math.log(q) for _, q, _, _ in cells)
    print()
    for impl, logs in per_impl.items():
        print(f"{impl}: B/A geomean {math.exp(sum(logs) / len(logs)):.3f} over {len(logs)} cells")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
