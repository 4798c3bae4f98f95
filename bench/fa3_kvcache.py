"""Attention over a KV cache beside FlashAttention-3's flash_attn_with_kvcache and cuDNN (issue 39's
decode and short-chunk baselines; issue 36's paged cache against FA3's), in one process: bf16,
every cache full, causal (bottom-right; at q_len 1 every key), each call timed as a CUDA graph of
--graph-calls calls (these calls take 10-700 us, so launch gaps would otherwise count), in rounds
whose order rotates, each timed block after an untimed replay of the same graph.

Cells: BATCH:LEN:QLEN:HQ:HKV[:PAGE] (hdim --hdim, default 128); PAGE > 0: the same keys in a
shuffled pool of PAGE-token pages through page_table for both libraries (FA3 must be built with
paged KV: FA3_PAGED=1 scripts/fa3-build.sh). cuDNN (PyTorch's SDPA backend) only at q_len 1 and
unpaged: PyTorch's is_causal is top-left, which is not a chunk's mask.

    PYTHONPATH=build/python:/tmp/fa3/hopper python bench/fa3_kvcache.py --decode-grid --chunks --csv kv.csv
"""
import argparse
import statistics

import torch

import hopattn
from ab_forward import write_rows  # bench/ on sys.path

try:
    import flash_attn_interface as fa3
except ImportError as e:  # noqa: BLE001
    raise SystemExit(f"flash_attn_interface not importable ({e}); build it with scripts/fa3-build.sh") from e


def parse_cell(spec):
    f = [int(x) for x in spec.split(":")]
    if len(f) not in (5, 6):
        raise SystemExit(f"cell {spec!r}: BATCH:LEN:QLEN:HQ:HKV[:PAGE]")
    return tuple(f) if len(f) == 6 else tuple(f) + (0,)


