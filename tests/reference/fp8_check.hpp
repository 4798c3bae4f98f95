// FP8 (e4m3) forward attention end to end, for the GPU tests (tests/gpu/test_attention_fp8_gpu.cpp)
// and `hopattn check`: a case's inputs (per-(batch, kv-head) scales, optional outliers), their
// quantization with descales, NaN-poisoned O and LSE, one call, and the comparison with float64
// attention on the dequantized inputs under the FP8 yardstick rule (attention_fp8.hpp; the test
// file's header derives the bounds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention_fp8.hpp"
#include "attention_reference.hpp"
#include "device_utils.hpp"

namespace hopattn::reference {

struct Fp8Case {
  AttnProblem p;
  bool descales = true;          // per-(batch, kv-head) descales; false: none (descale 1)
  bool strided_descales = false;  // the descales as a (batch, heads_kv) view of a (heads_kv, batch) array
  float input_std = 1.0f;
  double outliers = 0.0;         // fraction of entries drawn from N(0, 10²) (FlashAttention-3 §4.3)
  bool head_scales = true;       // each (batch, kv-head) at its own scale (fp8_case_inputs)
  std::string kernel;            // a registry name; "": the defaults table
  uint64_t seed = 1;
  std::string to_string() const;
};

struct Fp8Result {
  ErrorStats o_err, o_yard, lse_err, lse_yard;
  double o_bound = 0, lse_bound = 0;
  double rmse = 0;       // O vs fp64 on the dequantized inputs
  double rmse_yard = 0;  // the yardstick's
  std::vector<uint16_t> o_bits;
  bool pass = false;
  std::string message;
};

// The inputs of a case, before quantization: with descales and head_scales, each (batch, kv-head)
// at its own scale (2^-3 .. 2^3), so that every (batch, kv-head) gets a different descale.
std::vector<float> fp8_case_inputs(const Fp8Case& c, int seqlen, int heads, uint64_t seed);

// A (batch, heads_kv) descale tensor on the device: contiguous, or (strided) the transpose of a
// (heads_kv, batch) array.
struct DeviceDescale {
  DeviceBuffer buf;
  Tensor desc{};
};
DeviceDescale upload_descale(const std::vector<float>& d, int batch, int heads_kv, bool strided);

// Host bytes to the device (a buffer of at least 1 byte); float32 host values to the device.
DeviceBuffer upload_bytes(const void* host, size_t bytes);
DeviceBuffer upload_floats(const std::vector<float>& host);

// An FP8 call's O and LSE (as float) against float64 attention on the dequantized inputs, under the
// FP8 yardstick rule: |O - O_fp64| <= 2 x the yardstick's error + o_eps x its largest output (one
// rounding of O's type: 2^-8 for bf16); LSE <= 2 x the yardstick's + a float32 floor + 2^-12 · the
// Cauchy-Schwarz bound of |S|. Fills every field of *out but o_bits.
void judge_fp8(const AttnProblem& p, const Fp8Tensor& q, const Fp8Tensor& k, const Fp8Tensor& v,
               const std::vector<float>& o_got, const std::vector<float>& lse_got, double o_eps, Fp8Result* out,
               bool mma_sums = false);

// The case through the forward call (the kernel it names, or the defaults table), checked.
Fp8Result run_fp8_case(const Fp8Case& c);

// The cases `hopattn check` runs at an FP8 head dim: odd lengths (1, 17, 113, 1000), causal and
// not, MHA/GQA/MQA, descales per (batch, kv-head) and none, large scores.
std::vector<Fp8Case> fp8_check_cases(int hdim);

}  // namespace hopattn::reference
