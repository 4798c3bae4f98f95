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
#include "fp8_check.hpp"
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

struct CudnnFp8Case {
  AttnProblem p;
  bool descales = false;  // a per-tensor descale ((1, 1): batch 1, one kv-head) from the quantization
  bool must_run = false;  // a shape of the bench's grid: cuDNN must take it (others may be unsupported)
  uint64_t seed = 1;
  std::string to_string() const { return p.to_string() + (descales ? " descales" : " descales 1"); }
};

struct CudnnFp8Result : Fp8Result {
  bool unsupported = false;
  hopattn_dtype_t o_dtype = HOPATTN_DTYPE_BF16;
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
  DeviceBuffer dq = upload_bytes(q.codes.data(), q.codes.size()), dk = upload_bytes(k.codes.data(), k.codes.size()),
               dv = upload_bytes(v.codes.data(), v.codes.size());
  DeviceBuffer qd = upload_floats(q.descale), kd = upload_floats(k.descale), vd = upload_floats(v.descale);
  DeviceBuffer o(std::max<int64_t>(p.q_elems(), 1) * 2), lse(std::max<int64_t>(p.lse_elems(), 1) * 4);
  AttentionForwardArgs a;
  a.q = tensor_bshd(dq.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_q, p.heads_q, p.hdim);
  a.k = tensor_bshd(dk.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_k, p.heads_kv, p.hdim);
  a.v = tensor_bshd(dv.get(), HOPATTN_DTYPE_E4M3, p.batch, p.seqlen_k, p.heads_kv, p.hdim);
  a.lse = tensor_lse(lse.as<float>(), p.batch, p.heads_q, p.seqlen_q);
  a.causal = p.causal;
  a.softmax_scale = p.scale;  // 0: 1/sqrt(hdim)
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
  // One rounding of O in its type: bf16 (2^-8), or e4m3 (2^-4: 3 significand bits, half an ulp).
  judge_fp8(p, q, k, v, o_got, lse_got, r.o_dtype == HOPATTN_DTYPE_BF16 ? 0x1p-8 : 0x1p-4, &r);
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
  cases.push_back({AttnProblem{1, 257, 257, 4, 1, 128, false, 0.0f}, true, false, seed++});
  // Scales other than 1/sqrt(hdim), with and without descales, MHA and MQA. (Until 2026-12-06 this
  // test never passed its scale to the call, so cuDNN ran 1/sqrt(hdim) against a 0.03 reference
  // and "failed"; the plugin's refusal of other scales that followed was retired with the fix.)
  cases.push_back({AttnProblem{1, 257, 257, 4, 1, 128, false, 0.03f}, true, false, seed++});
  cases.push_back({AttnProblem{2, 1024, 1024, 8, 8, 128, true, 0.05f}, false, false, seed++});
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
