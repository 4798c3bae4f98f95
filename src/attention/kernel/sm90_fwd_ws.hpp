// Forward attention, warp-specialized (FlashAttention-3's schedule, techniques 1-3 of the plan):
// a producer warp issues every TMA load, two consumer warpgroups compute, the next Q·Kᵀ is
// issued before the current softmax (intra-warpgroup overlap), and optionally the two consumer
// warpgroups take turns on the tensor cores (ping-pong), so one's softmax hides behind the
// other's GEMMs.
//
// Grid: one CTA per (Q tile of 128 rows, q-head, batch), longest causal tiles first (as fa2).
//
// Warp roles (384 threads, __launch_bounds__(384, 1): a 168-register cap at entry, which is what
// lets setmaxnreg take effect):
//   warpgroup 0  producer   setmaxnreg.dec 24   one elected thread issues TMA for Q, K[n], V[n]
//   warpgroup 1  consumer   setmaxnreg.inc 240  rows [0, 64) of the Q tile
//   warpgroup 2  consumer   setmaxnreg.inc 240  rows [64, 128)
//   128·24 + 256·240 = 64512 ≤ 65536 registers per SM.
//
// Pipelines (mbarriers in SharedStorage):
//   q_full          producer → consumers; 1 arrival (arrive_and_expect_tx) + Q tile bytes
//   k_full[s]       producer → consumers; 1 arrival + K tile bytes
//   k_empty[s]      consumers → producer; 256 arrivals (every consumer thread, after its S GEMM)
//   v_full[s], v_empty[s]   the same for V (released after the P·V GEMM)
//   The producer waits k_empty/v_empty with the opposite parity, so the first trip around the
//   ring finds every stage free.
// Named barriers (FwdNamedBarrier): kConsumers (256 threads: the epilogue), kWarpgroupTurn + w
// (256 threads: warpgroup w waits for its turn on the tensor cores; the other arrives).
//
// Consumer timeline, per warpgroup (n = KV tile; S and P are distinct register sets):
//   wait q_full
//   [turn] wait k_full[0]; issue S0 = Q·K0ᵀ [pass]; wait; release k_empty[0]; softmax(S0) → P0
//   for n = 1 .. N-1:
//     [turn] wait k_full[n]; issue Sn = Q·Knᵀ; wait v_full[n-1]; issue O += Pn-1·Vn-1 [pass]
//     wgmma.wait 1 → Sn ready; release k_empty[n]; mask; online exp of Sn → α
//                    (the exponentials run while P·V occupies the tensor cores)
//     wgmma.wait 0 → O ready;  release v_empty[n-1]; O *= α; Pn = 16-bit(Sn)
//   [turn] wait v_full[N-1]; issue O += PN-1·VN-1 [pass, except warpgroup 2's last]; wait; release
//   epilogue: O /= rowsum, LSE; O → shared memory (Q's space) → TMA store
// [turn]/[pass] apply with ping-pong only. Each warpgroup takes N+1 turns; warpgroup 2 grants
// warpgroup 1 its first turn and skips its own last pass, so every named-barrier arrival is
// matched before the CTA exits.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
// clang-format on
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>

#include "attention/collective/sm90_fwd_epilogue.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_mask.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"  // Fa2Traits: the same tiles, MMAs, layouts and TMA

