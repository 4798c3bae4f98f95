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
import operator
import struct
from typing import NamedTuple

from . import _lib
from ._tensors import current_stream, describe, is_torch, _torch


def _need_torch(name: str, what: str):
    raise TypeError(f"{name}: not a torch tensor; pass {what} (hopattn allocates outputs with torch only)")


def _torch_like(x, name: str, what: str):
    """torch, to allocate outputs beside x: x must be a CUDA torch tensor (else the caller passes
    `what` itself)."""
    if not is_torch(x):
        _need_torch(name, what)
    if not x.is_cuda:
        raise ValueError(f"{name}: is on {x.device}; a CUDA tensor is required")
    return _torch()


_TENSOR = "Qii4q4q"  # hopattn_tensor_t: data, dtype, rank, shape[4], stride[4] (80 bytes)
# hopattn_attention_fwd_args_t (0.5: 1016 bytes, no padding): 0.2's fields up to `causal` (_FWD, 416
# bytes), then 0.3's window, window_left, window_right, softcap, sinks (_FWD_OPTIONS, to _FWD_SIZE =
# 512), then 0.4's cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k (_FWD_VARLEN)
# and workspace, workspace_bytes (_FWD_WORKSPACE, to _FWD_VARLEN_SIZE = 776), then 0.5's q_descale,
# k_descale, v_descale (_FWD_DESCALES, to _FWD_FP8_SIZE = 1016). A padded 16-bit call packs the 0.3
# struct (struct_size 512: the library reads the later fields as zero, a padded batch without
# descales, and a 0.3 library takes it too); a call without options packs _FWD alone into a zeroed
# 512-byte buffer: the zero tail is 0.2's behaviour, and the no-option call packs no more than
# before 0.3. A variable-length call packs the 0.4 struct (776 bytes). An e4m3 call (or one with
# descales) packs the whole 0.5 struct, its 0.4 fields zero (a padded batch): struct_size 1016 is
# what tells the library to read the descales.
_FWD = struct.Struct("<II" + _TENSOR * 5 + "fi")
_FWD_OPTIONS = struct.Struct("<iiif" + _TENSOR)
_FWD_SIZE = _FWD.size + _FWD_OPTIONS.size
_FWD_VARLEN = struct.Struct("<" + _TENSOR * 3 + "ii")
_FWD_WORKSPACE = struct.Struct("<QQ")
_FWD_VARLEN_SIZE = _FWD_SIZE + _FWD_VARLEN.size + _FWD_WORKSPACE.size
_FWD_DESCALES = struct.Struct("<" + _TENSOR * 3)
_FWD_FP8_SIZE = _FWD_VARLEN_SIZE + _FWD_DESCALES.size
# hopattn_kvcache_args_t (1024 bytes): the fields up to page_table (_KV, 928 bytes), then the
# options window, window_left, window_right, softcap, sinks (_KV_OPTIONS, the _FWD_OPTIONS layout),
# packed only when a call has one (the buffer is zeroed: none).
_KV = struct.Struct("<II" + _TENSOR * 8 + "ifiii4xQQ" + _TENSOR * 3)
_KV_OPTIONS = _FWD_OPTIONS
_KV_SIZE = _KV.size + _KV_OPTIONS.size
_APPEND = struct.Struct("<II" + _TENSOR * 9 + "ii" + _TENSOR * 6)    # hopattn_kvcache_append_args_t
_NONE = (0,) * 11
_NO_WINDOW = (-1, -1)  # window_size's default; `is` tells the default from a caller's (-1, -1)
_INT32_MAX = 2 ** 31 - 1
_TORCH_DT = {}
_raw_stream = None  # torch._C._cuda_getCurrentRawStream, bound by bind_torch()
_workspace_bytes = {}  # call signature -> the plan's workspace bytes, asked once per signature
_varlen_workspace_bytes = {}  # (total_q, heads_q, batch + 1, device) -> a varlen call's workspace bytes


def _torch_dt():
    if not _TORCH_DT:
        from ._tensors import _torch_dtype_map
        _TORCH_DT.update(_torch_dtype_map())
    return _TORCH_DT


_Tensor = None  # torch.Tensor, bound by bind_torch() when hopattn's torch ops load


def bind_torch(torch):
    """Binds torch's Tensor class, dtypes and raw current-stream query for the fast paths (called
    by hopattn.torch_ops on import; without it the calls take the general path)."""
    global _Tensor, _raw_stream
    _Tensor = torch.Tensor
    _torch_dt()
    _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
        (lambda d: torch.cuda.current_stream(d).cuda_stream)


def _tv(x, name, keep):
    """The 11 values of a hopattn_tensor_t for x (torch fast path; any other array through
    _tensors.describe)."""
    if x.__class__ is _Tensor or is_torch(x):
        dt = _TORCH_DT.get(x.dtype) if _TORCH_DT else _torch_dt().get(x.dtype)
        if dt is None or not x.is_cuda:
            if not x.is_cuda:
                raise ValueError(f"{name}: is on {x.device}; a CUDA tensor is required")
            raise TypeError(f"{name}: dtype {x.dtype} is not one hopattn takes")
        sh = x.shape
        st = x.stride()
        r = len(sh)
        if r == 4:
            return (x.data_ptr(), dt, 4, sh[0], sh[1], sh[2], sh[3], st[0], st[1], st[2], st[3])
        if r > 4:
            raise ValueError(f"{name}: rank {r} is more than 4")
        pad = (0,) * (4 - r)
        return (x.data_ptr(), dt, r) + tuple(sh) + pad + tuple(st) + pad
    t = _lib.Tensor()
    describe(x, name, t, keep)
    return (t.data or 0, t.dtype, t.rank) + tuple(t.shape) + tuple(t.stride)


