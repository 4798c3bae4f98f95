"""The Python binding without a GPU (and without torch): import, version, and argument errors
raised as exceptions with the library's messages. The arrays are stand-ins that expose
__cuda_array_interface__ with fake device addresses; the library checks its argument rules
before touching the device, so a bad argument is reported here exactly as on a GPU machine.
The 0.3 options', the 0.4 variable-length call's and the 0.5 FP8 call's bytes are read from a
stand-in for the C entry point; the ctypes mirrors' layouts are checked against the headers compiled
by a C compiler; older libraries without the 0.4 or 0.5 entry points are simulated. e4m3 arrays are
stand-ins that expose only DLPack (no __cuda_array_interface__ type string names e4m3). With torch importable, the
torch ops' schemas, fake implementations and tracing are checked too (no GPU needed).
Runs under `python -m unittest` and pytest."""
import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import hopattn
from hopattn import _lib


class FakeCudaArray:
    """A CUDA array as far as __cuda_array_interface__ goes; its memory is never touched."""

    def __init__(self, shape, typestr="<f2", address=0x10000000, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (address, False),
                                         "strides": strides, "version": 3}


def bf16(shape, address, strides=None):
    return FakeCudaArray(shape, "<V2", address, strides)


class FakeDlpackArray:
    """A CUDA array as far as DLPack goes (a DLTensor in a "dltensor" capsule, device kDLCUDA); its
    memory is never touched. dtype (code, bits): (10, 8) is kDLFloat8_e4m3fn."""
    _new_capsule = ctypes.pythonapi.PyCapsule_New
    _new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    _NAME = b"dltensor"

    def __init__(self, shape, code, bits, address, strides=None):
        from hopattn import _tensors
        n = len(shape)
        self._shape = (ctypes.c_int64 * n)(*shape)
        self._strides = (ctypes.c_int64 * n)(*strides) if strides is not None else None
        self._t = _tensors._DLTensor()
        self._t.data, self._t.ndim, self._t.byte_offset = address, n, 0
        self._t.device = _tensors._DLDevice(2, 0)  # kDLCUDA, device 0
        self._t.dtype = _tensors._DLDataType(code, bits, 1)
        self._t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            self._t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))

    def __dlpack__(self, stream=None):
        return self._new_capsule(ctypes.addressof(self._t), self._NAME, None)


def e4m3(shape, address, strides=None):
    return FakeDlpackArray(shape, 10, 8, address, strides)


def f32(shape, address, strides=None):
    return FakeCudaArray(shape, "<f4", address, strides)


INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")


def header_version():
    with open(os.path.join(INCLUDE, "hopattn", "hopattn.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define HOPATTN_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class TestImport(unittest.TestCase):
    def test_version_matches_the_header(self):
        self.assertEqual(hopattn.__version__, header_version())
        self.assertEqual(hopattn.abi_version(), 2)

    def test_struct_sizes_match_the_c_abi(self):
        # 80-byte tensors; struct_size is what the library checks against its own layout.
        self.assertEqual(ctypes.sizeof(_lib.Tensor), 80)
        # 0.2's 416 + window..softcap 16 + sinks 80 (0.3: 512) + cu_seqlens_q/k, seqused_k 240 +
        # max_seqlen_q/k 8 + workspace, workspace_bytes 16 (0.4: 776) + q/k/v_descale 240 (0.5)
        self.assertEqual(ctypes.sizeof(_lib.AttentionFwdArgs), 1016)
        # 0.3's tails, then page_table and window..softcap 16 + sinks 80 (0.4)
        self.assertEqual(ctypes.sizeof(_lib.KvCacheArgs), 8 + 8 * 80 + 20 + 4 + 8 + 8 + 2 * 80 + 80 + 16 + 80)
        self.assertEqual(ctypes.sizeof(_lib.KvCacheQuantizeArgs), 8 + 6 * 80 + 8)
        self.assertEqual(ctypes.sizeof(_lib.Fp8QuantizeArgs), 8 + 3 * 80 + 8)  # 0.5 (hadamard, padded)
        # The packed layouts the calls use are the same bytes as the Structures.
        from hopattn import ops
        self.assertEqual(ops._FWD_FP8_SIZE, ctypes.sizeof(_lib.AttentionFwdArgs))  # an e4m3 call's 0.5 struct
        self.assertEqual(ops._FWD_VARLEN_SIZE, _lib.AttentionFwdArgs.q_descale.offset)  # a varlen call's 0.4 struct
        self.assertEqual(ops._FWD_SIZE, _lib.AttentionFwdArgs.cu_seqlens_q.offset)  # a padded call's 0.3 struct
        self.assertEqual(ops._FWD.size, _lib.AttentionFwdArgs.window.offset)  # 0.2's fields, then the options
        self.assertEqual(ops._FWD_SIZE + ops._FWD_VARLEN.size, _lib.AttentionFwdArgs.workspace.offset)
        self.assertEqual(ops._KV_SIZE, ctypes.sizeof(_lib.KvCacheArgs))
        self.assertEqual(ops._KV.size, _lib.KvCacheArgs.window.offset)  # up to page_table, then the options
        for field, offset in (("softmax_scale", 408), ("causal", 412), ("window", 416), ("window_left", 420),
                              ("window_right", 424), ("softcap", 428), ("sinks", 432), ("cu_seqlens_q", 512),
                              ("cu_seqlens_k", 592), ("seqused_k", 672), ("max_seqlen_q", 752), ("max_seqlen_k", 756),
                              ("workspace", 760), ("workspace_bytes", 768), ("q_descale", 776), ("k_descale", 856),
                              ("v_descale", 936)):
            self.assertEqual(getattr(_lib.AttentionFwdArgs, field).offset, offset, field)
        for field, offset in (("quant_block", 648), ("pack_gqa", 664), ("workspace", 672), ("workspace_bytes", 680),
                              ("k_tail", 688), ("page_table", 848), ("window", 928), ("window_left", 932),
                              ("window_right", 936), ("softcap", 940), ("sinks", 944)):
            self.assertEqual(getattr(_lib.KvCacheArgs, field).offset, offset, field)

    def test_struct_layouts_match_the_compiled_headers(self):
        """sizeof and every field's offset of the ctypes mirrors, and the sizes of the packed layouts,
        against a C program compiled with the headers (skipped without a C compiler)."""
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            self.skipTest("no C compiler (cc, gcc or clang) to compile the headers with")
        from hopattn import ops
        mirrors = ((_lib.Tensor, "hopattn_tensor_t"), (_lib.Status, "hopattn_status_t"),
                   (_lib.AttentionFwdArgs, "hopattn_attention_fwd_args_t"), (_lib.KvCacheArgs, "hopattn_kvcache_args_t"),
                   (_lib.KvCacheQuantizeArgs, "hopattn_kvcache_quantize_args_t"),
                   (_lib.Fp8QuantizeArgs, "hopattn_fp8_quantize_args_t"))
        lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "hopattn/hopattn.h"', '#include "hopattn/kvcache.h"',
                 "int main(void) {"]
        for cls, ctype in mirrors:
            lines.append(f'  printf("{ctype} sizeof %zu\\n", sizeof({ctype}));')
            for name, *_ in cls._fields_:
                lines.append(f'  printf("{ctype} {name} %zu\\n", offsetof({ctype}, {name}));')
        lines.append('  printf("hopattn_kvcache_append_args_t sizeof %zu\\n", sizeof(hopattn_kvcache_append_args_t));')
        lines += ["  return 0;", "}"]
        with tempfile.TemporaryDirectory() as tmp:
            src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
            with open(src, "w") as f:
                f.write("\n".join(lines) + "\n")
            subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-I", INCLUDE, src, "-o", exe], check=True,
                           capture_output=True, text=True)
            printed = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        c = {(t, f): int(n) for t, f, n in (line.split() for line in printed.splitlines())}
        for cls, ctype in mirrors:
            self.assertEqual(ctypes.sizeof(cls), c[ctype, "sizeof"], f"sizeof({ctype})")
            for name, *_ in cls._fields_:
                self.assertEqual(getattr(cls, name).offset, c[ctype, name], f"offsetof({ctype}, {name})")
        self.assertEqual(ops._FWD_FP8_SIZE, c["hopattn_attention_fwd_args_t", "sizeof"])
        self.assertEqual(ops._FWD_VARLEN_SIZE, c["hopattn_attention_fwd_args_t", "q_descale"])
        self.assertEqual(ops._FWD_SIZE, c["hopattn_attention_fwd_args_t", "cu_seqlens_q"])
        self.assertEqual(ops._FWD_VARLEN_SIZE - ops._FWD_WORKSPACE.size, c["hopattn_attention_fwd_args_t", "workspace"])
        self.assertEqual(ops._KV_SIZE, c["hopattn_kvcache_args_t", "sizeof"])
        self.assertEqual(ops._KV.size, c["hopattn_kvcache_args_t", "window"])
        self.assertEqual(ops._APPEND.size, c["hopattn_kvcache_append_args_t", "sizeof"])


class CallChecks:
    """For the argument test classes, whose call(**changes) makes one forward binding call: the
    bytes it packs (through CapturedForward) and the error it raises."""

    def packed(self, **changes):
        capture = CapturedForward(self)
        self.call(**changes)
        (raw, args), = capture.args
        return raw, args

    def assertRaisesWith(self, exc, needle, **changes):
        with self.assertRaises(exc) as cm:
            self.call(**changes)
        self.assertIn(needle, str(cm.exception), f"changes {changes}")


