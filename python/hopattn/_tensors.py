"""Tensor descriptors from the caller's arrays: torch tensors directly, anything else through
`__cuda_array_interface__` (CuPy, Numba, JAX on one GPU) or DLPack (`__dlpack__`). Checks what the
library cannot see from a pointer (the device type) so that a CPU array gets a clear error."""
from __future__ import annotations

import ctypes
import sys

from . import _lib

_TORCH_DTYPES = None  # torch dtype -> hopattn dtype, filled on first use


def _torch():
    return sys.modules.get("torch")


def is_torch(x) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _torch_dtype_map():
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        torch = _torch()
        _TORCH_DTYPES = {torch.bfloat16: _lib.BF16, torch.float16: _lib.FP16, torch.float32: _lib.FP32,
                         torch.int8: _lib.INT8, torch.int32: _lib.INT32}
        if hasattr(torch, "float8_e4m3fn"):
            _TORCH_DTYPES[torch.float8_e4m3fn] = _lib.E4M3
    return _TORCH_DTYPES


_TYPESTR = {"<f2": _lib.FP16, "<f4": _lib.FP32, "|i1": _lib.INT8, "<i4": _lib.INT32}
# DLPack (code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4; kDLFloat8_e4m3fn 10 (DLPack 1.1)
_DLPACK = {(2, 16): _lib.FP16, (2, 32): _lib.FP32, (0, 8): _lib.INT8, (0, 32): _lib.INT32, (4, 16): _lib.BF16,
           (10, 8): _lib.E4M3}


def describe(x, name: str, out: _lib.Tensor, keep: list) -> None:
    """Fills `out` with x's pointer, dtype, shape and strides (elements). Raises TypeError for an
    array type or dtype the library has no use for, ValueError for an array not on a CUDA device.
    `keep` receives whatever must stay alive until the call returns (a DLPack capsule)."""
    if is_torch(x):
        if x.device.type != "cuda":
            raise ValueError(f"{name}: is on {x.device}; a CUDA tensor is required")
        dt = _torch_dtype_map().get(x.dtype)
        if dt is None:
            raise TypeError(f"{name}: dtype {x.dtype} is not one hopattn takes")
        rank = x.dim()
        if rank > _lib.MAX_RANK:
            raise ValueError(f"{name}: rank {rank} is more than {_lib.MAX_RANK}")
        out.data, out.dtype, out.rank = x.data_ptr(), dt, rank
        shape, stride = x.shape, x.stride()
        for i in range(rank):
            out.shape[i], out.stride[i] = shape[i], stride[i]
        return
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        _describe_cai(cai, name, out)
        return
    if hasattr(x, "__dlpack__"):
        _describe_dlpack(x, name, out, keep)
        return
    raise TypeError(f"{name}: {type(x).__name__} is not a torch tensor and has neither __cuda_array_interface__ "
                    "nor __dlpack__")


def _describe_cai(cai: dict, name: str, out: _lib.Tensor) -> None:
    typestr = cai["typestr"]
    dt = _TYPESTR.get(typestr)
    if dt is None:
        if typestr in ("<V2", "|V2"):  # a 2-byte type without a name: bf16 as CuPy/JAX export it
            dt = _lib.BF16
        else:
            raise TypeError(f"{name}: element type {typestr} is not one hopattn takes")
    shape = tuple(cai["shape"])
    if len(shape) > _lib.MAX_RANK:
        raise ValueError(f"{name}: rank {len(shape)} is more than {_lib.MAX_RANK}")
    esize = _lib.DTYPE_SIZES[dt]
    strides = cai.get("strides")
    if strides is None:  # C-contiguous
        strides, acc = [], 1
        for e in reversed(shape):
            strides.insert(0, acc * esize)
            acc *= e
    out.data, out.dtype, out.rank = cai["data"][0], dt, len(shape)
    for i, (e, s) in enumerate(zip(shape, strides)):
        if s % esize:
            raise ValueError(f"{name}: stride {s} bytes is not a multiple of the element size {esize}")
        out.shape[i], out.stride[i] = e, s // esize


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_KDLCUDA, _KDLCUDAMANAGED = 2, 13


def _describe_dlpack(x, name: str, out: _lib.Tensor, keep: list) -> None:
    capsule = x.__dlpack__()
    keep.append(capsule)  # the capsule owns the tensor until it is collected; DLTensor comes first
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    if t.device.device_type not in (_KDLCUDA, _KDLCUDAMANAGED):
        raise ValueError(f"{name}: DLPack device type {t.device.device_type} is not CUDA")
    dt = _DLPACK.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if dt is None:
        raise TypeError(f"{name}: DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits) is not one hopattn takes")
    if t.ndim > _lib.MAX_RANK:
        raise ValueError(f"{name}: rank {t.ndim} is more than {_lib.MAX_RANK}")
    out.data, out.dtype, out.rank = (t.data or 0) + t.byte_offset, dt, t.ndim
    acc = 1
    for i in reversed(range(t.ndim)):
        out.shape[i] = t.shape[i]
        out.stride[i] = t.strides[i] if t.strides else acc
        acc *= t.shape[i]


def current_stream(*arrays, stream=None) -> int:
    """The stream a call is enqueued on: `stream` if given (an int handle or an object with
    .cuda_stream / .ptr), else torch's current stream on the first torch tensor's device, else the
    legacy default stream (0)."""
    if stream is not None:
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        return int(stream)
    for a in arrays:
        if is_torch(a):
            return _torch().cuda.current_stream(a.device).cuda_stream
    return 0
