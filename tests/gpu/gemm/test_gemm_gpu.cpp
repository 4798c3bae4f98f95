// GEMM on the GPU, every compiled variant: D = alpha·A·B + beta·C against an fp64 host
// reference (small problems) or cuBLAS (large ones), with residue tiles, all four A/B layouts,
// row- and column-major D, bf16/fp16 inputs, bf16/fp16/fp32 outputs and alpha/beta cases. The
// cuBLAS reference is computed with an fp32 output (cuBLAS may reduce a 16-bit output in that type).
// D is NaN-poisoned before each run and lives in padded storage: every element must be
// written, and no padding element may be. With beta == 0, C is NaN-filled: it must not be read.
// D's padding is odd (ld = extent + 3) or, for the persistent variant's TMA store and where a
// case asks for it, 16-byte aligned (ld = extent rounded up to 8, + 8).
// FP8 (e4m3, at the end): K-major operands generated on the host as e4m3 codes (exact decoded
// values, never 0) with NaN codes in their K padding, against an fp64 reference with the FP8
// accumulation bound of gemm_reference.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "device_utils.hpp"
#include "gemm/gemm.hpp"
#include "baselines/cublas_gemm.hpp"
#include "e4m3.hpp"
#include "gemm_reference.hpp"
#include "gpu_test.hpp"

namespace hopattn::gemm {
namespace {

using reference::DeviceBuffer;

struct Case {
  int m = 128, n = 128, k = 64;
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16, out = HOPATTN_DTYPE_BF16;
  bool a_row = true, b_row = true, d_row = true;
  float alpha = 1.0f, beta = 0.0f;
  bool c_in_place = false;  // c is d itself
  bool d_aligned = false;   // D's leading dimension a multiple of 16 bytes (always for persistent)
  Variant variant = HOPATTN_GEMM_AUTO;
  uint64_t seed = 1;

  std::string str() const {
    std::ostringstream os;
    os << "variant=" << variant_name(variant) << " m=" << m << " n=" << n << " k=" << k << " dtype="
       << hopattn_dtype_name(dtype) << " out=" << hopattn_dtype_name(out) << " layout=" << (a_row ? 'r' : 'c')
       << (b_row ? 'r' : 'c') << (d_row ? 'r' : 'c') << " alpha=" << alpha << " beta=" << beta
       << (c_in_place ? " c=d" : "") << (d_aligned ? " d_ld=aligned" : "");
    return os.str();
  }
};

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// A matrix in device memory with a leading dimension padded beyond its extent.
struct DeviceMatrix {
  DeviceBuffer buf;
  Tensor t{};
  DeviceMatrix(hopattn_dtype_t dtype, int64_t rows, int64_t cols, bool row_major, int64_t ld) {
    t = matrix(nullptr, dtype, rows, cols, row_major, ld);
    const int64_t elements = (row_major ? rows : cols) * ld;
    buf = DeviceBuffer(size_t(std::max<int64_t>(elements, 1)) * dtype_bytes(dtype));
    t.data = buf.get();
  }
  int64_t storage() const { return int64_t(buf.bytes() / dtype_bytes(t.dtype)); }
  static size_t dtype_bytes(hopattn_dtype_t d) { return d == HOPATTN_DTYPE_FP32 ? 4 : 2; }
};

// TMA operands: leading dimension a multiple of 8 elements (16 bytes). D and C: odd padding, so
// that a write past the row end lands on a poisoned element; where D is TMA-stored, 8 elements
// (16 or 32 bytes) past the rounded-up extent, so that the padding is still there to be checked.
int64_t operand_ld(int64_t contiguous) { return round_up(contiguous, 8); }
int64_t output_ld(int64_t contiguous, bool aligned) { return aligned ? round_up(contiguous, 8) + 8 : contiguous + 3; }

// Runs one case; returns "" on success, else what broke.
std::string run_case(const Case& c, tools::CublasGemm* cublas) {
  DeviceMatrix a(c.dtype, c.m, c.k, c.a_row, operand_ld(c.a_row ? c.k : c.m));
  DeviceMatrix b(c.dtype, c.k, c.n, c.b_row, operand_ld(c.b_row ? c.n : c.k));
  const bool aligned = c.d_aligned || c.variant == HOPATTN_GEMM_PERSISTENT || c.variant == HOPATTN_GEMM_CLUSTER_2X1 ||
                       c.variant == HOPATTN_GEMM_CLUSTER_1X2;  // TMA-stored D
  DeviceMatrix d(c.out, c.m, c.n, c.d_row, output_ld(c.d_row ? c.n : c.m, aligned));
  DeviceMatrix cm(c.out, c.m, c.n, c.d_row, output_ld(c.d_row ? c.n : c.m, aligned));
  reference::fill_normal(a.t.data, c.dtype, a.storage(), c.seed * 4 + 0, 1.0f);
  reference::fill_normal(b.t.data, c.dtype, b.storage(), c.seed * 4 + 1, 1.0f);
  reference::fill_nan(d.t.data, DeviceMatrix::dtype_bytes(c.out), d.storage());
  if (c.beta != 0.0f) {
    reference::fill_normal(c.c_in_place ? d.t.data : cm.t.data, c.out, d.storage(), c.seed * 4 + 2, 1.0f);
  } else {
    reference::fill_nan(cm.t.data, DeviceMatrix::dtype_bytes(c.out), cm.storage());  // must not be read
  }
  GemmArgs args{};
  args.a = a.t, args.b = b.t, args.d = d.t;
  args.c = c.c_in_place ? d.t : cm.t;
  args.alpha = c.alpha, args.beta = c.beta;
  args.variant = c.variant;
  // The inputs of the check: C as it is before the run (D itself when in place).
  const bool small = int64_t(c.m) * c.n * c.k <= (int64_t(1) << 25);
  tools::HostMatrix host_c;
  if (c.beta != 0.0f) host_c = tools::download_matrix(args.c);

  const Status s = gemm(args, nullptr);
  if (!s.ok()) return "gemm failed: " + s.to_string();
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());

