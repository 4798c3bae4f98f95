"""FlashAttention-3 beside hopattn in one process (issue 39's same-run baseline): forward attention
on the same inputs, bf16 for both and, with --fp8, both FP8 forwards (e4m3 inputs cast from the same
bf16 ones, unit descales: rows fa3-e4m3 and hopattn-e4m3, whose ratio column is against
hopattn-e4m3, issue 37's table), timed in rounds
whose order rotates, each timed block after an untimed block of the same call (at the 700 W cap
the order alone moved ratios by 4-9 %). FA3 comes from scripts/fa3-build.sh (PYTHONPATH with its
hopper/ directory); it is not a dependency of hopattn.

Cells: HDIM:CAUSAL:SEQLEN[:HQ:HKV[:BATCH]]: seqlen_q = seqlen_k; without HQ:HKV the FlashAttention-3
paper's grid shape (16k tokens, hidden 2048: batch = 16384 / SEQLEN, heads = 2048 / HDIM, MHA);
with them GQA of that many heads and BATCH sequences (default 1). `--grid` adds the paper's grid
(hdim 64/128/256, seqlen 512..16k, causal and not).

    PYTHONPATH=build/python:/tmp/fa3/hopper python bench/fa3_forward.py --grid --fp8 --rounds 3 --csv fa3.csv
"""
import argparse
import statistics

import torch

import hopattn
from ab_forward import time_block, write_rows  # the A/B harness's timing and CSV (bench/ on sys.path)

try:
    import flash_attn_interface as fa3
except ImportError as e:  # the script is useless without it: say so
    raise SystemExit(f"flash_attn_interface not importable ({e}); build it with scripts/fa3-build.sh") from e


