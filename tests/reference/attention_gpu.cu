// One block per (query row, q-head, batch). The block walks the row's visible keys in chunks of
// kThreads (the FP8 yardstick: the FP8 kernel's KV blocks of block_n keys, from key 0): each
// thread scores one key, the block reduces the chunk's max, rescales the running
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

#include <algorithm>
#include <cmath>
#include <cstddef>
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
  // The FP8 yardstick: the keys per KV block and the descales, 3 x (batch, heads_kv) (q, k, v).
  int block_n;
  const float* descales;
  bool mma_sums;  // the FP8 yardstick's row sums: of the rounded P, as the P·V WGMMA takes them
};

// What the yardstick rounds: nothing (the float64 reference), scores, P and O to T (16-bit
// inputs), or the FP8 kernel's arithmetic (fp8_accumulate.hpp; T = float, the e4m3 code values):
// S and P·V accumulated as the FP8 WGMMA does, the descales applied as the kernel does, the
// softmax per KV block of block_n keys with P = exp2(S · scale_log2 - offset) <= 256 rounded to
// e4m3, O rounded to bf16.
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
  const int first = p.ranges[i].x, end = p.ranges[i].y;
  Acc m = p.sinks != nullptr ? Acc(p.sinks[h]) : Acc(-INFINITY);
  Acc l = m == Acc(-INFINITY) ? Acc(0) : Acc(1);  // exp(sink - m)
  // FP8: the exponent's scale with the (batch, kv-head)'s descales, the kernel's float order.
  const int bhk = b * p.heads_kv + hk, n_bhk = gridDim.z * p.heads_kv;
  float scale_log2 = 0.0f;
  if constexpr (kFp8) scale_log2 = fp8_scale_log2(float(p.scale), p.descales[bhk], p.descales[n_bhk + bhk]);
  // Chunks: kThreads keys from the row's first (fp64, 16-bit); the FP8 kernel's KV blocks.
  const int step = kFp8 ? p.block_n : kThreads;
  __syncthreads();
  for (int j0 = kFp8 ? first / step * step : first; j0 < end; j0 += step) {
    const int j = j0 + int(threadIdx.x);
    const bool visible = int(threadIdx.x) < step && j >= first && j < end;
    Acc s = -INFINITY;
    if (visible) {
      const T* kj = k + ((int64_t(b) * p.seqlen_k + j) * p.heads_kv + hk) * p.hdim;
      if constexpr (kFp8) {  // the FP8 WGMMA's accumulation on the codes (fp8_accumulate.hpp); Acc = T = float
        s = fp8_wgmma_dot(q_row, [&](int d) { return float(load(kj + d)); }, p.hdim);
      } else {
        Acc dot = 0;
        for (int d = 0; d < p.hdim; ++d) dot += q_row[d] * Acc(load(kj + d));
        s = dot * p.scale;
        if (kLowp) s = Acc(round_to<T>(float(s)));
        if (p.softcap > 0) {
          s = p.softcap * tanh(s / p.softcap);
          if (kLowp) s = Acc(round_to<T>(float(s)));  // the capped score in T too, as attention_cpu_lowp
        }
      }
    }
    Acc m_new = max(m, block_reduce(s, true, scratch));  // finite: the chunk has a key
    if constexpr (kFp8)
      if (p.mma_sums) m_new = fp8_lagging_max(m, m_new, scale_log2);  // the kernel's lagging maximum
    Acc alpha, pj;
    if constexpr (kFp8) {  // the FP8 kernel's OnlineSoftmax<_, 8> (fp8_accumulate.hpp)
      const float offset = fp8_softmax_offset(m_new, scale_log2);
      alpha = m == -INFINITY ? 0.0f : fp8_exp2(fp8_softmax_offset(m, scale_log2) - offset);  // O, l: 0 before
      pj = visible ? fp8_softmax_p(s, scale_log2, offset) : 0.0f;
    } else {
      alpha = exp(m - m_new);                          // exp(-inf) = 0 while nothing is summed
      pj = visible ? exp(s - m_new) : Acc(0);
    }
    if (!(kFp8 && p.mma_sums)) l = l * alpha + block_reduce(pj, false, scratch);
    if (int(threadIdx.x) < step)
      probs[threadIdx.x] = kLowp ? Acc(round_to<T>(float(pj))) : kFp8 ? Acc(round_to<__nv_fp8_e4m3>(float(pj))) : pj;
    __syncthreads();
    const int chunk = min(step, end - j0);
    if constexpr (kFp8)  // every thread the same sum: the rounded P times a V column of 1.0, as O accumulates
      if (p.mma_sums) l = fp8_wgmma_accumulate(l * alpha, [&](int c) { return probs[c]; }, chunk);
    for (int d = threadIdx.x; d < p.hdim; d += kThreads) {
      auto v_at = [&](int c) { return v + ((int64_t(b) * p.seqlen_k + j0 + c) * p.heads_kv + hk) * p.hdim + d; };
      if constexpr (kFp8) {  // O = O · alpha + P·V as the FP8 WGMMA accumulates it, k-steps from the block's start
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
    if constexpr (kFp8) out = l > 0 ? round_to<__nv_bfloat16>(o_acc[d] * (1.0f / l) * p.descales[2 * n_bhk + bhk]) : 0.0f;
    o[q_off + d] = out;
  }
  if (threadIdx.x == 0 && lse != nullptr) {
    Acc out = l > 0 ? m + log(l) : Acc(-INFINITY);
    if constexpr (kFp8) out = l > 0 ? fp8_softmax_lse(m, scale_log2, l) : -INFINITY;
    lse[(int64_t(b) * p.heads_q + h) * p.seqlen_q + i] = out;
  }
}

// Uploads the rows' key ranges and the sinks, runs the kernel and waits for it (the uploads'
// buffers are freed on return).
// fp8_descales (the FP8 yardstick): host, 3 x (batch, heads_kv) floats (q, k, v).
template <typename Acc, Rounding kRounding>
void launch(const AttnProblem& p, hopattn_dtype_t dtype, const void* q, const void* k,
            const void* v, Acc* o, Acc* lse, Stream stream, int block_n = 0,
            const std::vector<float>* fp8_descales = nullptr, bool mma_sums = false) {
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
  DeviceBuffer descales_dev(std::max<size_t>(fp8_descales ? fp8_descales->size() : 0, 1) * sizeof(float));
  if (fp8_descales != nullptr)
    HOPATTN_CUDA_CHECK(cudaMemcpyAsync(descales_dev.get(), fp8_descales->data(), fp8_descales->size() * sizeof(float),
                                       cudaMemcpyHostToDevice, stream));
  HOPATTN_CUDA_CHECK(cudaMemcpyAsync(ranges_dev.get(), ranges.data(), ranges.size() * sizeof(int2),
                                     cudaMemcpyHostToDevice, stream));
  if (!p.sinks.empty())
    HOPATTN_CUDA_CHECK(cudaMemcpyAsync(sinks_dev.get(), p.sinks.data(), p.sinks.size() * sizeof(float),
                                       cudaMemcpyHostToDevice, stream));
  const KernelProblem<Acc> kp{p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.hdim,
                              Acc(p.effective_scale()), Acc(p.softcap), ranges_dev.as<const int2>(),
                              p.sinks.empty() ? nullptr : sinks_dev.as<const float>(), block_n,
                              descales_dev.as<const float>(), mma_sums};
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

void attention_gpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, const float* q_descale,
                            const float* k_descale, const float* v_descale, float* o, float* lse, int block_n,
                            Stream stream, bool mma_sums) {
  if (p.softcap > 0 || !p.sinks.empty()) throw std::runtime_error("attention_gpu_fp8_lowp: no softcap or sinks");
  if (block_n <= 0) block_n = fp8_kernel_block_n(p.hdim);
  if (block_n % kFp8AccStep != 0 || block_n > kThreads)
    throw std::runtime_error("attention_gpu_fp8_lowp: block_n must be a multiple of 32 up to " + std::to_string(kThreads));
  const size_t n = size_t(p.batch) * p.heads_kv;
  std::vector<float> descales(3 * n, 1.0f);
  const float* given[3] = {q_descale, k_descale, v_descale};
  for (int t = 0; t < 3; ++t)
    if (given[t] != nullptr) std::copy(given[t], given[t] + n, descales.begin() + ptrdiff_t(t * n));
  launch<float, Rounding::kFp8>(p, HOPATTN_DTYPE_FP32, q, k, v, o, lse, stream, block_n, &descales, mma_sums);
}

}  // namespace hopattn::reference
