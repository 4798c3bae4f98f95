"""hopattn's calls as torch custom ops (torch.library): schemas with fake (meta) implementations, so
that torch.compile(fullgraph=True) traces a model that calls them without a graph break, and
CUDA-graph capture works (outputs and the split-KV workspace come from torch's allocator).
Imported by hopattn when torch is importable; the public functions route through these ops
while torch.compile traces, and call the library directly in eager mode (less host overhead)."""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch

from . import ops

Tensor = torch.Tensor


@torch.library.custom_op("hopattn::flash_attn", mutates_args=(), device_types="cuda")
def flash_attn(q: Tensor, k: Tensor, v: Tensor, softmax_scale: Optional[float], causal: bool) -> Tuple[Tensor, Tensor]:
    return ops.flash_attn_func(q, k, v, softmax_scale=softmax_scale, causal=causal, return_lse=True)


@flash_attn.register_fake
def _flash_attn_fake(q, k, v, softmax_scale, causal):
    return torch.empty_like(q), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


@torch.library.custom_op("hopattn::flash_attn_with_kvcache", mutates_args=(), device_types="cuda")
def flash_attn_with_kvcache(q: Tensor, k_cache: Tensor, v_cache: Tensor, cache_seqlens: Tensor,
                            k_scale: Optional[Tensor], v_scale: Optional[Tensor], k_tail: Optional[Tensor],
                            v_tail: Optional[Tensor], softmax_scale: Optional[float], causal: bool, num_splits: int,
                            pack_gqa: Optional[bool]) -> Tuple[Tensor, Tensor]:
    return ops.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=causal, softmax_scale=softmax_scale,
                                       num_splits=num_splits, pack_gqa=pack_gqa, k_scale=k_scale, v_scale=v_scale,
                                       k_tail=k_tail, v_tail=v_tail, return_lse=True)


@flash_attn_with_kvcache.register_fake
def _kvcache_fake(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                  num_splits, pack_gqa):
    return torch.empty_like(q), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


@torch.library.custom_op("hopattn::quantize_kv_int8", mutates_args=(), device_types="cuda")
def quantize_kv_int8(k: Tensor, v: Tensor, block: int) -> List[Tensor]:
    return list(ops.quantize_kv_int8(k, v, block=block))


@quantize_kv_int8.register_fake
def _quantize_fake(k, v, block):
    b, n, h, d = k.shape
    return [k.new_empty(k.shape, dtype=torch.int8), v.new_empty(v.shape, dtype=torch.int8),
            k.new_empty((b, n // block, h, d), dtype=torch.float32), k.new_empty((b, n, h), dtype=torch.float32)]


def compiling() -> bool:
    return torch.compiler.is_compiling()
