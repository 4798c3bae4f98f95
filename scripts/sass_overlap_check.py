#!/usr/bin/env python3
"""Checks, in a cuobjdump -sass listing, that every warp-specialized forward kernel runs its
softmax exponentials between the loop's two WGMMA waits (intra-warpgroup overlap of the softmax
with P·V): WARPGROUP.DEPBAR.LE gsb0, 0x1 -> MUFU.EX2 ... -> WARPGROUP.DEPBAR.LE gsb0, 0x0.
ptxas hoisted the second wait above the exponentials in every such kernel until 2026-12-01
(docs/perf-log.md, r73); keep_before_wgmma_wait pins them. Exit 1 if a kernel lost the order.

  scripts/sass_overlap_check.py SASS_FILE
"""
import re
import sys


def events(body):
    out = []
    for line in body.split("\n"):
        if "WARPGROUP.DEPBAR" in line and "gsb0," in line:
            out.append("W" + line.split("gsb0,")[1].strip()[2])
        elif "MUFU.EX2" in line:
            out.append("e")
    return "".join(out)


def main(path):
    text = open(path).read()
    parts = re.split(r"\s+Function : (\S+)", text)
    checked = bad = 0
    for i in range(1, len(parts), 2):
        name, body = parts[i], parts[i + 1]
        if "ws_forward_kernel" not in name:
            continue
        seq = events(body)
        if "W1" not in seq:
            continue  # no overlapped loop in this kernel
        checked += 1
        # Every wait-for-one in the loop must be followed by exponentials before the next wait.
        ok = all(m.group(1) for m in re.finditer(r"W1(e*)W0", seq))
        if not ok:
            bad += 1
            print(f"no overlap: {name} ({re.sub(r'e+', lambda m: f'E{len(m.group())}', seq)[:80]})")
    print(f"softmax/P·V overlap in the SASS: {checked - bad} of {checked} warp-specialized kernels")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
