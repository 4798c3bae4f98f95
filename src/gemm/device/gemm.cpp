// The public GEMM entry points: query where the arguments live and what the device offers,
// check, build the canonical problem, pick the instance and launch it.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>

#include "common/cuda_check.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "gemm/device/gemm_problem.hpp"
#include "gemm/device/gemm_registry.hpp"
#include "gemm/gemm.hpp"

namespace hopattn::gemm {
namespace {

Status query_device_context(const GemmArgs& a, Stream stream, GemmDeviceContext* ctx) {
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&ctx->current_device));
  ctx->stream_device = ctx->current_device;
  if (stream != nullptr) HOPATTN_RETURN_IF_CUDA_ERROR(cudaStreamGetDevice(stream, &ctx->stream_device));
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&ctx->max_smem_per_block,
                                                      cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->current_device));
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&ctx->sm_count, cudaDevAttrMultiProcessorCount, ctx->current_device));
  const void* ptrs[kGemmTensors] = {a.a.data, a.b.data, a.c.data, a.d.data};
  for (int i = 0; i < kGemmTensors; ++i) ctx->tensor_device[i] = hopattn::pointer_device(ptrs[i]);
  return Status();
}

}  // namespace

Status gemm(const GemmArgs& args, Stream stream) {
  // The argument rules first, with a context that knows nothing of the device (no SM count, no
  // shared-memory limit, placement unknown): a machine without a GPU still gets them.
  if (Status s = check_gemm(args, GemmDeviceContext{}); !s.ok()) return s;
  GemmDeviceContext ctx;
  if (Status s = query_device_context(args, stream, &ctx); !s.ok()) return s;
  if (Status s = check_gemm(args, ctx); !s.ok()) return s;
  GemmProblem p = make_problem(args);
  p.sm_count = ctx.sm_count;
  if (p.m == 0 || p.n == 0) return Status();  // nothing to compute
  const GemmInstance* inst = select_instance(p, ctx);
  if (inst == nullptr) return Status(StatusCode::kInternal, "gemm: passed the checks but no instance was selected");
  return inst->run(p, stream);
}

}  // namespace hopattn::gemm

// ---- C ABI ---------------------------------------------------------------------------------------
extern "C" hopattn_status_t hopattn_gemm_check(const hopattn_gemm_args_t* args, void* stream) {
  return hopattn::guarded_c_call([&] {
    if (args == nullptr) return hopattn::Status::invalid("args: null pointer");
    if (hopattn::Status s = hopattn::gemm::check_gemm(*args, hopattn::gemm::GemmDeviceContext{}); !s.ok()) return s;
    hopattn::gemm::GemmDeviceContext ctx;
    if (hopattn::Status s = hopattn::gemm::query_device_context(*args, static_cast<hopattn::Stream>(stream), &ctx); !s.ok())
      return s;
    return hopattn::gemm::check_gemm(*args, ctx);
  });
}

extern "C" hopattn_status_t hopattn_gemm(const hopattn_gemm_args_t* args, void* stream) {
  return hopattn::guarded_c_call([&] {
    if (args == nullptr) return hopattn::Status::invalid("args: null pointer");
    return hopattn::gemm::gemm(*args, static_cast<hopattn::Stream>(stream));
  });
}
