"""A decode loop over an int8 KV cache, one CUDA graph per step, with hopattn.

Each sequence's cache is int8 (hopattn.quantize_kv_int8, whole blocks of 128 tokens) plus a bf16
staging block for its partial last block (k_tail, v_tail). One decode step = append the new
token's K/V to the staging block, run attention over int8 blocks + tail, and, when a staging block
fills, quantize it into the int8 cache. The attention call is captured once in a CUDA graph and
replayed every step: cache_seqlens and the staging blocks change in place.

    python examples/decode_int8_graph.py [--batch 8] [--steps 300] [--prompt 1000]
"""
import argparse

import torch

import hopattn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--prompt", type=int, default=1000)
    args = ap.parse_args()
    b, hq, hkv, d, block, max_len = args.batch, 32, 8, 128, 128, 4096
    dev, dt = "cuda", torch.bfloat16
    torch.manual_seed(0)

    # The prompt's K/V: full blocks into the int8 cache, the rest into the staging (tail) block.
    k16 = torch.randn(b, max_len, hkv, d, device=dev, dtype=dt)
    v16 = torch.randn_like(k16)
    k8, v8, ks, vs = hopattn.quantize_kv_int8(k16, v16, block=block)  # every block, for the shapes
    k_tail = torch.zeros(b, block, hkv, d, device=dev, dtype=dt)
    v_tail = torch.zeros_like(k_tail)
    lengths = [args.prompt] * b
    for i in range(b):
        full = lengths[i] - lengths[i] % block
        k_tail[i, :lengths[i] - full] = k16[i, full:lengths[i]]
        v_tail[i, :lengths[i] - full] = v16[i, full:lengths[i]]
    seqlens = torch.tensor(lengths, dtype=torch.int32, device=dev)
    q = torch.randn(b, 1, hq, d, device=dev, dtype=dt)
    out = torch.empty_like(q)

    def step():
        hopattn.flash_attn_with_kvcache(q, k8, v8, seqlens, k_scale=ks, v_scale=vs, k_tail=k_tail, v_tail=v_tail,
                                        out=out)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm-up (the workspace size is fixed by the shapes)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        # A new token per sequence: its K/V into the staging block (a real model would write the
        # projections of the token it just produced).
        for i in range(b):
            pos = lengths[i] % block
            k_tail[i, pos] = torch.randn(hkv, d, device=dev, dtype=dt)
            v_tail[i, pos] = torch.randn(hkv, d, device=dev, dtype=dt)
            lengths[i] += 1
        seqlens.copy_(torch.tensor(lengths, dtype=torch.int32))
        q.normal_()
        graph.replay()
        for i in range(b):
            if lengths[i] % block == 0:  # the staging block is full: quantize it into the cache
                s = lengths[i] - block
                views = (k8[i:i + 1, s:s + block], v8[i:i + 1, s:s + block],
                         ks[i:i + 1, s // block:s // block + 1], vs[i:i + 1, s:s + block])
                hopattn.quantize_kv_int8(k_tail[i:i + 1], v_tail[i:i + 1], block=block, out=views)
    end.record()
    torch.cuda.synchronize()
    hopattn.kvcache_device_check()
    print(f"{args.steps} decode steps, batch {b}, {hq}:{hkv} heads, int8 cache + bf16 tails: "
          f"{start.elapsed_time(end) / args.steps:.3f} ms per step (host loop included); final lengths {lengths[0]}")


if __name__ == "__main__":
    main()
