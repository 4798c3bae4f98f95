// Every argument rule of the GEMM API, checked without a GPU: each test breaks one rule of an
// otherwise valid call and expects the error that names the argument. Removing a check makes
// its test fail (the call then passes, or fails later with another message).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gemm/device/gemm_problem.hpp"
#include "gemm/device/gemm_registry.hpp"
#include "gemm/gemm.hpp"
#include "gemm/kernel/sm90_gemm_tile_scheduler.hpp"

namespace hopattn::gemm {
namespace {

void* fake_ptr(uintptr_t addr) { return reinterpret_cast<void*>(addr); }

// A valid call: D(100x48, fp32) = 1.5·A(100x64)·B(64x48) + 0.5·C, bf16 inputs, row-major, C
// separate from D. The checks never dereference the pointers: fake addresses far apart.
GemmArgs valid_args() {
  GemmArgs g{};
  g.a = matrix(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 100, 64, true);
  g.b = matrix(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 64, 48, true);
  g.c = matrix(fake_ptr(0x30000000), HOPATTN_DTYPE_FP32, 100, 48, true);
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_FP32, 100, 48, true);
  g.alpha = 1.5f;
  g.beta = 0.5f;
  g.variant = HOPATTN_GEMM_AUTO;
  return g;
}
GemmArgs valid_fp8_args();  // an accepted e4m3 call (defined with the FP8 tests below)

Status check(const GemmArgs& g, GemmDeviceContext ctx = {}) { return check_gemm(g, ctx); }

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_FALSE(s.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message '" << s.message() << "' does not mention '" << needle << "'";
}
void expect_invalid(const GemmArgs& g, const std::string& needle) {
  expect_error(check(g), StatusCode::kInvalidArgument, needle);
}

Tensor* tensor(GemmArgs& g, int i) {
  Tensor* t[4] = {&g.a, &g.b, &g.c, &g.d};
  return t[i];
}

TEST(GemmChecks, ValidCallPasses) {
  const Status s = check(valid_args());
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(GemmChecks, EveryLayoutPasses) {
  for (int la = 0; la < 2; ++la)
    for (int lb = 0; lb < 2; ++lb)
      for (int ld = 0; ld < 2; ++ld) {
        GemmArgs g = valid_args();
        // Column-major A (100x64) needs ld 104 (a multiple of 8 elements) for TMA.
        g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 64, la, la ? 0 : 104);
        g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 64, 48, lb);
        g.c = matrix(g.c.data, HOPATTN_DTYPE_FP32, 100, 48, ld);
        g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, ld);
        const Status s = check(g);
        EXPECT_TRUE(s.ok()) << "layout a=" << la << " b=" << lb << " d=" << ld << ": " << s.to_string();
      }
}

TEST(GemmChecks, BetaZeroIgnoresC) {
  GemmArgs g = valid_args();
  g.beta = 0.0f;
  g.c = Tensor{};  // rank 0, null: never read
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
  g.c.data = fake_ptr(0x40000000);  // even overlapping d
  g.c.rank = 7;
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

TEST(GemmChecks, Rank) {
  const char* names[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    GemmArgs g = valid_args();
    tensor(g, i)->rank = 3;
    expect_invalid(g, std::string(names[i]) + ": rank must be 2, got 3");
  }
}

TEST(GemmChecks, NegativeExtent) {
  GemmArgs g = valid_args();
  g.a.shape[0] = -1;
  expect_invalid(g, "a.shape[0] (M) is negative");
  g = valid_args();
  g.b.shape[1] = -3;
  expect_invalid(g, "b.shape[1] (N) is negative");
}

TEST(GemmChecks, ExtentBeyond32Bits) {
  GemmArgs g = valid_args();
  g.d.shape[0] = int64_t(1) << 31;
  expect_invalid(g, "d.shape[0] (M) = 2147483648 exceeds 2^31-1");
}

TEST(GemmChecks, NegativeStride) {
  GemmArgs g = valid_args();
  g.c.stride[0] = -48;
  expect_invalid(g, "c.stride[0] is negative");
}

TEST(GemmChecks, StrideBeyondTmaLimit) {
  GemmArgs g = valid_args();
  g.a.stride[0] = int64_t(1) << 40;
  expect_invalid(g, "a.stride[0] = 1099511627776 elements is beyond the 2^40-byte stride limit of TMA");
}

TEST(GemmChecks, InputDtypes) {
  GemmArgs g = valid_args();
  g.a.dtype = g.b.dtype = HOPATTN_DTYPE_INT8;
  expect_error(check(g), StatusCode::kNotSupported, "a: dtype int8 is not supported; supported: bf16, fp16, e4m3");
  g.a.dtype = g.b.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check(g), StatusCode::kNotSupported, "a: dtype fp32 is not supported; supported: bf16, fp16");
  g = valid_args();
  g.b.dtype = HOPATTN_DTYPE_FP16;
  expect_invalid(g, "b: dtype fp16 does not match a's bf16");
}

