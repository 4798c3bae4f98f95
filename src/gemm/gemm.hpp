// hopattn::gemm — the C++ interface of the GEMM (D = alpha·A·B + beta·C). The data types are
// the C ABI's plain structs (include/hopattn/gemm.h); no CUDA or CUTLASS header is needed here.
#pragma once

#include <string>
#include <vector>

#include "hopattn/gemm.h"
#include "hopattn/hopattn.hpp"

namespace hopattn::gemm {

using GemmArgs = hopattn_gemm_args_t;
using Variant = hopattn_gemm_variant_t;

// Where the arguments live and what the device offers, as the CUDA runtime reports it. gemm()
// queries it; host tests pass their own to exercise the checks without a GPU.
constexpr int kGemmTensors = 4;
constexpr const char* kGemmTensorNames[kGemmTensors] = {"a", "b", "c", "d"};
struct GemmDeviceContext {
  int current_device = 0;
  int stream_device = 0;
  int tensor_device[kGemmTensors] = {kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice};
  int max_smem_per_block = 0;  // opt-in limit in bytes; 0: unknown (not checked)
  int sm_count = 0;            // 0: unknown (the heuristic assumes a large GPU)
};

// Every rule that can be checked without touching device memory, including whether the chosen
// variant (or, for AUTO, some compiled variant) can run the problem.
Status check_gemm(const GemmArgs& args, const GemmDeviceContext& context);

// Queries the device context of `stream`, checks, picks the variant, then enqueues the GEMM.
Status gemm(const GemmArgs& args, Stream stream);

// The variant gemm() would run for these arguments (AUTO resolved by the heuristic); the
// arguments must pass check_gemm. `why` (optional) tells which instance and why.
Variant select_variant(const GemmArgs& args, const GemmDeviceContext& context, std::string* why = nullptr);

// A rank-2 descriptor, row-major {ld, 1} or column-major {1, ld}; ld == 0: packed.
Tensor matrix(void* data, DType dtype, long long rows, long long cols, bool row_major, long long ld = 0);

// Names: "auto", "tma_wgmma", ... (nullptr out of range). parse_variant also takes the
// progression numbers "1", "2", "3", "4c", "4p", "5", "6x", "6y".
const char* variant_name(int variant);
bool parse_variant(const std::string& text, Variant* out);
std::string variant_names();  // "auto, tma_wgmma, ..." for messages

// The variants this build compiled for a dtype (for messages, the CLI and the bench).
std::vector<Variant> compiled_variants(DType dtype);

}  // namespace hopattn::gemm
