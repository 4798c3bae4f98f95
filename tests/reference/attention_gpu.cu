// One block per (query row, q-head, batch). The block walks the visible keys in chunks of
// kThreads: each thread scores one key, the block reduces the chunk's max, rescales the running
// output (held in shared memory, one slot per head-dim element) and accumulates P·V. Slow and
// simple on purpose; float64 arithmetic makes it a reference, not a competitor.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>

#include "attention_gpu.hpp"
#include "common/cuda_check.hpp"

namespace hopattn::reference {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHdim = 256;

template <typename T>
__device__ __forceinline__ float load(const T* p) { return float(*p); }

template <typename T>
__device__ __forceinline__ float round_to(float x) { return float(T(x)); }

template <typename Acc>
__device__ Acc block_reduce(Acc x, bool is_max, Acc* scratch) {
  for (int off = 16; off > 0; off >>= 1) {
    const Acc y = __shfl_xor_sync(0xffffffffu, x, off);
    x = is_max ? (x > y ? x : y) : x + y;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  Acc r = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) r = is_max ? (r > scratch[w] ? r : scratch[w]) : r + scratch[w];
  return r;
}

// kLowp: scores rounded to T, P rounded to T, O rounded to T (the yardstick); Acc = float.
template <typename T, typename Acc, bool kLowp>
__global__ void __launch_bounds__(kThreads) attention_reference_kernel(
    AttnProblem p, Acc scale, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, Acc* __restrict__ o, Acc* __restrict__ lse) {
  __shared__ Acc q_row[kMaxHdim];
  __shared__ Acc o_acc[kMaxHdim];
  __shared__ Acc probs[kThreads];
  __shared__ Acc scratch[kThreads / 32];

  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads_q / p.heads_kv);
  const int64_t q_off = ((int64_t(b) * p.seqlen_q + i) * p.heads_q + h) * p.hdim;
  for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
    q_row[d] = Acc(load(q + q_off + d));
    o_acc[d] = 0;
  }
  const int n = p.causal ? min(max(i + p.seqlen_k - p.seqlen_q + 1, 0), p.seqlen_k) : p.seqlen_k;
  Acc m = -INFINITY, l = 0;
  __syncthreads();
  for (int j0 = 0; j0 < n; j0 += kThreads) {
    const int j = j0 + threadIdx.x;
    Acc s = -INFINITY;
    if (j < n) {
      const T* kj = k + ((int64_t(b) * p.seqlen_k + j) * p.heads_kv + hk) * p.hdim;
      Acc dot = 0;
      for (int d = 0; d < p.hdim; ++d) dot += q_row[d] * Acc(load(kj + d));
      s = dot * scale;
      if (kLowp) s = Acc(round_to<T>(float(s)));
    }
    const Acc m_new = max(m, block_reduce(s, true, scratch));  // finite: the chunk has a key
    const Acc alpha = exp(m - m_new);                          // exp(-inf) = 0 on the first chunk
    const Acc pj = j < n ? exp(s - m_new) : Acc(0);
    l = l * alpha + block_reduce(pj, false, scratch);
    probs[threadIdx.x] = kLowp ? Acc(round_to<T>(float(pj))) : pj;
    __syncthreads();
    const int chunk = min(kThreads, n - j0);
    for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
      Acc acc = 0;
      for (int t = 0; t < chunk; ++t) {
        const T* vj = v + ((int64_t(b) * p.seqlen_k + j0 + t) * p.heads_kv + hk) * p.hdim;
        acc += probs[t] * Acc(load(vj + d));
      }
      o_acc[d] = o_acc[d] * alpha + acc;
    }
    m = m_new;
    __syncthreads();
  }
  for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
    Acc out = n > 0 ? o_acc[d] / l : Acc(0);
    if (kLowp) out = Acc(round_to<T>(float(out)));
    o[q_off + d] = out;
  }
  if (threadIdx.x == 0 && lse != nullptr)
    lse[(int64_t(b) * p.heads_q + h) * p.seqlen_q + i] = n > 0 ? m + log(l) : Acc(-INFINITY);
}

template <typename Acc, bool kLowp>
void launch(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
            const void* v, Acc* o, Acc* lse, Stream stream) {
  if (p.hdim > kMaxHdim) throw std::runtime_error("attention reference: hdim > 256");
  if (p.heads_q > 65535 || p.batch > 65535) throw std::runtime_error("attention reference: grid too large");
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return;
  const dim3 grid(p.seqlen_q, p.heads_q, p.batch);
  const Acc scale = Acc(p.effective_scale());
  if (dtype == HOPATTN_DTYPE_BF16) {
    attention_reference_kernel<__nv_bfloat16, Acc, kLowp><<<grid, kThreads, 0, stream>>>(
        p, scale, static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
        static_cast<const __nv_bfloat16*>(v), o, lse);
  } else if (dtype == HOPATTN_DTYPE_FP16) {
    attention_reference_kernel<__half, Acc, kLowp><<<grid, kThreads, 0, stream>>>(
        p, scale, static_cast<const __half*>(q), static_cast<const __half*>(k),
        static_cast<const __half*>(v), o, lse);
  } else {
    throw std::runtime_error("attention reference: dtype must be bf16 or fp16");
  }
  HOPATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void attention_gpu_fp64(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, double* o, double* lse, Stream stream) {
  launch<double, false>(p, dtype, q, k, v, o, lse, stream);
}

void attention_gpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, float* o, float* lse, Stream stream) {
  launch<float, true>(p, dtype, q, k, v, o, lse, stream);
}

}  // namespace hopattn::reference