TEST(GemmChecks, OutputDtypes) {
  GemmArgs g = valid_args();
  g.d.dtype = g.c.dtype = HOPATTN_DTYPE_INT8;
  expect_error(check(g), StatusCode::kNotSupported, "d: dtype int8 is not supported");
  g = valid_args();
  g.c.dtype = HOPATTN_DTYPE_BF16;
  expect_invalid(g, "c: dtype bf16 does not match d's fp32");
  for (hopattn_dtype_t t : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP32}) {
    g = valid_args();
    g.d.dtype = g.c.dtype = t;
    EXPECT_TRUE(check(g).ok()) << hopattn_dtype_name(t) << ": " << check(g).to_string();
  }
}

TEST(GemmChecks, Shapes) {
  GemmArgs g = valid_args();
  g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 72, 48, true);
  expect_invalid(g, "b.shape[0] (K) = 72 differs from a.shape[1] (K) = 64");
  g = valid_args();
  g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 40, true);
  expect_invalid(g, "d: shape (100, 40) must be (M, N) = (100, 48)");
  g = valid_args();
  g.c = matrix(g.c.data, HOPATTN_DTYPE_FP32, 99, 48, true);
  expect_invalid(g, "c: shape (99, 48) must be (M, N) = (100, 48)");
}

TEST(GemmChecks, ZeroK) {
  GemmArgs g = valid_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 0, true, 8);
  g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 0, 48, true);
  expect_invalid(g, "K must be at least 1");
}

TEST(GemmChecks, EmptyOutputIsANoOp) {
  GemmArgs g = valid_args();
  g.a = matrix(nullptr, HOPATTN_DTYPE_BF16, 0, 64, true);
  g.c = matrix(nullptr, HOPATTN_DTYPE_FP32, 0, 48, true);
  g.d = matrix(nullptr, HOPATTN_DTYPE_FP32, 0, 48, true);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
  // A variant with no kernel for the dtype (tma_wgmma: never compiled for e4m3): nothing runs, so
  // no kernel is needed.
  GemmArgs f = valid_fp8_args();
  f.a = matrix(nullptr, HOPATTN_DTYPE_E4M3, 0, 64, true);
  f.c = matrix(nullptr, HOPATTN_DTYPE_BF16, 0, 48, true);
  f.d = matrix(nullptr, HOPATTN_DTYPE_BF16, 0, 48, true);
  f.variant = HOPATTN_GEMM_TMA_WGMMA;
  EXPECT_TRUE(check(f).ok()) << check(f).to_string();
}

TEST(GemmChecks, NullPointers) {
  const char* names[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    GemmArgs g = valid_args();
    tensor(g, i)->data = nullptr;
    expect_invalid(g, std::string(names[i]) + ": data pointer is null");
  }
}

TEST(GemmChecks, TmaOperandAlignment) {
  GemmArgs g = valid_args();
  g.a.data = fake_ptr(0x10000008);
  expect_invalid(g, "a: data pointer 0x10000008 is not 16-byte aligned");
  g = valid_args();
  g.b.data = fake_ptr(0x20000002);
  expect_invalid(g, "b: data pointer 0x20000002 is not 16-byte aligned");
}

TEST(GemmChecks, OutputElementAlignment) {
  GemmArgs g = valid_args();
  g.d.data = fake_ptr(0x40000002);  // fp32 needs 4 bytes; 16 are not required of D
  expect_invalid(g, "d: data pointer 0x40000002 is not 4-byte aligned");
  g = valid_args();
  g.c.data = fake_ptr(0x30000001);
  expect_invalid(g, "c: data pointer 0x30000001 is not 4-byte aligned");
  g = valid_args();
  g.d.data = fake_ptr(0x40000004);
  g.c.data = fake_ptr(0x30000004);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

TEST(GemmChecks, NeitherRowNorColumnMajor) {
  GemmArgs g = valid_args();
  g.b.stride[0] = 96, g.b.stride[1] = 2;
  expect_invalid(g, "b: strides (96, 2) are neither row-major");
}

TEST(GemmChecks, LeadingDimensionBelowExtent) {
  GemmArgs g = valid_args();
  g.d.stride[0] = 40;  // rows of 48 elements
  expect_invalid(g, "d.stride[0] = 40 is less than the row length 48");
  g = valid_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 64, false, 96);
  expect_invalid(g, "a.stride[1] = 96 is less than the column length 100");
}