class TestForwardArguments(CallChecks, unittest.TestCase):
    def call(self, **changes):
        a = dict(q=bf16((2, 100, 8, 128), 0x10000000), k=bf16((2, 300, 2, 128), 0x20000000),
                 v=bf16((2, 300, 2, 128), 0x30000000), out=bf16((2, 100, 8, 128), 0x40000000))
        a.update(changes)
        return hopattn.flash_attn_func(a["q"], a["k"], a["v"], causal=True, out=a["out"])

    def test_bad_arguments_name_the_argument(self):
        self.assertRaisesWith(ValueError, "heads_q = 8 is not a multiple of heads_kv = 3",
                              k=bf16((2, 300, 3, 128), 0x20000000), v=bf16((2, 300, 3, 128), 0x30000000))
        self.assertRaisesWith(ValueError, "q.stride[3]", q=bf16((2, 100, 8, 128), 0x10000000, (204800, 2048, 256, 4)))
        self.assertRaisesWith(ValueError, "o: overlaps input q", out=bf16((2, 100, 8, 128), 0x10000000 + 4096))
        self.assertRaisesWith(hopattn.NotSupportedError, "head dim 96",
                              q=bf16((2, 100, 8, 96), 0x10000000), k=bf16((2, 300, 2, 96), 0x20000000),
                              v=bf16((2, 300, 2, 96), 0x30000000), out=bf16((2, 100, 8, 96), 0x40000000))
        self.assertRaisesWith(ValueError, "is not", q=FakeCudaArray((2, 100, 8, 128), "<f4", 0x10000000))

    def test_outputs_are_required_without_torch(self):
        with self.assertRaises(TypeError) as cm:
            hopattn.flash_attn_func(bf16((1, 16, 4, 64), 0x10000000), bf16((1, 16, 4, 64), 0x20000000),
                                    bf16((1, 16, 4, 64), 0x30000000))
        self.assertIn("out=", str(cm.exception))

    def test_not_an_array(self):
        with self.assertRaises(TypeError) as cm:
            hopattn.flash_attn_func([1, 2], [3], [4], out=[5])
        self.assertIn("q: list", str(cm.exception))

    def test_unsupported_element_type(self):
        with self.assertRaises(TypeError) as cm:
            self.call(q=FakeCudaArray((2, 100, 8, 128), "<f8", 0x10000000))
        self.assertIn("element type <f8", str(cm.exception))


class CapturedForward:
    """Stands in for hopattn_attention_forward: keeps the argument bytes the binding passed (decoded
    with the ctypes mirror of the C struct) and returns OK without the library."""

    def __init__(self, test):
        self.args = []
        real = _lib.lib.hopattn_attention_forward
        test.addCleanup(setattr, _lib.lib, "hopattn_attention_forward", real)
        _lib.lib.hopattn_attention_forward = self

    def __call__(self, buf, stream):
        raw = bytes(buf)
        # The library reads the bytes past struct_size as zero: so does the decoded copy.
        self.args.append((raw, _lib.AttentionFwdArgs.from_buffer_copy(raw.ljust(ctypes.sizeof(_lib.AttentionFwdArgs),
                                                                                 b"\0"))))
        return _lib.Status()


class TestForwardOptions(CallChecks, unittest.TestCase):
    """window_size, softcap, sinks (0.3): the bytes the binding packs, the errors it raises for what
    a pointer cannot show (each naming the argument), and the library's checks of the rest."""
    Q, K, V, OUT = ((2, 100, 8, 128), 0x10000000), ((2, 300, 2, 128), 0x20000000), ((2, 300, 2, 128), 0x30000000), \
        ((2, 100, 8, 128), 0x40000000)

    def call(self, causal=True, **options):
        q, k, v, out = (bf16(*x) for x in (self.Q, self.K, self.V, self.OUT))
        return hopattn.flash_attn_func(q, k, v, causal=causal, out=out, **options)

    def test_no_option_is_the_0_2_struct(self):
        for options in ({}, dict(window_size=(-1, -1), softcap=0.0, sinks=None), dict(window_size=[None, -1])):
            raw, args = self.packed(**options)
            self.assertEqual(args.struct_size, 512)
            self.assertEqual(args.causal, 1)
            self.assertEqual(raw[416:], bytes(96), f"the bytes past causal must be zero, options {options}")

    def test_window_mapping(self):
        # (options, causal) -> (window, window_left, window_right)
        cases = [((128, 0), False, (1, 128, 0)), ((128, 0), True, (1, 128, 0)), ((5, 3), False, (1, 5, 3)),
                 ((64, -1), True, (1, 64, 0)), ((64, 7), True, (1, 64, 0)),  # causal: right 0, as FlashAttention
                 ((-1, 7), False, (1, -1, 7)), ((None, 0), False, (1, -1, 0)), ((0, 0), False, (1, 0, 0)),
                 ([3, 4], False, (1, 3, 4)), ((-1, -1), True, (0, 0, 0)), ((2 ** 31 - 1, 1), False, (1, 2 ** 31 - 1, 1))]
        for window_size, causal, want in cases:
            raw, args = self.packed(causal=causal, window_size=window_size)
            self.assertEqual((args.window, args.window_left, args.window_right), want, f"{window_size} causal {causal}")
            self.assertEqual(args.causal, int(causal))
            self.assertEqual((args.softcap, args.sinks.data), (0.0, None))

    def test_softcap_and_sinks_are_packed(self):
        sinks = FakeCudaArray((8,), "<f4", 0x50000000)
        raw, args = self.packed(softcap=30, sinks=sinks)
        self.assertEqual((args.window, args.window_left, args.window_right, args.softcap), (0, 0, 0, 30.0))
        self.assertEqual((args.sinks.data, args.sinks.dtype, args.sinks.rank, args.sinks.shape[0], args.sinks.stride[0]),
                         (0x50000000, _lib.FP32, 1, 8, 1))
        raw, args = self.packed(causal=False, window_size=(16, 16), softcap=50.0, sinks=sinks)
        self.assertEqual((args.window, args.window_left, args.window_right, args.softcap, args.sinks.data),
                         (1, 16, 16, 50.0, 0x50000000))
        self.assertEqual(bytes(args)[:416], self.packed(causal=False)[0][:416], "the 0.2 fields do not change")

    def test_bad_window_size(self):
        for bad, exc, needle in ((5, TypeError, "window_size: a pair"), ((1, 2, 3), TypeError, "window_size: a pair"),
                                 ((), TypeError, "window_size: a pair"), (None, TypeError, "window_size: a pair"),
                                 ((1.5, 0), TypeError, "window_size[0]: an int"),
                                 (("a", 0), TypeError, "window_size[0]: an int"),
                                 ((0, True), TypeError, "window_size[1]: an int"),
                                 ((-2, 0), ValueError, "window_size[0]: -2"),
                                 ((0, 2 ** 31), ValueError, "window_size[1]: 2147483648")):
            self.assertRaisesWith(exc, needle, window_size=bad)

    def test_bad_softcap(self):
        self.assertRaisesWith(TypeError, "softcap: a float is required", softcap="30")
        self.assertRaisesWith(TypeError, "softcap: a float is required", softcap=[30.0])

    def test_bad_sinks_in_python(self):
        self.assertRaisesWith(TypeError, "sinks: list", sinks=[0.0] * 8)
        self.assertRaisesWith(TypeError, "sinks: element type <f8", sinks=FakeCudaArray((8,), "<f8", 0x50000000))

    def test_library_checks_name_the_option(self):
        """The rules a descriptor shows, checked by the library (hopattn_attention_forward_check):
        each error names the argument."""
        for options, needle in ((dict(sinks=FakeCudaArray((8,), "<f2", 0x50000000)), "sinks"),
                                (dict(sinks=bf16((8,), 0x50000000)), "sinks"),
                                (dict(sinks=FakeCudaArray((4,), "<f4", 0x50000000)), "sinks"),
                                (dict(sinks=FakeCudaArray((1, 8), "<f4", 0x50000000)), "sinks"),
                                (dict(sinks=FakeCudaArray((8,), "<f4", 0x50000000, (8,))), "sinks"),  # stride 2
                                (dict(softcap=-1.0), "softcap"), (dict(softcap=float("nan")), "softcap"),
                                (dict(softcap=float("inf")), "softcap")):
            with self.subTest(options=options):
                self.assertRaisesWith(ValueError, needle, **options)


class OlderLibrary:
    """The loaded library as an older one looks to the binding: without some entry points (by
    default 0.4's, as a 0.3 library)."""
    HIDDEN = ("hopattn_attention_forward_workspace_size", "hopattn_attention_device_check")

    def __init__(self, real, hidden=HIDDEN):
        self._real = real
        self._hidden = hidden

    def __getattr__(self, name):
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._real, name)