def _stream_of(x, stream):
    """The call's stream: `stream` if given, else torch's current stream on x's device (torch
    tensors), else the legacy default stream."""
    if stream is not None:
        return current_stream(stream=stream)
    if x.__class__ is _Tensor or is_torch(x):
        if _raw_stream is None:
            bind_torch(_torch())
        return _raw_stream(x.get_device())
    return 0


def _outputs(q, out, lse, return_lse, varlen=False):
    """out (like q) and, with return_lse, lse (batch, heads_q, seqlen_q) float32 ((heads_q, total_q)
    with varlen): the caller's, or new ones from torch's allocator on q's device."""
    torch_in = q.__class__ is _Tensor or is_torch(q)
    if torch_in and not q.is_cuda:
        raise ValueError(f"q: is on {q.device}; a CUDA tensor is required")
    if out is None:
        if not torch_in:
            _need_torch("q", "out=")
        torch = _torch()
        # e4m3 inputs write a bf16 O (FlashAttention-3's convention, hopattn.h "Since 0.5")
        out = torch.empty_like(q, dtype=torch.bfloat16) if q.dtype == getattr(torch, "float8_e4m3fn", None) else \
            torch.empty_like(q)
    if return_lse and lse is None:
        if not torch_in:
            _need_torch("q", "lse=")
        shape = (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])
        lse = _torch().empty(shape, dtype=_torch().float32, device=q.device)
    return out, lse


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, return_lse=False, out=None, lse=None, stream=None, *,
                    window_size=_NO_WINDOW, softcap=0.0, sinks=None, q_descale=None, k_descale=None, v_descale=None):
    """O = softmax(scale · Q·Kᵀ + mask) · V.

    q (batch, seqlen_q, heads_q, hdim), k and v (batch, seqlen_k, heads_kv, hdim), bf16 or fp16,
    heads_q a multiple of heads_kv (GQA/MQA); hdim 64, 128 or 256. causal: bottom-right aligned
    (FlashAttention-2/3). softmax_scale: None = 1/sqrt(hdim). Returns out, or (out, lse) with
    return_lse: lse float32 (batch, heads_q, seqlen_q), natural log.

    Keyword-only, FlashAttention-3's names and meanings: window_size (left, right): query i (at key
    position p = i + seqlen_k - seqlen_q) sees keys p - left ... p + right, -1 (or None) leaving
    that side unbounded; (-1, -1) is no window; causal makes right 0, as in FlashAttention.
    softcap > 0: each scaled score s becomes softcap · tanh(s / softcap); 0 is off. sinks: a
    float32 (heads_q,) tensor on q's device, a logit per q-head (not scaled) added to each row's
    softmax denominator (gpt-oss): O = Σ e^s_j v_j / (e^sink + Σ e^s_j), LSE = log(e^sink + Σ e^s_j);
    a row that sees no key gets O = 0 and LSE = sink (-inf without sinks).

    FP8 (FlashAttention-3's convention, since 0.5): q, k, v torch.float8_e4m3fn (e4m3, the head
    dims this build compiled for FP8: HOPATTN_FP8_HEAD_DIMS, 64, 128 and 256 by default), out bf16 (allocated so without `out=`), and
    q_descale, k_descale, v_descale: float32 (batch, heads_kv) tensors on q's device, all three or
    none (none: every descale 1); q-head h uses the descales of its kv-head. The scores are
    softmax_scale · q_descale · k_descale · (Q·Kᵀ) and O = v_descale · softmax(scores)·V, with the
    softmax weights rounded to e4m3 for the second product. fp8_quantize makes such inputs from
    bf16/fp16 tensors. No window, softcap or sinks with e4m3 inputs (NotSupportedError); descales
    with 16-bit inputs raise ValueError."""
    if window_size is _NO_WINDOW:
        left = right = -1
    else:
        left, right = _window(window_size)
    out, lse = _outputs(q, out, lse, return_lse)
    _forward(q, k, v, softmax_scale, causal, out, lse, _stream_of(q, stream), left, right, softcap, sinks, q_descale,
             k_descale, v_descale)
    return (out, lse) if return_lse else out


def _window(window_size):
    """FlashAttention's window_size (left, right) as two ints, -1 for an unbounded side (-1 or
    None given); TypeError / ValueError naming window_size otherwise."""
    try:
        pair = tuple(window_size)
    except TypeError:
        pair = ()
    if len(pair) != 2:
        raise TypeError(f"window_size: a pair (left, right) is required, not {window_size!r}")
    return tuple(_window_side(x, f"window_size[{i}]") for i, x in enumerate(pair))


def _host_int(x, name, lowest, what, hint=""):
    """x as an int in [lowest, 2^31 - 1] (bool refused), else TypeError / ValueError naming it:
    `hint` follows "an int is required", `what` says what the range is."""
    if isinstance(x, bool):
        raise TypeError(f"{name}: an int is required{hint}, not {x!r}")
    try:
        n = operator.index(x)
    except TypeError:
        raise TypeError(f"{name}: an int is required{hint}, not {type(x).__name__} {x!r}") from None
    if n < lowest or n > _INT32_MAX:
        raise ValueError(f"{name}: {n}; {what}")
    return n