def graph_of(fn, calls):
    """A CUDA graph of `calls` calls of fn (warmed up on a side stream first, as capture wants)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    return g


def time_graph(g, calls, target_ms, start, stop):
    """ms per call: an untimed replay block (~100 ms), then replays filling ~target_ms."""
    g.replay()
    torch.cuda.synchronize()
    start.record()
    g.replay()
    stop.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(stop), 1e-3)
    for _ in range(max(2, int(100.0 / one))):
        g.replay()
    reps = max(3, int(target_ms / one))
    start.record()
    for _ in range(reps):
        g.replay()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / (reps * calls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="")
    ap.add_argument("--decode-grid", action="store_true",
                    help="q_len 1, 64:8 heads: 1 x 8k, 1 x 64k, 8 x 8k, 32 x 8k, 128 x 2k, 16 x 32k")
    ap.add_argument("--chunks", action="store_true",
                    help="GQA 32:8, q_len 1/16/64/128 against 1k, 4k and 32k caches, batch 1")
    ap.add_argument("--pages", default="", help="also each cell paged with these page sizes, e.g. 16,64,256")
    ap.add_argument("--hdim", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--graph-calls", type=int, default=20)
    ap.add_argument("--target-ms", type=float, default=25.0)
    ap.add_argument("--csv")
    args = ap.parse_args()
    specs = [c for c in args.cells.split(",") if c]
    if args.decode_grid:
        specs += [f"{b}:{n}:1:64:8" for b, n in ((1, 8192), (1, 65536), (8, 8192), (32, 8192), (128, 2048), (16, 32768))]
    if args.chunks:
        specs += [f"1:{n}:{q}:32:8" for n in (1024, 4096, 32768) for q in (1, 16, 64, 128)]
    if not specs:
        raise SystemExit("no cells: --cells, --decode-grid or --chunks")
    cells = [parse_cell(s) for s in specs]
    pages = [int(p) for p in args.pages.split(",") if p]
    cells += [c[:5] + (p,) for c in cells if c[5] == 0 for p in pages if c[1] % p == 0]
    d = args.hdim
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, hopattn {hopattn.__version__}, "
          f"{torch.cuda.get_device_name()}")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    calls = {}
    for i, (b, n, qlen, hq, hkv, page) in enumerate(cells):
        k = torch.randn(b, n, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        q = torch.randn(b, qlen, hq, d, device="cuda", dtype=torch.bfloat16)
        seqlens = torch.full((b,), n, dtype=torch.int32, device="cuda")
        table = None
        if page:
            ids = torch.randperm(b * n // page, device="cuda")
            table = ids.view(b, n // page).to(torch.int32)
            kp = torch.empty((b * n // page, page, hkv, d), device="cuda", dtype=torch.bfloat16)
            vp = torch.empty_like(kp)
            kp[ids.long()] = k.reshape(-1, page, hkv, d)
            vp[ids.long()] = v.reshape(-1, page, hkv, d)
            k, v = kp, vp
        out = torch.empty_like(q)
        ws = torch.empty(max(1, hopattn.kvcache_workspace_size(q, k, v, seqlens, causal=True, page_table=table)),
                         dtype=torch.uint8, device="cuda")
        calls[("hopattn", i)] = (lambda q=q, k=k, v=v, s=seqlens, o=out, w=ws, t=table:
                                 hopattn.flash_attn_with_kvcache(q, k, v, s, causal=True, out=o, workspace=w,
                                                                 page_table=t))
        calls[("fa3", i)] = (lambda q=q, k=k, v=v, s=seqlens, t=table:
                             fa3.flash_attn_with_kvcache(q, k, v, cache_seqlens=s, causal=True, page_table=t))
        if qlen == 1 and not page:
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

            def sdpa(qt=qt, kt=kt, vt=vt, gqa=hq != hkv):
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, enable_gqa=gqa)
            calls[("cudnn", i)] = sdpa

    # Each baseline's result against hopattn's (a baseline computing something else shows).
    diffs, graphs, failed = {}, {}, {}
    for (impl, i), fn in calls.items():
        try:
            o = fn()
            o = o[0] if isinstance(o, tuple) else o
            if impl == "cudnn":
                o = o.transpose(1, 2)
            if impl != "hopattn":
                ref = calls[("hopattn", i)]()
                diffs[(impl, i)] = float((o.float() - ref.float()).abs().max())
            graphs[(impl, i)] = graph_of(fn, args.graph_calls)
        except Exception as e:  # noqa: BLE001 - a baseline that cannot run a cell is reported
            failed[(impl, i)] = f"{type(e).__name__}: {e}"
    jobs = sorted(graphs, key=lambda j: (j[1], j[0]))
    times = {j: [] for j in jobs}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(args.rounds):
        for j in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
            times[j].append(time_graph(graphs[j], args.graph_calls, args.target_ms, start, stop))
    rows = []
    for i, (b, n, qlen, hq, hkv, page) in enumerate(cells):
        cell = f"{b}:{n}:{qlen}:{hq}:{hkv}" + (f":p{page}" if page else "")
        base = statistics.median(times[("hopattn", i)]) if ("hopattn", i) in times else None
        kv_bytes = 2.0 * b * n * hkv * d * 2
        for impl in ("hopattn", "fa3", "cudnn"):
            if (impl, i) in failed:
                print(f"{cell:24s} {impl:8s} not timed: {failed[(impl, i)]}")
                continue
            if (impl, i) not in times:
                continue
            t = times[(impl, i)]
            ms = statistics.median(t)
            ratio = f"{ms / base:.3f}" if base else "-"  # time / hopattn's: > 1 means hopattn is faster
            diff = diffs.get((impl, i))
            print(f"{cell:24s} {impl:8s} {ms * 1e3:9.2f} us {kv_bytes / (ms * 1e-3) / 1e12:6.3f} TB/s  time/hopattn {ratio}"
                  f"  (rounds {min(t) * 1e3:.2f}-{max(t) * 1e3:.2f})" + ("" if diff is None else f"  max|O - hopattn| {diff:.3g}"))
            rows.append({"cell": cell, "impl": impl, "batch": b, "seqlen_k": n, "seqlen_q": qlen, "heads_q": hq,
                         "heads_kv": hkv, "hdim": d, "page": page, "us": f"{ms * 1e3:.3f}",
                         "tbps": f"{kv_bytes / (ms * 1e-3) / 1e12:.4f}", "time_over_hopattn": ratio, "rounds": len(t),
                         "max_abs_diff_vs_hopattn": "" if diff is None else f"{diff:.3g}",
                         "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name()})
    write_rows(args.csv, rows)


if __name__ == "__main__":
    main()