TEST(GemmChecks, TmaLeadingDimension) {
  GemmArgs g = valid_args();
  g.a.stride[0] = 100;  // 200 bytes
  expect_invalid(g, "a.stride[0] = 100 elements (200 bytes) is not a multiple of 16 bytes");
  g = valid_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 64, false);  // packed column-major: ld = M = 100
  expect_invalid(g, "a.stride[1] = 100 elements (200 bytes) is not a multiple of 16 bytes");
  g = valid_args();
  g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 64, 44, true);
  g.c = matrix(g.c.data, HOPATTN_DTYPE_FP32, 100, 44, true);
  g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 44, true);
  expect_invalid(g, "b.stride[0] = 44 elements (88 bytes) is not a multiple of 16 bytes");
  // D is written without TMA: an odd leading dimension is fine there.
  g = valid_args();
  g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, true, 49);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

TEST(GemmChecks, UnusedStrideOfExtentOne) {
  // M = 1: A's row stride never matters, even when it is not a multiple of 16 bytes.
  GemmArgs g = valid_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 1, 64, true, 67);
  g.c = matrix(g.c.data, HOPATTN_DTYPE_FP32, 1, 48, true);
  g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 1, 48, true);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
  const GemmProblem p = make_problem(g);
  EXPECT_EQ(p.lda % 8, 0) << "the unused leading dimension must be replaced by a TMA-legal one";
}

TEST(GemmChecks, OutputAliasing) {
  GemmArgs g = valid_args();
  g.d.data = fake_ptr(0x10000000 + 64);  // inside A
  expect_invalid(g, "d: overlaps input a");
  g = valid_args();
  g.d.data = fake_ptr(0x20000000 + 16);
  expect_invalid(g, "d: overlaps input b");
  g = valid_args();
  g.c.data = fake_ptr(0x40000000 + 16);  // shifted into d
  expect_invalid(g, "c: overlaps d in memory without being the same matrix");
  g = valid_args();
  g.c = g.d;  // in place
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

TEST(GemmChecks, Scalars) {
  GemmArgs g = valid_args();
  g.alpha = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(g, "alpha: must be finite");
  g = valid_args();
  g.beta = std::numeric_limits<float>::infinity();
  expect_invalid(g, "beta: must be finite");
  g = valid_args();
  g.scale_a = 2.0f;
  expect_invalid(g, "scale_a: 2 given for bf16 inputs");
  g = valid_args();
  g.scale_b = 0.5f;
  expect_invalid(g, "scale_b: 0.5 given for bf16 inputs");
  g = valid_args();
  g.scale_a = 1.0f, g.scale_b = 0.0f;
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

TEST(GemmChecks, VariantOutOfRange) {
  GemmArgs g = valid_args();
  g.variant = 12;
  expect_invalid(g, "variant: 12 is out of range; one of auto, tma_wgmma");
  g.variant = -1;
  expect_invalid(g, "variant: -1 is out of range");
}

TEST(GemmChecks, VariantNotCompiled) {
  GemmArgs g = valid_fp8_args();
  g.variant = HOPATTN_GEMM_TMA_WGMMA;  // never compiled for 8-bit operands
  expect_error(check(g), StatusCode::kNotSupported, "variant: tma_wgmma is not compiled for e4m3");
}

TEST(GemmChecks, EveryCompiledVariantAccepted) {
  const std::vector<Variant> vs = compiled_variants(HOPATTN_DTYPE_BF16);
  EXPECT_FALSE(vs.empty()) << "this build compiled no bf16 GEMM kernel";
  for (Variant v : vs) {
    GemmArgs g = valid_args();
    g.variant = v;
    EXPECT_TRUE(check(g).ok()) << variant_name(v) << ": " << check(g).to_string();
  }
}

TEST(GemmChecks, SharedMemoryLimit) {
  GemmDeviceContext ctx;
  ctx.max_smem_per_block = 1024;  // smaller than any kernel's stages
  GemmArgs g = valid_args();
  expect_error(check(g, ctx), StatusCode::kNotSupported, "shared memory");
  for (Variant v : compiled_variants(HOPATTN_DTYPE_BF16)) {
    g.variant = v;
    expect_error(check(g, ctx), StatusCode::kNotSupported, "bytes of shared memory; the device allows 1024");
  }
}

TEST(GemmChecks, DeviceContext) {
  GemmDeviceContext ctx;
  ctx.stream_device = 1;
  expect_error(check(valid_args(), ctx), StatusCode::kInvalidArgument, "stream: belongs to device 1");
  const char* names[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    GemmDeviceContext host;
    host.tensor_device[i] = kHostMemory;
    expect_error(check(valid_args(), host), StatusCode::kInvalidArgument,
                 std::string(names[i]) + ": points to host memory");
    GemmDeviceContext other;
    other.tensor_device[i] = 1;
    expect_error(check(valid_args(), other), StatusCode::kInvalidArgument,
                 std::string(names[i]) + ": lives on device 1 but the current device is 0");
  }
  GemmArgs g = valid_args();
  g.beta = 0.0f;
  GemmDeviceContext host_c;
  host_c.tensor_device[2] = kHostMemory;  // C is not read when beta == 0
  EXPECT_TRUE(check(g, host_c).ok()) << check(g, host_c).to_string();
}

TEST(GemmProblem, LayoutsMapToCompiledMajorness) {
  struct Case {
    bool a_row, b_row;
    Major major_a, major_b;
    bool swapped;
  };
  // A row-major is K-major; B row-major is N-major. (MN, K) runs as the transpose of (K, MN).
  const Case cases[4] = {{true, true, Major::kK, Major::kMN, false},
                         {true, false, Major::kK, Major::kK, false},
                         {false, false, Major::kK, Major::kMN, true},
                         {false, true, Major::kMN, Major::kMN, false}};
  for (const Case& c : cases) {
    GemmArgs g = valid_args();
    g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 64, c.a_row, c.a_row ? 0 : 104);
    g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 64, 48, c.b_row);
    const GemmProblem p = make_problem(g);
    EXPECT_EQ(p.major_a, c.major_a) << "a_row=" << c.a_row << " b_row=" << c.b_row;
    EXPECT_EQ(p.major_b, c.major_b) << "a_row=" << c.a_row << " b_row=" << c.b_row;
    EXPECT_EQ(p.swapped, c.swapped);
    EXPECT_EQ(p.m, c.swapped ? 48 : 100);
    EXPECT_EQ(p.n, c.swapped ? 100 : 48);
    EXPECT_EQ(p.k, 64);
    EXPECT_EQ(p.d_stride_m, c.swapped ? 1 : 48);  // row-major D seen transposed
    EXPECT_EQ(p.d_stride_n, c.swapped ? 48 : 1);
    EXPECT_EQ(p.a, c.swapped ? g.b.data : g.a.data);
  }
}

