// Variant "split_k": the cooperative kernel (4a) with K split across the CTAs of a cluster and
// the partial tiles summed through distributed shared memory — for problems with too few output
// tiles to fill the SMs (e.g. 1024 x 1024 x 8192: 32 tiles of 128x256 on 132 SMs), without a
// global workspace.
//
//   roles:     as cooperative: warpgroup 0 = producer (one elected thread issues the TMA loads),
//              warpgroups 1, 2 = consumers (m64n256k16 WGMMAs on 64 rows each)
//   registers: setmaxnreg: producer 40, consumers 232
//   grid:      tiles x S CTAs, clusters of S = Params::splits (1 to 4; chosen at launch: the
//              largest S with tiles x S <= SMs, S <= k-tiles and every cluster resident at once,
//              cudaOccupancyMaxActiveClusters — on the H200 fewer than 32 clusters of 4 fit,
//              and a 33rd cluster would run as a second wave); CTA b computes tile b / S over k-tiles
//              [r·KT/S, (r+1)·KT/S) with r its rank in the cluster (possibly none when KT < S)
//   pipeline:  TmaPipeline<kStages>; producer 1 thread, consumers 256 threads
//              full[s]: 1 arrival + kTxBytes; empty[s]: 256 arrivals
//   reduction: after its last WGMMA, each CTA
//                1. named barrier kSplitKDone (256 consumer threads): both warpgroups' WGMMAs
//                   have finished reading the ring, which is now reused
//                2. writes its fp32 partial tile (128 x 256, rows padded to 264 floats) over the
//                   ring (132 KiB of its 192 KiB)
//                3. cluster barrier (all threads of all S CTAs; release/acquire): every partial
//                   is in shared memory
//                4. sums rows [r·128/S, (r+1)·128/S) (rounded down) of the S partials, read from the peers'
//                   shared memory (ld through cluster-mapped addresses, 16 bytes per load), and
//                   stores D = alpha·sum + beta·C for them (predicated, any strides)
//                5. cluster barrier: no CTA exits while a peer may still read its partial
//   order:     the sum runs over the partials in rank order, so results do not depend on timing
#pragma once

#include <cooperative_groups.h>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/bfloat16.h>
#include <cutlass/half.h>

#include "common/register_budget.hpp"
#include "gemm/collective/sm90_gemm_epilogue_direct.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"
#include "gemm/kernel/sm90_gemm_named_barriers.hpp"

namespace hopattn::gemm {

// Four output elements stored together (8 bytes for 16-bit types, 16 for fp32).
template <class Out>
struct alignas(4 * sizeof(Out)) Out4 {
  Out v[4];
};

template <class Mainloop>
struct Sm90GemmSplitK {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = threads_of(kCfg);
  static constexpr int kConsumerThreads = 128 * kCfg.kMmaWarpgroups;
  static constexpr int kBlockM = kCfg.kBlockM, kBlockN = kCfg.kBlockN;
  static constexpr int kPartialLd = kBlockN + 8;  // floats per partial row: 8 banks of skew per row
  static constexpr int kMaxSplits = 4;
  static_assert(kCfg.kSplitKCluster && kCfg.kProducerWarpgroup && kConsumerThreads == 256,
                "a split-K configuration: producer + two consumer warpgroups");
  static_assert(kCfg.kProducerRegisters * 128 + kCfg.kConsumerRegisters * kConsumerThreads <=
                    launch_pool_registers(kThreads),
                "setmaxnreg budgets exceed the CTA's launch pool (a setmaxnreg.inc would wait forever)");
  static_assert(kBlockN % 4 == 0, "float4 columns");

  struct Params {
    typename Mainloop::Params mainloop;
    DirectEpilogueParams epilogue;
    int tiles_m = 0, tiles_n = 0;
    int splits = 1;  // cluster size along x, set at launch
    int sm_count = 0, k_tiles = 0;
  };

  struct SharedStorage {
    union {
      typename Mainloop::TensorStorage tensors;
      alignas(16) float partial[kBlockM * kPartialLd];
    };
    PipelineStorage<kStages> pipeline;
  };
  static_assert(sizeof(float) * kBlockM * kPartialLd <= sizeof(typename Mainloop::TensorStorage),
                "the partial tile fits in the ring it reuses");

