// One block per (query row, q-head, batch). The block walks the row's visible keys in chunks of
// kThreads: each thread scores one key, the block reduces the chunk's max, rescales the running
// output (held in shared memory, one slot per head-dim element) and accumulates P·V. Slow and
// simple on purpose; float64 arithmetic makes it a reference, not a competitor.
//
// The mask is not computed here: the host uploads each row's key range from
// AttnProblem::visible_range, the definition the CPU references use too. A sink starts the
// row's running maximum and denominator (m = sink, l = 1; none or -inf: m = -inf, l = 0).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_gpu.hpp"
#include "common/cuda_check.hpp"
#include "device_utils.hpp"
#include "fp8_accumulate.hpp"

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

// The problem as the kernel reads it: plain data, device pointers.
template <typename Acc>
struct KernelProblem {
  int seqlen_q, seqlen_k, heads_q, heads_kv, hdim;
  Acc scale, softcap;          // softcap 0: off
  const int2* ranges;          // (seqlen_q): [begin, end) of the keys each query row sees
  const float* sinks;          // (heads_q), or nullptr
};

// What the yardstick rounds: nothing (the float64 reference), scores, P and O to T (16-bit
// inputs), or P to e4m3 and O to bf16 (FP8 inputs given dequantized as float32, T = float: the
// FP8 kernel rounds P before the normalisation, as here), with S accumulated as the FP8 WGMMA
// does (fp8_accumulate.hpp).
enum class Rounding { kNone, kDtype, kFp8 };

// kLowp (Rounding != kNone): Acc = float.
// Launch bounds of 8 blocks per SM allow 64 registers: left to itself ptxas fits the float
// variant into 32 and spills.
template <typename T, typename Acc, Rounding kRounding>
__global__ void __launch_bounds__(kThreads, 8) attention_reference_kernel(
    KernelProblem<Acc> p, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    Acc* __restrict__ o, Acc* __restrict__ lse) {
  constexpr bool kLowp = kRounding == Rounding::kDtype;
  constexpr bool kFp8 = kRounding == Rounding::kFp8;
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
  const int first = p.ranges[i].x, n = p.ranges[i].y - p.ranges[i].x;
  Acc m = p.sinks != nullptr ? Acc(p.sinks[h]) : Acc(-INFINITY);
  Acc l = m == Acc(-INFINITY) ? Acc(0) : Acc(1);  // exp(sink - m)
  __syncthreads();
  for (int j0 = 0; j0 < n; j0 += kThreads) {
    const int t = j0 + threadIdx.x, j = first + t;
    Acc s = -INFINITY;
    if (t < n) {
      const T* kj = k + ((int64_t(b) * p.seqlen_k + j) * p.heads_kv + hk) * p.hdim;
      Acc dot = 0;
      if constexpr (kFp8) {  // the FP8 WGMMA's accumulation (fp8_accumulate.hpp); Acc = T = float
        dot = fp8_wgmma_dot(q_row, [&](int d) { return float(load(kj + d)); }, p.hdim);
      } else {
        for (int d = 0; d < p.hdim; ++d) dot += q_row[d] * Acc(load(kj + d));
      }
      s = dot * p.scale;
      if (kLowp) s = Acc(round_to<T>(float(s)));
      if (p.softcap > 0) {
        s = p.softcap * tanh(s / p.softcap);
        if (kLowp) s = Acc(round_to<T>(float(s)));  // the capped score in T too, as attention_cpu_lowp
      }
    }
    const Acc m_new = max(m, block_reduce(s, true, scratch));  // finite: the chunk has a key
    const Acc alpha = exp(m - m_new);                          // exp(-inf) = 0 while nothing is summed
    const Acc pj = t < n ? exp(s - m_new) : Acc(0);
    l = l * alpha + block_reduce(pj, false, scratch);
    probs[threadIdx.x] = kLowp ? Acc(round_to<T>(float(pj))) : kFp8 ? Acc(round_to<__nv_fp8_e4m3>(float(pj))) : pj;
    __syncthreads();
    const int chunk = min(kThreads, n - j0);
    for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
      auto v_at = [&](int c) { return v + ((int64_t(b) * p.seqlen_k + first + j0 + c) * p.heads_kv + hk) * p.hdim + d; };
      if constexpr (kFp8) {  // O += P·V as the FP8 WGMMA accumulates it (fp8_accumulate.hpp)
        o_acc[d] = fp8_wgmma_accumulate(o_acc[d] * alpha, [&](int c) { return probs[c] * float(load(v_at(c))); }, chunk);
      } else {
        Acc acc = 0;
        for (int c = 0; c < chunk; ++c) acc += probs[c] * Acc(load(v_at(c)));
        o_acc[d] = o_acc[d] * alpha + acc;
      }
    }
    m = m_new;
    __syncthreads();
  }
  // l == 0: no key and no sink; with a sink and no key, O = 0 and LSE = sink.
  for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
    Acc out = l > 0 ? o_acc[d] / l : Acc(0);
    if (kLowp) out = Acc(round_to<T>(float(out)));
    if (kFp8) out = Acc(round_to<__nv_bfloat16>(float(out)));
    o[q_off + d] = out;
  }
  if (threadIdx.x == 0 && lse != nullptr)
    lse[(int64_t(b) * p.heads_q + h) * p.seqlen_q + i] = l > 0 ? m + log(l) : Acc(-INFINITY);
}