TEST(GemmApi, VariantNames) {
  Variant v{};
  EXPECT_TRUE(parse_variant("cooperative", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_COOPERATIVE);
  EXPECT_TRUE(parse_variant("4p", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_PINGPONG);
  EXPECT_TRUE(parse_variant("1", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_TMA_WGMMA);
  EXPECT_TRUE(parse_variant("5", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_PERSISTENT);
  EXPECT_STREQ(variant_name(HOPATTN_GEMM_PERSISTENT), "persistent");
  EXPECT_TRUE(parse_variant("split_k", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_SPLIT_K);
  EXPECT_TRUE(parse_variant("6x", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_CLUSTER_2X1);
  EXPECT_TRUE(parse_variant("cluster1x2", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_CLUSTER_1X2);
  EXPECT_TRUE(parse_variant("6y", &v));
  EXPECT_EQ(v, HOPATTN_GEMM_CLUSTER_1X2);
  EXPECT_FALSE(parse_variant("fastest", &v));
  EXPECT_STREQ(variant_name(HOPATTN_GEMM_PIPELINED), "pipelined");
  EXPECT_EQ(variant_name(HOPATTN_GEMM_VARIANT_COUNT), nullptr);
  EXPECT_STREQ(hopattn_gemm_variant_name(HOPATTN_GEMM_AUTO), "auto");
}

bool compiled(Variant v) {
  for (Variant x : compiled_variants(HOPATTN_DTYPE_BF16)) {
    if (x == v) return true;
  }
  return false;
}

// The persistent variant stores D with TMA: D's pointer and leading dimension must be multiples
// of 16 bytes; can_implement says which stride breaks it. AUTO then runs another variant.
TEST(GemmChecks, PersistentNeedsTmaStorableD) {
  GemmArgs g = valid_args();  // D fp32 100x48 row-major, ld 48 (192 bytes)
  g.variant = HOPATTN_GEMM_PERSISTENT;
  if (!compiled(HOPATTN_GEMM_PERSISTENT)) {  // a reduced build (HOPATTN_GEMM_VARIANTS): reported, not run
    expect_error(check(g), StatusCode::kNotSupported, "variant: persistent is not compiled for bf16");
    return;
  }
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();

  g.c = g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, true, 49);  // 196 bytes
  expect_error(check(g), StatusCode::kNotSupported,
               "variant: persistent_bf16_kmn stores D with TMA: d.stride[0] = 49 elements (196 bytes) is not a "
               "multiple of 16 bytes; pad d's leading dimension to a multiple of 4 elements");
  g.variant = HOPATTN_GEMM_AUTO;
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();

  g = valid_args();
  g.variant = HOPATTN_GEMM_PERSISTENT;
  g.c = g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, false, 101);  // column-major, 404 bytes
  expect_error(check(g), StatusCode::kNotSupported, "d.stride[1] = 101 elements (404 bytes)");
  g.c = g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, false, 104);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();

  g = valid_args();
  g.variant = HOPATTN_GEMM_PERSISTENT;
  g.d = matrix(fake_ptr(0x40000004), HOPATTN_DTYPE_FP32, 100, 48, true);  // 4-byte aligned: fine for fp32 elsewhere
  expect_error(check(g), StatusCode::kNotSupported, "d's data pointer 0x40000004 is not 16-byte aligned");

  // The transposed problem (A and B column-major) names the caller's stride, not the swapped one.
  g = valid_args();
  g.variant = HOPATTN_GEMM_PERSISTENT;
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 100, 64, false, 104);
  g.b = matrix(g.b.data, HOPATTN_DTYPE_BF16, 64, 48, false);
  g.c = g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 100, 48, true, 49);
  expect_error(check(g), StatusCode::kNotSupported, "d.stride[0] = 49 elements");

  // A stride of an extent-1 dimension is never used: a single row takes any leading dimension.
  g = valid_args();
  g.variant = HOPATTN_GEMM_PERSISTENT;
  g.a = matrix(g.a.data, HOPATTN_DTYPE_BF16, 1, 64, true);
  g.c = g.d = matrix(g.d.data, HOPATTN_DTYPE_FP32, 1, 48, true, 49);
  EXPECT_TRUE(check(g).ok()) << check(g).to_string();
}

// AUTO: persistent from half a wave of 128x256 tiles on (the SM count is the context's), unless
// D cannot be TMA-stored; 128x128 tiles below.
TEST(GemmHeuristic, PersistentForLargeProblems) {
  GemmDeviceContext ctx;
  ctx.sm_count = 132;
  GemmArgs g{};
  g.a = matrix(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 4096, 4096, true);
  g.b = matrix(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 4096, 4096, true);
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 4096, 4096, true);
  g.alpha = 1.0f;
  std::string why;
  if (!compiled(HOPATTN_GEMM_PERSISTENT)) {
    // A reduced build: auto falls back to a variant that was compiled.
    EXPECT_TRUE(compiled(select_variant(g, ctx, &why))) << why;
    return;
  }
  EXPECT_EQ(select_variant(g, ctx, &why), HOPATTN_GEMM_PERSISTENT) << why;
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 4096, 4096, true, 4099);  // not TMA-storable
  // cooperative where it was compiled (HOPATTN_BUILD_ABLATIONS), else warp_specialized.
  const Variant fallback =
      compiled(HOPATTN_GEMM_COOPERATIVE) ? HOPATTN_GEMM_COOPERATIVE : HOPATTN_GEMM_WARP_SPECIALIZED;
  if (compiled(fallback)) EXPECT_EQ(select_variant(g, ctx, &why), fallback) << why;
  else EXPECT_TRUE(compiled(select_variant(g, ctx, &why))) << why;
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 4096, 4096, true);
  ctx.sm_count = 1024;  // 512 tiles: exactly half a wave
  EXPECT_EQ(select_variant(g, ctx, &why), HOPATTN_GEMM_PERSISTENT) << why;
  ctx.sm_count = 1026;  // 512 tiles are less than half a wave
  EXPECT_NE(select_variant(g, ctx, &why), HOPATTN_GEMM_PERSISTENT) << why;
}

