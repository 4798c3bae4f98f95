// The GEMM kernel instances this build compiled (CMake options HOPATTN_GEMM_VARIANTS and
// HOPATTN_GEMM_DTYPES; the table is generated into gemm_registry.cpp at configure time, one
// translation unit per instance). Plain data: the checks and the heuristic read it on the host.
#pragma once

#include <vector>

#include "gemm/device/gemm_problem.hpp"
#include "gemm/gemm.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::gemm {

struct GemmInstance {
  hopattn_gemm_variant_t variant;
  hopattn_dtype_t dtype;  // of A and B
  Major major_a, major_b;
  const char* name;      // e.g. "pipelined_bf16_kmn"
  int smem_bytes;        // dynamic shared memory per CTA
  int block_m, block_n;  // output tile
  int tiles_per_cta;     // output tiles one CTA computes at once (2 for ping-pong)
  bool tma_store_d;      // D is written by TMA stores: 16-byte aligned pointer and leading dimension
  Status (*run)(const GemmProblem&, Stream);
};

const std::vector<GemmInstance>& compiled_instances();

// The instance for (variant, dtype, majors), or nullptr when this build did not compile it.
const GemmInstance* find_instance(hopattn_gemm_variant_t variant, hopattn_dtype_t dtype, Major major_a,
                                  Major major_b);

// The instance gemm() runs for a checked problem (AUTO resolved by the heuristic); nullptr if none.
const GemmInstance* select_instance(const GemmProblem& problem, const GemmDeviceContext& context);

}  // namespace hopattn::gemm
