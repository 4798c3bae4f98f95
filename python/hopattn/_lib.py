"""The C ABI of libhopattn through ctypes: the argument structs (mirrors of include/hopattn/*.h),
the entry points, and the status -> exception mapping.

Why ctypes and not a compiled extension: the package calls only the library's C ABI, so it needs
no Python C API and no torch headers. One wheel (py3-none-linux_x86_64) therefore loads under
every CPython 3 and with any torch version, and a wheel built on one machine runs on another with
a different Python (the GPU machine runs 3.12, the build machine 3.11). The per-call cost of
filling the structs in Python is measured in docs/python.md.
"""
from __future__ import annotations

import ctypes
import os
import sys

MAX_RANK = 4
STATUS_MESSAGE_SIZE = 512

# hopattn_dtype_t
BF16, FP16, FP32, E4M3, INT8, INT32 = 0, 1, 2, 3, 4, 5
DTYPE_NAMES = {BF16: "bf16", FP16: "fp16", FP32: "fp32", E4M3: "e4m3", INT8: "int8", INT32: "int32"}
DTYPE_SIZES = {BF16: 2, FP16: 2, FP32: 4, E4M3: 1, INT8: 1, INT32: 4}

# hopattn_status_code_t
OK, INVALID_ARGUMENT, NOT_SUPPORTED, CUDA_ERROR, INTERNAL = 0, 1, 2, 3, 4


class HopattnError(RuntimeError):
    """A CUDA error or an internal error reported by libhopattn."""


class NotSupportedError(ValueError):
    """Valid arguments outside what this build compiled or the kernels handle."""


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("stride", ctypes.c_int64 * MAX_RANK),
    ]


class Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int32), ("message", ctypes.c_char * STATUS_MESSAGE_SIZE)]


class AttentionFwdArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("o", Tensor),
        ("lse", Tensor),
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int32),
        # Since 0.3 (zero: 0.2's behaviour). window != 0: window_left / window_right apply (-1:
        # unbounded); softcap 0: off; sinks (heads_q,) float32, data NULL: none.
        ("window", ctypes.c_int32),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("softcap", ctypes.c_float),
        ("sinks", Tensor),
        # Since 0.4 (all zero: a padded batch). cu_seqlens_q.data != NULL selects a variable-length
        # batch: q, o (total_q, heads_q, hdim), k, v (total_k, heads_kv, hdim), lse (heads_q, total_q);
        # cu_seqlens_q / cu_seqlens_k int32 (batch + 1,), seqused_k int32 (batch,) or data NULL;
        # max_seqlen_q / max_seqlen_k >= every sequence's count; workspace (16-byte aligned device
        # memory) of hopattn_attention_forward_workspace_size() bytes.
        ("cu_seqlens_q", Tensor),
        ("cu_seqlens_k", Tensor),
        ("seqused_k", Tensor),
        ("max_seqlen_q", ctypes.c_int32),
        ("max_seqlen_k", ctypes.c_int32),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        # Since 0.5 (e4m3 q, k, v; all zero: descales of 1): (batch, heads_kv) float32 descales,
        # all three or none. flash_attn_func packs the whole 0.5 struct for an e4m3 call (ops.py).
        ("q_descale", Tensor),
        ("k_descale", Tensor),
        ("v_descale", Tensor),
    ]


class KvCacheArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("q", Tensor),
        ("k_cache", Tensor),
        ("v_cache", Tensor),
        ("cache_seqlens", Tensor),
        ("o", Tensor),
        ("lse", Tensor),
        ("k_scale", Tensor),
        ("v_scale", Tensor),
        ("quant_block", ctypes.c_int32),
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int32),
        ("num_splits", ctypes.c_int32),
        ("pack_gqa", ctypes.c_int32),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        ("k_tail", Tensor),
        ("v_tail", Tensor),
        ("page_table", Tensor),
        # Since 0.4 (zero: none), as AttentionFwdArgs's: window != 0: window_left / window_right
        # apply (-1: unbounded); softcap 0: off; sinks (heads_q,) float32, data NULL: none.
        ("window", ctypes.c_int32),
        ("window_left", ctypes.c_int32),
        ("window_right", ctypes.c_int32),
        ("softcap", ctypes.c_float),
        ("sinks", Tensor),
    ]


class KvCacheQuantizeArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("k", Tensor),
        ("v", Tensor),
        ("k_int8", Tensor),
        ("v_int8", Tensor),
        ("k_scale", Tensor),
        ("v_scale", Tensor),
        ("quant_block", ctypes.c_int32),
    ]


class Fp8QuantizeArgs(ctypes.Structure):
    """hopattn_fp8_quantize_args_t (since 0.5): x (batch, seqlen, heads, hdim) bf16/fp16 into out
    (e4m3) and descale (batch, heads_kv) float32."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("x", Tensor),
        ("out", Tensor),
        ("descale", Tensor),
        ("hadamard", ctypes.c_int32),
    ]


class GemmArgs(ctypes.Structure):
    _fields_ = [
        ("a", Tensor),
        ("b", Tensor),
        ("c", Tensor),
        ("d", Tensor),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("scale_a", ctypes.c_float),
        ("scale_b", ctypes.c_float),
        ("variant", ctypes.c_int32),
    ]


GEMM_VARIANTS = {
    "auto": 0, "tma_wgmma": 1, "pipelined": 2, "warp_specialized": 3, "cooperative": 4, "pingpong": 5,
    "persistent": 6, "cluster2x1": 7, "cluster1x2": 8, "split_k": 9,
}


def _library_path() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.startswith("libhopattn.so"):
            return os.path.join(here, name)
    raise ImportError(
        "hopattn: libhopattn.so is not inside the package (" + here + "); install the package with "
        "`pip install .` from a clone, which builds the library")


def _preload_cudart() -> bool:
    """Makes libcudart.so.13 loadable when it is not on the loader's path: torch's CUDA runtime (its
    import loads it globally), else the nvidia-cuda-runtime wheel's copy."""
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        pass
    import glob
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for so in glob.glob(os.path.join(root, "cu*", "lib", "libcudart.so.13")) + \
                glob.glob(os.path.join(root, "cuda_runtime", "lib", "libcudart.so.13")):
            ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
            return True
    return False


