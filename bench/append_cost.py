"""GPU time of appending one token per sequence beside the decode step it feeds (q_len 1, GQA
32:8, hdim 128, bf16 and int8 caches), each timed as a CUDA graph of 20 calls: the attention alone,
the append alone (K rotated, q rotated, lengths written), and flash_attn_with_kvcache(k=, v=,
rotary_cos=, rotary_sin=) doing both. Rounds rotate the order; each timed replay follows an untimed
one of the same graph; medians.

    python bench/append_cost.py [--rounds 7] [--csv FILE]   (hopattn importable)
"""
import argparse
import statistics

import torch

import hopattn


def graph_of(fn, calls=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up outside the capture (allocations, workspace sizes)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g, calls


def time_us(graph, calls):
    graph.replay()  # untimed replay of the same graph first
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--csv")
    args = ap.parse_args()
    hq, hkv, d, block = 32, 8, 128, 128
    results = []
    for cache in ("bf16", "int8"):
        for batch, max_len in ((1, 8192), (8, 8192), (32, 4096)):
            torch.manual_seed(0)
            k = torch.randn(batch, max_len, hkv, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn_like(k)
            extra = {}
            if cache == "int8":
                k8, v8, ks, vs = hopattn.quantize_kv_int8(k, v, block=block)
                tail = torch.randn(batch, block, hkv, d, device="cuda", dtype=torch.bfloat16)
                extra = dict(k_scale=ks, v_scale=vs, k_tail=tail, v_tail=tail.clone())
                k, v = k8, v8
            # lengths at 3/4 of the cache, one short of a block end (an int8 append then completes it)
            seqlens = torch.full((batch,), max_len * 3 // 4 - 1, dtype=torch.int32, device="cuda")
            q = torch.randn(batch, 1, hq, d, device="cuda", dtype=torch.bfloat16)
            k_new = torch.randn(batch, 1, hkv, d, device="cuda", dtype=torch.bfloat16)
            v_new = torch.randn_like(k_new)
            inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
            ang = torch.arange(max_len, device="cuda", dtype=torch.float32)[:, None] * inv[None, :]
            cos, sin = torch.cos(ang).bfloat16(), torch.sin(ang).bfloat16()
            q_rot, lens_out = torch.empty_like(q), torch.empty_like(seqlens)
            rows = {
                "attention": lambda: hopattn.flash_attn_with_kvcache(q, k, v, seqlens, causal=True, **extra),
                "append": lambda: hopattn.kvcache_append(k_new, v_new, k, v, seqlens, rotary_cos=cos, rotary_sin=sin,
                                                         q=q, q_rotated=q_rot, seqlens_out=lens_out, **extra),
                "append + attention": lambda: hopattn.flash_attn_with_kvcache(
                    q, k, v, seqlens, causal=True, k=k_new, v=v_new, rotary_cos=cos, rotary_sin=sin, **extra),
            }
            graphs = {name: graph_of(fn) for name, fn in rows.items()}
            names = list(rows)
            samples = {name: [] for name in names}
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    samples[name].append(time_us(*graphs[name]))
            med = {name: statistics.median(samples[name]) for name in names}
            print(f"{cache} batch {batch} x {max_len}: " + ", ".join(f"{n} {med[n]:.2f} us" for n in names) +
                  f"; append + attention / attention {med['append + attention'] / med['attention']:.3f}")
            results.append((cache, batch, max_len, med))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("cache,batch,max_len,attention_us,append_us,append_plus_attention_us,ratio\n")
            for cache, batch, max_len, med in results:
                f.write(f"{cache},{batch},{max_len},{med['attention']:.3f},{med['append']:.3f},"
                        f"{med['append + attention']:.3f},{med['append + attention'] / med['attention']:.4f}\n")


if __name__ == "__main__":
    main()