def _window_side(x, name):
    """One side of the window as an int in [-1, 2^31 - 1] (None: -1), else an error naming it."""
    if x is None:
        return -1
    return _host_int(x, name, -1, f"each side is -1 (unbounded) or a number of keys from 0 to {_INT32_MAX}",
                     " (-1: unbounded)")


def _softcap(softcap):
    """softcap as a float (its value is the library's to check), else TypeError naming it."""
    if softcap.__class__ is float:
        return softcap
    if isinstance(softcap, (str, bytes)) or not hasattr(softcap, "__float__"):
        raise TypeError(f"softcap: a float is required (0: off), not {type(softcap).__name__} {softcap!r}")
    return float(softcap)


def _options(q, causal, left, right, softcap, sinks, keep):
    """The values of the 0.3 fields (window, window_left, window_right, softcap, sinks) for the
    options given: (-1, -1) is no window (window = 0); causal makes the right side 0."""
    left = _window_side(left, "window_left")
    right = _window_side(right, "window_right")
    if left == -1 and right == -1:
        window = left = right = 0
    else:
        window = 1
        if causal:
            right = 0
    softcap = _softcap(softcap)
    if sinks is None:
        sv = _NONE
    else:
        sv = _tv(sinks, "sinks", keep)
        if (sinks.__class__ is _Tensor or is_torch(sinks)) and (q.__class__ is _Tensor or is_torch(q)) and \
                sinks.device != q.device:
            raise ValueError(f"sinks: is on {sinks.device}, q on {q.device}; sinks must be on q's device")
    return (window, left, right, softcap) + sv


def _forward(q, k, v, softmax_scale, causal, out, lse, stream, window_left=-1, window_right=-1, softcap=0.0,
             sinks=None, q_descale=None, k_descale=None, v_descale=None):
    """One hopattn_attention_forward call with the outputs given (the torch ops call this)."""
    keep = []
    qv = _tv(q, "q", keep)
    fp8 = qv[1] == _lib.E4M3 or q_descale is not None or k_descale is not None or v_descale is not None
    size = _FWD_FP8_SIZE if fp8 else _FWD_SIZE
    buf = ctypes.create_string_buffer(size)
    _FWD.pack_into(buf, 0, size, 0, *qv, *_tv(k, "k", keep), *_tv(v, "v", keep),
                   *_tv(out, "o", keep), *(_tv(lse, "lse", keep) if lse is not None else _NONE),
                   0.0 if softmax_scale is None else float(softmax_scale), 1 if causal else 0)
    if sinks is not None or window_left != -1 or window_right != -1 or softcap:
        _FWD_OPTIONS.pack_into(buf, _FWD.size, *_options(q, causal, window_left, window_right, softcap, sinks, keep))
    if fp8:
        _lib.require_fp8("flash_attn_func (e4m3 q or q/k/v_descale)")
        _FWD_DESCALES.pack_into(buf, _FWD_VARLEN_SIZE, *_descale(q_descale, "q_descale", q, keep),
                                *_descale(k_descale, "k_descale", q, keep), *_descale(v_descale, "v_descale", q, keep))
    _lib.raise_for(_lib.lib.hopattn_attention_forward(buf, stream))


def _descale(x, name, q, keep):
    """The descriptor values of one descale (None: all zero, unset); a torch descale must be on q's
    device (its dtype, shape and the all-three-or-none rule are the library's to check)."""
    if x is None:
        return _NONE
    values = _tv(x, name, keep)
    if (x.__class__ is _Tensor or is_torch(x)) and (q.__class__ is _Tensor or is_torch(q)) and x.device != q.device:
        raise ValueError(f"{name}: is on {x.device}, q on {q.device}; {name} must be on q's device")
    return values


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                           seqused_k=None, softmax_scale=None, causal=False, *, window_size=_NO_WINDOW, softcap=0.0,
                           sinks=None, return_lse=False, out=None, lse=None, workspace=None, stream=None):
    """Attention over a variable-length batch packed along the token dimension (FlashAttention-3's
    flash_attn_varlen_func; its positional order up to `causal`).

    q (total_q, heads_q, hdim), k and v (total_k, heads_kv, hdim), bf16 or fp16, heads_q a multiple
    of heads_kv; cu_seqlens_q, cu_seqlens_k int32 (batch + 1,) on q's device: sequence b's queries
    are the rows cu_seqlens_q[b] ... cu_seqlens_q[b + 1] - 1 of q, its keys start at row
    cu_seqlens_k[b] of k and v and number cu_seqlens_k[b + 1] - cu_seqlens_k[b], or seqused_k[b]
    (int32 (batch,), optional; at most that many). max_seqlen_q, max_seqlen_k: ints >= every
    sequence's query / key count (host values: no device read). seqused_q: FlashAttention-3's
    argument, not supported (anything but None raises NotSupportedError).

    Each sequence is its own attention problem: causal and window_size are bottom-right aligned per
    sequence (query i of a sequence with lq queries and lk keys sees key j iff j <= i + lk - lq),
    GQA, softcap and sinks as in flash_attn_func (keyword-only, as there). A row that sees no key
    gets O = 0 and LSE = -inf (or its sink). Rows of out and lse outside every sequence are not
    written. Returns out (like q), or (out, lse) with return_lse: lse float32 (heads_q, total_q),
    natural log (FlashAttention-3's layout).

    The lengths live on the device, so the GPU checks them: a sequence whose offsets decrease or
    leave the tensors, or longer than max_seqlen_q / max_seqlen_k (or seqused_k past its
    cu_seqlens_k range), gets NaN rows (none where its query range itself is invalid) and is
    recorded: attention_device_check() raises ValueError naming it.

    The call builds a tile list in a device workspace of varlen_workspace_size() bytes (depending
    only on total_q, batch and heads_q): `workspace=` (a contiguous device buffer, 16-byte aligned,
    not shared with a call in flight on another stream), else a new buffer from torch's caching
    allocator on every call (the size is asked once per (total_q, heads_q, batch) and remembered).
    That buffer is stream-ordered on torch's current stream: with `stream=` naming another stream,
    pass `workspace=` (and `out=`, `lse=`) yourself."""
    if seqused_q is not None:
        raise _lib.NotSupportedError("seqused_q: hopattn's variable-length forward has no seqused_q (pass None); "
                                     "give each sequence its query count through cu_seqlens_q")
    _lib.require_varlen("flash_attn_varlen_func")
    if window_size is _NO_WINDOW:
        left = right = -1
    else:
        left, right = _window(window_size)
    if (q.__class__ is _Tensor or is_torch(q)) and q.dim() != 3:
        raise ValueError(f"q: rank {q.dim()}; flash_attn_varlen_func takes packed q (total_q, heads_q, hdim)")
    out, lse = _outputs(q, out, lse, return_lse, varlen=True)
    _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, causal, out,
            lse, workspace, _stream_of(q, stream), left, right, softcap, sinks)
    return (out, lse) if return_lse else out