namespace hopattn::attention {

// Every named barrier of the forward kernels (0 is __syncthreads).
enum class FwdNamedBarrier : uint32_t {
  kConsumers = 1,       // all consumer threads
  kWarpgroupTurn = 2,   // + w - 1 for consumer warpgroup w in {1, 2}
};

template <class Traits>
struct WsSharedStorage {
  static constexpr int kStages = Traits::kStages;
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutQ>, 1024> q;
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> k;
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> v;
  alignas(8) uint64_t q_full;
  alignas(8) uint64_t k_full[kStages];
  alignas(8) uint64_t k_empty[kStages];
  alignas(8) uint64_t v_full[kStages];
  alignas(8) uint64_t v_empty[kStages];
};

namespace ws {

using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
using EmptyBarrier = cutlass::arch::ClusterBarrier;
constexpr int kProducerRegisters = 24;
constexpr int kConsumerRegisters = 240;
constexpr int kConsumerThreads = 256;

template <class Traits>
CUTE_DEVICE void produce(typename Traits::Params const& p, WsSharedStorage<Traits>& ss, int m_block, int h, int b,
                         int n_blocks) {
  using namespace cute;
  constexpr int kStages = Traits::kStages;
  const int h_kv = h / (p.heads_q / p.heads_kv);
  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});   // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});  // (BLK_N, D, PIPE)
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});  // (BLK_N, D, PIPE)
  Tensor mQ = p.tma_q.get_tma_tensor(make_shape(p.seqlen_q, int(Traits::kHeadDim), p.heads_q, p.batch));
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  using TileQ = Shape<typename Traits::BlockM, typename Traits::HeadDim>;
  using TileKV = Shape<typename Traits::BlockN, typename Traits::HeadDim>;
  Tensor gQ = local_tile(mQ(_, _, h, b), TileQ{}, make_coord(m_block, _0{}));      // (BLK_M, D)
  Tensor gK = local_tile(mK(_, _, h_kv, b), TileKV{}, make_coord(_, _0{}));        // (BLK_N, D, n)
  Tensor gV = local_tile(mV(_, _, h_kv, b), TileKV{}, make_coord(_, _0{}));        // (BLK_N, D, n)
  auto q_parts = tma_partition(p.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
  auto k_parts = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto v_parts = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));

  FullBarrier::arrive_and_expect_tx(&ss.q_full, Traits::kTmaBytesQ);
  copy(p.tma_q.with(ss.q_full), get<0>(q_parts), get<1>(q_parts));
  for (int n = 0; n < n_blocks; ++n) {
    const int stage = n % kStages;
    const uint32_t phase = (n / kStages) & 1;
    EmptyBarrier::wait(&ss.k_empty[stage], phase ^ 1u);
    FullBarrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_k.with(ss.k_full[stage]), get<0>(k_parts)(_, n), get<1>(k_parts)(_, stage));
    EmptyBarrier::wait(&ss.v_empty[stage], phase ^ 1u);
    FullBarrier::arrive_and_expect_tx(&ss.v_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_v.with(ss.v_full[stage]), get<0>(v_parts)(_, n), get<1>(v_parts)(_, stage));
  }
}

// Ping-pong turn taking between the two consumer warpgroups (no-ops without ping-pong).
template <bool kPingPong>
struct Turns {
  int warpgroup;  // 1 or 2
  CUTE_DEVICE void wait() const {
    if constexpr (kPingPong)
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, uint32_t(FwdNamedBarrier::kWarpgroupTurn) + warpgroup - 1);
  }
  CUTE_DEVICE void pass() const {
    if constexpr (kPingPong)
      cutlass::arch::NamedBarrier::arrive(kConsumerThreads, uint32_t(FwdNamedBarrier::kWarpgroupTurn) + 2 - warpgroup);
  }
};

