"""hopattn: fused attention for NVIDIA Hopper GPUs (H100/H200, sm_90a), from Python.

    import hopattn
    out = hopattn.flash_attn_func(q, k, v, causal=True)                  # (batch, seqlen, heads, hdim)
    out = hopattn.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                         causal=True)                    # packed (total, heads, hdim)
    out = hopattn.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens)
    k8, v8, ks, vs = hopattn.quantize_kv_int8(k_cache, v_cache)          # then k_scale=ks, v_scale=vs
    (qf, qd), (kf, kd), (vf, vd) = hopattn.fp8_quantize(q, heads_kv=k.shape[2]), hopattn.fp8_quantize(k), \
        hopattn.fp8_quantize(v)                                          # FP8: e4m3, (batch, heads_kv) descales
    out = hopattn.flash_attn_func(qf, kf, vf, q_descale=qd, k_descale=kd, v_descale=vd)  # bf16 O

FlashAttention-3's names and conventions (flash_attn_interface): bottom-right causal masks, LSE in
natural log, GQA/MQA by heads_q a multiple of heads_kv. Torch tensors work directly (outputs from
torch's allocator, the current stream); other CUDA arrays through __cuda_array_interface__ or DLPack
with out= given. With torch importable, the calls are also torch custom ops (torch.ops.hopattn.*):
torch.compile(fullgraph=True) traces them, CUDA graphs capture them. hopattn.integrations.
transformers.register() adds attn_implementation="hopattn" to Hugging Face transformers.
"""
from __future__ import annotations

from . import _lib
from ._lib import HopattnError, NotSupportedError, abi_version
from . import ops as _ops
from .ops import kvcache_append, kvcache_device_check, kvcache_workspace_size, gemm, layout, LayoutReport
from .ops import attention_device_check, varlen_workspace_size

__version__ = _lib.__version__

try:  # torch is optional: the plain functions work without it
    # The ops are reached through this module-level name while Dynamo traces (not through
    # sys.modules: Dynamo wraps the whole dict, and an import during that wrapping broke a trace
    # with "dictionary changed size during iteration").
    import torch as _torch_module
    from . import torch_ops as _torch_ops
except ImportError:  # pragma: no cover - exercised by the no-torch test
    _torch_module = _torch_ops = None


def _compiling() -> bool:
    return _torch_ops is not None and _torch_ops.compiling()


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, return_lse=False, out=None, lse=None, stream=None, *,
                    window_size=_ops._NO_WINDOW, softcap=0.0, sinks=None, q_descale=None, k_descale=None,
                    v_descale=None):
    """O = softmax(scale · Q·Kᵀ + mask) · V, with FlashAttention-3's window_size and softcap and
    gpt-oss's sinks (keyword-only), and FlashAttention-3's FP8 inputs (e4m3 q, k, v with optional
    (batch, heads_kv) float32 q_descale, k_descale, v_descale; bf16 O); see hopattn.ops.flash_attn_func."""
    if _compiling():
        ops = _torch_module.ops.hopattn
        left, right = (-1, -1) if window_size is _ops._NO_WINDOW else _ops._window(window_size)
        op = ops.flash_attn_lse if return_lse else ops.flash_attn
        return op(q, k, v, softmax_scale, bool(causal), left, right, _ops._softcap(softcap), sinks, q_descale,
                  k_descale, v_descale)
    return _ops.flash_attn_func(q, k, v, softmax_scale, causal, return_lse, out, lse, stream, window_size=window_size,
                                softcap=softcap, sinks=sinks, q_descale=q_descale, k_descale=k_descale,
                                v_descale=v_descale)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                           seqused_k=None, softmax_scale=None, causal=False, *, window_size=_ops._NO_WINDOW,
                           softcap=0.0, sinks=None, return_lse=False, out=None, lse=None, workspace=None, stream=None):
    """Attention over a variable-length batch packed along the token dimension (q (total_q, heads_q,
    hdim), cu_seqlens_q / cu_seqlens_k int32 (batch + 1,)), FlashAttention-3's positional order; see
    hopattn.ops.flash_attn_varlen_func. While torch.compile traces, the call is the torch op
    (its workspace from torch's allocator inside it; `workspace` and `stream` are not used, `out`
    and `lse` get the op's results copied in)."""
    if _compiling():
        if seqused_q is not None:
            raise NotSupportedError("seqused_q: hopattn's variable-length forward has no seqused_q (pass None); "
                                    "give each sequence its query count through cu_seqlens_q")
        ops = _torch_module.ops.hopattn
        left, right = (-1, -1) if window_size is _ops._NO_WINDOW else _ops._window(window_size)
        args = (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, bool(causal),
                left, right, _ops._softcap(softcap), sinks)
        if not return_lse:
            o = ops.flash_attn_varlen(*args)
            return o if out is None else out.copy_(o)
        o, l = ops.flash_attn_varlen_lse(*args)
        return (o if out is None else out.copy_(o)), (l if lse is None else lse.copy_(l))
    return _ops.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q,
                                       seqused_k, softmax_scale, causal, window_size=window_size, softcap=softcap,
                                       sinks=sinks, return_lse=return_lse, out=out, lse=lse, workspace=workspace,
                                       stream=stream)


def flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=False, softmax_scale=None, num_splits=0,
                            pack_gqa=None, k_scale=None, v_scale=None, k_tail=None, v_tail=None, return_lse=False,
                            out=None, lse=None, workspace=None, stream=None, k=None, v=None, rotary_cos=None,
                            rotary_sin=None, rotary_interleaved=True, *, page_table=None, window_size=_ops._NO_WINDOW,
                            softcap=0.0, sinks=None):
    """Attention over a KV cache (bf16/fp16 or int8; contiguous, or paged through page_table),
    optionally appending k, v first (with rotary), with FlashAttention-3's window_size and softcap
    and gpt-oss's sinks (keyword-only; 16-bit caches); see hopattn.ops.flash_attn_with_kvcache."""
    if _compiling():
        left, right = (-1, -1) if window_size is _ops._NO_WINDOW else _ops._window(window_size)
        ops = _torch_module.ops.hopattn
        if k is not None or v is not None or rotary_cos is not None or rotary_sin is not None:
            if k is None or v is None:  # as in eager (hopattn.ops._append_for_attention)
                raise ValueError("k, v: give both to append (rotary_cos / rotary_sin apply only with them)")
            q_rot, cache_seqlens = ops.kvcache_append(k, v, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail,
                                                      v_tail, rotary_cos, rotary_sin, bool(rotary_interleaved),
                                                      q if rotary_cos is not None else None, page_table)
            q = q_rot if rotary_cos is not None else q
        op = ops.flash_attn_with_kvcache_lse if return_lse else ops.flash_attn_with_kvcache
        return op(q, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, softmax_scale, bool(causal),
                  int(num_splits), pack_gqa, page_table, left, right, _ops._softcap(softcap), sinks)
    return _ops.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=causal, softmax_scale=softmax_scale,
                                        num_splits=num_splits, pack_gqa=pack_gqa, k_scale=k_scale, v_scale=v_scale,
                                        k_tail=k_tail, v_tail=v_tail, return_lse=return_lse, out=out, lse=lse,
                                        workspace=workspace, stream=stream, k=k, v=v, rotary_cos=rotary_cos,
                                        rotary_sin=rotary_sin, rotary_interleaved=rotary_interleaved,
                                        page_table=page_table, window_size=window_size, softcap=softcap, sinks=sinks)


def quantize_kv_int8(k, v, block=128, out=None, stream=None):
    """int8 cache and float32 scales from a bf16/fp16 cache; see hopattn.ops.quantize_kv_int8."""
    if _compiling():
        return tuple(_torch_module.ops.hopattn.quantize_kv_int8(k, v, int(block)))
    return _ops.quantize_kv_int8(k, v, block=block, out=out, stream=stream)


def fp8_quantize(x, heads_kv=None, *, hadamard=False, out=None, descale=None, stream=None):
    """e4m3 x and its (batch, heads_kv) float32 descale from a bf16/fp16 (batch, seqlen, heads, hdim)
    tensor, per (batch, kv-head): flash_attn_func's FP8 inputs; hadamard=True rotates each row
    first (for q and k together, never v); see hopattn.ops.fp8_quantize."""
    if not isinstance(hadamard, bool):
        raise TypeError(f"hadamard: expected True or False, got {type(hadamard).__name__}")
    if _compiling():
        o, d = _torch_module.ops.hopattn.fp8_quantize(x, x.shape[2] if heads_kv is None else int(heads_kv), hadamard)
        return (o if out is None else out.copy_(o)), (d if descale is None else descale.copy_(d))
    return _ops.fp8_quantize(x, heads_kv, hadamard=hadamard, out=out, descale=descale, stream=stream)


__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache", "kvcache_append", "quantize_kv_int8",
           "fp8_quantize",
           "kvcache_workspace_size", "varlen_workspace_size", "attention_device_check",
           "kvcache_device_check", "gemm", "layout", "LayoutReport", "abi_version", "HopattnError",
           "NotSupportedError", "__version__"]
