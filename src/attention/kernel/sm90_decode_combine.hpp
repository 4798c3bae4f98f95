// The decode split kernels' merge (flash-decoding's second step): the partial (O, LSE) of every
// split of a row, from the workspace, into the output. Launched after a split kernel wrote more
// than one partial (device/sm90_decode_launch.hpp, launch_decode_combine).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/array.h>

#include <cstdint>

#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {

// Split-KV merge: one warp per output row (b, q-head, position), kHeadDim / 32 channels per lane.
//   LSE = log Σ_s exp(LSE_s),  O = Σ_s exp(LSE_s − LSE) · O_s   (splits with LSE_s = −inf skipped)
// With attention sinks (a logit per q-head h, which the splits leave out) the sink joins once here:
//   LSE = log(exp(sink_h) + Σ_s exp(LSE_s)), and the weights exp(LSE_s − LSE) then sum to less
//   than 1; a row without keys gets O = 0 and LSE = sink_h.
template <class Element, int kHeadDim>
struct CombineParams {
  const float* o_part;
  const float* lse_part;
  const int32_t* cache_seqlens;
  Element* o;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
  int batch, seqlen_q, heads_q, max_len, num_splits;
  bool causal;
  const float* sinks;  // (heads_q) float32, or nullptr
#ifdef HOPATTN_DECODE_STAMPS
  uint64_t* stamps;
#endif
};

constexpr int kCombineWarps = 4;

// kBatch: splits whose O rows a lane loads at once (0: 64 / kPer, 16 at hdim 128). A call with
// few slots takes a small batch (launch_decode_combine): the registers of 16 splits' rows cap
// the resident warps (ncu r131, 64:8 128 x 2k int8 with tails, 8192 rows of 2 slots: 16.7 us).
template <class Element, int kHeadDim, int kBatch = 0>
__global__ void __launch_bounds__(32 * kCombineWarps) decode_combine_kernel(const CombineParams<Element, kHeadDim> p) {
#ifdef HOPATTN_DECODE_STAMPS
  HOPATTN_STAMP(p.stamps, blockIdx.x, 1);
  stamp_smid(p.stamps);
#endif
  constexpr int kPer = kHeadDim / 32;
  const int64_t rows = int64_t(p.batch) * p.heads_q * p.seqlen_q;
  const int64_t row = int64_t(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  // Launched as a programmatic dependent (DecodeParams::combine_pdl): nothing the kernels before
  // wrote is read before they are done (a no-op on a plain launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // The next kernel (the next call's split kernel, a programmatic dependent) may launch now: its
  // own griddepcontrol.wait holds its loads and stores until this grid is done.
  asm volatile("griddepcontrol.launch_dependents;");
  const int s = int(row % p.seqlen_q);
  const int h = int((row / p.seqlen_q) % p.heads_q);
  const int b = int(row / (int64_t(p.seqlen_q) * p.heads_q));
  const bool bad_length = bad_cache_length(p.cache_seqlens[b], p.max_len, p.seqlen_q, p.causal);

  // Every load that does not depend on another is issued first: this lane's LSE (split lane) and
  // the partial O rows of the first kBatch splits, so a step with up to kBatch splits pays about
  // one memory latency here instead of one per group of splits (decode_timeline r38: 3.8 us for
  // 16 splits when the O rows waited for the LSE reduction and came 4 splits at a time).
  // The sum still runs over the splits in order: results are the same on every run.
  constexpr int kBatchSplits = kBatch > 0 ? kBatch : 64 / kPer;  // splits whose O values a lane holds at once
  const float* lse_row = p.lse_part + row;
  const float* o_row = p.o_part + row * kHeadDim + lane * kPer;
  const int64_t o_split_stride = rows * kHeadDim;
  float2 v[kBatchSplits][kPer / 2];
  auto load_batch = [&](int base) {
    CUTE_UNROLL
    for (int u = 0; u < kBatchSplits; ++u) {
      const float* src = o_row + (base + u) * o_split_stride;
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2)
        v[u][j / 2] = base + u < p.num_splits ? *reinterpret_cast<const float2*>(src + j) : make_float2(0.0f, 0.0f);
    }
  };
  const float l_lane = lane < p.num_splits ? lse_row[lane * rows] : -INFINITY;
  const float sink = p.sinks != nullptr ? p.sinks[h] : -INFINITY;  // the row's sink (an input), or none
  load_batch(0);

  // A split that wrote a NaN partial (a paged cache's bad page id: the split kernel records it and
  // writes NaN) makes the row NaN: fmaxf below would drop it, and with every other split empty the
  // row would read as one that sees no key (O = 0, LSE = -inf). (Review, 2026-12-06.)
  bool nan_part = isnan(l_lane);
  float m = l_lane;
  for (int sp = lane + 32; sp < p.num_splits; sp += 32) {
    const float l = lse_row[sp * rows];
    nan_part |= isnan(l);
    m = fmaxf(m, l);
  }
  const bool bad = bad_length || __any_sync(0xffffffffu, nan_part);
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  // The sink (a uniform test per warp): the maximum takes it (a NaN one makes the row NaN).
  if (p.sinks != nullptr) m = isnan(sink) ? sink : fmaxf(m, sink);
  float sum = 0.0f;
  if (m != -INFINITY) {
    sum = l_lane == -INFINITY ? 0.0f : expf(l_lane - m);
    for (int sp = lane + 32; sp < p.num_splits; sp += 32) sum += expf(lse_row[sp * rows] - m);
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (p.sinks != nullptr && m != -INFINITY) sum += expf(sink - m);  // once, after the lanes' sum
  const float lse = m == -INFINITY ? -INFINITY : m + logf(sum);
  // A sink of +inf or NaN: the row is NaN (O too, as the split kernel's own epilogue gives it).
  const bool nan_row = bad || (p.sinks != nullptr && isnan(lse));
  // Split i's weight: from lane i for the first 32 splits, re-read (one broadcast load) after.
  const float w_lane = l_lane == -INFINITY || lse == -INFINITY ? 0.0f : expf(l_lane - lse);
  auto weight = [&](int i) {
    if (i < 32) return __shfl_sync(0xffffffffu, w_lane, i);
    const float l = lse_row[i * rows];
    return l == -INFINITY || lse == -INFINITY ? 0.0f : expf(l - lse);
  };

  float acc[kPer] = {};
  for (int base = 0; base < p.num_splits; base += kBatchSplits) {
    if (base > 0) load_batch(base);
    CUTE_UNROLL
    for (int u = 0; u < kBatchSplits; ++u) {
      const float w = base + u < p.num_splits ? weight(base + u) : 0.0f;
      // An empty split (weight 0) may hold anything: it must not reach O, NaN included.
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2) {
        acc[j] += w != 0.0f ? w * v[u][j / 2].x : 0.0f;
        acc[j + 1] += w != 0.0f ? w * v[u][j / 2].y : 0.0f;
      }
    }
  }
  cutlass::Array<Element, kPer> out;
  CUTE_UNROLL
  for (int j = 0; j < kPer; ++j) out[j] = Element(nan_row ? NAN : acc[j]);
  *reinterpret_cast<cutlass::Array<Element, kPer>*>(p.o + b * p.o_batch_stride + s * p.o_seq_stride +
                                                    h * p.o_head_stride + lane * kPer) = out;
  if (p.lse != nullptr && lane == 0)
    p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] = nan_row ? NAN : lse;
  HOPATTN_STAMP(p.stamps, blockIdx.x, 6);  // thread 0's row stored
}

}  // namespace hopattn::attention