def _seqlen(x, name):
    """A host length (max_seqlen_q / max_seqlen_k) as an int that fits the struct's int32 (its value
    is the library's to check), else TypeError / ValueError naming it."""
    return _host_int(x, name, 0, f"a length from 0 to {_INT32_MAX} is required")


def _pack_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, causal,
                 out, lse, window_left, window_right, softcap, sinks, keep):
    """The 776-byte hopattn_attention_fwd_args_t of a variable-length call, workspace fields zero
    (_FWD_WORKSPACE packs them at _FWD_VARLEN_SIZE - 16)."""
    max_q = _seqlen(max_seqlen_q, "max_seqlen_q")
    max_k = _seqlen(max_seqlen_k, "max_seqlen_k")
    if q.__class__ is _Tensor or is_torch(q):
        for x, name in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k"), (seqused_k, "seqused_k")):
            if x is not None and (x.__class__ is _Tensor or is_torch(x)) and x.is_cuda and x.device != q.device:
                raise ValueError(f"{name}: is on {x.device}, q on {q.device}; {name} must be on q's device")
    buf = ctypes.create_string_buffer(_FWD_VARLEN_SIZE)
    _FWD.pack_into(buf, 0, _FWD_VARLEN_SIZE, 0, *_tv(q, "q", keep), *_tv(k, "k", keep), *_tv(v, "v", keep),
                   *_tv(out, "o", keep), *(_tv(lse, "lse", keep) if lse is not None else _NONE),
                   0.0 if softmax_scale is None else float(softmax_scale), 1 if causal else 0)
    _FWD_OPTIONS.pack_into(buf, _FWD.size, *_options(q, causal, window_left, window_right, softcap, sinks, keep))
    _FWD_VARLEN.pack_into(buf, _FWD_SIZE, *_tv(cu_seqlens_q, "cu_seqlens_q", keep),
                          *_tv(cu_seqlens_k, "cu_seqlens_k", keep),
                          *(_tv(seqused_k, "seqused_k", keep) if seqused_k is not None else _NONE), max_q, max_k)
    return buf


def _varlen_size(buf):
    """hopattn_attention_forward_workspace_size for the packed arguments."""
    n = ctypes.c_size_t(0)
    _lib.raise_for(_lib.lib.hopattn_attention_forward_workspace_size(buf, ctypes.byref(n)))
    return int(n.value)


def _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale, causal, out,
            lse, workspace, stream, window_left=-1, window_right=-1, softcap=0.0, sinks=None):
    """One variable-length hopattn_attention_forward call with the outputs given (the torch ops call
    this); the workspace from torch's allocator, a new buffer each call, unless `workspace` is given."""
    _lib.require_varlen("flash_attn_varlen_func")
    keep = []
    buf = _pack_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, softmax_scale,
                       causal, out, lse, window_left, window_right, softcap, sinks, keep)
    if workspace is not None:
        ws_ptr, ws_bytes = _buffer(workspace, "workspace")
    elif q.__class__ is _Tensor or is_torch(q):
        # The size depends on total_q, heads_q and batch only (hopattn.h): asked once per triple (and
        # device), then a new buffer from torch's allocator, stream-ordered like the outputs (a
        # buffer kept and shared between calls would race with a call in flight on another stream).
        key = (q.shape[0], q.shape[1], _tv(cu_seqlens_q, "cu_seqlens_q", keep)[3], q.get_device())
        ws_bytes = _varlen_workspace_bytes.get(key)
        if ws_bytes is None:
            ws_bytes = _varlen_size(buf)
            if len(_varlen_workspace_bytes) > 1024:
                _varlen_workspace_bytes.clear()
            _varlen_workspace_bytes[key] = ws_bytes
        ws_ptr = 0
        if ws_bytes > 0:
            torch = _torch()
            workspace = torch.empty(ws_bytes, dtype=torch.uint8, device=q.device)
            ws_ptr = workspace.data_ptr()
    else:
        ws_bytes = _varlen_size(buf)
        if ws_bytes > 0:
            _need_torch("q", f"workspace= ({ws_bytes} bytes, varlen_workspace_size)")
        ws_ptr = 0
    _FWD_WORKSPACE.pack_into(buf, _FWD_VARLEN_SIZE - _FWD_WORKSPACE.size, ws_ptr, ws_bytes)
    _lib.raise_for(_lib.lib.hopattn_attention_forward(buf, stream))


