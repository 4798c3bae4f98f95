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

ops.bind_torch(torch)
_LIB = torch.library.Library("hopattn", "DEF")
# Two ops per call, without and with the LSE: the one without allocates and writes no LSE (the
# plain functions' return_lse=False), so that the common call pays for one output only.
# window_left, window_right, softcap, sinks: FlashAttention's window_size (-1: unbounded; (-1, -1) no
# window; causal makes the right side 0), softcap (0: off) and gpt-oss's sinks (float32 (heads_q,));
# their defaults keep the 0.2 schema's calls (five arguments) valid. q_descale, k_descale, v_descale
# (0.5): an e4m3 call's (batch, heads_kv) float32 descales (None: 1); such a call returns a bf16 O.
_FWD_ARGS = ("Tensor q, Tensor k, Tensor v, float? softmax_scale, bool causal, int window_left=-1, "
             "int window_right=-1, float softcap=0.0, Tensor? sinks=None, Tensor? q_descale=None, "
             "Tensor? k_descale=None, Tensor? v_descale=None")
# The variable-length forward (0.4): FlashAttention-3's order up to causal (seqused_k before the
# scale, no seqused_q), then the options as above. The workspace is allocated inside the op.
_VARLEN_ARGS = ("Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, "
                "int max_seqlen_k, Tensor? seqused_k, float? softmax_scale, bool causal, int window_left=-1, "
                "int window_right=-1, float softcap=0.0, Tensor? sinks=None")
# The KV-cache call: page_table, then the options as the forward's (0.4), defaulted so that the
# calls of the schema before them stay valid.
_KV_ARGS = ("Tensor q, Tensor k_cache, Tensor v_cache, Tensor cache_seqlens, Tensor? k_scale, Tensor? v_scale, "
            "Tensor? k_tail, Tensor? v_tail, float? softmax_scale, bool causal, int num_splits, bool? pack_gqa, "
            "Tensor? page_table=None, int window_left=-1, int window_right=-1, float softcap=0.0, Tensor? sinks=None")
_LIB.define(f"flash_attn({_FWD_ARGS}) -> Tensor")
_LIB.define(f"flash_attn_lse({_FWD_ARGS}) -> (Tensor, Tensor)")
_LIB.define(f"flash_attn_varlen({_VARLEN_ARGS}) -> Tensor")
_LIB.define(f"flash_attn_varlen_lse({_VARLEN_ARGS}) -> (Tensor, Tensor)")
_LIB.define(f"flash_attn_with_kvcache({_KV_ARGS}) -> Tensor")
_LIB.define(f"flash_attn_with_kvcache_lse({_KV_ARGS}) -> (Tensor, Tensor)")
_LIB.define("quantize_kv_int8(Tensor k, Tensor v, int block) -> Tensor[]")
# hopattn_fp8_quantize (0.5): x (batch, seqlen, heads, hdim) bf16/fp16 -> (x e4m3, (batch, heads_kv) descale)
_LIB.define("fp8_quantize(Tensor x, int heads_kv, bool hadamard=False) -> (Tensor, Tensor)")
# The append mutates the cache (and an int8 cache's scales and tails) in place; it returns q rotated
# (an empty tensor without q) and the lengths after the append.
_LIB.define("kvcache_append(Tensor k_new, Tensor v_new, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor cache_seqlens, "
            "Tensor(c!)? k_scale, Tensor(d!)? v_scale, Tensor(e!)? k_tail, Tensor(f!)? v_tail, Tensor? rotary_cos, "
            "Tensor? rotary_sin, bool rotary_interleaved, Tensor? q, Tensor? page_table=None) -> (Tensor, Tensor)")


def _lse_like(q):
    return q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


_E4M3 = getattr(torch, "float8_e4m3fn", None)


def _out_like(q):
    """O for q: like q, bf16 for e4m3 q (FlashAttention-3's FP8 convention)."""
    return torch.empty_like(q, dtype=torch.bfloat16) if q.dtype == _E4M3 else torch.empty_like(q)


def _flash_attn(q, k, v, softmax_scale, causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None,
                q_descale=None, k_descale=None, v_descale=None):
    out = _out_like(q)
    ops._forward(q, k, v, softmax_scale, causal, out, None, ops._raw_stream(q.get_device()), window_left, window_right,
                 softcap, sinks, q_descale, k_descale, v_descale)
    return out


def _flash_attn_lse(q, k, v, softmax_scale, causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None,
                    q_descale=None, k_descale=None, v_descale=None):
    out, lse = _out_like(q), _lse_like(q)
    ops._forward(q, k, v, softmax_scale, causal, out, lse, ops._raw_stream(q.get_device()), window_left, window_right,
                 softcap, sinks, q_descale, k_descale, v_descale)
    return out, lse


def _varlen_lse_like(q):
    return q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


def _flash_attn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale,
                       causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    out = torch.empty_like(q)
    ops._varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, causal, out,
                None, None, ops._raw_stream(q.get_device()), window_left, window_right, softcap, sinks)
    return out


def _flash_attn_varlen_lse(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale,
                           causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    out, lse = torch.empty_like(q), _varlen_lse_like(q)
    ops._varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, causal, out,
                lse, None, ops._raw_stream(q.get_device()), window_left, window_right, softcap, sinks)
    return out, lse


