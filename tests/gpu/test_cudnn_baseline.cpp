// cuDNN's SDPA (the bench's baseline) loads on the GPU machine and agrees with the float64
// reference under the same tolerance rule the hopattn kernels must meet; so does its FP8 SDPA (the
// bench's cudnn row for --dtype e4m3) under the FP8 form of that rule.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention_check.hpp"
#include "attention_fp8.hpp"
#include "attention_gpu.hpp"
#include "baselines/baselines.hpp"
#include "common/cuda_check.hpp"
#include "device_utils.hpp"
#include "e4m3.hpp"
#include "gpu_test.hpp"

namespace hopattn::reference {
namespace {

TEST(CudnnBaseline, LoadsAndAgreesWithReference) {
  HOPATTN_REQUIRE_SM90();
  std::string why;
  std::unique_ptr<baselines::CudnnSdpa> cudnn = baselines::CudnnSdpa::load(&why);
  ASSERT_NE(cudnn, nullptr) << why;
  std::printf("cuDNN %s\n", cudnn->version_string().c_str());
  int n = 0;
  for (const CheckCase& c : check_grid({64, 128, 256}, {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16}, true)) {
    const CheckResult r = run_check(c, "cudnn", [&](const AttentionForwardArgs& a, Stream s) { return cudnn->forward(a, s); });
    // cuDNN rejects bottom-right causal masks with seqlen_q > seqlen_k; that is the only case the
    // wrapper may report as unsupported.
    const bool known_gap = c.p.causal && c.p.seqlen_q > c.p.seqlen_k;
    if (known_gap) {
      EXPECT_TRUE(r.unsupported) << c.to_string() << ": " << r.message;
      continue;
    }
    EXPECT_TRUE(r.pass) << c.to_string() << ": " << r.message;
    std::printf("cudnn %-66s O err %.3g (bound %.3g, yardstick %.3g) LSE err %.3g\n", c.to_string().c_str(),
                r.o_err.max_abs, r.o_bound, r.o_yard.max_abs, r.lse_err.max_abs);
    ++n;
  }
  EXPECT_GT(n, 0);
}

// ---- FP8 --------------------------------------------------------------------------------------
//
// cuDNN's FP8 SDPA on e4m3 inputs against float64 attention on the dequantized inputs. Tolerance,
// as tests/gpu/test_attention_fp8_gpu.cpp's for hopattn's FP8 kernel: |O - O_fp64| <= 2 x the
// FP8 yardstick's error (S in float32, P rounded to e4m3 before the normalisation: what an FP8
// kernel does; cuDNN scales P by 256 first, as hopattn does, fewer subnormals, the same relative
// rounding) + one rounding of the largest output in O's type: bf16 (2^-8) where cuDNN writes a
// bf16 O, e4m3 (2^-4: 3 significand bits, half an ulp) where it writes e4m3 (Hopper: cuDNN gives
// FP8 inputs a 16-bit O on Blackwell only). LSE: 2 x the yardstick's + a float32 floor + 2^-12 ·
// max|S| (the FP8 WGMMA's ~14-bit accumulation of Q·Kᵀ).

constexpr double kCpuWorkLimit = 1.5e8;  // b·h·sq·sk·d above which the references run on the GPU

struct CudnnFp8Case {
  AttnProblem p;
  bool descales = false;  // a per-tensor descale ((1, 1): batch 1, one kv-head) from the quantization
  bool must_run = false;  // a shape of the bench's grid: cuDNN must take it (others may be unsupported)
  uint64_t seed = 1;
  std::string to_string() const { return p.to_string() + (descales ? " descales" : " descales 1"); }
};

template <class T>
DeviceBuffer upload_vector(const std::vector<T>& host) {
  DeviceBuffer d(std::max<size_t>(host.size(), 1) * sizeof(T));
  if (!host.empty()) HOPATTN_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

double max_row_norm(const std::vector<float>& x, int hdim) {
  double best = 0;
  for (size_t r = 0; r + size_t(hdim) <= x.size(); r += size_t(hdim)) {
    double n2 = 0;
    for (int d = 0; d < hdim; ++d) n2 += double(x[r + size_t(d)]) * x[r + size_t(d)];
    best = std::max(best, std::sqrt(n2));
  }
  return best;
}

// fp64 and the FP8 yardstick on the dequantized inputs: the CPU for small problems, the GPU else.
void fp8_references(const AttnProblem& p, const Fp8Tensor& q, const Fp8Tensor& k, const Fp8Tensor& v,
                    std::vector<double>& o64, std::vector<double>& lse64, std::vector<float>& o32,
                    std::vector<float>& lse32) {
  o64.assign(size_t(p.q_elems()), 0), lse64.assign(size_t(p.lse_elems()), 0);
  o32.assign(size_t(p.q_elems()), 0), lse32.assign(size_t(p.lse_elems()), 0);
  if (double(p.batch) * p.heads_q * p.seqlen_q * p.seqlen_k * p.hdim <= kCpuWorkLimit) {
    attention_cpu_fp64(p, q.dequant.data(), k.dequant.data(), v.dequant.data(), o64.data(), lse64.data());
    attention_cpu_fp8_lowp(p, q.dequant.data(), k.dequant.data(), v.dequant.data(), o32.data(), lse32.data());
    return;
  }
  DeviceBuffer dq = upload_vector(q.dequant), dk = upload_vector(k.dequant), dv = upload_vector(v.dequant);
  DeviceBuffer go64(o64.size() * 8), gl64(std::max<size_t>(lse64.size(), 1) * 8);
  DeviceBuffer go32(o32.size() * 4), gl32(std::max<size_t>(lse32.size(), 1) * 4);
  attention_gpu_fp64(p, HOPATTN_DTYPE_FP32, dq.get(), dk.get(), dv.get(), go64.as<double>(), gl64.as<double>());
  attention_gpu_fp8_lowp(p, dq.as<float>(), dk.as<float>(), dv.as<float>(), go32.as<float>(), gl32.as<float>());
  HOPATTN_CUDA_CHECK(cudaMemcpy(o64.data(), go64.get(), o64.size() * 8, cudaMemcpyDeviceToHost));
  HOPATTN_CUDA_CHECK(cudaMemcpy(lse64.data(), gl64.get(), lse64.size() * 8, cudaMemcpyDeviceToHost));
  HOPATTN_CUDA_CHECK(cudaMemcpy(o32.data(), go32.get(), o32.size() * 4, cudaMemcpyDeviceToHost));
  HOPATTN_CUDA_CHECK(cudaMemcpy(lse32.data(), gl32.get(), lse32.size() * 4, cudaMemcpyDeviceToHost));
}

struct CudnnFp8Result {
  bool pass = false, unsupported = false;
  hopattn_dtype_t o_dtype = HOPATTN_DTYPE_BF16;
  ErrorStats o_err, o_yard, lse_err, lse_yard;
  double o_bound = 0, lse_bound = 0;
  std::string message;
};

CudnnFp8Result run_cudnn_fp8(const baselines::CudnnSdpa& cudnn, const CudnnFp8Case& c) {
  const AttnProblem& p = c.p;
  CudnnFp8Result r;
  auto inputs = [&](int seqlen, int heads, uint64_t seed) {
    return quantize_e4m3(normal_with_outliers(int64_t(p.batch) * seqlen * heads * p.hdim, seed, 0.0, 1.0), p.batch,
                         seqlen, heads, p.hdim, p.heads_kv, c.descales);
  };
  const Fp8Tensor q = inputs(p.seqlen_q, p.heads_q, c.seed * 3), k = inputs(p.seqlen_k, p.heads_kv, c.seed * 3 + 1),
                  v = inputs(p.seqlen_k, p.heads_kv, c.seed * 3 + 2);
  DeviceBuffer dq = upload_vector(q.codes), dk = upload_vector(k.codes), dv = upload_vector(v.codes);
  DeviceBuffer qd = upload_vector(q.descale), kd = upload_vector(k.descale), vd = upload_vector(v.descale);
  DeviceBuffer o(std::max<int64_t>(p.q_elems(), 1) * 2), lse(std::max<int64_t>(p.lse_elems(), 1) * 4);
  AttentionForwardArgs a;
  a.q = tensor_bshd(dq.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_q, p.heads_q, p.hdim);
  a.k = tensor_bshd(dk.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_k, p.heads_kv, p.hdim);
  a.v = tensor_bshd(dv.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_k, p.heads_kv, p.hdim);
  a.lse = tensor_lse(lse.as<float>(), p.batch, p.heads_q, p.seqlen_q);
  a.causal = p.causal;
  if (c.descales) {
    a.q_descale = tensor_descale(qd.as<float>(), p.batch, p.heads_kv);
    a.k_descale = tensor_descale(kd.as<float>(), p.batch, p.heads_kv);
    a.v_descale = tensor_descale(vd.as<float>(), p.batch, p.heads_kv);
  }
  // A bf16 O where cuDNN writes one for FP8 inputs, else e4m3 (the bench's choice, bench.cpp).
  Status s;
  for (hopattn_dtype_t o_dtype : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_E4M3}) {
    if (o_dtype == HOPATTN_DTYPE_BF16) fill_nan(o.get(), 2, p.q_elems());
    else if (p.q_elems() > 0) HOPATTN_CUDA_CHECK(cudaMemset(o.get(), 0x7f, size_t(p.q_elems())));  // e4m3 NaN
    fill_nan(lse.get(), 4, p.lse_elems());
    a.o = tensor_bshd(o.get(), o_dtype, p.batch, p.seqlen_q, p.heads_q, p.hdim);
    r.o_dtype = o_dtype;
    s = cudnn.forward(a, nullptr);
    HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
    if (s.code() != StatusCode::kNotSupported) break;
  }
  if (!s.ok()) {
    r.unsupported = s.code() == StatusCode::kNotSupported;
    r.message = "call failed: " + s.to_string();
    return r;
  }
  std::vector<float> o_got;
  if (r.o_dtype == HOPATTN_DTYPE_BF16) {
    o_got = download_as_float(o.get(), HOPATTN_DTYPE_BF16, p.q_elems());
  } else {
    std::vector<uint8_t> bits(size_t(p.q_elems()));
    if (!bits.empty()) HOPATTN_CUDA_CHECK(cudaMemcpy(bits.data(), o.get(), bits.size(), cudaMemcpyDeviceToHost));
    o_got.resize(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) o_got[i] = gemm::tools::e4m3_to_float(bits[i]);
  }
  std::vector<float> lse_got(size_t(p.lse_elems()));
  if (!lse_got.empty())
    HOPATTN_CUDA_CHECK(cudaMemcpy(lse_got.data(), lse.get(), lse_got.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<double> o64, lse64;
  std::vector<float> o32, lse32;
  fp8_references(p, q, k, v, o64, lse64, o32, lse32);
  r.o_err = compare(o64.data(), o_got.data(), p.q_elems());
  r.o_yard = compare(o64.data(), o32.data(), p.q_elems());
  const double eps = r.o_dtype == HOPATTN_DTYPE_BF16 ? 0x1p-8 : 0x1p-4;
  r.o_bound = 2.0 * r.o_yard.max_abs + eps * r.o_yard.max_ref;
  r.lse_err = compare(lse64.data(), lse_got.data(), p.lse_elems());
  r.lse_yard = compare(lse64.data(), lse32.data(), p.lse_elems());
  const double s_bound = double(p.effective_scale()) * max_row_norm(q.dequant, p.hdim) * max_row_norm(k.dequant, p.hdim);
  r.lse_bound = 2.0 * r.lse_yard.max_abs + 1e-5 * std::max(1.0, r.lse_yard.max_ref) + 0x1p-12 * s_bound;
  if (r.o_err.bad > 0) {
    r.message = "O: " + std::to_string(r.o_err.bad) + " elements NaN/unwritten or non-finite, first at index " +
                std::to_string(r.o_err.first_bad);
  } else if (r.lse_err.bad > 0) {
    r.message = "LSE: " + std::to_string(r.lse_err.bad) + " entries NaN/unwritten or wrongly infinite, first at " +
                std::to_string(r.lse_err.first_bad);
  } else if (r.o_err.max_abs > r.o_bound) {
    r.message = "O: max abs error " + fmt(r.o_err.max_abs) + " > bound " + fmt(r.o_bound) + " (2 x yardstick " +
                fmt(r.o_yard.max_abs) + " + one rounding of O)";
  } else if (r.lse_err.max_abs > r.lse_bound) {
    r.message = "LSE: max abs error " + fmt(r.lse_err.max_abs) + " > bound " + fmt(r.lse_bound) + " (2 x yardstick " +
                fmt(r.lse_yard.max_abs) + " + floors)";
  } else {
    r.pass = true;
  }
  return r;
}

TEST(CudnnBaseline, Fp8AgreesWithReference) {
  HOPATTN_REQUIRE_SM90();
  std::string why;
  std::unique_ptr<baselines::CudnnSdpa> cudnn = baselines::CudnnSdpa::load(&why);
  ASSERT_NE(cudnn, nullptr) << why;
  ASSERT_TRUE(cudnn->has_fp8()) << "the cuDNN baseline plugin has no FP8 entry point (built from this tree: it must)";
  std::printf("cuDNN %s (FP8 SDPA)\n", cudnn->version_string().c_str());
  // (batch, seqlen_q, seqlen_k, heads_q, heads_kv, hdim 128, causal). The bench's cells (seqlen 1024,
  // MHA, causal and not) must run; the others (odd lengths, GQA/MQA, one query over 1000 keys, causal
  // with seqlen_q < seqlen_k: cuDNN's FP8 SDPA has its bottom-right mask on Blackwell only, a
  // per-tensor descale) may be refused as unsupported (printed with cuDNN's reason), and must pass
  // where they run.
  std::vector<CudnnFp8Case> cases;
  uint64_t seed = 300;
  for (bool causal : {false, true}) cases.push_back({AttnProblem{2, 1024, 1024, 8, 8, 128, causal, 0.0f}, false, true, seed++});
  const AttnProblem problems[] = {{2, 17, 17, 4, 4, 128, false, 0.0f},   {2, 17, 17, 4, 4, 128, true, 0.0f},
                                  {1, 113, 113, 8, 2, 128, true, 0.0f},  {1, 113, 113, 8, 2, 128, false, 0.0f},
                                  {1, 1000, 1000, 4, 4, 128, false, 0.0f}, {1, 1000, 1000, 8, 1, 128, true, 0.0f},
                                  {2, 1, 1000, 8, 2, 128, false, 0.0f},  {1, 129, 1024, 4, 4, 128, true, 0.0f}};
  for (const AttnProblem& p : problems) cases.push_back({p, false, false, seed++});
  cases.push_back({AttnProblem{1, 256, 256, 4, 1, 128, true, 0.0f}, true, false, seed++});
  cases.push_back({AttnProblem{1, 257, 257, 4, 1, 128, false, 0.03f}, true, false, seed++});
  int passed = 0, unsupported = 0;
  for (const CudnnFp8Case& c : cases) {
    const CudnnFp8Result r = run_cudnn_fp8(*cudnn, c);
    std::printf("cudnn fp8 %-62s O %-4s %-11s O err %s (bound %s, yardstick %s) LSE err %s (bound %s) %s\n",
                c.to_string().c_str(), hopattn_dtype_name(r.o_dtype),
                r.pass ? "ok" : (r.unsupported ? "unsupported" : "FAIL"), fmt(r.o_err.max_abs).c_str(),
                fmt(r.o_bound).c_str(), fmt(r.o_yard.max_abs).c_str(), fmt(r.lse_err.max_abs).c_str(),
                fmt(r.lse_bound).c_str(), r.message.c_str());
    if (r.unsupported && !c.must_run) {
      ++unsupported;
      continue;
    }
    EXPECT_TRUE(r.pass) << c.to_string() << ": " << r.message;
    passed += r.pass;
  }
  std::printf("cudnn fp8: %d passed, %d unsupported by cuDNN, of %zu\n", passed, unsupported, cases.size());
  EXPECT_GE(passed, 2);
}

}  // namespace
}  // namespace hopattn::reference
