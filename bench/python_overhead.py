"""Host time per call in eager mode, where the GPU is idle (tiny shapes, so the launch queue never
backs up): hopattn's plain binding, its torch custom op, and torch's scaled_dot_product_attention
on the same shape. Each round times every call once, N back-to-back calls after an untimed block
of the same call, in an order that rotates from round to round (the host's speed drifts: r148's
rows measured one after the other moved by up to 40 %); the stream is synchronized before and
after each block (the calls are asynchronous; at these sizes the GPU finishes each kernel long
before the next launch, so the host is the bound). Reported: the median µs per call over the
rounds and the median of each round's ratio to SDPA's time in that round.

    python bench/python_overhead.py [--calls 2000] [--rounds 9] [--csv FILE]   (hopattn importable)
"""
import argparse
import ctypes
import statistics
import time

import torch

import hopattn


def block_us(fn, calls):
    """µs per call over `calls` back-to-back calls, after an untimed block of the same call."""
    for _ in range(calls // 4):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=9)
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
    # The library alone: the C call with its argument struct packed once beforehand (ctypes' own
    # call cost included), to split a call's time between the Python layer and the library.
    from hopattn import _lib, ops
    stream = torch.cuda.current_stream().cuda_stream
    keep = []
    fwd_buf = ctypes.create_string_buffer(ops._FWD.size)
    ops._FWD.pack_into(fwd_buf, 0, ops._FWD.size, 0, *ops._tv(q, "q", keep), *ops._tv(k, "k", keep),
                       *ops._tv(v, "v", keep), *ops._tv(out, "o", keep), *ops._NONE, 0.0, 1)
    out1 = torch.empty_like(q1)
    kv_args = (q1, kc, vc, seqlens, False, None, 0, None, None, None, None, None, out1, None)
    ws = ctypes.c_size_t(0)
    _lib.raise_for(_lib.lib.hopattn_kvcache_workspace_size(ops._pack_kvcache(*kv_args, 0, 0, keep), ctypes.byref(ws)))
    workspace = torch.empty(max(ws.value, 1), dtype=torch.uint8, device=dev)
    kv_buf = ops._pack_kvcache(*kv_args, workspace.data_ptr(), ws.value, keep)
    _lib.raise_for(_lib.lib.hopattn_attention_forward(fwd_buf, stream))  # both valid calls
    _lib.raise_for(_lib.lib.hopattn_kvcache_attention(kv_buf, stream))
    rows += [
        ("hopattn_attention_forward, C call only (args packed beforehand)",
         lambda: _lib.lib.hopattn_attention_forward(fwd_buf, stream)),
        ("hopattn_kvcache_attention, C call only (args packed beforehand)",
         lambda: _lib.lib.hopattn_kvcache_attention(kv_buf, stream)),
    ]
    samples = {name: [] for name, _ in rows}
    ratios = {name: [] for name, _ in rows}
    for r in range(args.rounds):
        order = rows[r % len(rows):] + rows[:r % len(rows)]
        got = {name: block_us(fn, args.calls) for name, fn in order}
        for name, _ in rows:
            samples[name].append(got[name])
            ratios[name].append(got[name] / got[rows[0][0]])
    print(f"torch {torch.__version__}, hopattn {hopattn.__version__}, {torch.cuda.get_device_name()}, "
          f"{args.rounds} rounds of {args.calls} calls")
    print(f"{'call':70s} {'median us':>10s} {'min':>8s} {'max':>8s} {'x sdpa':>7s}")
    results = []
    for name, _ in rows:
        med, lo, hi = statistics.median(samples[name]), min(samples[name]), max(samples[name])
        ratio = statistics.median(ratios[name])
        results.append((name, med, lo, hi, ratio))
        print(f"{name:70s} {med:10.2f} {lo:8.2f} {hi:8.2f} {ratio:7.2f}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("call,median_us,min_us,max_us,median_ratio_vs_sdpa\n")
            for name, med, lo, hi, ratio in results:
                f.write(f"\"{name}\",{med:.3f},{lo:.3f},{hi:.3f},{ratio:.3f}\n")


if __name__ == "__main__":
    main()