  const tools::HostMatrix got = tools::download_matrix(d.t);
  // Padding untouched: every storage element outside the matrix is still NaN (D not in place).
  if (!c.c_in_place) {
    const std::vector<float> raw = reference::download_as_float(d.t.data, c.out, d.storage());
    const int64_t ld = c.d_row ? d.t.stride[0] : d.t.stride[1], run = c.d_row ? c.n : c.m;
    for (int64_t e = 0; e < int64_t(raw.size()); ++e)
      if (e % ld >= run && !std::isnan(raw[size_t(e)]))
        return "padding element " + std::to_string(e) + " of D was written";
  }
  if (small) {
    const tools::Reference ref = tools::reference_gemm(tools::download_matrix(a.t), tools::download_matrix(b.t),
                                                       c.beta != 0.0f ? &host_c : nullptr, c.alpha, c.beta);
    return tools::compare_with_reference(got, ref, c.out);
  }
  // cuBLAS's alpha·A·B in fp32 (a bf16 or fp16 cuBLAS output may be reduced in that type, far
  // less accurate than ours: cublas_gemm.hpp), plus beta·C on the host.
  DeviceBuffer product(size_t(c.m) * size_t(c.n) * sizeof(float));
  reference::fill_nan(product.get(), sizeof(float), int64_t(c.m) * c.n);
  const Status ls = cublas->product_fp32(args, static_cast<float*>(product.get()), nullptr);
  if (!ls.ok()) return "cuBLAS failed: " + ls.to_string();
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  const tools::HostMatrix lib = tools::download_matrix(matrix(product.get(), HOPATTN_DTYPE_FP32, c.m, c.n, true));
  const double scale = std::fabs(c.alpha) + std::fabs(c.beta);
  return tools::compare_with_library(got, lib, c.beta != 0.0f ? &host_c : nullptr, c.beta, c.k, scale, c.out);
}

// A variant this build compiled for `dtype`; AUTO when some variant is (fp16 inputs are opt-in:
// HOPATTN_GEMM_DTYPES).
bool is_compiled(Variant v, hopattn_dtype_t dtype) {
  const std::vector<Variant> here = compiled_variants(dtype);
  if (v == HOPATTN_GEMM_AUTO) return !here.empty();
  return std::find(here.begin(), here.end(), v) != here.end();
}

class GemmVariant : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override { HOPATTN_REQUIRE_SM90(); }
  tools::CublasGemm cublas_;
};

