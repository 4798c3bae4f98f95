"""Host time per call in eager mode, where the GPU is idle (tiny shapes, so the launch queue never
backs up): hopattn's plain binding, its torch custom op, and torch's scaled_dot_product_attention
on the same shape. Each figure is the median over rounds of N back-to-back calls, timed on the
host with the stream synchronized before and after (the calls are asynchronous; at these sizes
the GPU finishes each kernel long before the next launch, so the host is the bound).

    python bench/python_overhead.py [--calls 2000] [--rounds 7] [--csv FILE]   (hopattn importable)
"""
import argparse
import statistics
import time

import torch

import hopattn


def per_call_us(fn, calls, rounds):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples), min(samples), max(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--csv")
    args = ap.parse_args()
    dev = "cuda"
    q = torch.randn(1, 16, 8, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 16, 8, 128, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, 16, 8, 128, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(q)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    kc = torch.randn(1, 256, 8, 128, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    q1 = torch.randn(1, 1, 8, 128, device=dev, dtype=torch.bfloat16)
    seqlens = torch.tensor([200], dtype=torch.int32, device=dev)
    rows = [
        ("sdpa (torch.nn.functional.scaled_dot_product_attention)",
         lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)),
        ("hopattn.flash_attn_func (plain binding, allocates out)",
         lambda: hopattn.flash_attn_func(q, k, v, causal=True)),
        ("hopattn.flash_attn_func (plain binding, out= given)",
         lambda: hopattn.flash_attn_func(q, k, v, causal=True, out=out)),
        ("torch.ops.hopattn.flash_attn (torch custom op)",
         lambda: torch.ops.hopattn.flash_attn(q, k, v, None, True)),
        ("torch.ops.hopattn.flash_attn_lse (torch custom op, with the LSE)",
         lambda: torch.ops.hopattn.flash_attn_lse(q, k, v, None, True)),
        ("hopattn.flash_attn_with_kvcache (plain binding, 1 query, 200 keys)",
         lambda: hopattn.flash_attn_with_kvcache(q1, kc, vc, seqlens)),
        ("torch.ops.hopattn.flash_attn_with_kvcache (torch custom op)",
         lambda: torch.ops.hopattn.flash_attn_with_kvcache(q1, kc, vc, seqlens, None, None, None, None, None, False,
                                                          0, None)),
    ]
    results = []
    print(f"torch {torch.__version__}, hopattn {hopattn.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'call':70s} {'median us':>10s} {'min':>8s} {'max':>8s}")
    for name, fn in rows:
        med, lo, hi = per_call_us(fn, args.calls, args.rounds)
        results.append((name, med, lo, hi))
        print(f"{name:70s} {med:10.2f} {lo:8.2f} {hi:8.2f}")
    sdpa = results[0][1]
    for name, med, _, _ in results[1:]:
        print(f"  {name}: {med / sdpa:.2f}x sdpa's host time")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("call,median_us,min_us,max_us,ratio_vs_sdpa\n")
            for name, med, lo, hi in results:
                f.write(f"\"{name}\",{med:.3f},{lo:.3f},{hi:.3f},{med / sdpa:.3f}\n")


if __name__ == "__main__":
    main()