// AUTO: split_k for few tiles and a long K (1024 x 1024 x 8192: 32 tiles on 132 SMs), not for
// a short K; the split count fills the SMs without exceeding them.
TEST(GemmHeuristic, SplitKForFewTilesAndLongK) {
  GemmDeviceContext ctx;
  ctx.sm_count = 132;
  GemmArgs g{};
  g.a = matrix(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 1024, 8192, true);
  g.b = matrix(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 8192, 1024, false);
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 1024, 1024, true);
  g.alpha = 1.0f;
  std::string why;
  if (!compiled(HOPATTN_GEMM_SPLIT_K)) {  // a reduced build: auto falls back to a compiled variant
    EXPECT_TRUE(compiled(select_variant(g, ctx, &why))) << why;
    return;
  }
  EXPECT_EQ(select_variant(g, ctx, &why), HOPATTN_GEMM_SPLIT_K) << why;
  g.a = matrix(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 1024, 1024, true);
  g.b = matrix(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 1024, 1024, false);
  EXPECT_NE(select_variant(g, ctx, &why), HOPATTN_GEMM_SPLIT_K) << why;
}

// The persistent tile order visits every tile exactly once, keeps groups of 8 tile-rows (or
// tile-columns when N > M) together, and a narrower last group stays in range.
TEST(GemmTileScheduler, GroupedOrderIsAPermutation) {
  const int shapes[][2] = {{8192, 8192}, {1000, 129}, {129, 1000}, {3001, 4999}, {128, 256}, {1, 1}, {4096, 1024}};
  for (const auto& sh : shapes) {
    const GroupedTileScheduler s = GroupedTileScheduler::make(sh[0], sh[1], 128, 256, 8);
    EXPECT_EQ(s.along_m, !(sh[1] > sh[0]));
    std::vector<int> seen(size_t(s.tiles()), 0);
    for (int i = 0; i < s.tiles(); ++i) {
      int m = -1, n = -1;
      s.tile(i, &m, &n);
      ASSERT_TRUE(m >= 0 && m < s.tiles_m && n >= 0 && n < s.tiles_n)
          << "m=" << sh[0] << " n=" << sh[1] << " tile " << i << " -> (" << m << ", " << n << ")";
      ++seen[size_t(m * s.tiles_n + n)];
      const int grouped = s.along_m ? m : n, other_extent = s.along_m ? s.tiles_n : s.tiles_m;
      EXPECT_EQ(grouped / 8, i / (8 * other_extent)) << "tile " << i << " left its group";
    }
    for (int t = 0; t < s.tiles(); ++t) EXPECT_EQ(seen[size_t(t)], 1) << "m=" << sh[0] << " n=" << sh[1] << " tile " << t;
  }
  // 8192^2: the first 132 tiles (one wave) touch 8 tile-rows and 17 tile-columns.
  const GroupedTileScheduler s = GroupedTileScheduler::make(8192, 8192, 128, 256, 8);
  int max_m = 0, max_n = 0;
  for (int i = 0; i < 132; ++i) {
    int m, n;
    s.tile(i, &m, &n);
    max_m = std::max(max_m, m), max_n = std::max(max_n, n);
  }
  EXPECT_EQ(max_m, 7);
  EXPECT_EQ(max_n, 16);
}