// M, N across tile residues (1, 7, one short, exact, one over, many tiles) and K across the
// k-tile residues (8 and 24 below one tile, 64 exact, 1000 and 4096 many), cycling through the
// layouts and beta cases. Small products against fp64, large ones against cuBLAS.
TEST_P(GemmVariant, ResidueSweep) {
  const int sizes[] = {1, 7, 127, 128, 129, 1000};
  const int ks[] = {8, 24, 64, 1000, 4096};
  int index = 0, failures = 0;
  for (int m : sizes)
    for (int n : sizes)
      for (int k : ks) {
        Case c;
        c.m = m, c.n = n, c.k = k;
        c.variant = GetParam();
        c.a_row = (index & 1) == 0, c.b_row = (index & 2) == 0, c.d_row = (index % 3) != 2;
        c.beta = (index % 4 == 3) ? 0.75f : 0.0f;
        c.alpha = (index % 5 == 4) ? -0.5f : 1.0f;
        c.d_aligned = (index / 4) % 2 == 0;
        c.seed = uint64_t(index) + 100;
        ++index;
        const std::string err = run_case(c, &cublas_);
        if (!err.empty() && ++failures <= 10) ADD_FAILURE() << c.str() << ": " << err;
      }
  EXPECT_EQ(failures, 0) << failures << " of " << index << " cases failed";
}

// Every layout, input and output type, D row- and column-major.
TEST_P(GemmVariant, LayoutsAndTypes) {
  int index = 0;
  for (hopattn_dtype_t dtype : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16})
    for (hopattn_dtype_t out : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP32})
      for (int layout = 0; layout < 8; ++layout) {
        Case c;
        c.m = 129, c.n = 200, c.k = 1000;
        c.dtype = dtype, c.out = out;
        c.a_row = layout & 1, c.b_row = layout & 2, c.d_row = layout & 4;
        c.variant = GetParam();
        c.beta = 0.5f;
        c.seed = uint64_t(++index);
        if (!is_compiled(GetParam(), dtype)) continue;
        const std::string err = run_case(c, &cublas_);
        EXPECT_EQ(err, "") << c.str();
      }
}

TEST_P(GemmVariant, AlphaBeta) {
  struct AB {
    float alpha, beta;
    bool in_place;
  };
  const AB cases[] = {{1.0f, 0.0f, false}, {2.0f, 0.0f, false}, {0.0f, 1.0f, false}, {-1.0f, 1.0f, false},
                      {0.5f, -2.0f, false}, {1.0f, 1.0f, true},  {1.5f, 0.25f, true}};
  int index = 0;
  for (const AB& ab : cases) {
    Case c;
    c.m = 200, c.n = 136, c.k = 264;
    c.alpha = ab.alpha, c.beta = ab.beta, c.c_in_place = ab.in_place;
    c.out = HOPATTN_DTYPE_FP32;
    c.variant = GetParam();
    c.seed = uint64_t(++index) + 1000;
    EXPECT_EQ(run_case(c, &cublas_), "") << c.str();
  }
}

// Large square and LLM-like shapes against cuBLAS (multiple waves, long K). D is TMA-storable so
// that auto may pick the persistent variant.
TEST_P(GemmVariant, LargeAgainstCublas) {
  const int shapes[][3] = {{2048, 2048, 2048}, {1024, 3000, 4096}, {4096, 1024, 8192}};
  int index = 0;
  for (const auto& s : shapes) {
    Case c;
    c.m = s[0], c.n = s[1], c.k = s[2];
    c.a_row = index != 1, c.b_row = index == 2;
    c.d_aligned = true;
    c.variant = GetParam();
    c.seed = uint64_t(++index) + 2000;
    EXPECT_EQ(run_case(c, &cublas_), "") << c.str();
  }
}

