// Variant 6, "cluster2x1" and "cluster1x2": the persistent kernel (5) on clusters of two CTAs
// along M that share B's tile by TMA multicast (2x1), or along N that share A's tile (1x2).
// Described for 2x1; 1x2 swaps the roles of M and N, A and B, where marked.
//
//   roles:     as persistent: warpgroup 0 = producer (one elected thread issues every TMA load),
//              warpgroups 1, 2 = consumers (m64n256k16 WGMMAs on 64 rows each, then the TMA-store
//              epilogue of those rows)
//   registers: setmaxnreg: producer 40, consumers 232
//   cluster:   2 x 1 x 1; CTA rank r in {0, 1}. The cluster walks "cluster tiles" of 256 x 256
//              (grouped raster, groups of 4 cluster rows = 8 tile rows); CTA r computes the
//              128 x 256 tile (2 * cluster_row + r, col). Both CTAs run the same sequence of
//              tiles and k-tiles, so every stage is filled and drained in step.
//              1x2: cluster tiles of 128 x 512 (groups of 8 cluster rows); CTA r computes the
//              tile (row, 2 * cluster_col + r).
//   loads:     per k-tile, CTA r loads its own A box (128 x 64, no multicast) and half of the B
//              tile (128 of its 256 rows x 64), multicast to both CTAs (mask 0b11). Each CTA's
//              full[s] receives 16 KiB (A) + 2 x 16 KiB (B halves, one from each CTA) = 48 KiB,
//              the same byte count as persistent; the peer's half can land before the local
//              producer has armed the barrier (the pending arrival keeps the phase open).
//              1x2: CTA r loads its own B box (256 x 64) and half of A (64 of its 128 rows x 64),
//              multicast to both: 2 x 8 KiB + 32 KiB = 48 KiB per full[s].
//   pipeline:  full[s]: 1 arrival (local producer) + 48 KiB
//              empty[s]: 4 arrivals = 2 consumer warpgroups x 2 CTAs. Slot s of a CTA is written
//              by both CTAs' TMAs, so a producer may refill s only after the consumers of BOTH
//              CTAs released it: thread 0 of each consumer warpgroup arrives on its own CTA's
//              empty[s], thread 32 on the peer's (mbarrier.arrive.shared::cluster), after the
//              warpgroup_wait that retired the stage's WGMMAs.
//   start/end: barriers are initialized, then a cluster barrier (the peer must not signal or
//              multicast into an uninitialized barrier); every thread of both CTAs meets at a
//              final cluster barrier, so no CTA exits while its peer can still arrive on its
//              barriers.
//   epilogue:  Sm90GemmEpilogueTma, as persistent (per CTA, independent of the peer).
//   residue:   with an odd number of tile rows, rank 1 of the last cluster row has no rows of D:
//              it still loads (its A box is all zero-fill) and multicasts its half of B, and its
//              epilogue skips every chunk (1x2: the same with tile columns, B and A).
//   grid:      2 x min(cluster tiles, clusters that fit at once), queried at launch
//              (cudaOccupancyMaxActiveClusters).
#pragma once

#include <cute/arch/cluster_sm90.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>

#include "common/register_budget.hpp"
#include "gemm/collective/sm90_gemm_epilogue_tma.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"
#include "gemm/kernel/sm90_gemm_tile_scheduler.hpp"

namespace hopattn::gemm {

template <class Mainloop>
struct Sm90GemmCluster {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = threads_of(kCfg);
  static constexpr int kClusterM = kCfg.kClusterM;
  static constexpr int kClusterN = kCfg.kClusterN;
  static constexpr int kCluster = kClusterM * kClusterN;
  static_assert(kCluster == 2 && (kClusterM == 1 || kClusterN == 1), "a 2x1 or 1x2 cluster");
  static_assert(kCfg.kPersistent && kCfg.kTmaStoreD, "a persistent configuration with a TMA-store epilogue");
  static_assert(kCfg.kProducerWarpgroup && kCfg.kConsumerWarpgroups == kCfg.kMmaWarpgroups && kCfg.kMmaWarpgroups == 2,
                "one producer warpgroup, two consumers sharing one tile");
  static_assert(kCfg.kProducerRegisters * 128 + kCfg.kConsumerRegisters * 256 <= launch_pool_registers(kThreads),
                "setmaxnreg budgets exceed the CTA's launch pool (a setmaxnreg.inc would wait forever)");

  using Epilogue = Sm90GemmEpilogueTma<typename Mainloop::TiledMma, kCfg.kBlockM, kCfg.kBlockN, kCfg.kMmaWarpgroups,
                                       kCfg.kEpilogueN, kCfg.kEpilogueBuffers>;

  struct Params {
    typename Mainloop::Params mainloop;
    typename Epilogue::Params epilogue;
    GroupedTileScheduler scheduler;  // over cluster tiles (kClusterM * kBlockM) x (kClusterN * kBlockN)
    int ctas = kCluster;
  };

  struct SharedStorage {
    typename Mainloop::TensorStorage tensors;
    typename Epilogue::TensorStorage epilogue;
    PipelineStorage<kStages> pipeline;
  };

