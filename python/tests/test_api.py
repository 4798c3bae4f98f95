"""The Python binding without a GPU (and without torch): import, version, and argument errors
raised as exceptions with the library's messages. The arrays are stand-ins that expose
__cuda_array_interface__ with fake device addresses; the library checks its argument rules
before touching the device, so a bad argument is reported here exactly as on a GPU machine.
The 0.3 options' bytes are read from a stand-in for the C entry point. With torch importable, the
torch ops' schemas, fake implementations and tracing are checked too (no GPU needed).
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
        self.assertEqual(ctypes.sizeof(_lib.AttentionFwdArgs), 512)  # 0.2's 416 + window..softcap 16 + sinks 80
        self.assertEqual(ctypes.sizeof(_lib.KvCacheArgs), 8 + 8 * 80 + 20 + 4 + 8 + 8 + 2 * 80)
        self.assertEqual(ctypes.sizeof(_lib.KvCacheQuantizeArgs), 8 + 6 * 80 + 8)
        # The packed layouts the calls use are the same bytes as the Structures.
        from hopattn import ops
        self.assertEqual(ops._FWD_SIZE, ctypes.sizeof(_lib.AttentionFwdArgs))
        self.assertEqual(ops._FWD.size, _lib.AttentionFwdArgs.window.offset)  # 0.2's fields, then the options
        self.assertEqual(ops._KV.size, ctypes.sizeof(_lib.KvCacheArgs))
        for field, offset in (("softmax_scale", 408), ("causal", 412), ("window", 416), ("window_left", 420),
                              ("window_right", 424), ("softcap", 428), ("sinks", 432)):
            self.assertEqual(getattr(_lib.AttentionFwdArgs, field).offset, offset, field)
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
        self.args.append((raw, _lib.AttentionFwdArgs.from_buffer_copy(raw)))
        return _lib.Status()


class TestForwardOptions(unittest.TestCase):
    """window_size, softcap, sinks (0.3): the bytes the binding packs, the errors it raises for what
    a pointer cannot show (each naming the argument), and the library's checks of the rest."""
    Q, K, V, OUT = ((2, 100, 8, 128), 0x10000000), ((2, 300, 2, 128), 0x20000000), ((2, 300, 2, 128), 0x30000000), \
        ((2, 100, 8, 128), 0x40000000)

    def call(self, causal=True, **options):
        q, k, v, out = (bf16(*x) for x in (self.Q, self.K, self.V, self.OUT))
        return hopattn.flash_attn_func(q, k, v, causal=causal, out=out, **options)

    def packed(self, causal=True, **options):
        capture = CapturedForward(self)
        self.call(causal=causal, **options)
        (raw, args), = capture.args
        return raw, args

    def assertRaisesWith(self, exc, needle, **options):
        with self.assertRaises(exc) as cm:
            self.call(**options)
        self.assertIn(needle, str(cm.exception), f"options {options}")

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

    def test_fa3_options_not_supported_yet(self):
        q, kc, vc, out = self.q, self.kc, self.vc, self.out
        seqlens_f32 = FakeCudaArray((4,), "<f4", 0x50000000)
        for options, needle in ((dict(window_size=(127, 0)), "window_size: (127, 0)"),
                                (dict(window_size=[-1, 0]), "window_size: (-1, 0)"),
                                (dict(softcap=30.0), "softcap: 30.0"),
                                (dict(sinks=FakeCudaArray((32,), "<f4", 0x60000000)), "sinks:")):
            with self.assertRaises(hopattn.NotSupportedError) as cm:
                hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out, **options)
            self.assertIn(needle, str(cm.exception))
            self.assertIn("flash_attn_with_kvcache", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out, window_size=128)
        self.assertIn("window_size: a pair", str(cm.exception))
        # The defaults, given explicitly, reach the library (which names the bad cache_seqlens).
        for options in (dict(window_size=(-1, -1), softcap=0.0, sinks=None), dict(window_size=[None, None], softcap=0)):
            with self.assertRaises(ValueError) as cm:
                hopattn.flash_attn_with_kvcache(q, kc, vc, seqlens_f32, out=out, **options)
            self.assertIn("cache_seqlens: dtype must be int32", str(cm.exception))


try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "torch is not installed (the torch ops are registered only with torch)")
class TestTorchOps(unittest.TestCase):
    """The torch ops' schemas and fake implementations (no GPU: FakeTensorMode), tracing with
    torch.compile(fullgraph=True), and the transformers integration's mapping of its options."""
    OPTIONS = "int window_left=-1, int window_right=-1, float softcap=0., Tensor? sinks=None"

    def test_schemas(self):
        for name, ret in (("flash_attn", "Tensor"), ("flash_attn_lse", "(Tensor, Tensor)")):
            schema = str(getattr(torch.ops.hopattn, name).default._schema)
            self.assertEqual(schema, f"hopattn::{name}(Tensor q, Tensor k, Tensor v, float? softmax_scale, bool causal, "
                                     f"{self.OPTIONS}) -> {ret}")

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
