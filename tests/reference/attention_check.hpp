// One correctness case of forward attention, run end to end: random inputs (never zeros),
// outputs poisoned with NaN, the implementation under test, the fp64 reference and the
// low-precision yardstick, and FlashAttention's tolerance rule. Shared by the gpu tests and
// `hopattn check`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attention_reference.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

struct CheckCase {
  AttnProblem p;
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;
  float input_std = 1.0f;  // N(0, input_std^2) inputs; 8 stresses the softmax's range
  bool with_lse = true;
  bool padded = false;  // tensors live inside larger rows (strides != contiguous), pads checked untouched
  uint64_t seed = 1;
  std::string to_string() const;
};

struct CheckResult {
  std::string impl;
  CheckCase c;
  ErrorStats o_err, o_yard, lse_err, lse_yard;
  double o_bound = 0, lse_bound = 0;
  bool pass = false;
  bool unsupported = false;  // the implementation reported kNotSupported for this case
  std::string message;       // why it failed (or "")
};

using ForwardFn = std::function<Status(const AttentionForwardArgs&, Stream)>;

CheckResult run_check(const CheckCase& c, const std::string& impl, const ForwardFn& fn);

// An error or a bound in the checks' messages: three significant digits.
std::string fmt(double x);

// The naive GPU reference against the CPU reference, both in float64, on the same inputs:
// returns the largest relative difference of O and LSE (rounding-level, ~1e-12, when both agree).
struct ReferenceAgreement {
  double o_max_rel = 0, lse_max_abs = 0;
  int64_t bad = 0;  // NaN or mismatched infinities
};
ReferenceAgreement compare_gpu_and_cpu_references(const CheckCase& c);

// The grid `hopattn check` runs: odd sequence lengths, seqlen_q < and > seqlen_k, batch 1..4,
// MHA/GQA/MQA, causal on and off, every head dim and dtype given, inputs ×1 and ×8.
std::vector<CheckCase> check_grid(const std::vector<int>& hdims, const std::vector<hopattn_dtype_t>& dtypes,
                                  bool quick);

}  // namespace hopattn::reference
