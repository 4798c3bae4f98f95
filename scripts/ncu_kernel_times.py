#!/usr/bin/env python3
"""Per-kernel durations from `ncu --csv --metrics gpu__time_duration.sum` output.

Groups the profiled launches by kernel name and grid, in order of first appearance, and prints
for each group the launch count and the median, minimum and maximum duration in microseconds.
Lines that are not CSV records of that metric (the profiled program's own output, ncu's ==PROF==
notes) are skipped, so the file may hold the program's whole stdout.

  scripts/ncu_kernel_times.py NCU_CSV [NCU_CSV ...]
"""
import csv
import statistics
import sys


def records(path):
    header = None
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if header is None:
                if "Kernel Name" in row and "Metric Value" in row:
                    header = row
                continue
            if len(row) != len(header):
                continue
            rec = dict(zip(header, row))
            if rec.get("Metric Name") != "gpu__time_duration.sum":
                continue
            yield rec


def to_us(value, unit):
    v = float(value.replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    if unit not in scale:
        raise ValueError(f"unknown duration unit {unit!r}")
    return v * scale[unit]


def summarise(paths):
    groups = {}
    for path in paths:
        for rec in records(path):
            key = (rec["Kernel Name"], rec.get("Grid Size", ""), rec.get("Block Size", ""))
            groups.setdefault(key, []).append(to_us(rec["Metric Value"], rec.get("Metric Unit", "ns")))
    lines = []
    for (name, grid, block), times in groups.items():
        lines.append(f"{len(times):5d} x  median {statistics.median(times):9.2f} us  min {min(times):9.2f}  "
                     f"max {max(times):9.2f}  grid {grid} block {block}  {name}")
    return lines


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    lines = summarise(argv[1:])
    if not lines:
        print("no gpu__time_duration.sum records found", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