// Few tiles and a long K, the split_k variant's case (on 132 SMs: 64 tiles of 128x256 -> 2-way
// split, 32 and 40 -> 4-way; other variants simply run them): residues in M, N and K, k-tiles
// not divisible by the split, every output type, beta = 0 with NaN C and beta != 0.
TEST_P(GemmVariant, FewTilesLongK) {
  struct Shape {
    int m, n, k;
    hopattn_dtype_t out;
    bool d_row;
    float beta;
  };
  const Shape shapes[] = {{1024, 2048, 4096, HOPATTN_DTYPE_BF16, true, 0.0f},
                          {1000, 1000, 3000, HOPATTN_DTYPE_FP32, false, 0.5f},
                          {129, 4999, 8200, HOPATTN_DTYPE_FP16, true, 1.0f}};
  int index = 0;
  for (const Shape& s : shapes) {
    Case c;
    c.m = s.m, c.n = s.n, c.k = s.k;
    c.out = s.out, c.d_row = s.d_row, c.beta = s.beta;
    c.a_row = index != 1, c.b_row = index == 2;
    c.d_aligned = true;
    c.variant = GetParam();
    c.seed = uint64_t(++index) + 4000;
    EXPECT_EQ(run_case(c, &cublas_), "") << c.str();
  }
}

// More tiles than 2 x SMs (4096 x 4096: 512 tiles of 128x256; 3001 x 4999: 480 with residues in
// M, N and K), so a persistent CTA loops over 3-4 tiles: the pipeline phases continue across
// tiles and each tile's last TMA stores overlap the next mainloop. Every output type, both D
// majors, beta = 0 with NaN C, beta != 0 and in place.
TEST_P(GemmVariant, ManyTilesPerCta) {
  struct Shape {
    int m, n, k;
    hopattn_dtype_t dtype, out;
    bool a_row, b_row, d_row;
    float alpha, beta;
    bool in_place;
  };
  const Shape shapes[] = {
      {4096, 4096, 1024, HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_BF16, true, true, true, 1.0f, 0.0f, false},
      {4096, 4096, 256, HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP32, true, false, false, -1.0f, 0.5f, false},
      {3001, 4999, 520, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP16, false, true, true, 1.0f, 1.0f, true},
      {4999, 3001, 72, HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP32, false, false, false, 0.5f, 0.0f, false},
  };
  int index = 0;
  for (const Shape& s : shapes) {
    Case c;
    c.m = s.m, c.n = s.n, c.k = s.k;
    c.dtype = s.dtype, c.out = s.out;
    c.a_row = s.a_row, c.b_row = s.b_row, c.d_row = s.d_row;
    c.alpha = s.alpha, c.beta = s.beta, c.c_in_place = s.in_place;
    c.d_aligned = true;
    c.variant = GetParam();
    c.seed = uint64_t(++index) + 3000;
    if (!is_compiled(c.variant, c.dtype)) continue;
    EXPECT_EQ(run_case(c, &cublas_), "") << c.str();
  }
}

// The persistent variant stores D with TMA: an unaligned leading dimension is turned down with
// a message (auto runs another variant instead, as ResidueSweep's odd-padded cases show).
TEST(GemmApiGpu, PersistentRejectsUnalignedD) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer a(256 * 64 * 2), b(64 * 256 * 2), d(256 * 259 * 2);
  GemmArgs args{};
  args.a = matrix(a.get(), HOPATTN_DTYPE_BF16, 256, 64, true);
  args.b = matrix(b.get(), HOPATTN_DTYPE_BF16, 64, 256, true);
  args.d = matrix(d.get(), HOPATTN_DTYPE_BF16, 256, 256, true, 259);
  args.alpha = 1.0f;
  args.variant = HOPATTN_GEMM_PERSISTENT;
  const Status s = gemm(args, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported);
  const char* why = is_compiled(HOPATTN_GEMM_PERSISTENT, HOPATTN_DTYPE_BF16)
                        ? "d.stride[0] = 259 elements (518 bytes) is not a multiple of 16 bytes"
                        : "variant: persistent is not compiled for bf16";  // a reduced build
  EXPECT_NE(s.message().find(why), std::string::npos) << s.to_string();
}

std::string param_name(const ::testing::TestParamInfo<Variant>& info) { return variant_name(info.param); }

