#!/usr/bin/env python3
"""Turns a `hopattn bench --csv` file into markdown tables: one row per (hdim, causal, seqlen),
one column per implementation, cells "TFLOP/s (ratio to cuDNN)"; for `--op decode` rows one row
per (hdim, heads, batch, cache length, q_len), one column per implementation and cache dtype,
cells "TB/s (ratio to cuDNN)", or why the row was not timed; then per attention implementation the
geomean of its ratios to cuDNN, the cells >= 1.0 and the lowest. Usage: bench_table.py FILE.csv"""

import csv
import math
import re
import sys
from collections import OrderedDict
from clock_efficiency import clock_mhz  # scripts/clock_efficiency.py, beside this file


def main(path):
    rows = list(csv.DictReader(open(path)))
    ceil = [r for r in rows if r["op"] == "ceiling"]
    for r in ceil:
        what = f"{float(r['tflops']):.1f} TFLOP/s" if r["tflops"] else f"{float(r['tbps']):.2f} TB/s"
        print(f"- ceiling {r['impl']}: {what} ({r['note']})")
    attn = [r for r in rows if r["op"] == "attn_fwd"]
    for hdim in OrderedDict.fromkeys(int(r["hdim"]) for r in attn):
        part = [r for r in attn if int(r["hdim"]) == hdim]
        impls = list(OrderedDict.fromkeys(r["impl"] for r in part))
        cells = OrderedDict()
        for r in part:
            key = (int(r["causal"]), int(r["seqlen_q"]))
            ratio = f" ({float(r['ratio_vs_cudnn']):.2f})" if r["ratio_vs_cudnn"] and r["impl"] != "cudnn" else ""
            cells.setdefault(key, {})[r["impl"]] = f"{float(r['tflops']):.0f}{ratio}"
        print()
        print(f"hdim {hdim}, TFLOP/s (ratio to cuDNN in the same run):")
        print()
        print("| causal | seqlen | " + " | ".join(impls) + " |")
        print("|---|---|" + "---|" * len(impls))
        for (causal, seqlen), by_impl in cells.items():
            print(f"| {causal} | {seqlen} | " + " | ".join(by_impl.get(i, "-") for i in impls) + " |")
    summary(attn)
    decode_table([r for r in rows if r["op"] == "decode"])


def summary(attn):
    """Per implementation over every cell it has: geomean of the ratio to cuDNN, cells >= 1.0,
    the lowest cell, and (rows from --rounds) the median spread of its rounds."""
    by_impl = OrderedDict()
    for r in attn:
        if r["impl"] != "cudnn" and r["ratio_vs_cudnn"]:
            by_impl.setdefault(r["impl"], []).append(r)
    if by_impl:
        print()
    for impl, part in by_impl.items():
        ratios = [float(r["ratio_vs_cudnn"]) for r in part]
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        low = min(part, key=lambda r: float(r["ratio_vs_cudnn"]))
        spreads = sorted(float(m.group(2)) / float(m.group(1)) - 1 for m in
                         (re.search(r"([0-9.]+)-([0-9.]+) ms", r["note"]) for r in part) if m)
        extra = f", rounds' spread median {100 * spreads[len(spreads) // 2]:.1f} %" if spreads else ""
        print(f"- {impl}: geomean {geo:.3f}x cuDNN over {len(ratios)} cells, {sum(x >= 1.0 for x in ratios)} >= 1.0, "
              f"lowest {float(low['ratio_vs_cudnn']):.3f} (hdim {low['hdim']}, causal {low['causal']}, "
              f"seqlen {low['seqlen_q']}){extra}")
        clock_split(impl, part, attn)


def clock_split(impl, part, attn):
    """The ratio to cuDNN as clock ratio x per-clock ratio, from the SM clocks the rows' notes
    record (both run at the board's power cap, at different clocks: docs/perf-log.md, twenty-second
    session; scripts/clock_efficiency.py has the per-cell table)."""
    key = lambda r: (r["dtype"], r["hdim"], r["causal"], r["seqlen_q"], r["seqlen_k"])
    base = {key(r): r for r in attn if r["impl"] == "cudnn"}
    clk, per = [], []
    for r in part:
        b = base.get(key(r))
        f1, f0 = clock_mhz(r["note"]), clock_mhz(b["note"]) if b else None
        if b is None or f1 is None or f0 is None:
            continue
        clk.append(math.log(f1 / f0))
        per.append(math.log(float(r["ratio_vs_cudnn"]) * f0 / f1))
    if clk:
        print(f"  {impl} over {len(clk)} cells with clocks: clock ratio {math.exp(sum(clk) / len(clk)):.3f} "
              f"x per-clock ratio {math.exp(sum(per) / len(per)):.3f}")


def decode_table(dec):
    if not dec:
        return
    cols = list(OrderedDict.fromkeys(f"{r['impl']} {r['dtype']}" for r in dec))
    cells = OrderedDict()
    for r in dec:
        key = (int(r["hdim"]), f"{r['heads_q']}:{r['heads_kv']}", int(r["batch"]), int(r["seqlen_k"]),
               int(r["seqlen_q"]))
        if r["ms"]:
            ratio = f" ({float(r['ratio_vs_cudnn']):.2f})" if r["ratio_vs_cudnn"] and r["impl"] != "cudnn" else ""
            cell = f"{float(r['tbps']):.2f}{ratio}"
        else:
            cell = "not supported" if "not supported" in r["note"] else "failed"
        cells.setdefault(key, {})[f"{r['impl']} {r['dtype']}"] = cell
    print()
    print("decode (KV cache, causal), TB/s of K+V read (ratio to cuDNN in the same run; int8: to cuDNN bf16):")
    print()
    print("| hdim | heads | batch | len | q_len | " + " | ".join(cols) + " |")
    print("|---|---|---|---|---|" + "---|" * len(cols))
    for (hdim, heads, batch, length, qlen), by_col in cells.items():
        print(f"| {hdim} | {heads} | {batch} | {length} | {qlen} | " + " | ".join(by_col.get(c, "-") for c in cols) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