  static Params to_params(const GemmProblem& p) {
    Params params{Mainloop::to_params(p), Epilogue::to_params(p),
                  GroupedTileScheduler::make(p.m, p.n, kClusterM * kCfg.kBlockM, kClusterN * kCfg.kBlockN,
                                             kCfg.kRasterGroup),
                  kCluster};
    const int clusters = params.scheduler.tiles();
    const int sm_clusters = p.sm_count / kCluster;
    params.ctas = kCluster * (sm_clusters > 0 && sm_clusters < clusters ? sm_clusters : clusters);
    return params;
  }
  // The launch lowers the grid to the clusters that can be resident at once.
  static void limit_clusters(Params& p, int max_active_clusters) {
    if (max_active_clusters > 0 && p.ctas > kCluster * max_active_clusters) p.ctas = kCluster * max_active_clusters;
  }
  static dim3 grid(const Params& p) { return dim3(unsigned(p.ctas), 1, 1); }

  CUTE_DEVICE void operator()(const Params& p, char* smem) {
    auto& s = *reinterpret_cast<SharedStorage*>(smem);
    const int warpgroup = cutlass::canonical_warp_group_idx();
    if (threadIdx.x == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      Epilogue::prefetch_descriptor(p.epilogue);
      TmaPipeline<kStages>::init(s.pipeline, 2 * kCluster);  // see the header: 4 arrivals per empty[s]
    }
    cute::cluster_sync();  // both CTAs' barriers initialized before either signals the other
    const int rank = int(cute::block_rank_in_cluster());
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kCfg.kProducerRegisters>();
      if (cutlass::canonical_warp_idx_sync() == 0 && cute::elect_one_sync()) produce(p, s, rank);
      __syncwarp();
    } else {
      cutlass::arch::warpgroup_reg_alloc<kCfg.kConsumerRegisters>();
      consume(p, s, int(threadIdx.x) - 128, rank);
    }
    cute::cluster_arrive();  // release: this CTA's last arrivals on the peer's barriers are done
    cute::cluster_wait();
  }

  // The output tile of CTA `rank` in cluster tile `linear`.
  CUTE_DEVICE static void cta_tile(const Params& p, int linear, int rank, int* m_blk, int* n_blk) {
    int cm, cn;
    p.scheduler.tile(linear, &cm, &cn);
    *m_blk = kClusterM * cm + (kClusterM > 1 ? rank : 0);
    *n_blk = kClusterN * cn + (kClusterN > 1 ? rank : 0);
  }

  CUTE_DEVICE void produce(const Params& p, SharedStorage& s, int rank) {
    TmaPipeline<kStages> pipe{s.pipeline};
    PipelineState<kStages> write;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    const int cluster = int(blockIdx.x) / kCluster, clusters = int(gridDim.x) / kCluster;
    for (int linear = cluster; linear < p.scheduler.tiles(); linear += clusters) {
      int m_blk, n_blk;
      cta_tile(p, linear, rank, &m_blk, &n_blk);
      auto load = Mainloop::tile_loader(p.mainloop, s.tensors, m_blk, n_blk, rank);
      for (int t = 0; t < k_tiles; ++t, ++write) load(t, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
    }
  }

  // thread: index among the consumer threads, 0 .. 255.
  CUTE_DEVICE void consume(const Params& p, SharedStorage& s, int thread, int rank) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto operands = Mainloop::mma_operands(s.tensors, thread);
    auto acc = Mainloop::make_accumulators();
    PipelineState<kStages> read, release;
    int chunk = 0;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    // Thread 0 of each warpgroup signals this CTA's empty[s], thread 32 the peer's.
    const int lane_in_wg = thread % 128;
    const bool signals = lane_in_wg == 0 || lane_in_wg == 32;
    const uint32_t target = lane_in_wg == 0 ? uint32_t(rank) : uint32_t(rank ^ 1);
    auto release_slot = [&](const PipelineState<kStages>& st) {
      cutlass::arch::ClusterBarrier::arrive(&s.pipeline.empty[st.index], target, signals ? 1u : 0u);
    };
    const int cluster = int(blockIdx.x) / kCluster, clusters = int(gridDim.x) / kCluster;
    for (int linear = cluster; linear < p.scheduler.tiles(); linear += clusters) {
      int m_blk, n_blk;
      cta_tile(p, linear, rank, &m_blk, &n_blk);
      cute::clear(acc);
      for (int t = 0; t < k_tiles; ++t, ++read) {
        pipe.consumer_wait(read);
        Mainloop::mma_stage(cute::get<0>(operands), cute::get<1>(operands), acc, read.index);
        cute::warpgroup_wait<1>();  // k-tile t-1's WGMMAs are done: its slot can be refilled
        if (t > 0) {
          release_slot(release);
          ++release;
        }
      }
      cute::warpgroup_wait<0>();
      release_slot(release);
      ++release;
      Epilogue::store(p.epilogue, s.epilogue, acc, thread, m_blk, n_blk, chunk);
    }
    Epilogue::store_tail(thread);
  }
};

}  // namespace hopattn::gemm