template <class Traits, class Mask, bool kPingPong>
CUTE_DEVICE void consume(typename Traits::Params const& p, WsSharedStorage<Traits>& ss, int m_block, int h, int b,
                         int n_blocks) {
  using namespace cute;
  using Element = typename Traits::Element;
  using BlockM = typename Traits::BlockM;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;
  const int thread_idx = int(threadIdx.x) - 128;  // among the consumers
  const Turns<kPingPong> turns{int(threadIdx.x) / 128};
  const Mask mask{p.seqlen_q, p.seqlen_k};

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});    // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, PIPE)
  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(thread_idx);
  auto thr_pv = mma_pv.get_thread_slice(thread_idx);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);                          // (MMA, MMA_M, MMA_K)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);                          // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);                         // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});    // (MMA, MMA_M, MMA_N)
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, HeadDim>{});   // (MMA, MMA_M, MMA_N)
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));
  Tensor tOrP = make_tensor_like<Element>(tSrS);
  Tensor tOrP_a = make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));  // (MMA, MMA_M, MMA_K)
  clear(tOrO);
  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  OnlineSoftmax<kRows> softmax(p.softmax_scale);
  float alpha[kRows];

  if (n_blocks > 0) {
    if (kPingPong && turns.warpgroup == 2) turns.pass();  // warpgroup 1 goes first
    FullBarrier::wait(&ss.q_full, 0);
    turns.wait();
    FullBarrier::wait(&ss.k_full[0], 0);
    wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, 0), tSrS);
    turns.pass();
    warpgroup_wait<0>();
    EmptyBarrier::arrive(&ss.k_empty[0]);
    if (mask.template needs_mask<kBlockM, kBlockN>(m_block, 0)) mask.template apply<kBlockM, kBlockN>(tSrS, tScS, m_block, 0);
    softmax.template online_exp<true>(tSrS, alpha);
    convert_fragment<Element>(tSrS, tOrP);
    CUTE_NO_UNROLL
    for (int n = 1; n < n_blocks; ++n) {
      const int stage = n % kStages, prev = (n - 1) % kStages;
      const uint32_t phase = (n / kStages) & 1, prev_phase = ((n - 1) / kStages) & 1;
      turns.wait();
      FullBarrier::wait(&ss.k_full[stage], phase);
      wgmma_issue<true>(mma_qk, tSrQ, tSrK(_, _, _, stage), tSrS);
      FullBarrier::wait(&ss.v_full[prev], prev_phase);
      wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, prev), tOrO);
      turns.pass();
      warpgroup_wait<1>();  // S(n) is ready; O += P(n-1)·V(n-1) may still run
      EmptyBarrier::arrive(&ss.k_empty[stage]);
      if (mask.template needs_mask<kBlockM, kBlockN>(m_block, n)) mask.template apply<kBlockM, kBlockN>(tSrS, tScS, m_block, n);
      softmax.template online_exp<false>(tSrS, alpha);
      warpgroup_wait<0>();
      EmptyBarrier::arrive(&ss.v_empty[prev]);
      softmax.rescale(tOrO, alpha);
      convert_fragment<Element>(tSrS, tOrP);
    }
    const int last = (n_blocks - 1) % kStages;
    turns.wait();
    FullBarrier::wait(&ss.v_full[last], ((n_blocks - 1) / kStages) & 1);
    wgmma_issue<false>(mma_pv, tOrP_a, tOrV(_, _, _, last), tOrO);
    if (turns.warpgroup == 1) turns.pass();  // warpgroup 2's last pass would have no taker
    warpgroup_wait<0>();
    EmptyBarrier::arrive(&ss.v_empty[last]);
  }
  float lse[kRows];
  softmax.finalize(tOrO, lse);
  store_o_and_lse<Traits>(p, ss.q.data(), mma_pv, tOrO, tScS, lse, m_block, h, b, thread_idx, [] {
    cutlass::arch::NamedBarrier::sync(kConsumerThreads, uint32_t(FwdNamedBarrier::kConsumers));
  });
}

}  // namespace ws

template <class Traits, class Mask, bool kPingPong>
__global__ void __launch_bounds__(384, 1) ws_forward_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  static_assert(Traits::kWarpgroups == 2, "two consumer warpgroups");
  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<WsSharedStorage<Traits>*>(smem_raw);
  const int m_block = Mask::kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z;
  const Mask mask{p.seqlen_q, p.seqlen_k};
  const int n_blocks = mask.template n_block_max<Traits::kBlockM, Traits::kBlockN>(m_block);

  if (threadIdx.x == 0) {
    ws::FullBarrier::init(&ss.q_full, 1);
    for (int s = 0; s < Traits::kStages; ++s) {
      ws::FullBarrier::init(&ss.k_full[s], 1);
      ws::FullBarrier::init(&ss.v_full[s], 1);
      ws::EmptyBarrier::init(&ss.k_empty[s], ws::kConsumerThreads);
      ws::EmptyBarrier::init(&ss.v_empty[s], ws::kConsumerThreads);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {  // producer warpgroup
    cutlass::arch::warpgroup_reg_dealloc<ws::kProducerRegisters>();
    if (threadIdx.x == 0 && n_blocks > 0) ws::produce<Traits>(p, ss, m_block, h, b, n_blocks);
  } else {
    cutlass::arch::warpgroup_reg_alloc<ws::kConsumerRegisters>();
    ws::consume<Traits, Mask, kPingPong>(p, ss, m_block, h, b, n_blocks);
  }
}

}  // namespace hopattn::attention
