"""Forward-attention times of whichever hopattn is importable, for a same-run A/B of two builds
(each arm in its own process: `PYTHONPATH=<arm>/python python bench/ab_forward.py --arm NAME ...`,
arms alternating, rounds rotating; scripts/ab-python.sh drives it) and for the options' cost in
one process (cells with a window, softcap or sinks beside the same cell without).

Cells: HDIM:CAUSAL:SEQLEN[:opt...] on the FlashAttention-3 grid (16k tokens, hidden 2048: batch =
16384 / SEQLEN, heads = 2048 / HDIM, seqlen_q = seqlen_k, bf16), options w=L/R (window_size),
sc=X (softcap), sinks (N(0, 1) per head). Each cell: an untimed block of the same call (~100 ms),
then a timed block of CUDA events over calls filling ~target ms; the cells' order rotates each
round; reported: the median ms over the rounds. Cells with options are skipped (noted) when the
imported hopattn predates them (0.2).

    python bench/ab_forward.py --arm new --rounds 3 --csv out.csv --cells 128:1:16384,128:1:16384:w=4095/0
"""
import argparse
import csv
import statistics

import torch

import hopattn


def parse_cell(spec):
    f = spec.split(":")
    hdim, causal, seqlen = int(f[0]), int(f[1]), int(f[2])
    opts = {}
    for o in f[3:]:
        if o.startswith("w="):
            left, right = o[2:].split("/")
            opts["window_size"] = (int(left), int(right))
        elif o.startswith("sc="):
            opts["softcap"] = float(o[3:])
        elif o == "sinks":
            opts["sinks"] = True
        else:
            raise SystemExit(f"unknown option {o!r} in cell {spec!r}")
    return hdim, causal, seqlen, opts


def visible_pairs(sq, sk, causal, window):
    """Query-key pairs a (bottom-right aligned) mask leaves visible, per (batch, head)."""
    left, right = window if window else (-1, -1)
    if causal:
        right = 0
    total = 0
    for i in range(sq):
        p = i + sk - sq
        lo = 0 if left < 0 else max(0, p - left)
        hi = sk - 1 if right < 0 else min(sk - 1, p + right)
        total += max(0, hi - lo + 1)
    return total


def write_rows(path, rows):
    """The rows (dicts with the same keys) as a CSV file with a header; nothing without rows.
    Shared with bench/fa3_forward.py and bench/fa3_kvcache.py."""
    if not path or not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def time_block(fn, target_ms, start, stop):
    """One timing of fn (CUDA events start, stop): an untimed block of ~100 ms of the same call, then
    the mean of calls filling ~target_ms. Shared with bench/fa3_forward.py."""
    fn()
    torch.cuda.synchronize()
    start.record()
    fn()
    stop.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(stop), 1e-3)
    calls = max(3, int(target_ms / one))
    for _ in range(max(3, int(100.0 / one))):  # untimed block of the same call
        fn()
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm", required=True)
    ap.add_argument("--cells", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--offset", type=int, default=0, help="rotate the cells' order by this much more")
    ap.add_argument("--target-ms", type=float, default=25.0)
    ap.add_argument("--csv")
    args = ap.parse_args()
    cells = [parse_cell(c) for c in args.cells.split(",")]
    new_api = tuple(int(x) for x in hopattn.__version__.split(".")[:2]) >= (0, 3)
    dev = "cuda"
    torch.manual_seed(0)
    tokens, hidden = 16384, 2048
    data = {}
    for hdim, causal, seqlen, opts in cells:
        key = (hdim, seqlen)
        if key not in data:
            b, h = tokens // seqlen, hidden // hdim
            data[key] = [torch.randn(b, seqlen, h, hdim, device=dev, dtype=torch.bfloat16) for _ in range(3)]
    sinks = {}
    times = {i: [] for i in range(len(cells))}
    skipped = {}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(args.rounds):
        order = list(range(len(cells)))
        shift = (r + args.offset) % len(order)
        order = order[shift:] + order[:shift]
        for i in order:
            hdim, causal, seqlen, opts = cells[i]
            q, k, v = data[(hdim, seqlen)]
            kw = {}
            if opts:
                if not new_api:
                    skipped[i] = "hopattn " + hopattn.__version__ + " has no window/softcap/sinks"
                    continue
                kw = dict(opts)
                if kw.pop("sinks", False):
                    h = q.shape[2]
                    if h not in sinks:
                        sinks[h] = torch.randn(h, device=dev, dtype=torch.float32)
                    kw["sinks"] = sinks[h]
            out = torch.empty_like(q)
            fn = lambda: hopattn.flash_attn_func(q, k, v, causal=bool(causal), out=out, **kw)
            times[i].append(time_block(fn, args.target_ms, start, stop))
    rows = []
    for i, (hdim, causal, seqlen, opts) in enumerate(cells):
        spec = args.cells.split(",")[i]
        if not times[i]:
            print(f"{args.arm:8s} {spec:32s} skipped: {skipped.get(i, '?')}")
            continue
        ms = statistics.median(times[i])
        b, h = tokens // seqlen, hidden // hdim
        pairs = visible_pairs(seqlen, seqlen, causal, opts.get("window_size"))
        tflops = 4.0 * b * h * pairs * hdim / (ms * 1e-3) / 1e12
        spread = f"{min(times[i]):.4f}-{max(times[i]):.4f}"
        print(f"{args.arm:8s} {spec:32s} {ms:9.4f} ms {tflops:7.1f} TFLOP/s  (rounds {spread})")
        rows.append({"arm": args.arm, "cell": spec, "hdim": hdim, "causal": causal, "seqlen": seqlen,
                     "ms": f"{ms:.5f}", "tflops": f"{tflops:.1f}", "rounds": len(times[i]), "spread_ms": spread,
                     "version": hopattn.__version__})
    write_rows(args.csv, rows)


if __name__ == "__main__":
    main()