def varlen_workspace_size(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, seqused_k=None,
                          out=None) -> int:
    """Bytes of device workspace flash_attn_varlen_func needs for these arguments (0 for an empty
    batch); it depends only on total_q, batch and heads_q, so one buffer serves every call of that
    shape whatever the lengths (CUDA graphs replayed with new lengths)."""
    _lib.require_varlen("varlen_workspace_size")
    keep = []
    if out is None:  # the checks want a real output (it must not overlap the inputs)
        if not is_torch(q):
            _need_torch("q", "out=")
        out = _torch().empty_like(q)
    return _varlen_size(_pack_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, None,
                                     False, out, None, -1, -1, 0.0, None, keep))


def attention_device_check(stream=None) -> None:
    """Waits for the stream and raises ValueError naming the first sequence a flash_attn_varlen_func
    call found bad (cu_seqlens_q, cu_seqlens_k or seqused_k; its rows were not computed), and clears
    the record. The record is per device and shared with kvcache_device_check."""
    _lib.require_varlen("attention_device_check")
    handle = current_stream(stream=stream) if stream is not None else \
        (_torch().cuda.current_stream().cuda_stream if _torch() else 0)
    _lib.raise_for(_lib.lib.hopattn_attention_device_check(handle))


def _pack_kvcache(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale, v_scale,
                  k_tail, v_tail, out, lse, page_table, window_left, window_right, softcap, sinks, workspace_ptr,
                  workspace_bytes, keep):
    kv = _tv(k_cache, "k_cache", keep)
    quant_block = 0
    if k_scale is not None or v_scale is not None:
        if k_scale is None or v_scale is None:
            raise ValueError("k_scale, v_scale: give both (an int8 cache) or neither")
        ks = _tv(k_scale, "k_scale", keep)
        vs = _tv(v_scale, "v_scale", keep)
        quant_block = _quant_block(kv, ks, _tv(k_tail, "k_tail", keep) if k_tail is not None else None)
    else:
        ks = vs = _NONE
    buf = ctypes.create_string_buffer(_KV_SIZE)
    _KV.pack_into(buf, 0, _KV_SIZE, 0, *_tv(q, "q", keep), *kv, *_tv(v_cache, "v_cache", keep),
                  *_tv(cache_seqlens, "cache_seqlens", keep), *_tv(out, "o", keep),
                  *(_tv(lse, "lse", keep) if lse is not None else _NONE), *ks, *vs,
                  quant_block, 0.0 if softmax_scale is None else float(softmax_scale), 1 if causal else 0,
                  int(num_splits), -1 if pack_gqa is None else (1 if pack_gqa else 0), workspace_ptr, workspace_bytes,
                  *(_tv(k_tail, "k_tail", keep) if k_tail is not None else _NONE),
                  *(_tv(v_tail, "v_tail", keep) if v_tail is not None else _NONE),
                  *(_tv(page_table, "page_table", keep) if page_table is not None else _NONE))
    if sinks is not None or window_left != -1 or window_right != -1 or softcap:
        _KV_OPTIONS.pack_into(buf, _KV.size, *_options(q, causal, window_left, window_right, softcap, sinks, keep))
    return buf


def _quant_block(cache_values, k_scale_values, k_tail_values=None):
    """Tokens per K scale block, from the descriptors' values (_tv): the tails' rows (batch,
    quant_block, heads_kv, hdim) when they are given, else an int8 cache (batch, max_seqlen_k,
    heads_kv, hdim) over its k_scale's blocks (batch, blocks, heads_kv, hdim); 0 for a k_scale of
    another rank or no blocks (the library then names the argument). A pool of pages smaller than
    the block (k_scale one row per page) needs the tails to say the block."""
    if k_tail_values is not None and k_tail_values[2] == 4:
        return k_tail_values[4]
    blocks = k_scale_values[4] if k_scale_values[2] == 4 else 0
    return cache_values[4] // blocks if blocks > 0 else 0


def _strides(t):
    """A torch tensor's strides (part of the workspace cache's key), None for other arrays."""
    return tuple(t.stride()) if is_torch(t) else None


def _workspace_size(buf, key):
    """The plan's workspace bytes for the packed arguments; remembered under `key` (a call
    signature) when one is given."""
    n = ctypes.c_size_t(0)
    _lib.raise_for(_lib.lib.hopattn_kvcache_workspace_size(buf, ctypes.byref(n)))
    if key is not None:
        if len(_workspace_bytes) > 1024:
            _workspace_bytes.clear()
        _workspace_bytes[key] = int(n.value)
    return int(n.value)


def flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=False, softmax_scale=None, num_splits=0,
                            pack_gqa=None, k_scale=None, v_scale=None, k_tail=None, v_tail=None, return_lse=False,
                            out=None, lse=None, workspace=None, stream=None, k=None, v=None, rotary_cos=None,
                            rotary_sin=None, rotary_interleaved=True, *, page_table=None, window_size=_NO_WINDOW,
                            softcap=0.0, sinks=None):
    """Attention of new queries over a KV cache (decode, speculative decode, chunks).

    q (batch, seqlen_q, heads_q, hdim); k_cache, v_cache (batch, max_seqlen_k, heads_kv, hdim) in
    q's dtype, or int8 with k_scale (batch, max_seqlen_k / block, heads_kv, hdim) and v_scale
    (batch, max_seqlen_k, heads_kv) float32 from quantize_kv_int8; cache_seqlens int32 (batch,).
    k_tail, v_tail: an int8 cache's partial last blocks in q's dtype (batch, block, heads_kv, hdim).
    num_splits 0: the library's split-KV heuristic; pack_gqa None: its heuristic. The split-KV
    workspace comes from torch's caching allocator (or `workspace=`, bytes from
    kvcache_workspace_size). Returns out, or (out, lse).

    k, v (batch, seqlen_new, heads_kv, hdim): rows appended to the cache at cache_seqlens first
    (kvcache_append), the attention then covering cache_seqlens + seqlen_new keys (cache_seqlens
    itself is not changed: advance it yourself, or call kvcache_append with seqlens_out).
    rotary_cos, rotary_sin (with k): the new K rows and q rotated at their positions.
    page_table (batch, max_pages) int32: a paged cache, k_cache and v_cache then pools
    (num_pages, page_size, heads_kv, hdim) (FlashAttention-3's layout; 16-bit caches with pages
    of 16 to 256 tokens, a power of two; int8 caches too, k_scale (num_pages, max(1, page_size /
    block), heads_kv, hdim) — a page smaller than the block holds its block's row, and the block
    is then read from k_tail's rows — and v_scale (num_pages, page_size, heads_kv) paged by the same
    ids, k_tail / v_tail per sequence; k=/v= append into the pages).

    Keyword-only, FlashAttention-3's names and meanings, as flash_attn_func's, with query row i at
    position p = cache_seqlens[b] - seqlen_q + i (after k=/v= are appended: their new lengths):
    window_size (left, right): the row sees keys p - left ... p + right (and below cache_seqlens[b];
    with causal, right is 0), -1 (or None) leaving a side unbounded; the KV tiles outside the window
    are not read, so a decode step's time follows the window, not the cache. softcap > 0: each
    scaled score s becomes softcap · tanh(s / softcap). sinks: a float32 (heads_q,) tensor on q's
    device, a logit per q-head in each row's softmax denominator (gpt-oss); a row that sees no key
    gets O = 0 and LSE = sink. 16-bit and int8 caches (an int8 cache with any of them runs
    the library's int8 options kernel)."""
    if window_size is _NO_WINDOW:
        left = right = -1
    else:
        left, right = _window(window_size)
    if k is not None or v is not None or rotary_cos is not None or rotary_sin is not None:
        q, cache_seqlens = _append_for_attention(q, k, v, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail,
                                                 v_tail, rotary_cos, rotary_sin, rotary_interleaved, stream, page_table)
    out, lse = _outputs(q, out, lse, return_lse)
    _kvcache(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale, v_scale, k_tail,
             v_tail, out, lse, workspace, _stream_of(q, stream), page_table, left, right, softcap, sinks)
    return (out, lse) if return_lse else out


def _append_for_attention(q, k, v, k_cache, v_cache, cache_seqlens, k_scale, v_scale, k_tail, v_tail, rotary_cos,
                          rotary_sin, rotary_interleaved, stream, page_table=None):
    """FlashAttention-3's k/v/rotary arguments: the append, then (q or q rotated, the new lengths)
    for the attention call."""
    if k is None or v is None:
        raise ValueError("k, v: give both to append (rotary_cos / rotary_sin apply only with them)")
    for x, name in ((q, "q"), (cache_seqlens, "cache_seqlens")):
        if not is_torch(x):
            _need_torch(name, "k=/v= (or call kvcache_append with q_rotated= and seqlens_out=)")
    torch = _torch()
    seqlens_new = torch.empty_like(cache_seqlens)
    q_rot = torch.empty_like(q) if rotary_cos is not None else None
    kvcache_append(k, v, k_cache, v_cache, cache_seqlens, k_scale=k_scale, v_scale=v_scale, k_tail=k_tail,
                   v_tail=v_tail, rotary_cos=rotary_cos, rotary_sin=rotary_sin, rotary_interleaved=rotary_interleaved,
                   q=q if q_rot is not None else None, q_rotated=q_rot, seqlens_out=seqlens_new, stream=stream,
                   page_table=page_table)
    return (q_rot if q_rot is not None else q), seqlens_new


