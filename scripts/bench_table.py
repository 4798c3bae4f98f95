#!/usr/bin/env python3
"""Turns a `hopattn bench --csv` file into markdown tables: one row per (hdim, causal, seqlen),
one column per implementation, cells "TFLOP/s (ratio to cuDNN)"; for `--op decode` rows one row
per (hdim, heads, batch, cache length, q_len), one column per implementation and cache dtype,
cells "TB/s (ratio to cuDNN)", or why the row was not timed; for `--op gemm` rows one row per
measured shape, one column per baseline and GEMM variant, cells "TFLOP/s (ratio to the baseline
of the same run)"; then per attention implementation the geomean of its ratios to cuDNN, the cells
>= 1.0 and the lowest, and per GEMM variant its ratios to the baseline. Columns a CSV has beyond
the bench's own (e.g. `repeat`, `build`) are kept as row labels. Works on any CSV in
bench/records/. Usage: bench_table.py FILE.csv"""

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
    gemm_table([r for r in rows if r["op"] == "gemm"], extra_columns(rows))


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
    record (both run at the board's power cap, at different clocks: docs/decisions.md, "Benchmark
    method"; scripts/clock_efficiency.py has the per-cell table)."""
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


# The columns `hopattn bench --csv` writes; anything else in a file was added by the run's script.
BENCH_COLUMNS = ("commit,date,gpu,op,impl,dtype,hdim,causal,batch,heads_q,heads_kv,seqlen_q,seqlen_k,"
                 "m,n,k,layout,ms,tflops,tbps,ratio_vs_cudnn,frac_of_gemm,note").split(",")
GEMM_BASELINES = ("cublas", "cublaslt")  # the row every other row of its shape is a ratio to


def extra_columns(rows):
    return [c for c in (rows[0].keys() if rows else []) if c not in BENCH_COLUMNS]


def gemm_label(r):
    """Column of a GEMM row: the baseline's name, or the hopattn variant (`auto` when the library
    picked it; the cell then names the variant it picked)."""
    if r["impl"] != "hopattn":
        return r["impl"], ""
    m = re.search(r"variant=(\w+)( \(auto\))?", r["note"])
    if not m:
        return "hopattn", ""
    return ("auto", f" {m.group(1)}") if m.group(2) else (m.group(1), "")


def gemm_table(gemm, extra):
    """One table row per measured shape, in file order: a shape's rows start at its baseline row
    (cuBLAS for 16-bit, cuBLASLt for e4m3), so a shape timed twice in one run (e.g. the
    progression at 8192^3) gives two rows. frac_of_gemm is TFLOP/s over that baseline's."""
    if not gemm:
        return
    cells = []
    for r in gemm:
        shape = (r["dtype"], r["m"], r["n"], r["k"], r["layout"]) + tuple(r[c] for c in extra)
        if r["impl"] in GEMM_BASELINES or not cells or cells[-1][0] != shape:
            cells.append((shape, OrderedDict()))
        label, picked = gemm_label(r)
        ratio = f" ({float(r['frac_of_gemm']):.3f}){picked}" if r["frac_of_gemm"] and r["impl"] not in GEMM_BASELINES else ""
        cells[-1][1][label] = f"{float(r['tflops']):.1f}{ratio}" if r["tflops"] else "failed"
    for dtype in OrderedDict.fromkeys(shape[0] for shape, _ in cells):
        part = [(shape, by) for shape, by in cells if shape[0] == dtype]
        cols = list(OrderedDict.fromkeys(label for _, by in part for label in by))
        print()
        print(f"GEMM {dtype}, TFLOP/s (ratio to the cuBLAS / cuBLASLt row of the same shape in the same run):")
        print()
        print("| M×N×K | layout | " + "".join(f"{c} | " for c in extra) + " | ".join(cols) + " |")
        print("|---|---|" + "---|" * (len(extra) + len(cols)))
        for (_, m, n, k, layout, *rest), by in part:
            print(f"| {m}×{n}×{k} | {layout} | " + "".join(f"{x} | " for x in rest) +
                  " | ".join(by.get(c, "-") for c in cols) + " |")
    gemm_summary(gemm)


def gemm_summary(gemm):
    """Per dtype and column: the ratio to the baseline on the square shapes (range) and the
    geomean and lowest over the other shapes (the LLM shapes of the bench's grid)."""
    by = OrderedDict()
    for r in gemm:
        if r["impl"] not in GEMM_BASELINES and r["frac_of_gemm"]:
            by.setdefault((r["dtype"], gemm_label(r)[0]), []).append(r)
    if by:
        print()
    for (dtype, label), part in by.items():
        square = [float(r["frac_of_gemm"]) for r in part if r["m"] == r["n"] == r["k"]]
        other = [r for r in part if not r["m"] == r["n"] == r["k"]]
        text = []
        if square:
            text.append(f"square shapes {min(square):.3f}-{max(square):.3f} over {len(square)} row{'s' * (len(square) > 1)}")
        if other:
            x = [float(r["frac_of_gemm"]) for r in other]
            low = min(other, key=lambda r: float(r["frac_of_gemm"]))
            text.append(f"other shapes geomean {math.exp(sum(math.log(v) for v in x) / len(x)):.3f} over {len(x)} row{'s' * (len(x) > 1)}, "
                        f"lowest {min(x):.3f} ({low['m']}×{low['n']}×{low['k']})")
        print(f"- {dtype} {label}: " + "; ".join(text))


if __name__ == "__main__":
    main(sys.argv[1])
