#!/usr/bin/env python3
"""Summarises an `ncu -i REPORT --page source --print-source sass --csv` dump: instructions
executed per opcode and the instructions with the most warp-stall samples.

  ncu -i rep.ncu-rep --page source --print-source sass --csv > src.csv
  scripts/ncu_source_top.py src.csv [TOP=40]
"""
import csv
import sys
from collections import defaultdict


def num(s):
    try:
        return float(str(s).replace(',', ''))
    except ValueError:
        return 0.0


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path, newline='') as f:
        lines = f.read().splitlines()
    # ncu may print a kernel banner before the CSV header: start at the first quoted header line.
    start = next(i for i, l in enumerate(lines) if l.startswith('"') and 'Source' in l)
    rows = list(csv.DictReader(lines[start:]))
    cols = rows[0].keys()
    def col(*names):
        for n in names:
            for c in cols:
                if c.strip().lower() == n.lower():
                    return c
        for n in names:
            for c in cols:
                if n.lower() in c.lower():
                    return c
        return None
    c_src = col('Source')
    c_exec = col('Instructions Executed', 'Warp Instructions Executed')
    c_stall = col('Warp Stall Sampling (All Samples)')
    c_stall_ni = col('Warp Stall Sampling (Not-issued Samples)')
    c_addr = col('Address')
    print('columns:', ', '.join(cols))
    by_op = defaultdict(float)
    stall_by_op = defaultdict(float)
    total_exec = total_stall = 0.0
    for r in rows:
        op = (r.get(c_src) or '').strip()
        if op.startswith('@'):
            op = op.split(None, 1)[1] if ' ' in op else op
        op = op.split(' ')[0]
        e = num(r.get(c_exec, 0)) if c_exec else 0.0
        st = num(r.get(c_stall, 0)) if c_stall else 0.0
        by_op[op] += e
        stall_by_op[op] += st
        total_exec += e
        total_stall += st
    print(f'instructions executed (warp-level): {total_exec:.0f}; stall samples: {total_stall:.0f}')
    print('opcode                      executed   share   stall-share')
    for op, e in sorted(by_op.items(), key=lambda x: -x[1])[:30]:
        print(f'{op:<26} {e:>11.0f}  {100 * e / max(total_exec, 1):5.1f}%  {100 * stall_by_op[op] / max(total_stall, 1):5.1f}%')
    print(f'\ntop {top} instructions by stall samples (all / not-issued / executed):')
    for r in sorted(rows, key=lambda r: -num(r.get(c_stall, 0)))[:top]:
        print(f"{r.get(c_addr, ''):>8} {num(r.get(c_stall, 0)):>8.0f} {num(r.get(c_stall_ni, 0)) if c_stall_ni else 0:>8.0f} "
              f"{num(r.get(c_exec, 0)):>10.0f}  {(r.get(c_src) or '').strip()[:90]}")


if __name__ == '__main__':
    main()