// Uploads the rows' key ranges and the sinks, runs the kernel and waits for it (the uploads'
// buffers are freed on return).
template <typename Acc, Rounding kRounding>
void launch(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
            const void* v, Acc* o, Acc* lse, Stream stream) {
  if (p.hdim > kMaxHdim) throw std::runtime_error("attention reference: hdim > 256");
  if (p.heads_q > 65535 || p.batch > 65535) throw std::runtime_error("attention reference: grid too large");
  if (!p.sinks.empty() && p.sinks.size() != size_t(p.heads_q))
    throw std::runtime_error("attention reference: " + std::to_string(p.sinks.size()) + " sinks for " +
                             std::to_string(p.heads_q) + " q-heads");
  if (dtype != HOPATTN_DTYPE_BF16 && dtype != HOPATTN_DTYPE_FP16 && dtype != HOPATTN_DTYPE_FP32)
    throw std::runtime_error("attention reference: dtype must be bf16, fp16 or fp32");
  if ((kRounding == Rounding::kFp8) != (dtype == HOPATTN_DTYPE_FP32 && kRounding != Rounding::kNone))
    throw std::runtime_error("attention reference: the FP8 yardstick takes float32 (dequantized) inputs, the 16-bit one bf16 or fp16");
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return;
  std::vector<int2> ranges(p.seqlen_q);
  for (int i = 0; i < p.seqlen_q; ++i) {
    const AttnProblem::KeyRange r = p.visible_range(i);
    ranges[i] = make_int2(r.begin, r.end);
  }
  DeviceBuffer ranges_dev(ranges.size() * sizeof(int2));
  DeviceBuffer sinks_dev(std::max<size_t>(p.sinks.size(), 1) * sizeof(float));
  HOPATTN_CUDA_CHECK(cudaMemcpyAsync(ranges_dev.get(), ranges.data(), ranges.size() * sizeof(int2),
                                     cudaMemcpyHostToDevice, stream));
  if (!p.sinks.empty())
    HOPATTN_CUDA_CHECK(cudaMemcpyAsync(sinks_dev.get(), p.sinks.data(), p.sinks.size() * sizeof(float),
                                       cudaMemcpyHostToDevice, stream));
  const KernelProblem<Acc> kp{p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.hdim,
                              Acc(p.effective_scale()), Acc(p.softcap), ranges_dev.as<const int2>(),
                              p.sinks.empty() ? nullptr : sinks_dev.as<const float>()};
  const dim3 grid(p.seqlen_q, p.heads_q, p.batch);
  if (dtype == HOPATTN_DTYPE_FP32) {
    if constexpr (kRounding != Rounding::kDtype)
      attention_reference_kernel<float, Acc, kRounding><<<grid, kThreads, 0, stream>>>(
          kp, static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v), o, lse);
  } else if constexpr (kRounding != Rounding::kFp8) {
    if (dtype == HOPATTN_DTYPE_BF16) {
      attention_reference_kernel<__nv_bfloat16, Acc, kRounding><<<grid, kThreads, 0, stream>>>(
          kp, static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
          static_cast<const __nv_bfloat16*>(v), o, lse);
    } else {
      attention_reference_kernel<__half, Acc, kRounding><<<grid, kThreads, 0, stream>>>(
          kp, static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v), o, lse);
    }
  }
  HOPATTN_CUDA_CHECK(cudaGetLastError());
  HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

void attention_gpu_fp64(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, double* o, double* lse, Stream stream) {
  launch<double, Rounding::kNone>(p, dtype, q, k, v, o, lse, stream);
}

void attention_gpu_lowp(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
                        const void* v, float* o, float* lse, Stream stream) {
  launch<float, Rounding::kDtype>(p, dtype, q, k, v, o, lse, stream);
}

void attention_gpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, float* o, float* lse,
                            Stream stream) {
  launch<float, Rounding::kFp8>(p, HOPATTN_DTYPE_FP32, q, k, v, o, lse, stream);
}

}  // namespace hopattn::reference