class TestVarlenArguments(CallChecks, unittest.TestCase):
    """flash_attn_varlen_func (0.4): the bytes it packs (the C entry point replaced by a stand-in),
    the errors Python raises for what a pointer cannot show, the library's argument checks (each
    naming the argument), the workspace size, and a library without the 0.4 entry points."""
    TOTAL_Q, TOTAL_K, HQ, HKV, D, BATCH = 1300, 2000, 8, 2, 128, 4

    def setUp(self):  # a valid call's tensors (fake device addresses)
        self.q = bf16((self.TOTAL_Q, self.HQ, self.D), 0x10000000)
        self.k = bf16((self.TOTAL_K, self.HKV, self.D), 0x20000000)
        self.v = bf16((self.TOTAL_K, self.HKV, self.D), 0x30000000)
        self.out = bf16((self.TOTAL_Q, self.HQ, self.D), 0x40000000)
        self.cu_q = FakeCudaArray((self.BATCH + 1,), "<i4", 0x50000000)
        self.cu_k = FakeCudaArray((self.BATCH + 1,), "<i4", 0x50001000)
        self.workspace = FakeCudaArray((1 << 20,), "|u1", 0x60000000)

    def call(self, max_seqlen_q=1000, max_seqlen_k=1000, **changes):
        a = dict(q=self.q, k=self.k, v=self.v, cu_seqlens_q=self.cu_q, cu_seqlens_k=self.cu_k, out=self.out,
                 workspace=self.workspace)
        a.update(changes)
        return hopattn.flash_attn_varlen_func(a.pop("q"), a.pop("k"), a.pop("v"), a.pop("cu_seqlens_q"),
                                              a.pop("cu_seqlens_k"), max_seqlen_q, max_seqlen_k, **a)

    def test_exported(self):
        for name in ("flash_attn_varlen_func", "varlen_workspace_size", "attention_device_check"):
            self.assertIn(name, hopattn.__all__)
            self.assertTrue(callable(getattr(hopattn, name)), name)
        self.assertTrue(_lib.has_varlen(), "this build's library has the 0.4 entry points")

    def test_packed_bytes(self):
        raw, args = self.packed(causal=True, max_seqlen_q=1000, max_seqlen_k=1500)
        self.assertEqual((len(raw), args.struct_size, args.reserved), (776, 776, 0))
        self.assertEqual((args.q.data, args.q.rank, tuple(args.q.shape), tuple(args.q.stride)),
                         (0x10000000, 3, (1300, 8, 128, 0), (1024, 128, 1, 0)))
        self.assertEqual((args.k.rank, tuple(args.k.shape)[:3], args.o.data, args.o.rank), (3, (2000, 2, 128), 0x40000000, 3))
        self.assertEqual((args.lse.data, args.softmax_scale, args.causal), (None, 0.0, 1))
        self.assertEqual((args.window, args.window_left, args.window_right, args.softcap, args.sinks.data), (0, 0, 0, 0.0, None))
        for t, address in ((args.cu_seqlens_q, 0x50000000), (args.cu_seqlens_k, 0x50001000)):
            self.assertEqual((t.data, t.dtype, t.rank, t.shape[0], t.stride[0]), (address, _lib.INT32, 1, 5, 1))
        self.assertEqual((args.seqused_k.data, args.seqused_k.rank), (None, 0))
        self.assertEqual((args.max_seqlen_q, args.max_seqlen_k), (1000, 1500))
        self.assertEqual((args.workspace, args.workspace_bytes), (0x60000000, 1 << 20))
        # LSE (heads_q, total_q), seqused_k, the scale and the options
        lse = FakeCudaArray((8, 1300), "<f4", 0x70000000)
        used = FakeCudaArray((4,), "<i4", 0x50002000)
        sinks = FakeCudaArray((8,), "<f4", 0x50003000)
        raw, args = self.packed(seqused_k=used, softmax_scale=0.125, lse=lse, return_lse=True, window_size=(64, 7),
                                causal=True, softcap=30, sinks=sinks)
        self.assertEqual((args.lse.data, args.lse.dtype, args.lse.rank, tuple(args.lse.shape)[:2], tuple(args.lse.stride)[:2]),
                         (0x70000000, _lib.FP32, 2, (8, 1300), (1300, 1)))
        self.assertEqual((args.seqused_k.data, args.seqused_k.dtype, args.seqused_k.rank, args.seqused_k.shape[0]),
                         (0x50002000, _lib.INT32, 1, 4))
        self.assertEqual((args.softmax_scale, args.causal), (0.125, 1))
        self.assertEqual((args.window, args.window_left, args.window_right, args.softcap, args.sinks.data),
                         (1, 64, 0, 30.0, 0x50003000))  # causal: the right side 0, as flash_attn_func
        raw, args = self.packed(window_size=[None, 3])
        self.assertEqual((args.causal, args.window, args.window_left, args.window_right), (0, 1, -1, 3))

    def test_positional_order_is_flash_attention_3s(self):
        # q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, softmax_scale, causal
        capture = CapturedForward(self)
        used = FakeCudaArray((4,), "<i4", 0x50002000)
        hopattn.flash_attn_varlen_func(self.q, self.k, self.v, self.cu_q, self.cu_k, 1000, 999, None, used, 0.25, True,
                                       out=self.out, workspace=self.workspace)
        (_, args), = capture.args
        self.assertEqual((args.max_seqlen_q, args.max_seqlen_k, args.seqused_k.data, args.softmax_scale, args.causal),
                         (1000, 999, 0x50002000, 0.25, 1))

    def test_python_errors_name_the_argument(self):
        for changes, exc, needle in ((dict(max_seqlen_q=True), TypeError, "max_seqlen_q: an int is required"),
                                     (dict(max_seqlen_k=10.0), TypeError, "max_seqlen_k: an int is required"),
                                     (dict(max_seqlen_q="10"), TypeError, "max_seqlen_q: an int is required"),
                                     (dict(max_seqlen_q=-1), ValueError, "max_seqlen_q: -1"),
                                     (dict(max_seqlen_k=2 ** 31), ValueError, "max_seqlen_k: 2147483648"),
                                     (dict(seqused_q=FakeCudaArray((4,), "<i4", 0x50002000)), hopattn.NotSupportedError,
                                      "seqused_q"),
                                     (dict(window_size=5), TypeError, "window_size: a pair"),
                                     (dict(window_size=(-2, 0)), ValueError, "window_size[0]: -2"),
                                     (dict(softcap="30"), TypeError, "softcap: a float is required"),
                                     (dict(cu_seqlens_k=None), TypeError, "cu_seqlens_k: NoneType"),
                                     (dict(seqused_k=[1, 2, 3, 4]), TypeError, "seqused_k: list"),
                                     (dict(workspace=[0] * 16), TypeError, "workspace: list")):
            with self.subTest(changes=changes):
                self.assertRaisesWith(exc, needle, **changes)

    def test_outputs_and_workspace_are_required_without_torch(self):
        self.assertRaisesWith(TypeError, "out=", out=None)
        with self.assertRaises(TypeError) as cm:
            self.call(workspace=None)
        need = hopattn.varlen_workspace_size(self.q, self.k, self.v, self.cu_q, self.cu_k, 1000, 1000, out=self.out)
        self.assertIn(f"workspace= ({need} bytes", str(cm.exception))
        self.assertRaisesWith(TypeError, "lse=", return_lse=True)

    def test_library_checks_name_the_argument(self):
        """The rules a descriptor shows, checked by the library before it touches the device."""
        for changes, needle in ((dict(cu_seqlens_q=FakeCudaArray((5,), "<f4", 0x50000000)), "cu_seqlens_q"),
                                (dict(cu_seqlens_k=FakeCudaArray((4,), "<i4", 0x50001000)), "cu_seqlens_k"),
                                (dict(cu_seqlens_k=FakeCudaArray((5,), "<i4", 0x50001000, (8,))), "cu_seqlens_k"),
                                (dict(seqused_k=FakeCudaArray((3,), "<i4", 0x50002000)), "seqused_k"),
                                (dict(lse=FakeCudaArray((1300, 8), "<f4", 0x70000000), return_lse=True), "lse"),
                                (dict(lse=FakeCudaArray((1, 8, 1300), "<f4", 0x70000000), return_lse=True), "lse"),
                                (dict(q=bf16((1, 1300, 8, 128), 0x10000000)), "q"),
                                (dict(out=bf16((1300, 4, 128), 0x40000000)), "o"),
                                (dict(k=bf16((2000, 3, 128), 0x20000000), v=bf16((2000, 3, 128), 0x30000000)), "q: heads_q"),
                                (dict(workspace=FakeCudaArray((64,), "|u1", 0x60000000)), "workspace"),
                                (dict(workspace=FakeCudaArray((1 << 20,), "|u1", 0x60000008)), "workspace"),
                                (dict(max_seqlen_q=0), "max_seqlen_q"),
                                (dict(sinks=FakeCudaArray((4,), "<f4", 0x50003000)), "sinks")):
            with self.subTest(changes=changes):
                with self.assertRaises(ValueError) as cm:
                    self.call(**changes)
                self.assertTrue(str(cm.exception).startswith(needle), f"{changes}: {cm.exception}")
        self.assertRaisesWith(hopattn.NotSupportedError, "head dim 96", q=bf16((1300, 8, 96), 0x10000000),
                              k=bf16((2000, 2, 96), 0x20000000), v=bf16((2000, 2, 96), 0x30000000),
                              out=bf16((1300, 8, 96), 0x40000000))

    def test_workspace_size_depends_on_total_q_batch_heads_q_only(self):
        def size(total_q=1300, hq=8, batch=4, hkv=2, total_k=2000, max_q=1000, max_k=1000):
            q = bf16((total_q, hq, 128), 0x10000000)
            kv = bf16((total_k, hkv, 128), 0x20000000)
            cu = FakeCudaArray((batch + 1,), "<i4", 0x50000000)
            return hopattn.varlen_workspace_size(q, kv, bf16((total_k, hkv, 128), 0x30000000), cu,
                                                 FakeCudaArray((batch + 1,), "<i4", 0x50001000), max_q, max_k,
                                                 out=bf16((total_q, hq, 128), 0x40000000))
        base = size()
        self.assertGreater(base, 0)
        self.assertEqual(base % 16, 0)
        for other in (dict(hkv=1), dict(total_k=7), dict(max_q=1), dict(max_k=5000)):
            self.assertEqual(size(**other), base, f"{other}")
        for more in (dict(total_q=5000), dict(hq=16), dict(batch=40)):
            self.assertGreater(size(**more), base, f"{more}")

    def test_a_library_without_varlen_still_loads(self):
        """An older library (no 0.4 entry points): the binding binds it, and the varlen calls raise
        NotSupportedError naming what is missing (the padded calls pass the 0.3 struct such a library
        takes: TestForwardOptions.test_no_option_is_the_0_2_struct)."""
        older = OlderLibrary(_lib.lib)
        self.assertIs(_lib._bind(older), older)
        real = _lib.lib
        self.addCleanup(setattr, _lib, "lib", real)
        _lib.lib = older
        self.assertFalse(_lib.has_varlen())
        for call in (lambda: self.call(), lambda: hopattn.attention_device_check(),
                     lambda: hopattn.varlen_workspace_size(self.q, self.k, self.v, self.cu_q, self.cu_k, 1, 1,
                                                           out=self.out)):
            with self.assertRaises(hopattn.NotSupportedError) as cm:
                call()
            self.assertIn("variable-length", str(cm.exception))
            self.assertIn("0.4", str(cm.exception))


