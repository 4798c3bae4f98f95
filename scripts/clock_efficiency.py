#!/usr/bin/env python3
"""Per-clock efficiency of the forward-attention rows of a `hopattn bench` CSV.

The bench writes each row's SM clock and board power range into its note ("sm 1650-1665 MHz,
685-696 W, ..."). Under the H200's 700 W software power cap the clock differs between
implementations, so a ratio of TFLOP/s mixes two things: work per clock and clock. This splits
them: efficiency = TFLOP/s / (132 SMs x 4096 dense 16-bit FLOP/clk x clock), with the clock taken
as the middle of the note's range (sampled while the row ran, so approximate).

    scripts/clock_efficiency.py BENCH.csv [--impl hopattn] [--base cudnn]
Prints one line per cell and, at the end, the geometric means of the clock ratio and the
per-clock efficiency ratio (impl / base), whose product is the TFLOP/s ratio.
"""
import argparse
import csv
import math
import re
import sys

SMS = 132
FLOP_PER_CLK_SM = 4096  # dense bf16/fp16 WGMMA, per SM per clock


def clock_mhz(note):
    m = re.search(r"sm (\d+)(?:-(\d+))? MHz", note)
    if not m:
        return None
    lo = int(m.group(1))
    hi = int(m.group(2) or lo)
    return (lo + hi) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--impl", default="hopattn")
    ap.add_argument("--base", default="cudnn")
    a = ap.parse_args()
    cells = {}
    for r in csv.DictReader(open(a.csv)):
        if r["op"] != "attn_fwd" or r["impl"] not in (a.impl, a.base):
            continue
        f = clock_mhz(r["note"])
        if f is None or not r["tflops"]:
            continue
        tf = float(r["tflops"])
        eff = tf / (SMS * FLOP_PER_CLK_SM * f * 1e6 / 1e12)
        key = (int(r["hdim"]), int(r["causal"]), int(r["seqlen_q"]))
        cells.setdefault(key, {})[r["impl"]] = (tf, f, eff)
    logs_clk, logs_eff, logs_tf = [], [], []
    print("hdim causal seqlen | %s TF MHz eff | %s TF MHz eff | clock ratio | eff ratio | TF ratio" % (a.impl, a.base))
    for key in sorted(cells):
        c = cells[key]
        if a.impl not in c or a.base not in c:
            continue
        (t1, f1, e1), (t0, f0, e0) = c[a.impl], c[a.base]
        logs_clk.append(math.log(f1 / f0))
        logs_eff.append(math.log(e1 / e0))
        logs_tf.append(math.log(t1 / t0))
        print("%3d %d %5d | %4.0f %4.0f %.2f | %4.0f %4.0f %.2f | %.3f | %.3f | %.3f" %
              (*key, t1, f1, e1, t0, f0, e0, f1 / f0, e1 / e0, t1 / t0))
    if not logs_tf:
        print("no cell has both implementations", file=sys.stderr)
        return 1
    g = lambda xs: math.exp(sum(xs) / len(xs))
    print("geomean over %d cells: clock ratio %.3f x per-clock efficiency ratio %.3f = TFLOP/s ratio %.3f" %
          (len(logs_tf), g(logs_clk), g(logs_eff), g(logs_tf)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
