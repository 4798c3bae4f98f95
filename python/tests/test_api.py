"""The Python binding without a GPU (and without torch): import, version, and argument errors
raised as exceptions with the library's messages. The arrays are stand-ins that expose
__cuda_array_interface__ with fake device addresses; the library checks its argument rules
before touching the device, so a bad argument is reported here exactly as on a GPU machine.
Runs under `python -m unittest` and pytest."""
import ctypes
import os
import re
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


def header_version():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "include", "hopattn", "hopattn.h")) as f:
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
        self.assertEqual(ctypes.sizeof(_lib.AttentionFwdArgs), 8 + 5 * 80 + 8)
        self.assertEqual(ctypes.sizeof(_lib.KvCacheArgs), 8 + 8 * 80 + 20 + 4 + 8 + 8 + 2 * 80)
        self.assertEqual(ctypes.sizeof(_lib.KvCacheQuantizeArgs), 8 + 6 * 80 + 8)
        # The packed layouts the calls use are the same bytes as the Structures.
        from hopattn import ops
        self.assertEqual(ops._FWD.size, ctypes.sizeof(_lib.AttentionFwdArgs))
        self.assertEqual(ops._KV.size, ctypes.sizeof(_lib.KvCacheArgs))
        for field, offset in (("softmax_scale", 408), ("causal", 412)):
            self.assertEqual(getattr(_lib.AttentionFwdArgs, field).offset, offset)
        for field, offset in (("quant_block", 648), ("pack_gqa", 664), ("workspace", 672), ("workspace_bytes", 680),
                              ("k_tail", 688)):
            self.assertEqual(getattr(_lib.KvCacheArgs, field).offset, offset)


class TestForwardArguments(unittest.TestCase):
    def call(self, **changes):
        a = dict(q=bf16((2, 100, 8, 128), 0x10000000), k=bf16((2, 300, 2, 128), 0x20000000),
                 v=bf16((2, 300, 2, 128), 0x30000000), out=bf16((2, 100, 8, 128), 0x40000000))
        a.update(changes)
        return hopattn.flash_attn_func(a["q"], a["k"], a["v"], causal=True, out=a["out"])

    def assertRaisesWith(self, exc, needle, **changes):
        with self.assertRaises(exc) as cm:
            self.call(**changes)
        self.assertIn(needle, str(cm.exception))

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


class TestKvCacheArguments(unittest.TestCase):
    def test_seqlens_dtype_and_scales(self):
        q = bf16((4, 1, 32, 128), 0x10000000)
        kc = bf16((4, 1024, 8, 128), 0x20000000)
        vc = bf16((4, 1024, 8, 128), 0x30000000)
        out = bf16((4, 1, 32, 128), 0x40000000)
        seqlens_f32 = FakeCudaArray((4,), "<f4", 0x50000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out)
        self.assertIn("cache_seqlens: dtype must be int32", str(cm.exception))
        seqlens = FakeCudaArray((4,), "<i4", 0x50000000)
        with self.assertRaises(ValueError) as cm:
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens, out=out, k_scale=FakeCudaArray((4, 8, 8, 128), "<f4"))
        self.assertIn("give both", str(cm.exception))



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
