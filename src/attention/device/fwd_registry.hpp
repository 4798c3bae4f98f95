// The forward kernel registry: the rows of kFwdKernels (kernel/sm90_fwd_config.hpp) this build
// compiled, looked up by name, and the defaults table that picks one per call. Plain data, read
// on the host; only forward_dispatch.cpp launches.
#pragma once

#include <cstdint>
#include <string>

#include "hopattn/hopattn.h"

namespace hopattn::attention {

inline constexpr int64_t kAnyLength = INT64_MAX;
inline constexpr int kAny = -1;

// One row of the defaults table: every call inside the ranges (inclusive) runs `kernel`. The
// first matching row wins; rows are ordered most specific first.
struct FwdDefaultRule {
  int hdim;
  int causal;                   // 0, 1 or kAny
  int dtype;                    // a hopattn_dtype_t or kAny
  int64_t seqlen_q_min, seqlen_q_max;
  int64_t seqlen_k_min, seqlen_k_max;
  int group_min, group_max;     // heads_q / heads_kv
  const char* kernel;           // a row of kFwdKernels at this head dim
  const char* evidence;         // the run(s) that chose it
};

// The table (fwd_defaults.cpp) and its size.
const FwdDefaultRule* fwd_default_rules(int* count);

// The rule for a call, or nullptr when none covers it (a gap the host test forbids).
const FwdDefaultRule* fwd_default_rule(int hdim, bool causal, hopattn_dtype_t dtype, int64_t seqlen_q,
                                       int64_t seqlen_k, int64_t group);

// The index in kFwdKernels of `name` at `hdim` if this build compiled it, else -1 (an e4m3 row
// is compiled where HOPATTN_FP8_HEAD_DIMS has the head dim, the others where HOPATTN_HEAD_DIMS has).
int fwd_kernel_index(const std::string& name, int hdim);
// Whether this build compiled head dim `hdim` and dtype `dtype` (HOPATTN_HEAD_DIMS, HOPATTN_DTYPES).
bool fwd_config_compiled(int hdim, hopattn_dtype_t dtype);
// Whether this build compiled the FP8 (e4m3) forward kernels of head dim `hdim` (HOPATTN_FP8_HEAD_DIMS).
bool fwd_fp8_compiled(int hdim);

}  // namespace hopattn::attention