  // Whether S splits fit the SMs and the k-tiles (the launch also checks cluster residency).
  static bool splits_fit(const Params& p, int s) {
    return int64_t(p.tiles_m) * p.tiles_n * s <= int64_t(p.sm_count) && s <= p.k_tiles;
  }
  static int tiles(const Params& p) { return p.tiles_m * p.tiles_n; }
  static void set_splits(Params& p, int s) { p.splits = s; }

  static Params to_params(const GemmProblem& p) {
    Params params{Mainloop::to_params(p), make_direct_epilogue_params(p), 0, 0, 1, p.sm_count, 0};
    params.tiles_m = (p.m + kBlockM - 1) / kBlockM;
    params.tiles_n = (p.n + kBlockN - 1) / kBlockN;
    params.k_tiles = Mainloop::k_tiles(params.mainloop);
    return params;
  }
  static dim3 grid(const Params& p) { return dim3(unsigned(p.tiles_m * p.tiles_n * p.splits), 1, 1); }

  CUTE_DEVICE void operator()(const Params& p, char* smem) {
    auto& s = *reinterpret_cast<SharedStorage*>(smem);
    const int warpgroup = cutlass::canonical_warp_group_idx();
    if (threadIdx.x == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      TmaPipeline<kStages>::init(s.pipeline, kConsumerThreads);
    }
    __syncthreads();

    const int splits = p.splits;
    const int rank = int(cute::block_rank_in_cluster());
    const int tile = int(blockIdx.x) / splits;
    const int m_blk = tile % p.tiles_m, n_blk = tile / p.tiles_m;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    const int k_begin = int(int64_t(k_tiles) * rank / splits), k_end = int(int64_t(k_tiles) * (rank + 1) / splits);
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kCfg.kProducerRegisters>();
      if (cutlass::canonical_warp_idx_sync() == 0 && cute::elect_one_sync()) produce(p, s, m_blk, n_blk, k_begin, k_end);
      __syncwarp();
      cute::cluster_arrive();  // 3: the partials are written (this warpgroup writes none)
      cute::cluster_wait();
    } else {
      cutlass::arch::warpgroup_reg_alloc<kCfg.kConsumerRegisters>();
      const int thread = int(threadIdx.x) - 128;
      consume_and_write_partial(p, s, thread, k_begin, k_end);
      cute::cluster_arrive();  // 3
      cute::cluster_wait();
      reduce_and_store(p, s, thread, rank, splits, m_blk, n_blk);
    }
    cute::cluster_arrive();  // 5: every peer is done reading this CTA's partial
    cute::cluster_wait();
  }

  CUTE_DEVICE void produce(const Params& p, SharedStorage& s, int m_blk, int n_blk, int k_begin, int k_end) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto load = Mainloop::tile_loader(p.mainloop, s.tensors, m_blk, n_blk);
    PipelineState<kStages> write;
    for (int t = k_begin; t < k_end; ++t, ++write) load(t, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
  }