def _kvcache(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal, num_splits,
             pack_gqa, lse, page_table=None, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    out = torch.empty_like(q)
    ops._kvcache(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale, v_scale,
                 k_tail, v_tail, out, lse, None, ops._raw_stream(q.get_device()), page_table, window_left, window_right,
                 softcap, sinks)
    return out


def _flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale,
                             causal, num_splits, pack_gqa, page_table=None, window_left=-1, window_right=-1, softcap=0.0,
                             sinks=None):
    return _kvcache(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                    num_splits, pack_gqa, None, page_table, window_left, window_right, softcap, sinks)


def _flash_attn_with_kvcache_lse(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale,
                                 causal, num_splits, pack_gqa, page_table=None, window_left=-1, window_right=-1,
                                 softcap=0.0, sinks=None):
    lse = _lse_like(q)
    return _kvcache(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                    num_splits, pack_gqa, lse, page_table, window_left, window_right, softcap, sinks), lse


def _kvcache_append(k_new, v_new, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, rotary_cos,
                    rotary_sin, rotary_interleaved, q, page_table=None):
    q_rot = torch.empty_like(q) if q is not None else k_new.new_empty((0,))
    seqlens = torch.empty_like(cache_seqlens)
    ops.kvcache_append(k_new, v_new, k_cache, v_cache, cache_seqlens, k_scale=k_scale, v_scale=v_scale, k_tail=k_tail,
                       v_tail=v_tail, rotary_cos=rotary_cos, rotary_sin=rotary_sin,
                       rotary_interleaved=rotary_interleaved, q=q, q_rotated=q_rot if q is not None else None,
                       seqlens_out=seqlens, page_table=page_table)
    return q_rot, seqlens


def _quantize_kv_int8(k, v, block):
    return list(ops.quantize_kv_int8(k, v, block=block))


def _fp8_quantize(x, heads_kv, hadamard=False):
    return ops.fp8_quantize(x, heads_kv, hadamard=hadamard)


for _name, _fn in (("flash_attn", _flash_attn), ("flash_attn_lse", _flash_attn_lse),
                   ("flash_attn_varlen", _flash_attn_varlen), ("flash_attn_varlen_lse", _flash_attn_varlen_lse),
                   ("flash_attn_with_kvcache", _flash_attn_with_kvcache),
                   ("flash_attn_with_kvcache_lse", _flash_attn_with_kvcache_lse),
                   ("quantize_kv_int8", _quantize_kv_int8), ("kvcache_append", _kvcache_append),
                   ("fp8_quantize", _fp8_quantize)):
    _LIB.impl(_name, _fn, "CUDA")


@torch.library.register_fake("hopattn::flash_attn", lib=_LIB)
def _flash_attn_fake(q, k, v, softmax_scale, causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None,
                     q_descale=None, k_descale=None, v_descale=None):
    return _out_like(q)


@torch.library.register_fake("hopattn::flash_attn_lse", lib=_LIB)
def _flash_attn_lse_fake(q, k, v, softmax_scale, causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None,
                         q_descale=None, k_descale=None, v_descale=None):
    return _out_like(q), _lse_like(q)


@torch.library.register_fake("hopattn::flash_attn_varlen", lib=_LIB)
def _flash_attn_varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale,
                            causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return torch.empty_like(q)


@torch.library.register_fake("hopattn::flash_attn_varlen_lse", lib=_LIB)
def _flash_attn_varlen_lse_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                                softmax_scale, causal, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return torch.empty_like(q), _varlen_lse_like(q)


@torch.library.register_fake("hopattn::flash_attn_with_kvcache", lib=_LIB)
def _kvcache_fake(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                  num_splits, pack_gqa, page_table=None, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return torch.empty_like(q)


@torch.library.register_fake("hopattn::flash_attn_with_kvcache_lse", lib=_LIB)
def _kvcache_lse_fake(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, causal,
                      num_splits, pack_gqa, page_table=None, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    return torch.empty_like(q), _lse_like(q)


@torch.library.register_fake("hopattn::kvcache_append", lib=_LIB)
def _kvcache_append_fake(k_new, v_new, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, rotary_cos,
                         rotary_sin, rotary_interleaved, q, page_table=None):
    return (torch.empty_like(q) if q is not None else k_new.new_empty((0,))), torch.empty_like(cache_seqlens)


@torch.library.register_fake("hopattn::quantize_kv_int8", lib=_LIB)
def _quantize_fake(k, v, block):
    b, n, h, d = k.shape
    return [k.new_empty(k.shape, dtype=torch.int8), v.new_empty(v.shape, dtype=torch.int8),
            k.new_empty((b, n // block, h, d), dtype=torch.float32), k.new_empty((b, n, h), dtype=torch.float32)]


@torch.library.register_fake("hopattn::fp8_quantize", lib=_LIB)
def _fp8_quantize_fake(x, heads_kv, hadamard=False):
    return x.new_empty(x.shape, dtype=_E4M3), x.new_empty((x.shape[0], heads_kv), dtype=torch.float32)


def compiling() -> bool:
    return torch.compiler.is_compiling()