// ---- e4m3 ----------------------------------------------------------------------------------------

// A valid FP8 call: D(100x48, bf16) = 1.5·0.5·3·A(100x64)·B(64x48) + 0.5·C, A row-major and B
// column-major (both K-major), leading dimensions 64 (64 bytes).
GemmArgs valid_fp8_args() {
  GemmArgs g{};
  g.a = matrix(fake_ptr(0x10000000), HOPATTN_DTYPE_E4M3, 100, 64, true);
  g.b = matrix(fake_ptr(0x20000000), HOPATTN_DTYPE_E4M3, 64, 48, false);
  g.c = matrix(fake_ptr(0x30000000), HOPATTN_DTYPE_BF16, 100, 48, true);
  g.d = matrix(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 100, 48, true);
  g.alpha = 1.5f, g.beta = 0.5f;
  g.scale_a = 0.5f, g.scale_b = 3.0f;
  g.variant = HOPATTN_GEMM_AUTO;
  return g;
}

bool fp8_compiled() { return !compiled_variants(HOPATTN_DTYPE_E4M3).empty(); }

// Passes every argument rule; then, with no e4m3 kernel in this build, the variant check names
// the dtype (that message proves the argument rules before it passed).
void expect_fp8_accepted(const GemmArgs& g, const std::string& what) {
  const Status s = check(g);
  if (fp8_compiled()) {
    EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kNotSupported) << what << ": " << s.to_string();
    EXPECT_NE(s.message().find("variant: auto found no kernel for e4m3"), std::string::npos) << what << ": " << s.to_string();
  }
}

