// Device buffers for one GEMM shape, shared by `hopattn gemm` and the bench: random inputs
// (never zeros), NaN-poisoned outputs, leading dimensions padded to TMA's 16 bytes, and several
// copies to rotate through so that timed runs do not find their inputs in L2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_utils.hpp"
#include "gemm/gemm.hpp"

namespace hopattn::gemm::tools {

struct GemmSetup {
  int64_t m = 0, n = 0, k = 0;
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;
  hopattn_dtype_t out = HOPATTN_DTYPE_BF16;
  bool a_row = true, b_row = false, d_row = true;  // "rcr"
  float alpha = 1.0f, beta = 0.0f;
  Variant variant = HOPATTN_GEMM_AUTO;
};

// "rcr" -> A row-major, B column-major, D row-major. False on anything else.
bool parse_layout(const std::string& text, GemmSetup* setup);
std::string layout_string(const GemmSetup& setup);
bool parse_dtype(const std::string& text, hopattn_dtype_t* out);
double gemm_flops(const GemmSetup& s);

class GemmBuffers {
 public:
  // copies == 0: as many as make the working set exceed ~2x the L2 size (at most 8).
  GemmBuffers(const GemmSetup& setup, int copies, uint64_t seed);
  int copies() const { return int(sets_.size()); }
  // Arguments for copy i (C is D itself when beta != 0: an in-place update).
  GemmArgs args(int i) const;
  const GemmSetup& setup() const { return setup_; }

 private:
  struct Set {
    reference::DeviceBuffer a, b, d;
  };
  GemmSetup setup_;
  int64_t lda_ = 0, ldb_ = 0, ldd_ = 0;
  std::vector<Set> sets_;
};

}  // namespace hopattn::gemm::tools