// auto and every variant this build compiled (HOPATTN_GEMM_VARIANTS): nothing to skip.
std::vector<Variant> tested_variants() {
  std::vector<Variant> v = {HOPATTN_GEMM_AUTO};
  for (Variant x : compiled_variants(HOPATTN_DTYPE_BF16)) v.push_back(x);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmVariant, ::testing::ValuesIn(tested_variants()), param_name);

TEST(GemmApiGpu, HostPointerIsRejected) {
  HOPATTN_REQUIRE_SM90();
  std::vector<uint16_t> host_a(64 * 64, 0x3f80);
  DeviceBuffer b(64 * 64 * 2), d(64 * 64 * 2);
  GemmArgs args{};
  args.a = matrix(host_a.data(), HOPATTN_DTYPE_BF16, 64, 64, true);
  args.b = matrix(b.get(), HOPATTN_DTYPE_BF16, 64, 64, true);
  args.d = matrix(d.get(), HOPATTN_DTYPE_BF16, 64, 64, true);
  args.alpha = 1.0f;
  const Status s = gemm(args, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a: points to host memory"), std::string::npos) << s.to_string();
}

TEST(GemmApiGpu, UnalignedLeadingDimensionIsRejected) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer a(100 * 100 * 2), b(100 * 64 * 2), d(100 * 64 * 2);
  GemmArgs args{};
  args.a = matrix(a.get(), HOPATTN_DTYPE_BF16, 100, 100, false);  // column-major, ld = 100: 200 bytes
  args.b = matrix(b.get(), HOPATTN_DTYPE_BF16, 100, 64, true);
  args.d = matrix(d.get(), HOPATTN_DTYPE_BF16, 100, 64, true);
  args.alpha = 1.0f;
  const hopattn_status_t s = hopattn_gemm(&args, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("a.stride[1] = 100 elements (200 bytes) is not a multiple of 16 bytes"),
            std::string::npos)
      << s.message;
}

TEST(GemmApiGpu, EmptyOutputIsANoOp) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer b(64 * 16 * 2);
  GemmArgs args{};
  args.a = matrix(nullptr, HOPATTN_DTYPE_BF16, 0, 64, true);
  args.b = matrix(b.get(), HOPATTN_DTYPE_BF16, 64, 16, true);
  args.d = matrix(nullptr, HOPATTN_DTYPE_BF16, 0, 16, true);
  args.alpha = 1.0f;
  const Status s = gemm(args, nullptr);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

// ---- FP8 (e4m3) ----------------------------------------------------------------------------------

struct Fp8Case {
  int m = 128, n = 128, k = 128;
  hopattn_dtype_t out = HOPATTN_DTYPE_BF16;
  bool d_row = true;
  float alpha = 1.0f, beta = 0.0f;
  float scale_a = 0.5f, scale_b = 3.0f;
  bool c_in_place = false;
  int64_t extra_ld = 0;  // operand padding beyond K rounded up to 16 (a multiple of 16)
  tools::E4m3Values values = tools::E4m3Values::kGeneral;
  Variant variant = HOPATTN_GEMM_AUTO;
  uint64_t seed = 1;

  std::string str() const {
    std::ostringstream os;
    os << "variant=" << variant_name(variant) << " m=" << m << " n=" << n << " k=" << k
       << " dtype=e4m3 out=" << hopattn_dtype_name(out) << " layout=rc" << (d_row ? 'r' : 'c') << " alpha=" << alpha
       << " scale_a=" << scale_a << " scale_b=" << scale_b << " beta=" << beta << (c_in_place ? " c=d" : "")
       << " ld=K+" << extra_ld << (values == tools::E4m3Values::kSmallIntegers ? " values=small_integers" : " values=general");
    return os.str();
  }
};