class TestFp8Arguments(CallChecks, unittest.TestCase):
    """flash_attn_func with e4m3 inputs and q/k/v_descale (0.5, FlashAttention-3's convention): the
    bytes it packs (the C entry point replaced by a stand-in), the errors Python raises for what a
    pointer cannot show, the library's argument checks (each naming the argument; they run before
    the device is touched), fp8_quantize's arguments, and a library without the 0.5 entry points."""
    B, SQ, SK, HQ, HKV, D = 2, 100, 300, 8, 2, 128

    def setUp(self):  # a valid e4m3 call's tensors (fake device addresses)
        self.q = e4m3((self.B, self.SQ, self.HQ, self.D), 0x10000000)
        self.k = e4m3((self.B, self.SK, self.HKV, self.D), 0x20000000)
        self.v = e4m3((self.B, self.SK, self.HKV, self.D), 0x30000000)
        self.out = bf16((self.B, self.SQ, self.HQ, self.D), 0x40000000)
        self.qd = f32((self.B, self.HKV), 0x50000000)
        self.kd = f32((self.B, self.HKV), 0x50001000)
        self.vd = f32((self.B, self.HKV), 0x50002000)

    def call(self, causal=True, descales=True, **changes):
        a = dict(q=self.q, k=self.k, v=self.v, out=self.out)
        if descales:
            a.update(q_descale=self.qd, k_descale=self.kd, v_descale=self.vd)
        a.update(changes)
        return hopattn.flash_attn_func(a.pop("q"), a.pop("k"), a.pop("v"), causal=causal, **a)

    def assertDescale(self, t, address, strides=(2, 1)):
        self.assertEqual((t.data, t.dtype, t.rank, tuple(t.shape), tuple(t.stride)),
                         (address, _lib.FP32, 2, (self.B, self.HKV, 0, 0), strides + (0, 0)))

    def test_exported(self):
        self.assertIn("fp8_quantize", hopattn.__all__)
        self.assertTrue(_lib.has_fp8(), "this build's library has the 0.5 entry points")

    def test_packed_bytes_are_the_0_5_struct(self):
        raw, args = self.packed(softmax_scale=0.125, lse=f32((self.B, self.HQ, self.SQ), 0x60000000), return_lse=True)
        self.assertEqual((len(raw), args.struct_size, args.reserved), (1016, 1016, 0))
        self.assertEqual((args.q.data, args.q.dtype, args.q.rank, tuple(args.q.shape), tuple(args.q.stride)),
                         (0x10000000, _lib.E4M3, 4, (2, 100, 8, 128), (102400, 1024, 128, 1)))
        self.assertEqual((args.k.dtype, args.v.dtype, args.v.data, tuple(args.k.shape)), (_lib.E4M3, _lib.E4M3,
                                                                                         0x30000000, (2, 300, 2, 128)))
        self.assertEqual((args.o.data, args.o.dtype), (0x40000000, _lib.BF16))
        self.assertEqual((args.lse.data, args.softmax_scale, args.causal), (0x60000000, 0.125, 1))
        self.assertDescale(args.q_descale, 0x50000000)
        self.assertDescale(args.k_descale, 0x50001000)
        self.assertDescale(args.v_descale, 0x50002000)
        # the fields between: no option (0.3) and a padded batch (0.4), all zero
        self.assertEqual(raw[416:776], bytes(360))

    def test_strided_descales_pass_their_strides(self):
        # a (batch, heads_kv) view of a (heads_kv, batch) array: the library reads any strides
        raw, args = self.packed(k_descale=f32((self.B, self.HKV), 0x50001000, (4, 8)))
        self.assertDescale(args.k_descale, 0x50001000, (1, 2))

    def test_without_descales(self):
        # e4m3 without descales: the 0.5 struct with its descale fields zero (descales of 1)
        raw, args = self.packed(descales=False, causal=False)
        self.assertEqual((args.struct_size, args.causal, args.q.dtype), (1016, 0, _lib.E4M3))
        self.assertEqual(raw[776:], bytes(240))

    def test_16bit_calls_keep_their_struct(self):
        # a 16-bit call still packs the 0.3 struct (an older library takes it): no descale bytes
        q, k = bf16((2, 100, 8, 128), 0x10000000), bf16((2, 300, 2, 128), 0x20000000)
        capture = CapturedForward(self)
        hopattn.flash_attn_func(q, k, bf16((2, 300, 2, 128), 0x30000000), out=self.out)
        (raw, args), = capture.args
        self.assertEqual((len(raw), args.struct_size), (512, 512))

    def test_python_errors_name_the_argument(self):
        for changes, exc, needle in ((dict(q_descale=[1.0, 1.0]), TypeError, "q_descale: list"),
                                     (dict(k_descale=1.0), TypeError, "k_descale: float"),
                                     (dict(v_descale=FakeCudaArray((2, 2), "<f8", 0x50002000)), TypeError,
                                      "v_descale: element type <f8"),
                                     (dict(q_descale=FakeDlpackArray((2, 2), 2, 32, 0x50000000)), None, None)):
            with self.subTest(changes=changes):
                if exc is None:  # a float32 DLPack descale is as good as any
                    capture = CapturedForward(self)
                    self.call(**changes)
                    self.assertDescale(capture.args[0][1].q_descale, 0x50000000)
                    continue
                self.assertRaisesWith(exc, needle, **changes)

    def test_library_checks_name_the_argument(self):
        """The FP8 rules of hopattn.h ("Since 0.5"), checked by the library before it touches the
        device: each error names the argument."""
        for changes, needle in ((dict(q_descale=FakeCudaArray((2, 2), "<f2", 0x50000000)),
                                 "q_descale: dtype must be fp32, got fp16"),
                                (dict(k_descale=f32((2, 8), 0x50001000)),
                                 "k_descale: shape (2, 8) must be (batch, heads_kv) = (2, 2)"),
                                (dict(v_descale=f32((2,), 0x50002000)), "v_descale"),
                                (dict(v_descale=None), "v_descale: null while q_descale is set"),
                                (dict(q_descale=None, k_descale=None), "q_descale: null while v_descale is set"),
                                (dict(q_descale=f32((2, 2), 0x50000002)), "q_descale: data pointer is not 4-byte aligned"),
                                (dict(k_descale=f32((2, 2), 0x40000000)), "o: overlaps input k_descale"),
                                (dict(out=e4m3((2, 100, 8, 128), 0x40000000)), "o: dtype must be bf16 when q is e4m3"),
                                (dict(out=FakeCudaArray((2, 100, 8, 128), "<f2", 0x40000000)),
                                 "o: dtype must be bf16 when q is e4m3, got fp16"),
                                (dict(k=bf16((2, 300, 2, 128), 0x20000000)), "k: dtype bf16 does not match q's e4m3"),
                                (dict(k=e4m3((2, 300, 3, 128), 0x20000000), v=e4m3((2, 300, 3, 128), 0x30000000)),
                                 "heads_q = 8 is not a multiple of heads_kv = 3")):
            with self.subTest(changes=changes):
                self.assertRaisesWith(ValueError, needle, **changes)
        # descales on a 16-bit call: refused, not ignored
        q, k = bf16((2, 100, 8, 128), 0x10000000), bf16((2, 300, 2, 128), 0x20000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.flash_attn_func(q, k, bf16((2, 300, 2, 128), 0x30000000), out=self.out, q_descale=self.qd,
                                    k_descale=self.kd, v_descale=self.vd)
        self.assertIn("q_descale: set, but q is bf16 (descales apply to e4m3 inputs only)", str(cm.exception))

    def test_what_the_fp8_kernels_do_not_take(self):
        for changes, needle in ((dict(window_size=(64, 0)), "window: a sliding window is not supported with e4m3"),
                                (dict(softcap=30.0), "softcap: a logit softcap is not supported with e4m3"),
                                (dict(sinks=f32((8,), 0x50003000)), "sinks: attention sinks is not supported with e4m3"),
                                (dict(q=e4m3((2, 100, 8, 96), 0x10000000), k=e4m3((2, 300, 2, 96), 0x20000000),
                                      v=e4m3((2, 300, 2, 96), 0x30000000), out=bf16((2, 100, 8, 96), 0x40000000)),
                                 "q: head dim 96 is not supported with e4m3 inputs; supported: ")):
            with self.subTest(changes=changes):
                self.assertRaisesWith(hopattn.NotSupportedError, needle, **changes)

    def test_out_is_required_without_torch(self):
        self.assertRaisesWith(TypeError, "out=", out=None)

    def test_fp8_quantize_arguments(self):
        x = bf16((2, 64, 8, 128), 0x10000000)
        out = e4m3((2, 64, 8, 128), 0x20000000)
        seen = []

        def quantize(args, stream):
            seen.append(_lib.Fp8QuantizeArgs.from_buffer_copy(bytes(args._obj)))  # byref(args)
            return _lib.Status()

        real = _lib.lib.hopattn_fp8_quantize
        self.addCleanup(setattr, _lib.lib, "hopattn_fp8_quantize", real)
        _lib.lib.hopattn_fp8_quantize = quantize
        o, d = hopattn.fp8_quantize(x, 2, out=out, descale=f32((2, 2), 0x30000000))
        self.assertIs(o, out)
        a, = seen
        self.assertEqual((a.struct_size, a.reserved, a.hadamard), (256, 0, 0))
        self.assertEqual((a.x.data, a.x.dtype, tuple(a.x.shape)), (0x10000000, _lib.BF16, (2, 64, 8, 128)))
        self.assertEqual((a.out.data, a.out.dtype, tuple(a.out.stride)), (0x20000000, _lib.E4M3, (65536, 1024, 128, 1)))
        self.assertEqual((a.descale.data, a.descale.dtype, tuple(a.descale.shape)[:2]), (0x30000000, _lib.FP32, (2, 2)))
        hopattn.fp8_quantize(x, 2, hadamard=True, out=out, descale=f32((2, 2), 0x30000000))
        self.assertEqual(seen[-1].hadamard, 1)
        with self.assertRaisesRegex(TypeError, "hadamard: expected True or False, got int"):
            hopattn.fp8_quantize(x, 2, hadamard=1, out=out, descale=f32((2, 2), 0x30000000))
        _lib.lib.hopattn_fp8_quantize = real
        # the library's refusal of a head dim the rotation does not take
        x96, out96 = bf16((2, 64, 8, 96), 0x10000000), e4m3((2, 64, 8, 96), 0x20000000)
        with self.assertRaisesRegex(hopattn.NotSupportedError, "hadamard: hdim 96 is not a power of two"):
            hopattn.fp8_quantize(x96, 2, hadamard=True, out=out96, descale=f32((2, 2), 0x30000000))
        for kwargs, exc, needle in ((dict(), TypeError, "out= and descale="),
                                    (dict(heads_kv=0, out=out, descale=f32((2, 2), 0x30000000)), ValueError, "heads_kv: 0"),
                                    (dict(heads_kv=True, out=out, descale=f32((2, 2), 0x30000000)), TypeError,
                                     "heads_kv: an int is required"),
                                    (dict(heads_kv=4, out=out, descale=f32((2, 2), 0x30000000)), ValueError,
                                     "heads_kv: 4 differs from descale's shape[1] = 2"),
                                    (dict(out=out, descale=f32((2, 3), 0x30000000)), ValueError,
                                     "descale.shape[1] (heads_kv) = 3 does not divide x's heads = 8"),
                                    (dict(out=bf16((2, 64, 8, 128), 0x20000000), descale=f32((2, 2), 0x30000000)),
                                     ValueError, "out: dtype must be e4m3, got bf16"),
                                    (dict(out=out, descale=FakeCudaArray((2, 2), "<f2", 0x30000000)), ValueError,
                                     "descale: dtype must be fp32, got fp16"),
                                    (dict(out=out, descale=f32((2, 2), 0x20000000)), ValueError,
                                     "out: overlaps descale in memory")):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(exc) as cm:
                    hopattn.fp8_quantize(x, **kwargs)
                self.assertIn(needle, str(cm.exception))
        with self.assertRaises(hopattn.NotSupportedError) as cm:
            hopattn.fp8_quantize(FakeCudaArray((2, 64, 8, 128), "<f4", 0x10000000), out=out,
                                 descale=f32((2, 2), 0x30000000))
        self.assertIn("x: dtype fp32 is not supported; supported: bf16, fp16", str(cm.exception))

    def test_a_library_without_fp8_still_loads(self):
        """An older library (no 0.5 entry points): the binding binds it, the 16-bit calls go on as
        before, and an e4m3 call or fp8_quantize raises NotSupportedError naming what is missing."""
        older = OlderLibrary(_lib.lib, ("hopattn_fp8_quantize",))
        self.assertIs(_lib._bind(older), older)
        real = _lib.lib
        self.addCleanup(setattr, _lib, "lib", real)
        _lib.lib = older
        self.assertFalse(_lib.has_fp8())
        for call in (lambda: self.call(), lambda: self.call(descales=False),
                     lambda: hopattn.fp8_quantize(bf16((2, 64, 8, 128), 0x10000000), out=e4m3((2, 64, 8, 128), 0x20000000),
                                                  descale=f32((2, 2), 0x30000000))):
            with self.assertRaises(hopattn.NotSupportedError) as cm:
                call()
            self.assertIn("FP8", str(cm.exception))
            self.assertIn("0.5", str(cm.exception))
        q, k = bf16((2, 100, 8, 128), 0x10000000), bf16((2, 300, 2, 128), 0x20000000)
        capture = CapturedForward(self)
        hopattn.flash_attn_func(q, k, bf16((2, 300, 2, 128), 0x30000000), out=self.out)
        self.assertEqual(capture.args[0][1].struct_size, 512)


class TestKvCacheArguments(unittest.TestCase):
    def setUp(self):  # a valid decode call's tensors (fake device addresses): q, k_cache, v_cache, out
        self.q = bf16((4, 1, 32, 128), 0x10000000)
        self.kc = bf16((4, 1024, 8, 128), 0x20000000)
        self.vc = bf16((4, 1024, 8, 128), 0x30000000)
        self.out = bf16((4, 1, 32, 128), 0x40000000)

    def test_seqlens_dtype_and_scales(self):
        q, kc, vc, out = self.q, self.kc, self.vc, self.out
        seqlens_f32 = FakeCudaArray((4,), "<f4", 0x50000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out)
        self.assertIn("cache_seqlens: dtype must be int32", str(cm.exception))
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens, out=out, k_scale=FakeCudaArray((4, 8, 8, 128), "<f4"))
        self.assertIn("give both", str(cm.exception))

    def test_fa3_options_reach_the_library(self):
        """window_size, softcap, sinks (0.4 on this call): Python's own errors for what a value
        cannot be, and the library's checks of the rest, each naming the argument."""
        q, kc, vc, out = self.q, self.kc, self.vc, self.out
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        for options, exc, needle in ((dict(window_size=128), TypeError, "window_size: a pair"),
                                     (dict(window_size=(-2, 0)), ValueError, "window_size[0]: -2"),
                                     (dict(window_size=(0, 2 ** 31)), ValueError, "window_size[1]: 2147483648"),
                                     (dict(softcap="30"), TypeError, "softcap: a float is required"),
                                     (dict(softcap=-1.0), ValueError, "softcap: must be finite and >= 0"),
                                     (dict(softcap=float("nan")), ValueError, "softcap: must be finite and >= 0"),
                                     (dict(softcap=float("inf")), ValueError, "softcap: must be finite and >= 0"),
                                     (dict(sinks=[0.0] * 32), TypeError, "sinks: list"),
                                     (dict(sinks=FakeCudaArray((32,), "<f2", 0x60000000)), ValueError,
                                      "sinks: dtype must be fp32"),
                                     (dict(sinks=FakeCudaArray((8,), "<f4", 0x60000000)), ValueError,
                                      "sinks: shape (8) must be (heads_q) = (32)"),
                                     (dict(sinks=FakeCudaArray((1, 32), "<f4", 0x60000000)), ValueError, "sinks"),
                                     (dict(sinks=FakeCudaArray((32,), "<f4", 0x60000000, (8,))), ValueError,
                                      "sinks.stride[0] = 2"),
                                     (dict(sinks=FakeCudaArray((32,), "<f4", 0x60000002)), ValueError,
                                      "sinks: data pointer is not 4-byte aligned"),
                                     (dict(sinks=FakeCudaArray((32,), "<f4", 0x40000000)), ValueError,
                                      "overlaps input sinks")):
            with self.assertRaises(exc) as cm:
                hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens, out=out, **options)
            self.assertIn(needle, str(cm.exception), f"options {options}")
        # causal: a window's right side must be 0 or -1 (the library's rule, as the forward's) -- but
        # the binding makes it 0 with causal, as FlashAttention does; without causal it passes.
        seqlens_f32 = FakeCudaArray((4,), "<f4", 0x50000000)
        for options in (dict(window_size=(127, 0)), dict(window_size=[-1, 0]), dict(softcap=30.0),
                        dict(sinks=FakeCudaArray((32,), "<f4", 0x60000000)),
                        dict(window_size=(-1, -1), softcap=0.0, sinks=None), dict(window_size=[None, None], softcap=0)):
            # valid options: the library goes on to name the bad cache_seqlens
            with self.assertRaises(ValueError) as cm:
                hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out, causal=True, **options)
            self.assertIn("cache_seqlens: dtype must be int32", str(cm.exception), f"options {options}")

    def test_int8_cache_takes_the_options(self):
        # An int8 cache takes each option (the library runs its int8 options row): valid options
        # pass the argument checks, and the library goes on to name the bad cache_seqlens.
        q, out = self.q, self.out
        kc, vc = FakeCudaArray((4, 1024, 8, 128), "|i1", 0x20000000), FakeCudaArray((4, 1024, 8, 128), "|i1", 0x30000000)
        k_scale = FakeCudaArray((4, 8, 8, 128), "<f4", 0x60000000)
        v_scale = FakeCudaArray((4, 1024, 8), "<f4", 0x70000000)
        seqlens_f32 = FakeCudaArray((4,), "<f4", 0x50000000)
        for options in (dict(window_size=(127, 0)), dict(softcap=30.0), dict(sinks=FakeCudaArray((32,), "<f4", 0x78000000)),
                        dict(window_size=(127, 0), softcap=30.0, sinks=FakeCudaArray((32,), "<f4", 0x78000000))):
            with self.assertRaises(ValueError) as cm:
                hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out, k_scale=k_scale, v_scale=v_scale,
                                                causal=True, **options)
            self.assertIn("cache_seqlens: dtype must be int32", str(cm.exception), f"options {options}")
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        with self.assertRaises(ValueError) as cm:  # and a bad option is still named
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens, out=out, k_scale=k_scale, v_scale=v_scale,
                                            causal=True, softcap=-1.0)
        self.assertIn("softcap", str(cm.exception))

    def test_options_are_packed(self):
        """The bytes the binding passes (hopattn_kvcache_workspace_size and hopattn_kvcache_attention
        replaced by stand-ins that keep them): FlashAttention's window mapping, as flash_attn_func's."""
        seen = []

        def workspace_size(buf, n):
            seen.append(_lib.KvCacheArgs.from_buffer_copy(bytes(buf)))
            return _lib.Status()

        def attention(buf, stream):
            seen.append(_lib.KvCacheArgs.from_buffer_copy(bytes(buf)))
            return _lib.Status()

        for name, stand_in in (("hopattn_kvcache_workspace_size", workspace_size),
                               ("hopattn_kvcache_attention", attention)):
            self.addCleanup(setattr, _lib.lib, name, getattr(_lib.lib, name))
            setattr(_lib.lib, name, stand_in)
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        sinks = FakeCudaArray((32,), "<f4", 0x60000000)

        def packed(causal, **options):
            seen.clear()
            hopattn.flash_attn_with_kvcache(self.q, self.kc, self.vc, seqlens, causal=causal, out=self.out, **options)
            self.assertEqual(len(seen), 2)  # the workspace query and the call: the same options
            a = seen[-1]
            self.assertEqual(a.struct_size, ctypes.sizeof(_lib.KvCacheArgs))
            for f in ("window", "window_left", "window_right", "softcap"):
                self.assertEqual(getattr(seen[0], f), getattr(a, f), f)
            return a

        for window_size, causal, want in (((128, 0), False, (1, 128, 0)), ((128, 0), True, (1, 128, 0)),
                                          ((5, 3), False, (1, 5, 3)), ((64, 7), True, (1, 64, 0)),
                                          ((-1, 7), False, (1, -1, 7)), ((None, 0), False, (1, -1, 0)),
                                          ((0, 0), False, (1, 0, 0)), ((-1, -1), False, (0, 0, 0)),
                                          ([None, None], True, (0, 0, 0))):
            a = packed(causal, window_size=window_size)
            self.assertEqual((a.window, a.window_left, a.window_right), want, f"{window_size} causal {causal}")
            self.assertEqual((a.softcap, a.sinks.data), (0.0, None))
        a = packed(True)  # no option: the fields past page_table stay zero
        self.assertEqual((a.window, a.window_left, a.window_right, a.softcap, a.sinks.data), (0, 0, 0, 0.0, None))
        a = packed(False, window_size=(256, -1), softcap=30, sinks=sinks)
        self.assertEqual((a.window, a.window_left, a.window_right, a.softcap), (1, 256, -1, 30.0))
        self.assertEqual((a.sinks.data, a.sinks.dtype, a.sinks.rank, a.sinks.shape[0], a.sinks.stride[0]),
                         (0x60000000, _lib.FP32, 1, 32, 1))
        self.assertEqual(a.causal, 0)
        # kvcache_workspace_size takes the call's options and packs them as the call does (it once
        # failed with a TypeError for every caller: seen on the device by bench/fa3_kvcache.py).
        for options in (dict(), dict(window_size=(64, 7), softcap=30.0, sinks=sinks), dict(window_size=(None, 3))):
            seen.clear()
            hopattn.kvcache_workspace_size(self.q, self.kc, self.vc, seqlens, causal=True, out=self.out, **options)
            self.assertEqual(len(seen), 1)
            got = seen[0]
            want = packed(True, **options)
            for f in ("window", "window_left", "window_right", "softcap", "causal", "num_splits"):
                self.assertEqual(getattr(got, f), getattr(want, f), f"{f} with {options}")
            self.assertEqual(got.sinks.data, want.sinks.data, f"sinks with {options}")
        self.assertEqual((got.window, got.window_left, got.window_right), (1, -1, 0))  # (None, 3), causal

    def test_quant_block_of_int8_pools(self):
        # The block an int8 call passes: the tails' rows when given (a pool of pages smaller than the
        # block keeps one K scale row per page, so the ratio would read the page size), else the
        # cache's positions over k_scale's blocks.
        from hopattn import ops
        keep = []
        pool = ops._tv(FakeCudaArray((40, 16, 8, 128), "|i1", 0x20000000), "k_cache", keep)
        rows = ops._tv(FakeCudaArray((40, 1, 8, 128), "<f4", 0x30000000), "k_scale", keep)
        tail = ops._tv(bf16((4, 128, 8, 128), 0x40000000), "k_tail", keep)
        self.assertEqual(ops._quant_block(pool, rows, tail), 128)
        self.assertEqual(ops._quant_block(pool, rows), 16)  # the library refuses 16 and names quant_block
        cache = ops._tv(FakeCudaArray((4, 8192, 8, 128), "|i1", 0x20000000), "k_cache", keep)
        blocks = ops._tv(FakeCudaArray((4, 128, 8, 128), "<f4", 0x30000000), "k_scale", keep)
        self.assertEqual(ops._quant_block(cache, blocks), 64)

    def test_page_table_reaches_the_library(self):
        # A paged call's arguments as the C ABI sees them: the pool (num_pages, page_size, ...) and
        # the table are passed through and judged by the library (no GPU needed for these rules).
        q, out = self.q, self.out
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        pool_k, pool_v = bf16((40, 128, 8, 128), 0x20000000), bf16((40, 128, 8, 128), 0x30000000)
        with self.assertRaises(ValueError) as cm:  # the table's dtype
            hopattn.flash_attn_with_kvcache(q, pool_k, pool_v, seqlens, out=out,
                                            page_table=FakeCudaArray((4, 8), "<f4", 0x60000000))
        self.assertIn("page_table: dtype must be int32", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # the table's batch
            hopattn.flash_attn_with_kvcache(q, pool_k, pool_v, seqlens, out=out,
                                            page_table=FakeCudaArray((3, 8), "<i4", 0x60000000))
        self.assertIn("page_table: shape (3, 8) must be (batch, max_pages)", str(cm.exception))
        small_k, small_v = bf16((40, 8, 8, 128), 0x20000000), bf16((40, 8, 8, 128), 0x30000000)
        with self.assertRaises(ValueError) as cm:  # pages of 8 tokens: not a page size
            hopattn.flash_attn_with_kvcache(q, small_k, small_v, seqlens, out=out,
                                            page_table=FakeCudaArray((4, 16), "<i4", 0x60000000))
        self.assertIn("is not a power of two in [16, 256]", str(cm.exception))
        # Appending to a paged cache: the library judges the table there too.
        k_new = bf16((4, 1, 8, 128), 0x70000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.kvcache_append(k_new, k_new, pool_k, pool_v, seqlens,
                                   page_table=FakeCudaArray((4, 8), "<f4", 0x60000000))
        self.assertIn("page_table: dtype must be int32", str(cm.exception))


try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "torch is not installed (the torch ops are registered only with torch)")
class TestTorchOps(unittest.TestCase):
    """The torch ops' schemas and fake implementations (no GPU: FakeTensorMode), tracing with
    torch.compile(fullgraph=True), and the transformers integration's mapping of its options."""
    OPTIONS = "int window_left=-1, int window_right=-1, float softcap=0., Tensor? sinks=None"

    DESCALES = "Tensor? q_descale=None, Tensor? k_descale=None, Tensor? v_descale=None"

    def test_schemas(self):
        for name, ret in (("flash_attn", "Tensor"), ("flash_attn_lse", "(Tensor, Tensor)")):
            schema = str(getattr(torch.ops.hopattn, name).default._schema)
            self.assertEqual(schema, f"hopattn::{name}(Tensor q, Tensor k, Tensor v, float? softmax_scale, bool causal, "
                                     f"{self.OPTIONS}, {self.DESCALES}) -> {ret}")
        schema = str(torch.ops.hopattn.fp8_quantize.default._schema).replace("SymInt", "int")
        self.assertEqual(schema, "hopattn::fp8_quantize(Tensor x, int heads_kv, bool hadamard=False) -> (Tensor, Tensor)")

    def test_fp8_fake_implementations(self):
        """e4m3 q: a bf16 O (FlashAttention-3's convention); fp8_quantize: e4m3 and (batch, heads_kv)."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(2, 17, 8, 128, dtype=torch.float8_e4m3fn, device="cuda")
            k = torch.empty(2, 33, 2, 128, dtype=torch.float8_e4m3fn, device="cuda")
            d = torch.empty(2, 2, dtype=torch.float32, device="cuda")
            o = torch.ops.hopattn.flash_attn(q, k, k, None, True, q_descale=d, k_descale=d, v_descale=d)
            self.assertEqual((o.shape, o.dtype, o.device.type), (q.shape, torch.bfloat16, "cuda"))
            o, lse = torch.ops.hopattn.flash_attn_lse(q, k, k, 0.1, False, -1, -1, 0.0, None, d, d, d)
            self.assertEqual((o.dtype, lse.shape, lse.dtype), (torch.bfloat16, (2, 8, 17), torch.float32))
            o = torch.ops.hopattn.flash_attn(q, k, k, None, False)  # no descales: the same O
            self.assertEqual(o.dtype, torch.bfloat16)
            x = torch.empty(2, 17, 8, 128, dtype=torch.bfloat16, device="cuda")
            x8, xd = torch.ops.hopattn.fp8_quantize(x, 2)
            self.assertEqual((x8.shape, x8.dtype, xd.shape, xd.dtype), (x.shape, torch.float8_e4m3fn, (2, 2),
                                                                       torch.float32))

    def test_fp8_compile_fullgraph_traces_the_descales(self):
        graphs = []

        def backend(gm, example_inputs):  # records the graph; runs nothing (no GPU here)
            graphs.append(gm)
            return lambda *args: (torch.empty(0), torch.empty(0))

        def fn(x, k8, kd):
            q8, qd = hopattn.fp8_quantize(x, heads_kv=2)
            return hopattn.flash_attn_func(q8, k8, k8, causal=True, q_descale=qd, k_descale=kd, v_descale=kd,
                                           return_lse=True)

        x = torch.randn(2, 17, 8, 128, dtype=torch.bfloat16)
        k8 = torch.randn(2, 33, 2, 128).to(torch.float8_e4m3fn)
        torch.compile(fn, fullgraph=True, backend=backend)(x, k8, torch.ones(2, 2))
        calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "hopattn" in str(n.target)]
        self.assertEqual(len(calls), 2, [str(n.target) for n in calls])
        self.assertIn(calls[0].target, (torch.ops.hopattn.fp8_quantize, torch.ops.hopattn.fp8_quantize.default))
        self.assertEqual(calls[0].args[1], 2)
        self.assertIn(calls[1].target, (torch.ops.hopattn.flash_attn_lse, torch.ops.hopattn.flash_attn_lse.default))
        descales = calls[1].args[9:12]
        self.assertEqual(len(descales), 3)
        self.assertTrue(all(d is not None for d in descales), calls[1].args)
        self.assertIs(descales[1], descales[2])  # k_descale and v_descale: the same input

    def test_fp8_cpu_tensors_raise(self):
        q = torch.randn(1, 17, 4, 128).to(torch.float8_e4m3fn)
        with self.assertRaisesRegex(ValueError, "q: is on cpu"):
            hopattn.flash_attn_func(q, q, q, q_descale=torch.ones(1, 4), k_descale=torch.ones(1, 4),
                                    v_descale=torch.ones(1, 4))
        with self.assertRaisesRegex(ValueError, "x: is on cpu"):
            hopattn.fp8_quantize(torch.randn(1, 17, 4, 128, dtype=torch.bfloat16))

    def test_fake_implementations(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(2, 17, 8, 64, dtype=torch.bfloat16, device="cuda")
            k = torch.empty(2, 33, 2, 64, dtype=torch.bfloat16, device="cuda")
            sinks = torch.empty(8, dtype=torch.float32, device="cuda")
            o = torch.ops.hopattn.flash_attn(q, k, k, None, True)  # 0.2's five arguments
            self.assertEqual((o.shape, o.dtype), (q.shape, q.dtype))
            o, lse = torch.ops.hopattn.flash_attn_lse(q, k, k, 0.1, True, 16, -1, 30.0, sinks)
            self.assertEqual((o.shape, lse.shape, lse.dtype), (q.shape, (2, 8, 17), torch.float32))
            o = torch.ops.hopattn.flash_attn(q, k, k, None, False, window_right=4, sinks=sinks)
            self.assertEqual(o.shape, q.shape)

    def test_compile_fullgraph_traces_the_options(self):
        graphs = []

        def backend(gm, example_inputs):  # records the graph; runs nothing (no GPU here)
            graphs.append(gm)
            return lambda *args: (torch.empty(0), torch.empty(0))

        def fn(q, k, sinks):
            return hopattn.flash_attn_func(q, k, k, causal=True, window_size=(64, -1), softcap=30.0, sinks=sinks,
                                           return_lse=True)

        q = torch.randn(2, 17, 8, 64, dtype=torch.bfloat16)
        k = torch.randn(2, 33, 2, 64, dtype=torch.bfloat16)
        torch.compile(fn, fullgraph=True, backend=backend)(q, k, torch.randn(8))
        calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "hopattn" in str(n.target)]
        self.assertEqual(len(calls), 1)
        self.assertIn(calls[0].target, (torch.ops.hopattn.flash_attn_lse, torch.ops.hopattn.flash_attn_lse.default))
        self.assertEqual(calls[0].args[3:8], (None, True, 64, -1, 30.0))

    def test_kvcache_schemas_take_the_options(self):
        for name, ret in (("flash_attn_with_kvcache", "Tensor"), ("flash_attn_with_kvcache_lse", "(Tensor, Tensor)")):
            schema = str(getattr(torch.ops.hopattn, name).default._schema)
            self.assertTrue(schema.endswith(f"bool? pack_gqa, Tensor? page_table=None, {self.OPTIONS}) -> {ret}"), schema)

    def test_kvcache_compile_fullgraph_traces_the_options(self):
        graphs = []

        def backend(gm, example_inputs):  # records the graph; runs nothing (no GPU here)
            graphs.append(gm)
            return lambda *args: (torch.empty(0), torch.empty(0))

        def fn(q, kc, seqlens, sinks):
            return hopattn.flash_attn_with_kvcache(q, kc, kc, seqlens, causal=True, window_size=(64, -1), softcap=30.0,
                                                   sinks=sinks, return_lse=True)

        q = torch.randn(2, 1, 8, 64, dtype=torch.bfloat16)
        kc = torch.randn(2, 256, 2, 64, dtype=torch.bfloat16)
        torch.compile(fn, fullgraph=True, backend=backend)(q, kc, torch.tensor([3, 200], dtype=torch.int32),
                                                           torch.randn(8))
        calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "hopattn" in str(n.target)]
        self.assertEqual(len(calls), 1)
        self.assertIn(calls[0].target, (torch.ops.hopattn.flash_attn_with_kvcache_lse,
                                        torch.ops.hopattn.flash_attn_with_kvcache_lse.default))
        self.assertEqual(calls[0].args[9:16], (True, 0, None, None, 64, -1, 30.0))

    VARLEN = ("Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, SymInt max_seqlen_q, "
              "SymInt max_seqlen_k, Tensor? seqused_k, float? softmax_scale, bool causal, ")

    def test_varlen_schemas(self):
        for name, ret in (("flash_attn_varlen", "Tensor"), ("flash_attn_varlen_lse", "(Tensor, Tensor)")):
            schema = str(getattr(torch.ops.hopattn, name).default._schema)
            # torch prints `int` as SymInt in some versions
            self.assertEqual(schema.replace("SymInt", "int"),
                             f"hopattn::{name}({self.VARLEN.replace('SymInt', 'int')}{self.OPTIONS}) -> {ret}")

    def test_varlen_fake_implementations(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(1300, 8, 64, dtype=torch.bfloat16, device="cuda")
            k = torch.empty(2000, 2, 64, dtype=torch.bfloat16, device="cuda")
            cu = torch.empty(5, dtype=torch.int32, device="cuda")
            sinks = torch.empty(8, dtype=torch.float32, device="cuda")
            o = torch.ops.hopattn.flash_attn_varlen(q, k, k, cu, cu, 1000, 1000, None, None, True)
            self.assertEqual((o.shape, o.dtype, o.device.type), (q.shape, q.dtype, "cuda"))
            o, lse = torch.ops.hopattn.flash_attn_varlen_lse(q, k, k, cu, cu, 1000, 1000, cu[1:], 0.1, True, 16, -1,
                                                             30.0, sinks)
            self.assertEqual((o.shape, lse.shape, lse.dtype, lse.device.type), (q.shape, (8, 1300), torch.float32, "cuda"))

    def test_varlen_compile_fullgraph_traces_the_op(self):
        graphs = []

        def backend(gm, example_inputs):  # records the graph; runs nothing (no GPU here)
            graphs.append(gm)
            return lambda *args: (torch.empty(0), torch.empty(0))

        def fn(q, k, cu_q, cu_k, used, sinks):
            return hopattn.flash_attn_varlen_func(q, k, k, cu_q, cu_k, 100, 300, None, used, causal=True,
                                                  window_size=(64, -1), softcap=30.0, sinks=sinks, return_lse=True)

        q = torch.randn(170, 8, 64, dtype=torch.bfloat16)
        k = torch.randn(400, 2, 64, dtype=torch.bfloat16)
        cu = torch.tensor([0, 70, 170], dtype=torch.int32)
        torch.compile(fn, fullgraph=True, backend=backend)(q, k, cu, cu * 2, cu[1:], torch.randn(8))
        calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "hopattn" in str(n.target)]
        self.assertEqual(len(calls), 1)
        self.assertIn(calls[0].target, (torch.ops.hopattn.flash_attn_varlen_lse,
                                        torch.ops.hopattn.flash_attn_varlen_lse.default))
        self.assertEqual(calls[0].args[5:13], (100, 300, calls[0].args[7], None, True, 64, -1, 30.0))

        graphs.clear()

        def with_out(q, k, cu, out):  # out= under compile: the op's result copied in
            return hopattn.flash_attn_varlen_func(q, k, k, cu, cu, 100, 100, out=out)

        torch.compile(with_out, fullgraph=True, backend=backend)(q, q, cu, torch.empty_like(q))
        targets = [str(n.target) for n in graphs[0].graph.nodes if n.op in ("call_function", "call_method")]
        self.assertTrue(any("flash_attn_varlen" in t for t in targets), targets)
        self.assertTrue(any("copy_" in t for t in targets), targets)

    def test_varlen_cpu_tensors_raise(self):
        q = torch.randn(17, 4, 64, dtype=torch.bfloat16)
        cu = torch.tensor([0, 17], dtype=torch.int32)
        with self.assertRaisesRegex(ValueError, "q: is on cpu"):
            hopattn.flash_attn_varlen_func(q, q, q, cu, cu, 17, 17)
        with self.assertRaisesRegex(ValueError, "q: rank 4"):
            hopattn.flash_attn_varlen_func(q[None], q[None], q[None], cu, cu, 17, 17)

    def test_transformers_options(self):
        import hopattn.integrations.transformers as hop
        seen = []
        real = hopattn.flash_attn_func
        self.addCleanup(setattr, hopattn, "flash_attn_func", real)
        hopattn.flash_attn_func = lambda q, k, v, **kw: (seen.append(kw), q)[1]

        class Module:
            is_causal = True

        x = torch.randn(1, 4, 10, 64, dtype=torch.bfloat16)  # (batch, heads, seqlen, hdim)
        s_aux = torch.randn(4, dtype=torch.bfloat16)
        hop.hopattn_attention_forward(Module(), x, x, x, None, scaling=0.125, sliding_window=128, softcap=50.0,
                                      s_aux=s_aux)
        kw = seen.pop()
        self.assertEqual((kw["softmax_scale"], kw["causal"], kw["window_size"], kw["softcap"]), (0.125, True, (127, 0), 50.0))
        self.assertEqual(kw["sinks"].dtype, torch.float32)
        self.assertTrue(torch.equal(kw["sinks"], s_aux.float()))
        hop.hopattn_attention_forward(Module(), x, x, x, None, is_causal=False, sliding_window=4)
        self.assertEqual(seen.pop()["window_size"], (3, 3))  # bidirectional: |q - k| < W
        hop.hopattn_attention_forward(Module(), x[:, :, :1], x, x, None, sliding_window=4, softcap=None, s_aux=None)
        kw = seen.pop()  # one query (decode): not causal (it sees every key up to it), the window still (W - 1, 0)
        self.assertEqual((kw["causal"], kw["window_size"]), (False, (3, 0)))
        self.assertNotIn("softcap", kw)
        self.assertNotIn("sinks", kw)
        with self.assertRaisesRegex(ValueError, "sliding_window: 0"):
            hop.hopattn_attention_forward(Module(), x, x, x, None, sliding_window=0)



@unittest.skipIf(torch is None, "torch is not installed")
class TestTransformersVarlen(unittest.TestCase):
    """The transformers integration's padded and packed batches, without a GPU: the library's
    flash_attn_varlen_func replaced by a float64 reference over the packed rows, the result
    compared with attention computed row by row on each row's own valid tokens (an independent
    path: no gather, no cu_seqlens), padded rows 0."""

    @staticmethod
    def attend(q, k, v, causal):  # (lq, h, d), (lk, hkv, d): bottom-right causal, GQA
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        s = torch.einsum("qhd,khd->hqk", q, k) / q.shape[-1] ** 0.5
        if causal:
            lq, lk = q.shape[0], k.shape[0]
            i = torch.arange(lq)[:, None]
            j = torch.arange(lk)[None, :]
            s = s.masked_fill(j > i + lk - lq, float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)
        return torch.einsum("hqk,khd->qhd", p, v)

    def setUp(self):
        import hopattn.integrations.transformers as hop
        self.hop = hop
        self.calls = []
        real = hopattn.flash_attn_varlen_func
        self.addCleanup(setattr, hopattn, "flash_attn_varlen_func", real)

        def fake(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=None, causal=False, **kw):
            self.assertEqual((cu_q.dtype, cu_k.dtype), (torch.int32, torch.int32))
            self.assertIsInstance(max_q, int)
            self.calls.append((cu_q.tolist(), cu_k.tolist(), max_q, max_k, causal))
            out = torch.zeros_like(q)
            for b in range(cu_q.numel() - 1):
                q0, q1, k0, k1 = int(cu_q[b]), int(cu_q[b + 1]), int(cu_k[b]), int(cu_k[b + 1])
                self.assertLessEqual(q1 - q0, max_q)
                self.assertLessEqual(k1 - k0, max_k)
                if q1 > q0:
                    out[q0:q1] = self.attend(q[q0:q1], k[k0:k1], v[k0:k1], causal)
            return out
        hopattn.flash_attn_varlen_func = fake

    def run_padded(self, mask, q_len):
        torch.manual_seed(3)
        batch, kv_len = mask.shape
        q = torch.randn(batch, 4, q_len, 16, dtype=torch.float64)  # transformers' (batch, heads, len, hdim)
        k = torch.randn(batch, 2, kv_len, 16, dtype=torch.float64)
        v = torch.randn(batch, 2, kv_len, 16, dtype=torch.float64)

        class Module:
            is_causal = True

        out, _ = self.hop.hopattn_attention_forward(Module(), q, k, v, mask)
        self.assertEqual(tuple(out.shape), (batch, q_len, 4, 16))
        for b in range(batch):
            keys = mask[b].bool().nonzero().flatten()
            rows = torch.arange(q_len) if q_len == 1 else mask[b, -q_len:].bool().nonzero().flatten()
            want = torch.zeros(q_len, 4, 16, dtype=torch.float64)
            if len(rows):
                qb = q[b].transpose(0, 1)[rows]
                kb, vb = k[b].transpose(0, 1)[keys], v[b].transpose(0, 1)[keys]
                want[rows] = self.attend(qb, kb, vb, q_len > 1)
            self.assertTrue(torch.allclose(out[b], want, atol=1e-12), f"row {b}")
        return self.calls.pop()

    def test_left_and_right_padding(self):
        left = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1]])
        cu_q, cu_k, max_q, max_k, causal = self.run_padded(left, 7)
        self.assertEqual((cu_q, cu_k, max_q, max_k, causal), ([0, 5, 12, 14], [0, 5, 12, 14], 7, 7, True))
        right = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]])
        self.assertEqual(self.run_padded(right, 6)[:2], ([0, 3, 9, 10], [0, 3, 9, 10]))

    def test_chunk_and_decode_over_a_padded_cache(self):
        left = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1, 1]])
        cu_q, cu_k, max_q, max_k, _ = self.run_padded(left, 3)  # the last 3 of each row are queries
        self.assertEqual((cu_q, cu_k, max_q, max_k), ([0, 3, 6], [0, 6, 9], 3, 6))
        cu_q, _, max_q, _, causal = self.run_padded(left, 1)  # decode: one query per row
        self.assertEqual((cu_q, max_q, causal), ([0, 1, 2], 1, False))

    def test_packed_by_position_ids_and_by_cu_seq_lens(self):
        torch.manual_seed(5)
        q = torch.randn(1, 4, 9, 16, dtype=torch.float64)
        k = torch.randn(1, 2, 9, 16, dtype=torch.float64)

        class Module:
            is_causal = True

        pos = torch.tensor([[0, 1, 2, 3, 0, 1, 0, 1, 2]])
        out, _ = self.hop.hopattn_attention_forward(Module(), q, k, k, None, position_ids=pos)
        self.assertEqual(self.calls.pop()[:3], ([0, 4, 6, 9], [0, 4, 6, 9], 4))
        qt, kt = q[0].transpose(0, 1), k[0].transpose(0, 1)
        for a, b in ((0, 4), (4, 6), (6, 9)):
            self.assertTrue(torch.allclose(out[0, a:b], self.attend(qt[a:b], kt[a:b], kt[a:b], True), atol=1e-12))
        cu = torch.tensor([0, 2, 9], dtype=torch.int32)
        self.hop.hopattn_attention_forward(Module(), q, k, k, None, cu_seq_lens_q=cu, cu_seq_lens_k=cu,
                                           max_length_q=7, max_length_k=7)
        self.assertEqual(self.calls.pop()[:4], ([0, 2, 9], [0, 2, 9], 7, 7))
        seen = []
        real = hopattn.flash_attn_func
        self.addCleanup(setattr, hopattn, "flash_attn_func", real)
        hopattn.flash_attn_func = lambda q, k, v, **kw: (seen.append(kw), q)[1]
        self.hop.hopattn_attention_forward(Module(), q, k, k, None, position_ids=torch.arange(9)[None])
        self.assertEqual(len(seen), 1)  # one sequence: the padded call, no varlen
        self.assertEqual(self.calls, [])


class TestLayout(unittest.TestCase):
    """hopattn.layout: the layout checker through the C ABI (the same report as the CLI's)."""

    def test_conditions_hold(self):
        r = hopattn.layout("complement(4:2, 24)")
        self.assertTrue(r.holds)
        self.assertIn("result       (2,3):(1,8)", r.text)
        self.assertIn(" 1  |  1 |  9 | 17 |", r.text)
        self.assertNotIn("cute", r.text)

    def test_condition_fails_and_cute_differs(self):
        r = hopattn.layout("complement(4:2, 19)", check=True)
        self.assertFalse(r.holds)
        self.assertIn("4*2 = 8 does not divide M = 19", r.text)
        self.assertIn("cute verdict WRONG", r.text)
        r = hopattn.layout("(8,4):(1,8) / 2:1", check=True)
        self.assertTrue(r.holds)
        self.assertIn("cute verdict RIGHT", str(r))

    def test_malformed_expression_raises_with_the_column(self):
        with self.assertRaisesRegex(ValueError, r"expected ',' or '\)' in a tuple[\s\S]*column 5"):
            hopattn.layout("(6,2:(1,7)")
        with self.assertRaises(TypeError):
            hopattn.layout(b"4:1")

    def test_small_buffer_truncates_and_reports_the_size(self):
        needed = ctypes.c_size_t(0)
        full = hopattn.layout("complement(4:2, 24)").text
        buf = ctypes.create_string_buffer(8)
        code = _lib.lib.hopattn_layout_report(b"complement(4:2, 24)", 0, buf, 8, ctypes.byref(needed))
        self.assertEqual(code, 0)
        self.assertEqual(needed.value, len(full.encode()) + 1)
        self.assertEqual(buf.value.decode(), full[:7])
        self.assertEqual(_lib.lib.hopattn_layout_report(None, 0, None, 0, None), -1)


if __name__ == "__main__":
    unittest.main()
