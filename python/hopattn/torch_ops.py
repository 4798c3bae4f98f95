"""hopattn's calls as torch operators (torch.library): schemas with fake (meta) implementations, so
that torch.compile(fullgraph=True) traces a model that calls them without a graph break, and
CUDA-graph capture works (outputs and the split-KV workspace come from torch's allocator).
Imported by hopattn when torch is importable; the public functions route through these ops
while torch.compile traces, and call the library directly in eager mode (less host overhead).

Registered with torch.library.define / impl / register_fake rather than torch.library.custom_op:
the same schema, fake and opcheck behaviour, without custom_op's Python wrapper on every call
(r146: 96 µs per call through custom_op against 44 µs for the plain binding). The ops are
forward-only: no autograd formula is registered (use them under torch.no_grad / inference)."""
from __future__ import annotations

import torch

from . import ops

_LIB = torch.library.Library("hopattn", "DEF")
_LIB.define("flash_attn(Tensor q, Tensor k, Tensor v, float? softmax_scale, bool causal) -> (Tensor, Tensor)")
_LIB.define("flash_attn_with_kvcache(Tensor q, Tensor k_cache, Tensor v_cache, Tensor cache_seqlens, "
            "Tensor? k_scale, Tensor? v_scale, Tensor? k_tail, Tensor? v_tail, float? softmax_scale, bool causal, "
            "int num_splits, bool? pack_gqa) -> (Tensor, Tensor)")
_LIB.define("quantize_kv_int8(Tensor k, Tensor v, int block) -> Tensor[]")


def _flash_attn(q, k, v, softmax_scale, causal):
    return ops.flash_attn_func(q, k, v, softmax_scale=softmax_scale, causal=causal, return_lse=True)


def _flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale,
                             causal, num_splits, pack_gqa):
    return ops.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=causal, softmax_scale=softmax_scale,
                                       num_splits=num_splits, pack_gqa=pack_gqa, k_scale=k_scale, v_scale=v_scale,
                                       k_tail=k_tail, v_tail=v_tail, return_lse=True)


def _quantize_kv_int8(k, v, block):
    return list(ops.quantize_kv_int8(k, v, block=block))


_LIB.impl("flash_attn", _flash_attn, "CUDA")
_LIB.impl("flash_attn_with_kvcache", _flash_attn_with_kvcache, "CUDA")
_LIB.impl("quantize_kv_int8", _quantize_kv_int8, "CUDA")


@torch.library.register_fake("hopattn::flash_attn", lib=_LIB)
def _flash_attn_fake(q, k, v, softmax_scale, causal):
    return torch.empty_like(q), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


@torch.library.register_fake("hopattn::flash_attn_with_kvcache", lib=_LIB)
def _kvcache_fake(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                  num_splits, pack_gqa):
    return torch.empty_like(q), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


@torch.library.register_fake("hopattn::quantize_kv_int8", lib=_LIB)
def _quantize_fake(k, v, block):
    b, n, h, d = k.shape
    return [k.new_empty(k.shape, dtype=torch.int8), v.new_empty(v.shape, dtype=torch.int8),
            k.new_empty((b, n // block, h, d), dtype=torch.float32), k.new_empty((b, n, h), dtype=torch.float32)]


def compiling() -> bool:
    return torch.compiler.is_compiling()