TEST(GemmChecksE4m3, ValidCallPasses) {
  expect_fp8_accepted(valid_fp8_args(), "valid call");
  for (hopattn_dtype_t out : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP32}) {
    GemmArgs g = valid_fp8_args();
    g.c.dtype = g.d.dtype = out;
    expect_fp8_accepted(g, hopattn_dtype_name(out));
  }
  GemmArgs g = valid_fp8_args();
  g.d = matrix(g.d.data, HOPATTN_DTYPE_BF16, 100, 48, false, 104);  // column-major D
  g.c = g.d;
  expect_fp8_accepted(g, "column-major D, in place");
}

TEST(GemmChecksE4m3, OperandsMustBeKMajor) {
  GemmArgs g = valid_fp8_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 100, 64, false, 112);  // column-major A: M-major
  expect_error(check(g), StatusCode::kNotSupported, "a: e4m3 operands must be K-major (a row-major, stride[1] == 1)");
  g = valid_fp8_args();
  g.b = matrix(g.b.data, HOPATTN_DTYPE_E4M3, 64, 48, true);  // row-major B: N-major
  expect_error(check(g), StatusCode::kNotSupported,
               "b: e4m3 operands must be K-major (b column-major, stride[0] == 1); got strides (48, 1)");
  g = valid_fp8_args();  // both column-major: the 16-bit path would run the transpose; e4m3 cannot
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 100, 64, false, 112);
  expect_error(check(g), StatusCode::kNotSupported, "a: e4m3 operands must be K-major");
  g = valid_fp8_args();  // M = 1: A's row stride is unused, the vector is K-contiguous either way
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 1, 64, true, 67);
  g.c = matrix(g.c.data, HOPATTN_DTYPE_BF16, 1, 48, true);
  g.d = matrix(g.d.data, HOPATTN_DTYPE_BF16, 1, 48, true);
  expect_fp8_accepted(g, "M = 1");
}

TEST(GemmChecksE4m3, LeadingDimensionsOf16Elements) {
  GemmArgs g = valid_fp8_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 100, 1000, true);  // K = 1000, packed: 1000 bytes
  g.b = matrix(g.b.data, HOPATTN_DTYPE_E4M3, 1000, 48, false, 1008);
  expect_invalid(g, "a.stride[0] = 1000 elements (1000 bytes) is not a multiple of 16 bytes, which TMA needs: pad the "
                    "leading dimension to a multiple of 16 elements");
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 100, 1000, true, 1008);
  g.b = matrix(g.b.data, HOPATTN_DTYPE_E4M3, 1000, 48, false);
  expect_invalid(g, "b.stride[1] = 1000 elements (1000 bytes) is not a multiple of 16 bytes");
  g.b = matrix(g.b.data, HOPATTN_DTYPE_E4M3, 1000, 48, false, 1008);
  expect_fp8_accepted(g, "K = 1000 padded to 1008");
  g = valid_fp8_args();
  g.a = matrix(g.a.data, HOPATTN_DTYPE_E4M3, 100, 24, true);  // 24 bytes: 8-element padding is not enough
  g.b = matrix(g.b.data, HOPATTN_DTYPE_E4M3, 24, 48, false, 32);
  expect_invalid(g, "a.stride[0] = 24 elements (24 bytes) is not a multiple of 16 bytes");
  g = valid_fp8_args();
  g.b.data = fake_ptr(0x20000008);
  expect_invalid(g, "b: data pointer 0x20000008 is not 16-byte aligned");
}

TEST(GemmChecksE4m3, Types) {
  GemmArgs g = valid_fp8_args();
  g.b.dtype = HOPATTN_DTYPE_BF16;
  expect_invalid(g, "b: dtype bf16 does not match a's e4m3");
  g = valid_fp8_args();
  g.c.dtype = g.d.dtype = HOPATTN_DTYPE_E4M3;
  expect_error(check(g), StatusCode::kNotSupported, "d: dtype e4m3 is not supported; supported: bf16, fp16, fp32");
}