// A K-major e4m3 operand: `rows` rows of K codes, `ld` bytes apart, on the device; the bytes
// past K in each row are NaN codes (TMA must never read them: a NaN in D would show it), and
// the decoded values on the host as a (rows, K) matrix.
struct Fp8Operand {
  DeviceBuffer buf;
  tools::HostMatrix host;
};
Fp8Operand make_fp8_operand(int64_t rows, int64_t k, int64_t ld, uint64_t seed, tools::E4m3Values values) {
  const std::vector<uint8_t> codes = tools::random_e4m3(rows * k, seed, values);
  std::vector<uint8_t> bytes(size_t(std::max<int64_t>(rows * ld, 1)), tools::kE4m3NaN);
  Fp8Operand o;
  o.host.rows = rows, o.host.cols = k;
  o.host.v.resize(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < k; ++x) {
      bytes[size_t(r * ld + x)] = codes[size_t(r * k + x)];
      o.host.v[size_t(r * k + x)] = tools::e4m3_to_float(codes[size_t(r * k + x)]);
    }
  o.buf = DeviceBuffer(bytes.size());
  HOPATTN_CUDA_CHECK(cudaMemcpy(o.buf.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return o;
}

tools::HostMatrix transposed(const tools::HostMatrix& h) {
  tools::HostMatrix t;
  t.rows = h.cols, t.cols = h.rows;
  t.v.resize(h.v.size());
  for (int64_t i = 0; i < h.rows; ++i)
    for (int64_t j = 0; j < h.cols; ++j) t.v[size_t(j * t.cols + i)] = h.at(i, j);
  return t;
}

// D of one FP8 case (NaN-poisoned, padded, TMA-storable) or an error; `d_out` receives D.
std::string run_fp8(const Fp8Case& c, tools::HostMatrix* d_out, tools::Fp8Reference* ref_out) {
  const int64_t ld = round_up(c.k, 16) + c.extra_ld;
  Fp8Operand a = make_fp8_operand(c.m, c.k, ld, c.seed * 4 + 0, c.values);  // A (M, K) row-major
  Fp8Operand b = make_fp8_operand(c.n, c.k, ld, c.seed * 4 + 1, c.values);  // B (K, N) column-major = (N, K) rows
  DeviceMatrix d(c.out, c.m, c.n, c.d_row, output_ld(c.d_row ? c.n : c.m, true));
  DeviceMatrix cm(c.out, c.m, c.n, c.d_row, output_ld(c.d_row ? c.n : c.m, true));
  reference::fill_nan(d.t.data, DeviceMatrix::dtype_bytes(c.out), d.storage());
  if (c.beta != 0.0f) {
    reference::fill_normal(c.c_in_place ? d.t.data : cm.t.data, c.out, d.storage(), c.seed * 4 + 2, 1.0f);
  } else {
    reference::fill_nan(cm.t.data, DeviceMatrix::dtype_bytes(c.out), cm.storage());  // must not be read
  }
  GemmArgs args{};
  args.a = matrix(a.buf.get(), HOPATTN_DTYPE_E4M3, c.m, c.k, true, ld);
  args.b = matrix(b.buf.get(), HOPATTN_DTYPE_E4M3, c.k, c.n, false, ld);
  args.d = d.t;
  args.c = c.c_in_place ? d.t : cm.t;
  args.alpha = c.alpha, args.beta = c.beta;
  args.scale_a = c.scale_a, args.scale_b = c.scale_b;
  args.variant = c.variant;
  tools::HostMatrix host_c;
  if (c.beta != 0.0f) host_c = tools::download_matrix(args.c);

  const Status s = gemm(args, nullptr);
  if (!s.ok()) return "gemm failed: " + s.to_string();
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
  *d_out = tools::download_matrix(d.t);
  if (!c.c_in_place) {
    const std::vector<float> raw = reference::download_as_float(d.t.data, c.out, d.storage());
    const int64_t dld = c.d_row ? d.t.stride[0] : d.t.stride[1], run = c.d_row ? c.n : c.m;
    for (int64_t e = 0; e < int64_t(raw.size()); ++e)
      if (e % dld >= run && !std::isnan(raw[size_t(e)])) return "padding element " + std::to_string(e) + " of D was written";
  }
  if (ref_out != nullptr) {
    const double scales = double(c.scale_a == 0.0f ? 1.0f : c.scale_a) * double(c.scale_b == 0.0f ? 1.0f : c.scale_b);
    *ref_out = tools::reference_gemm_e4m3(a.host, transposed(b.host), c.beta != 0.0f ? &host_c : nullptr,
                                          double(c.alpha) * scales, c.beta);
  }
  return "";
}

std::string run_fp8_case(const Fp8Case& c) {
  tools::HostMatrix got;
  tools::Fp8Reference ref;
  const std::string err = run_fp8(c, &got, &ref);
  if (!err.empty()) return err;
  return tools::compare_with_e4m3_reference(got, ref, c.out);
}

bool fp8_compiled() { return !compiled_variants(HOPATTN_DTYPE_E4M3).empty(); }

class GemmFp8 : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override { HOPATTN_REQUIRE_SM90(); }
};

// M, N across tile residues, K across k-tile residues (16 and 32 below one 128-element k-tile,
// 128 exact, 1000 not a multiple of 16 — leading dimension padded to 1008 — and 4096), cycling
// through output types, D majors, scales (0.5·3, unset = 1, -2·0.25), alpha, beta = 0 with NaN C
// and beta != 0, extra operand padding (NaN codes) and the two input distributions.
TEST_P(GemmFp8, ResidueSweep) {
  const int sizes[] = {1, 7, 127, 128, 129, 1000};
  const int ks[] = {16, 32, 128, 1000, 4096};
  const float scales[3][2] = {{0.5f, 3.0f}, {0.0f, 0.0f}, {-2.0f, 0.25f}};
  const hopattn_dtype_t outs[4] = {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP32, HOPATTN_DTYPE_FP16};
  int index = 0, failures = 0;
  for (int m : sizes)
    for (int n : sizes)
      for (int k : ks) {
        Fp8Case c;
        c.m = m, c.n = n, c.k = k;
        c.variant = GetParam();
        c.out = outs[index % 4];
        c.d_row = (index % 3) != 2;
        c.beta = (index % 4 == 1) ? 0.75f : 0.0f;
        c.c_in_place = c.beta != 0.0f && (index / 4) % 2 == 0;
        c.alpha = (index % 5 == 4) ? -0.5f : 1.0f;
        c.scale_a = scales[index % 3][0], c.scale_b = scales[index % 3][1];
        c.extra_ld = (index / 2) % 3 == 0 ? 16 : 0;
        c.values = index % 2 == 0 ? tools::E4m3Values::kGeneral : tools::E4m3Values::kSmallIntegers;
        c.seed = uint64_t(index) + 5000;
        ++index;
        const std::string err = run_fp8_case(c);
        if (!err.empty() && ++failures <= 10) ADD_FAILURE() << c.str() << ": " << err;
      }
  EXPECT_EQ(failures, 0) << failures << " of " << index << " cases failed";
}

// More tiles than 2 x SMs: persistent CTAs loop over 3-4 tiles (pipeline phases across tiles).
// Small-integer inputs make the FP8 accumulation exact, so the fp32-output cases are checked to
// fp32 rounding.
TEST_P(GemmFp8, ManyTilesPerCta) {
  struct Shape {
    int m, n, k;
    hopattn_dtype_t out;
    bool d_row;
    float beta;
    bool in_place;
    tools::E4m3Values values;
  };
  const Shape shapes[] = {
      {4096, 4096, 256, HOPATTN_DTYPE_FP32, true, 0.5f, false, tools::E4m3Values::kSmallIntegers},
      {3001, 4999, 520, HOPATTN_DTYPE_BF16, false, 0.0f, false, tools::E4m3Values::kGeneral},
      {4999, 3001, 144, HOPATTN_DTYPE_BF16, true, 1.0f, true, tools::E4m3Values::kGeneral},
      {1000, 1000, 4096, HOPATTN_DTYPE_FP32, false, 0.0f, false, tools::E4m3Values::kSmallIntegers},
  };
  int index = 0;
  for (const Shape& s : shapes) {
    Fp8Case c;
    c.m = s.m, c.n = s.n, c.k = s.k;
    c.out = s.out, c.d_row = s.d_row, c.beta = s.beta, c.c_in_place = s.in_place, c.values = s.values;
    c.variant = GetParam();
    c.seed = uint64_t(++index) + 6000;
    EXPECT_EQ(run_fp8_case(c), "") << c.str();
  }
}

// The scales enter as one factor with alpha: (alpha 1, scales 0.5 and 3) must give D bit for bit
// equal to (alpha 1.5, scales unset), and (alpha 1, scales unset) must differ from both.
TEST_P(GemmFp8, ScalesFoldIntoAlpha) {
  Fp8Case c;
  c.m = 257, c.n = 300, c.k = 384;
  c.out = HOPATTN_DTYPE_FP32;
  c.variant = GetParam();
  c.seed = 7000;
  tools::HostMatrix scaled, folded, plain;
  tools::Fp8Reference ref;
  ASSERT_EQ(run_fp8(c, &scaled, &ref), "") << c.str();
  EXPECT_EQ(tools::compare_with_e4m3_reference(scaled, ref, c.out), "") << c.str();
  c.alpha = 1.5f, c.scale_a = 0.0f, c.scale_b = 0.0f;
  ASSERT_EQ(run_fp8(c, &folded, nullptr), "") << c.str();
  c.alpha = 1.0f;
  ASSERT_EQ(run_fp8(c, &plain, nullptr), "") << c.str();
  EXPECT_EQ(scaled.v, folded.v);
  EXPECT_NE(scaled.v, plain.v);
}

// auto and every e4m3 variant this build compiled; none in a build without e4m3 kernels, where
// GemmFp8Api.NotCompiledIsReported checks the refusal instead.
std::vector<Variant> tested_fp8_variants() {
  std::vector<Variant> v;
  if (!fp8_compiled()) return v;
  v.push_back(HOPATTN_GEMM_AUTO);
  for (Variant x : compiled_variants(HOPATTN_DTYPE_E4M3)) v.push_back(x);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmFp8, ::testing::ValuesIn(tested_fp8_variants()), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GemmFp8);

// A variant with no e4m3 instance (tma_wgmma: never compiled for 8-bit operands) is refused
// through the public entry point, naming the variant and the dtype, in every build.
TEST(GemmFp8Api, NotCompiledIsReported) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer a(128 * 128), b(128 * 128), d(128 * 128 * 2);
  GemmArgs args{};
  args.a = matrix(a.get(), HOPATTN_DTYPE_E4M3, 128, 128, true);
  args.b = matrix(b.get(), HOPATTN_DTYPE_E4M3, 128, 128, false);
  args.d = matrix(d.get(), HOPATTN_DTYPE_BF16, 128, 128, true);
  args.alpha = 1.0f;
  args.variant = HOPATTN_GEMM_TMA_WGMMA;  // never compiled for e4m3
  const Status s = gemm(args, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported);
  EXPECT_NE(s.message().find("variant: tma_wgmma is not compiled for e4m3"), std::string::npos) << s.to_string();
}

