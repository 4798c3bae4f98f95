"""The plain functions: FlashAttention-3's names and conventions, one C call each.

Every call is enqueued on the caller's current stream (torch's, for torch tensors) and returns
without waiting. Outputs are allocated with torch (its caching allocator, so the calls capture
in CUDA graphs) when the inputs are torch tensors; with other arrays (CuPy, JAX via
__cuda_array_interface__ or DLPack) pass `out=` (and `lse=`, `workspace=`). Argument errors raise
ValueError (NotSupportedError, a ValueError, for a valid call outside what this build compiled)
or TypeError with the library's message naming the argument; CUDA errors raise HopattnError.
"""
from __future__ import annotations

import ctypes

from . import _lib
from ._tensors import current_stream, describe, is_torch, _torch


def _need_torch(name: str, what: str):
    raise TypeError(f"{name}: not a torch tensor; pass {what} (hopattn allocates outputs with torch only)")


def _outputs(q, out, lse, return_lse):
    """out (like q) and, with return_lse, lse (batch, heads_q, seqlen_q) float32: the caller's, or
    new ones from torch's allocator on q's device."""
    torch_in = is_torch(q)
    if torch_in and not q.is_cuda:
        raise ValueError(f"q: is on {q.device}; a CUDA tensor is required")
    if out is None:
        if not torch_in:
            _need_torch("q", "out=")
        out = _torch().empty_like(q)
    if return_lse and lse is None:
        if not torch_in:
            _need_torch("q", "lse=")
        lse = _torch().empty((q.shape[0], q.shape[2], q.shape[1]), dtype=_torch().float32, device=q.device)
    return out, lse


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, return_lse=False, out=None, lse=None, stream=None):
    """O = softmax(scale · Q·Kᵀ + mask) · V.

    q (batch, seqlen_q, heads_q, hdim), k and v (batch, seqlen_k, heads_kv, hdim), bf16 or fp16,
    heads_q a multiple of heads_kv (GQA/MQA); hdim 64, 128 or 256. causal: bottom-right aligned
    (FlashAttention-2/3). softmax_scale: None = 1/sqrt(hdim). Returns out, or (out, lse) with
    return_lse: lse float32 (batch, heads_q, seqlen_q), natural log."""
    out, lse = _outputs(q, out, lse, return_lse)
    args = _lib.AttentionFwdArgs()
    args.struct_size = ctypes.sizeof(args)
    keep = []
    describe(q, "q", args.q, keep)
    describe(k, "k", args.k, keep)
    describe(v, "v", args.v, keep)
    describe(out, "out", args.o, keep)
    if lse is not None:
        describe(lse, "lse", args.lse, keep)
    args.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
    args.causal = 1 if causal else 0
    _lib.raise_for(_lib.lib.hopattn_attention_forward(ctypes.byref(args), current_stream(q, stream=stream)))
    return (out, lse) if return_lse else out


def _kvcache_args(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale,
                  v_scale, k_tail, v_tail, out, lse, keep):
    args = _lib.KvCacheArgs()
    args.struct_size = ctypes.sizeof(args)
    describe(q, "q", args.q, keep)
    describe(k_cache, "k_cache", args.k_cache, keep)
    describe(v_cache, "v_cache", args.v_cache, keep)
    describe(cache_seqlens, "cache_seqlens", args.cache_seqlens, keep)
    describe(out, "out", args.o, keep)
    if lse is not None:
        describe(lse, "lse", args.lse, keep)
    if k_scale is not None or v_scale is not None:
        if k_scale is None or v_scale is None:
            raise ValueError("k_scale, v_scale: give both (an int8 cache) or neither")
        describe(k_scale, "k_scale", args.k_scale, keep)
        describe(v_scale, "v_scale", args.v_scale, keep)
        blocks = args.k_scale.shape[1] if args.k_scale.rank == 4 else 0
        args.quant_block = args.k_cache.shape[1] // blocks if blocks > 0 else 0
    if k_tail is not None:
        describe(k_tail, "k_tail", args.k_tail, keep)
    if v_tail is not None:
        describe(v_tail, "v_tail", args.v_tail, keep)
    args.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
    args.causal = 1 if causal else 0
    args.num_splits = int(num_splits)
    args.pack_gqa = -1 if pack_gqa is None else (1 if pack_gqa else 0)
    return args


def flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=False, softmax_scale=None, num_splits=0,
                            pack_gqa=None, k_scale=None, v_scale=None, k_tail=None, v_tail=None, return_lse=False,
                            out=None, lse=None, workspace=None, stream=None):
    """Attention of new queries over a KV cache (decode, speculative decode, chunks).

    q (batch, seqlen_q, heads_q, hdim); k_cache, v_cache (batch, max_seqlen_k, heads_kv, hdim) in
    q's dtype, or int8 with k_scale (batch, max_seqlen_k / block, heads_kv, hdim) and v_scale
    (batch, max_seqlen_k, heads_kv) float32 from quantize_kv_int8; cache_seqlens int32 (batch,).
    k_tail, v_tail: an int8 cache's partial last blocks in q's dtype (batch, block, heads_kv, hdim).
    num_splits 0: the library's split-KV heuristic; pack_gqa None: its heuristic. The split-KV
    workspace comes from torch's caching allocator (or `workspace=`, bytes from
    kvcache_workspace_size). Returns out, or (out, lse)."""
    torch_in = is_torch(q)
    torch = _torch()
    out, lse = _outputs(q, out, lse, return_lse)
    keep = []
    args = _kvcache_args(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale,
                         v_scale, k_tail, v_tail, out, lse, keep)
    size = ctypes.c_size_t(0)
    _lib.raise_for(_lib.lib.hopattn_kvcache_workspace_size(ctypes.byref(args), ctypes.byref(size)))
    if size.value > 0:
        if workspace is None:
            if not torch_in:
                _need_torch("q", f"workspace= ({size.value} bytes)")
            workspace = torch.empty(size.value, dtype=torch.uint8, device=q.device)
        args.workspace, args.workspace_bytes = _buffer(workspace, "workspace")
    _lib.raise_for(_lib.lib.hopattn_kvcache_attention(ctypes.byref(args), current_stream(q, stream=stream)))
    return (out, lse) if return_lse else out


def _buffer(x, name):
    """(pointer, bytes) of a device buffer of any element type (a torch tensor, or an array with
    __cuda_array_interface__), for the workspace."""
    if is_torch(x):
        if x.device.type != "cuda":
            raise ValueError(f"{name}: is on {x.device}; a CUDA tensor is required")
        if not x.is_contiguous():
            raise ValueError(f"{name}: must be contiguous")
        return x.data_ptr(), x.numel() * x.element_size()
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{name}: {type(x).__name__} is neither a torch tensor nor has __cuda_array_interface__")
    n = 1
    for e in cai["shape"]:
        n *= e
    return cai["data"][0], n * int(cai["typestr"][2:])


def kvcache_device_check(stream=None) -> None:
    """Waits for the stream and raises ValueError if a kvcache call on it found a cache_seqlens
    entry outside [0, max_seqlen_k] (or, causal, shorter than seqlen_q); clears the record."""
    _lib.raise_for(_lib.lib.hopattn_kvcache_device_check(current_stream(stream=stream) if stream is not None else
                                                         (_torch().cuda.current_stream().cuda_stream if _torch() else 0)))