TEST(GemmChecksE4m3, Scales) {
  GemmArgs g = valid_fp8_args();
  g.scale_a = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(g, "scale_a: must be finite");
  g = valid_fp8_args();
  g.scale_b = -std::numeric_limits<float>::infinity();
  expect_invalid(g, "scale_b: must be finite");
  g = valid_fp8_args();
  g.alpha = 1e30f, g.scale_a = 1e10f;
  expect_invalid(g, "alpha·scale_a·scale_b = ");
  g = valid_fp8_args();
  g.scale_a = -2.0f, g.scale_b = 0.25f;  // any finite scale, negative too
  expect_fp8_accepted(g, "negative scale");
  // Folded into the kernels' alpha; 0 reads as 1; beta untouched.
  EXPECT_EQ(make_problem(valid_fp8_args()).alpha, 1.5f * 0.5f * 3.0f);
  EXPECT_EQ(make_problem(valid_fp8_args()).beta, 0.5f);
  g = valid_fp8_args();
  g.scale_a = 0.0f, g.scale_b = 0.0f;
  EXPECT_EQ(make_problem(g).alpha, 1.5f);
  g.scale_b = 3.0f;
  EXPECT_EQ(make_problem(g).alpha, 4.5f);
  // 16-bit inputs: unchanged rules, the scales never enter alpha.
  GemmArgs h = valid_args();
  h.scale_a = 1.0f;
  EXPECT_EQ(make_problem(h).alpha, h.alpha);
}

TEST(GemmChecksE4m3, ProblemIsKk) {
  const GemmProblem p = make_problem(valid_fp8_args());
  EXPECT_EQ(p.dtype, HOPATTN_DTYPE_E4M3);
  EXPECT_EQ(p.major_a, Major::kK);
  EXPECT_EQ(p.major_b, Major::kK);
  EXPECT_FALSE(p.swapped);
  EXPECT_EQ(p.lda, 64);
  EXPECT_EQ(p.ldb, 64);
  EXPECT_EQ(p.m, 100);
  EXPECT_EQ(p.n, 48);
}

// Only kk instances exist for e4m3, for the variants CMake lists (persistent, cluster2x1,
// cluster1x2, split_k): every other variant is reported as not compiled, with the compiled list.
TEST(GemmChecksE4m3, VariantsNotCompiledAreReported) {
  const std::vector<Variant> compiled = compiled_variants(HOPATTN_DTYPE_E4M3);
  for (const GemmInstance& i : compiled_instances())
    if (i.dtype == HOPATTN_DTYPE_E4M3) {
      EXPECT_TRUE(i.variant == HOPATTN_GEMM_PERSISTENT || i.variant == HOPATTN_GEMM_CLUSTER_2X1 ||
                  i.variant == HOPATTN_GEMM_CLUSTER_1X2 || i.variant == HOPATTN_GEMM_SPLIT_K)
          << i.name;
      EXPECT_TRUE(i.major_a == Major::kK && i.major_b == Major::kK) << i.name;
    }
  for (int v = 1; v < HOPATTN_GEMM_VARIANT_COUNT; ++v) {
    GemmArgs g = valid_fp8_args();
    g.variant = v;
    bool is_compiled = false;
    for (Variant x : compiled) is_compiled |= x == v;
    if (is_compiled) {
      EXPECT_TRUE(check(g).ok()) << variant_name(v) << ": " << check(g).to_string();
    } else {
      expect_error(check(g), StatusCode::kNotSupported,
                   std::string("variant: ") + variant_name(v) + " is not compiled for e4m3 in this build; compiled: ");
    }
  }
}

// persistent and the cluster variants store D with TMA, and auto takes the e4m3 split_k only for K >= 2048:
// for this short-K problem an unaligned D leaves auto with nothing to run, and the message says
// why (a build without e4m3 kernels says that instead).
TEST(GemmChecksE4m3, NeedsTmaStorableD) {
  GemmArgs g = valid_fp8_args();
  g.d = matrix(g.d.data, HOPATTN_DTYPE_BF16, 100, 48, true, 49);
  g.beta = 0.0f;
  if (!fp8_compiled()) {
    expect_error(check(g), StatusCode::kNotSupported, "variant: auto found no kernel for e4m3");
    return;
  }
  expect_error(check(g), StatusCode::kNotSupported, "stores D with TMA: d.stride[0] = 49 elements (98 bytes)");
}

TEST(GemmApi, CAbiNullArgs) {
  const hopattn_status_t s = hopattn_gemm_check(nullptr, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("args: null pointer"), std::string::npos) << s.message;
  const hopattn_tensor_t t = hopattn_matrix(nullptr, HOPATTN_DTYPE_FP16, 5, 7, 0, 8);
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.stride[0], 1);
  EXPECT_EQ(t.stride[1], 8);
}

}  // namespace
}  // namespace hopattn::gemm