// The layout and padding rules reach the caller through the C ABI on a real device.
TEST(GemmFp8Api, RejectsNonKMajorAndUnpaddedOperands) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer a(128 * 1024), b(1024 * 128), d(128 * 128 * 2);
  GemmArgs args{};
  args.a = matrix(a.get(), HOPATTN_DTYPE_E4M3, 128, 1000, true, 1008);
  args.b = matrix(b.get(), HOPATTN_DTYPE_E4M3, 1000, 128, true);  // row-major: N-major
  args.d = matrix(d.get(), HOPATTN_DTYPE_BF16, 128, 128, true);
  args.alpha = 1.0f;
  hopattn_status_t s = hopattn_gemm(&args, nullptr);
  EXPECT_EQ(s.code, HOPATTN_NOT_SUPPORTED) << s.message;
  EXPECT_NE(std::string(s.message).find("b: e4m3 operands must be K-major (b column-major, stride[0] == 1)"),
            std::string::npos)
      << s.message;
  args.b = matrix(b.get(), HOPATTN_DTYPE_E4M3, 1000, 128, false);  // K-major, ld = 1000 bytes
  s = hopattn_gemm(&args, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("b.stride[1] = 1000 elements (1000 bytes) is not a multiple of 16 bytes"),
            std::string::npos)
      << s.message;
}

}  // namespace
}  // namespace hopattn::gemm