  CUTE_DEVICE void consume_and_write_partial(const Params& p, SharedStorage& s, int thread, int k_begin, int k_end) {
    using namespace cute;
    TmaPipeline<kStages> pipe{s.pipeline};
    auto operands = Mainloop::mma_operands(s.tensors, thread);
    auto acc = Mainloop::make_accumulators();  // (MMA, MMA_M, MMA_N) fp32
    clear(acc);
    PipelineState<kStages> read, release;
    for (int t = k_begin; t < k_end; ++t, ++read) {
      pipe.consumer_wait(read);
      Mainloop::mma_stage(get<0>(operands), get<1>(operands), acc, read.index);
      warpgroup_wait<1>();
      if (t > k_begin) {
        pipe.consumer_release(release);
        ++release;
      }
    }
    warpgroup_wait<0>();
    named_barrier_sync(GemmNamedBarrier::kSplitKDone, kConsumerThreads);  // 1: the ring is no longer read
    cute::Tensor cD = make_identity_tensor(make_shape(Int<kBlockM>{}, Int<kBlockN>{}));
    cute::Tensor tCcD = typename Mainloop::TiledMma{}.get_slice(thread).partition_C(cD);
    // 2: registers i, i + 1 (i even) hold columns n, n + 1 of one row: one 8-byte store per pair.
    static_assert(size(decltype(acc){}) % 2 == 0 && kPartialLd % 2 == 0, "pairs of columns");
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 2) {
      const int m = int(get<0>(tCcD(i))), n = int(get<1>(tCcD(i)));
      *reinterpret_cast<float2*>(&s.partial[m * kPartialLd + n]) = make_float2(acc(i), acc(i + 1));
    }
  }

  CUTE_DEVICE void reduce_and_store(const Params& p, SharedStorage& s, int thread, int rank, int splits, int m_blk,
                                    int n_blk) {
    switch (p.epilogue.out_dtype) {
      case HOPATTN_DTYPE_FP32: reduce_as<float>(p, s, thread, rank, splits, m_blk, n_blk); break;
      case HOPATTN_DTYPE_FP16: reduce_as<cutlass::half_t>(p, s, thread, rank, splits, m_blk, n_blk); break;
      default: reduce_as<cutlass::bfloat16_t>(p, s, thread, rank, splits, m_blk, n_blk); break;
    }
  }

  template <class Out>
  CUTE_DEVICE void reduce_as(const Params& p, SharedStorage& s, int thread, int rank, int splits, int m_blk,
                             int n_blk) {
    const DirectEpilogueParams& e = p.epilogue;
    auto cluster = cooperative_groups::this_cluster();
    const float* parts[kMaxSplits];  // unrolled loops only: constant indices keep it in registers
    CUTE_UNROLL
    for (int q = 0; q < kMaxSplits; ++q) parts[q] = cluster.map_shared_rank(s.partial, q < splits ? q : 0);
    Out* d = static_cast<Out*>(e.d);
    const Out* c = static_cast<const Out*>(e.c);
    const bool read_c = e.beta != 0.0f;
    const float alpha = e.alpha, beta = e.beta;
    const int n_total = e.n;
    const int64_t d_stride_m = e.d_stride_m;
    // Four consecutive columns of a row-major D in one store when they are aligned for it.
    const bool vector_d = e.d_stride_n == 1 && d_stride_m % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(d) % sizeof(Out4<Out>) == 0;
    const int row_begin = rank * kBlockM / splits, rows = (rank + 1) * kBlockM / splits - row_begin;
    constexpr int kVecPerRow = kBlockN / 4;
    for (int idx = thread; idx < rows * kVecPerRow; idx += kConsumerThreads) {
      const int row = row_begin + idx / kVecPerRow, col = (idx % kVecPerRow) * 4;
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      CUTE_UNROLL
      for (int q = 0; q < kMaxSplits; ++q) {  // rank order: deterministic
        if (q < splits) {
          const float4 v = *reinterpret_cast<const float4*>(parts[q] + row * kPartialLd + col);
          sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        }
      }
      const int gm = m_blk * kBlockM + row;
      if (gm >= e.m) continue;
      const int gn0 = n_blk * kBlockN + col;
      const float vals[4] = {sum.x, sum.y, sum.z, sum.w};
      if (vector_d && gn0 + 3 < n_total && !read_c) {  // the common case: one 8- or 16-byte store
        Out4<Out> out;
        CUTE_UNROLL
        for (int j = 0; j < 4; ++j) out.v[j] = Out(alpha * vals[j]);
        *reinterpret_cast<Out4<Out>*>(d + gm * d_stride_m + gn0) = out;
        continue;
      }
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int gn = gn0 + j;
        if (gn < n_total) {
          float v = alpha * vals[j];
          if (read_c) v += beta * float(c[gm * e.c_stride_m + gn * e.c_stride_n]);
          d[gm * d_stride_m + gn * e.d_stride_n] = Out(v);
        }
      }
    }
  }
};

}  // namespace hopattn::gemm