def quantize_kv_int8(k, v, block=128, out=None, stream=None):
    """Quantizes a bf16/fp16 cache (batch, len, heads_kv, hdim), len a multiple of `block` (64 or
    128), to int8 with float32 scales: returns (k_int8, v_int8, k_scale, v_scale), the layout
    flash_attn_with_kvcache takes. `out`: a tuple of the four outputs to write instead."""
    if out is None:
        if not is_torch(k):
            _need_torch("k", "out=(k_int8, v_int8, k_scale, v_scale)")
        torch = _torch()
        if not k.is_cuda:
            raise ValueError(f"k: is on {k.device}; a CUDA tensor is required")
        b, n, h, d = k.shape
        if block <= 0 or n % block:
            raise ValueError(f"k: seqlen {n} is not a multiple of block = {block}")
        out = (torch.empty(k.shape, dtype=torch.int8, device=k.device),
               torch.empty(v.shape, dtype=torch.int8, device=k.device),
               torch.empty((b, n // block, h, d), dtype=torch.float32, device=k.device),
               torch.empty((b, n, h), dtype=torch.float32, device=k.device))
    args = _lib.KvCacheQuantizeArgs()
    args.struct_size = ctypes.sizeof(args)
    keep = []
    describe(k, "k", args.k, keep)
    describe(v, "v", args.v, keep)
    for t, name, field in zip(out, ("k_int8", "v_int8", "k_scale", "v_scale"),
                              (args.k_int8, args.v_int8, args.k_scale, args.v_scale)):
        describe(t, name, field, keep)
    args.quant_block = int(block)
    _lib.raise_for(_lib.lib.hopattn_kvcache_quantize_int8(ctypes.byref(args), current_stream(k, stream=stream)))
    return tuple(out)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None, out_dtype=None, variant="auto", scale_a=1.0, scale_b=1.0,
         stream=None):
    """D = alpha·A·B + beta·C: a (M, K), b (K, N) bf16/fp16/e4m3, row- or column-major; D (M, N) in
    out_dtype (default: a's dtype; bf16 for e4m3). c: None, or (M, N) in D's dtype (c is out: in
    place)."""
    if not _lib.has_gemm():
        raise _lib.NotSupportedError("gemm: this build has no GEMM (HOPATTN_BUILD_GEMM=OFF)")
    if variant not in _lib.GEMM_VARIANTS:
        raise ValueError(f"variant: '{variant}' is not one of {', '.join(_lib.GEMM_VARIANTS)}")
    if out is None:
        if not is_torch(a):
            _need_torch("a", "out=")
        torch = _torch()
        if not a.is_cuda:
            raise ValueError(f"a: is on {a.device}; a CUDA tensor is required")
        dt = out_dtype or (torch.bfloat16 if a.dtype == getattr(torch, "float8_e4m3fn", None) else a.dtype)
        out = c if (c is not None and beta != 0.0 and c.dtype == dt) else torch.empty((a.shape[0], b.shape[1]),
                                                                                      dtype=dt, device=a.device)
    args = _lib.GemmArgs()
    keep = []
    describe(a, "a", args.a, keep)
    describe(b, "b", args.b, keep)
    describe(out, "d", args.d, keep)
    if c is not None and beta != 0.0:
        describe(c, "c", args.c, keep)
    args.alpha, args.beta, args.scale_a, args.scale_b = float(alpha), float(beta), float(scale_a), float(scale_b)
    args.variant = _lib.GEMM_VARIANTS[variant]
    _lib.raise_for(_lib.lib.hopattn_gemm(ctypes.byref(args), current_stream(a, stream=stream)))
    return out


def kvcache_workspace_size(q, k_cache, v_cache, cache_seqlens, causal=False, num_splits=0, pack_gqa=None,
                           k_scale=None, v_scale=None, k_tail=None, v_tail=None, out=None) -> int:
    """Bytes of workspace flash_attn_with_kvcache needs for these arguments (0: none)."""
    keep = []
    if out is None:  # the checks want a real output (it must not overlap the inputs)
        if not is_torch(q):
            _need_torch("q", "out=")
        out = _torch().empty_like(q)
    args = _kvcache_args(q, k_cache, v_cache, cache_seqlens, causal, None, num_splits, pack_gqa, k_scale, v_scale,
                         k_tail, v_tail, out, None, keep)
    size = ctypes.c_size_t(0)
    _lib.raise_for(_lib.lib.hopattn_kvcache_workspace_size(ctypes.byref(args), ctypes.byref(size)))
    return int(size.value)