def _kvcache(q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale, v_scale, k_tail,
             v_tail, out, lse, workspace, stream, page_table=None, window_left=-1, window_right=-1, softcap=0.0,
             sinks=None):
    """One hopattn_kvcache_attention call with the outputs given (the torch ops call this); the
    split-KV workspace from torch's allocator unless `workspace` is given."""
    keep = []
    args = (q, k_cache, v_cache, cache_seqlens, causal, softmax_scale, num_splits, pack_gqa, k_scale, v_scale, k_tail,
            v_tail, out, lse, page_table, window_left, window_right, softcap, sinks)
    if workspace is not None:
        ws_ptr, ws_bytes = _buffer(workspace, "workspace")
    elif q.__class__ is _Tensor or is_torch(q):
        # The plan's workspace depends on the shapes and options only (and the GPU's SM count; the
        # window bounds the split count; a window, softcap or sinks can choose another kernel, with
        # another split count; the cache's strides choose the chunk path, which takes caches whose
        # sequences are max_seqlen_k rows apart): asked once per call signature, then taken from
        # torch's allocator.
        # Caches whose strides this module cannot read (not torch tensors) are asked every call.
        k_strides, v_strides = _strides(k_cache), _strides(v_cache)
        key = None if k_strides is None or v_strides is None else (
            tuple(q.shape), q.dtype, tuple(k_cache.shape), k_cache.dtype, k_tail is not None, lse is not None,
            bool(causal), int(num_splits), pack_gqa, q.get_device(),
            None if page_table is None else tuple(page_table.shape), window_left, window_right, _softcap(softcap) != 0.0,
            sinks is not None, k_strides, v_strides)
        ws_bytes = None if key is None else _workspace_bytes.get(key)
        if ws_bytes is None:
            ws_bytes = _workspace_size(_pack_kvcache(*args, 0, 0, keep), key)
        ws_ptr = 0
        if ws_bytes > 0:
            torch = _torch()
            workspace = torch.empty(ws_bytes, dtype=torch.uint8, device=q.device)
            ws_ptr = workspace.data_ptr()
    else:
        ws_bytes = _workspace_size(_pack_kvcache(*args, 0, 0, keep), None)
        if ws_bytes > 0:
            _need_torch("q", f"workspace= ({ws_bytes} bytes)")
        ws_ptr = 0
    _lib.raise_for(_lib.lib.hopattn_kvcache_attention(_pack_kvcache(*args, ws_ptr, ws_bytes, keep), stream))


def kvcache_append(k_new, v_new, k_cache, v_cache, cache_seqlens, k_scale=None, v_scale=None, k_tail=None,
                   v_tail=None, rotary_cos=None, rotary_sin=None, rotary_interleaved=True, q=None, q_rotated=None,
                   seqlens_out=None, stream=None, page_table=None):
    """Appends k_new, v_new (batch, seqlen_new, heads_kv, hdim) to the cache at positions
    cache_seqlens[b] ... (FlashAttention-3's `k`, `v` of flash_attn_with_kvcache, as a call of its
    own). A 16-bit cache gets the rows; an int8 cache (k_scale, v_scale, k_tail, v_tail) gets the
    blocks the rows complete quantized (as quantize_kv_int8 would), the rest in the tails.
    rotary_cos, rotary_sin (seqlen_ro, rotary_dim / 2): the new K rows rotated at their positions
    (interleaved: GPT-J pairs; else GPT-NeoX halves), and q, if given, at its rows' positions into
    q_rotated. seqlens_out, if given, gets cache_seqlens + seqlen_new (it may be cache_seqlens).
    page_table (batch, max_pages) int32: a paged cache (pools (num_pages, page_size, heads_kv, hdim),
    as flash_attn_with_kvcache's; an int8 pool's scales paged alike, a page smaller than the scale
    block holding its block's K scale row, the tails per sequence). Mutates the cache in place; returns nothing."""
    keep = []
    quant_block = 0
    if k_scale is not None:
        quant_block = _quant_block(_tv(k_cache, "k_cache", keep), _tv(k_scale, "k_scale", keep),
                                   _tv(k_tail, "k_tail", keep) if k_tail is not None else None)
    buf = ctypes.create_string_buffer(_APPEND.size)
    opt = lambda x, name: _tv(x, name, keep) if x is not None else _NONE  # noqa: E731
    _APPEND.pack_into(buf, 0, _APPEND.size, 0, *_tv(k_new, "k_new", keep), *_tv(v_new, "v_new", keep),
                      *_tv(k_cache, "k_cache", keep), *_tv(v_cache, "v_cache", keep),
                      *_tv(cache_seqlens, "cache_seqlens", keep), *opt(k_scale, "k_scale"), *opt(v_scale, "v_scale"),
                      *opt(k_tail, "k_tail"), *opt(v_tail, "v_tail"), quant_block, 1 if rotary_interleaved else 0,
                      *opt(rotary_cos, "rotary_cos"), *opt(rotary_sin, "rotary_sin"), *opt(q, "q"),
                      *opt(q_rotated, "q_rotated"), *opt(seqlens_out, "seqlens_out"),
                      *opt(page_table, "page_table"))
    _lib.raise_for(_lib.lib.hopattn_kvcache_append(buf, _stream_of(k_new, stream)))


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
        torch = _torch_like(k, "k", "out=(k_int8, v_int8, k_scale, v_scale)")
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