def parse_cell(spec):
    f = [int(x) for x in spec.split(":")]
    hdim, causal, seqlen = f[0], f[1], f[2]
    if len(f) >= 5:
        hq, hkv, batch = f[3], f[4], (f[5] if len(f) >= 6 else 1)
    else:
        hq = hkv = 2048 // hdim
        batch = max(1, 16384 // seqlen)
    return hdim, causal, seqlen, hq, hkv, batch


def visible_pairs(s, causal):
    return s * (s + 1) // 2 if causal else s * s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="")
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--fp8", action="store_true",
                    help="also the e4m3 forwards of FA3 and hopattn (hopattn's at the head dims its build has)")
    ap.add_argument("--no-cudnn", action="store_true",
                    help="leave out cuDNN through PyTorch's SDPA (its cuDNN backend: 9.19 on the H200)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target-ms", type=float, default=25.0)
    ap.add_argument("--csv")
    args = ap.parse_args()
    specs = [c for c in args.cells.split(",") if c]
    if args.grid:
        specs += [f"{d}:{c}:{s}" for d in (64, 128, 256) for c in (0, 1) for s in (512, 1024, 2048, 4096, 8192, 16384)]
    if not specs:
        raise SystemExit("no cells: --cells or --grid")
    cells = [parse_cell(s) for s in specs]
    torch.manual_seed(0)
    dev = "cuda"
    impls = ["hopattn", "fa3"] + ([] if args.no_cudnn else ["cudnn"]) + (["hopattn-e4m3", "fa3-e4m3"] if args.fp8 else [])
    if not args.no_cudnn:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        print(f"cuDNN through PyTorch {torch.__version__}: cuDNN {torch.backends.cudnn.version()}")
    data = {}
    for hdim, causal, seqlen, hq, hkv, batch in cells:
        key = (hdim, seqlen, hq, hkv, batch)
        if key not in data:
            q = torch.randn(batch, seqlen, hq, hdim, device=dev, dtype=torch.bfloat16)
            k = torch.randn(batch, seqlen, hkv, hdim, device=dev, dtype=torch.bfloat16)
            v = torch.randn(batch, seqlen, hkv, hdim, device=dev, dtype=torch.bfloat16)
            data[key] = (q, k, v)

    def call(impl, i):
        hdim, causal, seqlen, hq, hkv, batch = cells[i]
        q, k, v = data[(hdim, seqlen, hq, hkv, batch)]
        if impl == "hopattn":
            out = torch.empty_like(q)
            return lambda: hopattn.flash_attn_func(q, k, v, causal=bool(causal), out=out)
        if impl == "fa3":
            return lambda: fa3.flash_attn_func(q, k, v, causal=bool(causal))
        if impl == "cudnn":  # (B, S, H, D) viewed as (B, H, S, D), as a PyTorch user calls SDPA
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

            def run():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    return torch.nn.functional.scaled_dot_product_attention(
                        qt, kt, vt, is_causal=bool(causal), enable_gqa=hq != hkv).transpose(1, 2)
            return run
        q8, k8, v8 = (x.to(torch.float8_e4m3fn) for x in (q, k, v))
        if impl == "hopattn-e4m3":  # no descales: the e4m3 values are the inputs (as FA3's call below)
            out8 = torch.empty_like(q)
            return lambda: hopattn.flash_attn_func(q8, k8, v8, causal=bool(causal), out=out8)
        return lambda: fa3.flash_attn_func(q8, k8, v8, causal=bool(causal))

    # Per cell and baseline: max |O - O_hopattn| (bf16 against bf16 should be within a few bf16 ulps
    # of O's magnitude; e4m3 is coarser), so that a baseline computing something else shows.
    # FA3's e4m3 row is compared with hopattn's e4m3 row where that one runs (else with bf16).
    diffs = {}
    for i in range(len(cells)):
        ref = call("hopattn", i)()
        ref8 = None
        for impl in impls[1:]:
            try:
                o = call(impl, i)()
                if impl == "hopattn-e4m3":
                    ref8 = o
                    continue
                o = o[0] if isinstance(o, tuple) else o
                against = ref8 if impl == "fa3-e4m3" and ref8 is not None else ref
                diffs[(impl, i)] = float((o.float() - against.float()).abs().max())
            except Exception as e:  # noqa: BLE001
                diffs[(impl, i)] = float("nan")
                print(f"{specs[i]} {impl}: {type(e).__name__}: {e}")
    jobs = [(impl, i) for i in range(len(cells)) for impl in impls]
    times = {j: [] for j in jobs}
    failed = {}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(args.rounds):
        order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
        for j in order:
            if j in failed:
                continue
            try:
                times[j].append(time_block(call(*j), args.target_ms, start, stop))
            except Exception as e:  # noqa: BLE001 - a baseline that cannot run this cell is reported
                failed[j] = f"{type(e).__name__}: {e}"
    rows = []
    for i, spec in enumerate(specs):
        hdim, causal, seqlen, hq, hkv, batch = cells[i]
        flops = 4.0 * batch * hq * visible_pairs(seqlen, causal) * hdim
        base16 = statistics.median(times[("hopattn", i)]) if times[("hopattn", i)] else None
        base8 = statistics.median(times[("hopattn-e4m3", i)]) if times.get(("hopattn-e4m3", i)) else None
        for impl in impls:
            t = times[(impl, i)]
            if not t:
                print(f"{spec:22s} {impl:12s} not timed: {failed.get((impl, i), '?')}")
                continue
            ms = statistics.median(t)
            base = base8 if impl.endswith("e4m3") else base16  # e4m3 rows against hopattn's e4m3 row
            ratio = f"{ms / base:.3f}" if base else "-"  # time / hopattn's: > 1 means hopattn is faster
            diff = diffs.get((impl, i))
            print(f"{spec:22s} {impl:12s} {ms:9.4f} ms {flops / (ms * 1e-3) / 1e12:7.1f} TFLOP/s  time/hopattn {ratio}"
                  f"  (rounds {min(t):.4f}-{max(t):.4f})" + ("" if diff is None else f"  max|O - hopattn| {diff:.3g}"))
            rows.append({"cell": spec, "impl": impl, "hdim": hdim, "causal": causal, "seqlen": seqlen, "heads_q": hq,
                         "heads_kv": hkv, "batch": batch, "ms": f"{ms:.5f}",
                         "tflops": f"{flops / (ms * 1e-3) / 1e12:.1f}", "time_over_hopattn": ratio,
                         "rounds": len(t), "max_abs_diff_vs_hopattn": "" if diffs.get((impl, i)) is None
                         else f"{diffs[(impl, i)]:.3g}", "hopattn": hopattn.__version__})
    write_rows(args.csv, rows)


if __name__ == "__main__":
    main()
