// One variable-length forward case run end to end (hopattn.h 0.4): packed inputs (random; keys
// past seqused_k NaN so that a read shows), NaN-poisoned outputs with rows outside every sequence,
// the implementation, and per sequence the fp64 reference and the low-precision yardstick under
// FlashAttention's 2x rule; the rows outside every sequence must keep their poison. Shared by the
// gpu tests and `hopattn check`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention_check.hpp"
#include "attention_reference.hpp"
#include "device_utils.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

// Per sequence its query and key counts (the cu_seqlens differences), optionally seqused_k (keys
// used, <= the difference), and the problem's options (its batch/seqlen fields are unused).
struct VarlenCase {
  std::vector<int> len_q, len_k;
  std::vector<int> used_k;  // empty: none
  int q_start = 0;          // cu_seqlens_q[0] (rows before it belong to no sequence)
  int k_start = 0;
  AttnProblem p;            // heads, hdim, causal, scale, window, softcap, sinks
  float input_std = 1.0f;
  uint64_t seed = 1;
  std::string to_string() const;
};

// The device side of a case: the tensors with a margin of rows before and after the sequences,
// the length arrays, the workspace (hopattn_attention_forward_workspace_size) and the args.
struct VarlenRun {
  int total_q = 0, total_k = 0, rows_q = 0, rows_k = 0;
  DeviceBuffer q, k, v, o, lse, cu_q, cu_k, used, sinks, workspace;
  AttentionForwardArgs args{};
};

// Fills `r` for case `c`; an error if the workspace size is refused.
Status build_varlen_run(const VarlenCase& c, hopattn_dtype_t dtype, VarlenRun& r);

// cu_seqlens of lengths from `start`.
std::vector<int32_t> varlen_prefix(int start, const std::vector<int>& lens);

struct VarlenSequenceError {
  int lq = 0, lk = 0;
  ErrorStats o, lse;
  double o_bound = 0, lse_bound = 0;
};
struct VarlenCheckResult {
  std::vector<VarlenSequenceError> sequences;  // one per sequence with queries
  int64_t touched_outside = 0;                 // elements written outside every sequence
  bool pass = false;
  std::string message;  // the first failure, or ""
};

// The outputs of a finished run against the per-sequence references.
VarlenCheckResult check_varlen_outputs(const VarlenCase& c, hopattn_dtype_t dtype, const VarlenRun& r);

// Build, run `fn` (synchronised), check: the whole case; `message` says why it failed.
VarlenCheckResult run_varlen_check(const VarlenCase& c, hopattn_dtype_t dtype, const ForwardFn& fn);

// The variable-length cases `hopattn check` runs for one head dim: odd and empty lengths, more
// queries than keys, GQA, seqused_k, causal and not, a window with softcap and sinks.
std::vector<VarlenCase> varlen_check_cases(int hdim);

}  // namespace hopattn::reference