def fp8_quantize(x, heads_kv=None, *, hadamard=False, out=None, descale=None, stream=None):
    """FP8 inputs for flash_attn_func from a bf16/fp16 tensor x (batch, seqlen, heads, hdim), hdim
    contiguous (hopattn_fp8_quantize): returns (x_e4m3, descale), x_e4m3 (batch, seqlen, heads, hdim)
    torch.float8_e4m3fn and descale (batch, heads_kv) float32, per (batch, kv-head) group: descale =
    amax / 448 over the group (1 for an all-zero group), x_e4m3 = e4m3(x / descale) rounded to
    nearest even and saturating. Pass that descale as the call's q_descale, k_descale or v_descale.
    heads_kv: the call's heads_kv for q (q-head h belongs to kv-head h / (heads / heads_kv)); None
    (k and v): one group per head. `out`, `descale`: the outputs to write instead of new ones (then
    heads_kv, if given, must be descale.shape[1]). hadamard=True (FlashAttention-3's incoherent
    processing; pass it for q and k alike, never for v): each hdim row is rotated by the orthogonal
    diag(s)·H/sqrt(hdim) of hopattn.h before the amax and the rounding, so q·kᵀ is kept while an
    outlier channel is spread over the row; hdim a power of two from 32 to 256. Enqueued on the
    current stream; no wait."""
    _lib.require_fp8("fp8_quantize")
    if heads_kv is not None:
        heads_kv = _host_int(heads_kv, "heads_kv", 1, "a positive number of kv-heads (a divisor of x's heads)")
    if out is None or descale is None:
        torch = _torch_like(x, "x", "out= and descale=")
        if x.dim() != 4:
            raise ValueError(f"x: rank {x.dim()}; fp8_quantize takes (batch, seqlen, heads, hdim)")
        if not hasattr(torch, "float8_e4m3fn"):
            raise _lib.NotSupportedError(f"fp8_quantize: torch {torch.__version__} has no float8_e4m3fn")
        groups = x.shape[2] if heads_kv is None else heads_kv
        if out is None:
            out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
        if descale is None:
            descale = torch.empty((x.shape[0], groups), dtype=torch.float32, device=x.device)
    args = _lib.Fp8QuantizeArgs()
    args.struct_size = ctypes.sizeof(args)
    keep = []
    describe(x, "x", args.x, keep)
    describe(out, "out", args.out, keep)
    describe(descale, "descale", args.descale, keep)
    if not isinstance(hadamard, bool):
        raise TypeError(f"hadamard: expected True or False, got {type(hadamard).__name__}")
    args.hadamard = 1 if hadamard else 0
    # the library reads heads_kv from descale's shape: a heads_kv given as well must agree
    if heads_kv is not None and args.descale.rank == 2 and args.descale.shape[1] != heads_kv:
        raise ValueError(f"heads_kv: {heads_kv} differs from descale's shape[1] = {args.descale.shape[1]} "
                         "(the kv-head groups)")
    _lib.raise_for(_lib.lib.hopattn_fp8_quantize(ctypes.byref(args), current_stream(x, stream=stream)))
    return out, descale


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
        torch = _torch_like(a, "a", "out=")
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
                           k_scale=None, v_scale=None, k_tail=None, v_tail=None, out=None, page_table=None,
                           window_size=_NO_WINDOW, softcap=0.0, sinks=None) -> int:
    """Bytes of workspace flash_attn_with_kvcache needs for these arguments (0: none); give the same
    window_size, softcap and sinks as the call (a window changes how the keys are split)."""
    left, right = (-1, -1) if window_size is _NO_WINDOW else _window(window_size)
    keep = []
    if out is None:  # the checks want a real output (it must not overlap the inputs)
        if not is_torch(q):
            _need_torch("q", "out=")
        out = _torch().empty_like(q)
    buf = _pack_kvcache(q, k_cache, v_cache, cache_seqlens, causal, None, num_splits, pack_gqa, k_scale, v_scale,
                        k_tail, v_tail, out, None, page_table, left, right, softcap, sinks, 0, 0, keep)
    return _workspace_size(buf, None)


class LayoutReport(NamedTuple):
    """hopattn.layout's answer: `holds` whether the note's sufficient conditions hold (when not,
    `text` names the failing one), and `text` the whole report `hopattn layout` prints."""
    holds: bool
    text: str

    def __str__(self):
        return self.text


def layout(expr: str, check: bool = False) -> LayoutReport:
    """The CuTe layout-algebra checker on one expression in CuTe notation, e.g.
    "complement((2,4):(1,8), 64)" or "composition((6,2):(8,2), (4,3):(3,1))": whether the
    sufficient conditions of "A Note on the Algebra of CuTe Layouts" hold, the result with its
    value table and the brute-force truth; check=True adds CuTe's own answer (CUTLASS 4.2).
    Host only (no GPU needed). A malformed expression, or one beyond the checker's limits, raises
    ValueError with the error and its column."""
    if not isinstance(expr, str):
        raise TypeError(f"expr: a str is required, not {type(expr).__name__}")
    fn = getattr(_lib.lib, "hopattn_layout_report", None)
    if fn is None:
        raise NotImplementedError("this libhopattn was built without the layout checker (src/layout)")
    data = expr.encode()
    needed = ctypes.c_size_t(0)
    fn(data, int(bool(check)), None, 0, ctypes.byref(needed))
    buf = ctypes.create_string_buffer(max(int(needed.value), 1))
    code = fn(data, int(bool(check)), buf, len(buf), ctypes.byref(needed))
    text = buf.value.decode(errors="replace")
    if code == 2 or code < 0:
        raise ValueError(text.strip() or f"expr: {expr!r} cannot be evaluated")
    return LayoutReport(code == 0, text)