# Entry points a library older than this package may lack: bound only where the loaded library has
# them (an older library still loads; the calls that need them raise NotSupportedError instead).
_OPTIONAL_SIGS = {
    # since 0.4: the variable-length forward's workspace bytes and its device record
    "hopattn_attention_forward_workspace_size": (Status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "hopattn_attention_device_check": (Status, [ctypes.c_void_p]),
    # since 0.5: FP8 (e4m3) inputs; the quantization's entry point stands for the whole 0.5 surface
    # (the forward call's q/k/v_descale fields)
    "hopattn_fp8_quantize": (Status, [ctypes.POINTER(Fp8QuantizeArgs), ctypes.c_void_p]),
}


def _load():
    path = _library_path()
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as first:
        if not _preload_cudart():
            raise ImportError(f"hopattn: cannot load {path}: {first}. It needs the CUDA 13 runtime "
                              "(libcudart.so.13) on the loader's path (e.g. LD_LIBRARY_PATH=/usr/local/cuda/lib64), "
                              "or torch / nvidia-cuda-runtime installed") from first
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    return _bind(lib)


def _bind(lib):
    """Sets the entry points' signatures on a loaded library (a ctypes.CDLL); returns it."""
    sigs = {
        "hopattn_version": (ctypes.c_char_p, []),
        "hopattn_abi_version": (ctypes.c_int32, []),
        # The argument structs are passed as byte buffers packed in one call (ops.py: _FWD with
        # _FWD_OPTIONS and _FWD_VARLEN, and _KV below mirror AttentionFwdArgs / KvCacheArgs byte for byte), not as
        # ctypes Structures filled field by field: the host time per call is most of a small call's cost.
        "hopattn_attention_forward": (Status, [ctypes.c_void_p, ctypes.c_void_p]),
        "hopattn_attention_forward_check": (Status, [ctypes.c_void_p, ctypes.c_void_p]),
        "hopattn_kvcache_attention": (Status, [ctypes.c_void_p, ctypes.c_void_p]),
        "hopattn_kvcache_workspace_size": (Status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
        "hopattn_kvcache_device_check": (Status, [ctypes.c_void_p]),
        "hopattn_kvcache_quantize_int8": (Status, [ctypes.POINTER(KvCacheQuantizeArgs), ctypes.c_void_p]),
        "hopattn_kvcache_append": (Status, [ctypes.c_void_p, ctypes.c_void_p]),
        "hopattn_kvcache_append_check": (Status, [ctypes.c_void_p, ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    for name, (restype, argtypes) in _OPTIONAL_SIGS.items():
        fn = getattr(lib, name, None)  # CDLL raises AttributeError for a symbol it lacks
        if fn is not None:
            fn.restype, fn.argtypes = restype, argtypes
    if hasattr(lib, "hopattn_layout_report"):  # a build with the layout checker (src/layout)
        lib.hopattn_layout_report.restype = ctypes.c_int32
        lib.hopattn_layout_report.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_size_t)]
    if hasattr(lib, "hopattn_gemm"):  # a build with HOPATTN_BUILD_GEMM
        for name in ("hopattn_gemm", "hopattn_gemm_check"):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = Status, [ctypes.POINTER(GemmArgs), ctypes.c_void_p]
    return lib


lib = _load()
__version__ = lib.hopattn_version().decode()
ABI_VERSION = 2  # the struct layouts above
if lib.hopattn_abi_version() != ABI_VERSION:
    raise ImportError(f"hopattn: the library's ABI version is {lib.hopattn_abi_version()}, this package "
                      f"was written for {ABI_VERSION}")


def abi_version() -> int:
    return int(lib.hopattn_abi_version())


def raise_for(status: Status) -> None:
    """Raises the exception a non-OK status stands for, with the library's message."""
    code = status.code
    if code == OK:
        return
    message = status.message.decode(errors="replace")
    if code == INVALID_ARGUMENT:
        raise ValueError(message)
    if code == NOT_SUPPORTED:
        raise NotSupportedError(message)
    raise HopattnError(message)


def has_gemm() -> bool:
    return hasattr(lib, "hopattn_gemm")


def has_varlen() -> bool:
    """Whether the loaded library has the variable-length forward (0.4's entry points)."""
    return hasattr(lib, "hopattn_attention_forward_workspace_size") and hasattr(lib, "hopattn_attention_device_check")


def require_varlen(name: str) -> None:
    """NotSupportedError naming `name` when the loaded library predates the variable-length forward."""
    if not has_varlen():
        raise NotSupportedError(f"{name}: the loaded libhopattn ({lib.hopattn_version().decode()}) has no "
                                "variable-length forward (hopattn_attention_forward_workspace_size and "
                                "hopattn_attention_device_check, since 0.4); install a library of 0.4 or later")


def has_fp8() -> bool:
    """Whether the loaded library has the FP8 forward's 0.5 surface (the descale fields and
    hopattn_fp8_quantize)."""
    return hasattr(lib, "hopattn_fp8_quantize")


def require_fp8(name: str) -> None:
    """NotSupportedError naming `name` when the loaded library predates the FP8 forward (0.5)."""
    if not has_fp8():
        raise NotSupportedError(f"{name}: the loaded libhopattn ({lib.hopattn_version().decode()}) has no FP8 "
                                "(e4m3) forward (the q/k/v_descale fields and hopattn_fp8_quantize, since 0.5); "
                                "install a library of 0.5 or later")


del sys
