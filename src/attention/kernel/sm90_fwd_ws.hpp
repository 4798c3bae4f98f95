// Forward attention, warp-specialized (FlashAttention-3's schedule, techniques 1-3 of the plan):
// a producer warp issues every TMA load, two consumer warpgroups compute, the next Q·Kᵀ is
// issued before the current softmax (intra-warpgroup overlap), and optionally the two consumer
// warpgroups take turns on the tensor cores (ping-pong), so one's softmax hides behind the
// other's GEMMs. The registry rows (kFwdKernels, sm90_fwd_config.hpp): ws_pingpong_persistent_*
// (persistent, ping-pong), ws_pingpong_* (ping-pong), and the ablation rows ws_* (neither),
// ws_serial_* and ws_pingpong_serial_* (no intra-warpgroup overlap).
//
// Grid: one CTA per (Q tile of 128 rows, q-head, batch), longest causal tiles first (as fa2);
// or, persistent (kPersistent), one CTA per SM looping over tiles (FwdTileScheduler says which;
// for causal masks, units of a pair's long and short Q tile, fwd_tile_order.hpp's folded order);
// the next tile's first K/V loads overlap the current tile's epilogue.
//
// Warp roles (384 threads, __launch_bounds__(384, 1): a 168-register cap at entry, which is what
// lets setmaxnreg take effect):
//   warpgroup 0  producer   setmaxnreg.dec 24   one elected thread issues TMA for Q, K[n], V[n]
//   warpgroup 1  consumer   setmaxnreg.inc 240  rows [0, 64) of the Q tile
//   warpgroup 2  consumer   setmaxnreg.inc 240  rows [64, 128)
//   128·24 + 256·240 = 64512 = 384·168, the pool the CTA was launched with: setmaxnreg moves
//   registers only within that pool, so a producer at 32 leaves the consumers short and their
//   setmaxnreg.inc waits forever (a hang seen on the H200, 2026-12-02).
// With three consumer warpgroups (ws_pingpong_persistent_192x128x2 at hdim 64: 192 rows): 512
// threads, a 128-register cap at entry, consumers setmaxnreg.inc 160 (128·24 + 384·160 = 64512 ≤
// 512·128); every "256 consumer threads" below is then 384, and ping-pong turns go round
// 1 -> 2 -> 3 -> 1.
//
// Pipelines (mbarriers in SharedStorage):
//   q_full          producer → consumers; 1 arrival (arrive_and_expect_tx) + Q tile bytes
//   q_full_wg[w], q_empty_wg[w]   persistent where O has no tiles of its own (hdim 256 on 64-key
//                   tiles: WsSharedStorageQHalvesSharedO, 224 KB) instead of q_full/q_empty: Q's
//                   space as one 64-row tile per consumer warpgroup, loaded by a 64-row TMA (1
//                   arrival + its bytes), read only by warpgroup w; freed by 128 arrivals, every
//                   thread of warpgroup w once its tile's last S has completed
//   o_free          the shared O tile (WsSharedStorageQHalvesSharedO): 1 arrival per O store, by the
//                   storing warpgroup's thread 0 once the store has read the tile (reported lazily,
//                   before its next turn wait); the warpgroups' epilogues alternate 1, 2, 1, 2 and
//                   the e-th of the CTA waits for e arrivals (SharedOTurn)
//   q_empty         consumers → producer. Non-persistent: 1 arrival, by the thread that issued the
//                   O store of the tile once that store has finished reading shared memory (O is
//                   staged in Q's space). Persistent at hdim 64/128 (O has its own staging tile,
//                   WsSharedStorage<., true>): 256 arrivals, every consumer thread once the tile's
//                   last S = Q·Kᵀ has completed (at once for a tile with no key), so the next
//                   tile's Q loads during this tile's last P·V, softmax and epilogue. The producer
//                   loads every tile's Q, even one that sees no key, so the protocol is the same
//                   for every tile
//   k_full[s]       producer → consumers; 1 arrival + K tile bytes
//   k_empty[s]      consumers → producer; 256 arrivals (every consumer thread, after its S GEMM;
//                   384 with three consumer warpgroups)
//   v_full[s], v_empty[s]   the same for V (released after the P·V GEMM)
//   The producer waits k_empty/v_empty/q_empty with the opposite parity, so the first trip
//   around a ring finds every stage free. K/V phases run on across the tiles of a persistent CTA.
// Named barriers (FwdNamedBarrier): kConsumers (every consumer thread: the epilogue, O staged in
// Q's space), kWarpgroupTurn + w - 1 (256 threads: warpgroup w waits for its turn on the tensor
// cores; the warpgroup before it in the ring arrives), kEpilogueWarpgroup + w - 1 (128 threads:
// warpgroup w's own epilogue when O has its own staging tiles).
//
// Consumer timeline, per warpgroup (n = KV tile; S and P are distinct register sets):
//   wait q_full
//   [turn] wait k_full[0]; issue S0 = Q·K0ᵀ [pass]; wait; release k_empty[0]; softmax(S0) → P0
//   for n = 1 .. N-1:
//     [turn] wait k_full[n]; issue Sn = Q·Knᵀ; wait v_full[n-1]; issue O += Pn-1·Vn-1 [pass]
//     wgmma.wait 1 → Sn ready; release k_empty[n]; mask; online exp of Sn → α
//                    (the exponentials run while P·V occupies the tensor cores)
//     wgmma.wait 0 → O ready;  release v_empty[n-1]; O *= α (skipped when no row of the
//                    warp moved its maximum: rows keep a stale maximum up to 2^8 below their
//                    scores, Params::stale_max_log2); Pn = 16-bit(Sn)
//   [turn] wait v_full[N-1]; issue O += PN-1·VN-1 [pass, except warpgroup 2's last]; wait; release
//             (causal masks: this last P·V covers only the keys of block N-1 that the
//             warpgroup's rows see — none, the first half or all; pv_width_of_last_block)
//   epilogue: O /= rowsum, LSE; O → shared memory → TMA store. O in Q's space: both warpgroups
//             together (kConsumers), one 128-row store, waited for. O's own staging (persistent,
//             hdim 64/128): each warpgroup alone, its 64 rows in its own tile (stmatrix), its own
//             store, not waited for until its next epilogue (and before exit), so the warpgroups
//             stay staggered across tiles. Shared O tile (persistent, hdim 256): each warpgroup
//             alone, in turn, its thread 0 first waiting o_free
// e4m3 (FwdKernelSpec::fp8 rows, Traits::kFp8; the persistent kernel with O staged apart): Q, K, V
// e4m3, O bf16. 8-bit WGMMA reads K-major operands only, so the producer warpgroup transposes V:
//   warp 0        thread 0 issues TMA as above, but V into the staging ring v_raw
//   warps 1-3     transpose_v: every V tile, v_raw → v ((hdim, slots), K-major; Fp8VTranspose)
//   setmaxnreg    producer 40 (the transpose spilled at 24), consumers 232: 40·128 + 232·256 = 64512
//   v_raw_full[s]   TMA → transposing warps; 1 arrival (arrive_and_expect_tx) + V tile bytes
//   v_raw_empty[s]  transposing warps → TMA; 96 arrivals, once each thread has read the stage
//   v_full[s]       transposing warps → consumers; 96 arrivals (after the stores and a proxy fence)
//   v_empty[s]      consumers → transposing warps (not the TMA); 256 arrivals, as above
// The consumers' P = e4m3(S) goes into the second WGMMA in the slot order of fp8_pv_key (no
// shuffles: collective/sm90_fwd_fp8.hpp), S's scale is softmax_scale · q_descale · k_descale of
// the tile's (batch, kv-head), and O is multiplied by its v_descale after the normalisation.
// Q in registers (Traits::kQInRegisters, the e4m3 *_qregs ablation row): after wait q_full each
// consumer warpgroup loads its 64 rows of Q into registers (load_q_registers: ldmatrix, 32 per
// thread at hdim 256) and S = Q·Kᵀ is an RS WGMMA; Q's shared memory is released as before.
// The serial ablation rows (kOverlap false, consume_tile_serial): no intra-warpgroup overlap, two
// turns per block (S; then P·V after the softmax).
// [turn]/[pass] apply with ping-pong only. Each warpgroup takes N+1 turns per tile; the last
// warpgroup (2, or 3) grants warpgroup 1 its first turn and skips its own very last pass (in the
// CTA's last tile that has work), so every named-barrier arrival is matched before the CTA exits;
// under the dynamic dealing of a variable-length batch (no look-ahead) it makes that pass, and
// warpgroup 1 takes it before it exits.
// Producer timeline per tile: K/V tile 0, then (after q_empty) Q, then K/V tiles 1 .. N-1.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
// clang-format on
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>

#include <type_traits>

#include "attention/collective/sm90_fwd_epilogue.hpp"
#include "attention/collective/sm90_fwd_fp8.hpp"
#include "attention/collective/sm90_fwd_fragment_layouts.hpp"
#include "attention/collective/sm90_fwd_mask.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/collective/sm90_wgmma.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"  // Fa2Traits: the same tiles, MMAs, layouts and TMA
#include "attention/kernel/sm90_fwd_ws_dealing.hpp"
#include "attention/kernel/sm90_fwd_ws_fp8.hpp"
#include "attention/kernel/sm90_fwd_ws_mainloop.hpp"
#include "attention/kernel/sm90_fwd_ws_packed.hpp"
#include "attention/kernel/sm90_fwd_ws_schedule.hpp"
#include "attention/kernel/sm90_fwd_ws_storage.hpp"
#include "attention/kernel/sm90_fwd_ws_turns.hpp"
#include "common/register_budget.hpp"

namespace hopattn::attention {


namespace ws {

// setmaxnreg budgets (multiples of 8), within the CTA's launch pool (threads × the launch-bounds
// cap; checked in ws_forward_kernel): producer 24 + two consumer warpgroups at 240 = 64512 =
// 384·168; producer 24 + three at 160 = 64512 ≤ 512·128.
constexpr int kProducerRegisters = 24;
constexpr int consumer_registers(int warpgroups) { return warpgroups == 3 ? 160 : 240; }
// e4m3 kernels: the producer warpgroup's warps 1-3 transpose V (transpose_v), which spilled 60-104
// bytes at 24 registers (ptxas); 40 for it and 232 for two consumer warpgroups (40·128 + 232·256 =
// 64512 = 384·168; a consumer thread holds S 64 + P 16 + O 64 registers at hdim 128).
// The instance that reads KV-cache lists (kLists: ws_forward_kernel_kvlists): its producer
// computes a paged cache's tile coordinates too (paged_kv_origin), which spilled 24-40 bytes at
// 24 registers; 32 for it and 232 for the two consumer warpgroups, whose code compiles without
// spills at 232 (ptxas 2026-12-07; 32·128 + 232·256 = 63488).
template <class Traits, bool kLists = false>
constexpr int producer_registers() { return Traits::kFp8 ? 40 : kLists ? 32 : kProducerRegisters; }
template <class Traits, bool kLists = false>
constexpr int consumer_registers() {
  // e4m3 with three consumer warpgroups (hdim 64's 192-row tile): 40·128 + 152·384 = 63488.
  if constexpr (Traits::kFp8) return Traits::kWarpgroups == 3 ? 152 : 232;
  if constexpr (kLists) return 232;
  return consumer_registers(Traits::kWarpgroups);
}

// TileCoord, FwdTileScheduler, the per-tile masks and the sequence origins: sm90_fwd_ws_schedule.hpp;
// the shared-memory storages and the barrier types: sm90_fwd_ws_storage.hpp; the cursors over a
// CTA's tiles (static or dynamic dealing): sm90_fwd_ws_dealing.hpp; the e4m3 pieces (V's load ring
// and transpose, P as an A operand, the descales): sm90_fwd_ws_fp8.hpp.

// The packed Q load and masks of a packed KV-cache list (PackGQA), and mask_block:
// sm90_fwd_ws_packed.hpp.

template <class Traits, class Mask, bool kPersistent, bool kOptions, class Storage, class Params>
CUTE_DEVICE void produce(Params const& p, Storage& ss,
                         FwdTileScheduler<Mask, kPersistent, kOptions> const& sched) {
  using namespace cute;
  constexpr int kStages = Traits::kStages;
  const Mask mask = kernel_mask<Mask, kOptions>(p);
  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});   // (BLK_M, D)
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});  // (BLK_N, D, PIPE)
  // (BLK_N, D, PIPE): V as loaded; e4m3 kernels load it into the staging ring (transpose_v).
  Tensor sV = make_tensor(make_smem_ptr(v_load_ring(ss)), typename Traits::SmemLayoutKV{});
  Tensor mQ = p.tma_q.get_tma_tensor(make_shape(p.seqlen_q, int(Traits::kHeadDim), p.heads_q, p.batch));
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(p.seqlen_k, int(Traits::kHeadDim), p.heads_kv, p.batch));
  using TileQ = Shape<typename Traits::BlockM, typename Traits::HeadDim>;
  using TileKV = Shape<typename Traits::BlockN, typename Traits::HeadDim>;
  auto const& tma_k = p.tma_k;
  auto const& tma_v = p.tma_v;
  int kv_iter = 0, q_iter = 0;
  TileCursor cursor;
  for (int t = cursor_next<true, kOptions>(cursor, p, ss, sched, true); t < sched.end();
       t = cursor_next<true, kOptions>(cursor, p, ss, sched, false)) {
    const TileCoord c = sched.coord(t);
    if (!c.valid) continue;  // the consumers skip it too
    const int h_kv = c.h / (p.heads_q / p.heads_kv);
    const Mask tmask = tile_mask<kOptions>(mask, sched, c);
    int n_first = first_kv_block<Traits, kOptions>(tmask, c.m_block);
    int n_blocks = kv_block_count<Traits, kOptions>(tmask, c.m_block);
    if constexpr (kKvCacheLists<Traits, kOptions>) {  // a KV-cache list: its entry's split of the range
      if (p.varlen_ranges != nullptr) {
        const ListKvRange r = list_kv_range(p, t);
        n_first = r.n_first, n_blocks = r.n_blocks;
      }
    }
    // The tile's sequence in the views: (0, b) for padded calls; the plain kernels index the views
    // as they did before variable-length batches existed.
    SeqOrigin qo{0, c.b}, ko{0, c.b};
    if constexpr (kOptions) qo = q_origin(sched, c, p.seqlen_q), ko = k_origin(sched, c, p.seqlen_k);
    auto seq_view = [&](auto const& m, int h, SeqOrigin o) {  // (seqlen, D) of head h
      if constexpr (kOptions) return domain_offset(make_coord(o.row, _0{}), m(_, _, h, o.batch));
      else return m(_, _, h, o.batch);
    };
    Tensor gQ = local_tile(seq_view(mQ, c.h, qo), TileQ{}, make_coord(c.m_block, _0{}));  // (BLK_M, D)
    Tensor gK = local_tile(seq_view(mK, h_kv, ko), TileKV{}, make_coord(_, _0{}));      // (BLK_N, D, n)
    Tensor gV = local_tile(seq_view(mV, h_kv, ko), TileKV{}, make_coord(_, _0{}));      // (BLK_N, D, n)
    auto q_parts = tma_partition(p.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
    auto k_parts = tma_partition(tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
    auto v_parts = tma_partition(tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
    // One K (V) tile into ring position `it` (its stage and phase) from `src`, a tile of the K (V)
    // view: the slot's empty wait, the transaction and the copy (V: into V's TMA staging ring with
    // e4m3's transpose, Storage::kTransposeV).
    auto load_k_into = [&](int it, auto const& src) {
      const int stage = it % kStages;
      const uint32_t phase = (it / kStages) & 1;
      EmptyBarrier::wait(&ss.k_empty[stage], phase ^ 1u);
      FullBarrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
      copy(tma_k.with(ss.k_full[stage]), src, get<1>(k_parts)(_, stage));
    };
    auto load_v_into = [&](int it, auto const& src) {
      const int stage = it % kStages;
      const uint32_t phase = (it / kStages) & 1;
      uint64_t* v_empty = &ss.v_empty[stage];
      uint64_t* v_full = &ss.v_full[stage];
      if constexpr (Storage::kTransposeV) v_empty = &ss.v_raw_empty[stage], v_full = &ss.v_raw_full[stage];
      EmptyBarrier::wait(v_empty, phase ^ 1u);
      FullBarrier::arrive_and_expect_tx(v_full, Traits::kTmaBytesKV);
      copy(tma_v.with(*v_full), src, get<1>(v_parts)(_, stage));
    };
    // KV tile n of the tile's range, K then V, into ring position kv_iter.
    auto load_kv = [&](int n) {
      if constexpr (std::is_same_v<Params, KvListParams<Traits>>) {
        if (p.page_table != nullptr) {  // a paged cache: the tile's page, read here (paged_kv_origin)
          const PagedKvOrigin o = paged_kv_origin(p.page_table, c.b * p.pt_batch_stride, p.page_shift, c.len_k,
                                                  (n_first + n) * Traits::kBlockN);
          // The tile's coordinates in the pool's view (mK's extents are not read: only its unit
          // strides), one set for K and V, whose descriptors share the box.
          Tensor gp = local_tile(domain_offset(make_coord(o.row, _0{}), mK(_, _, h_kv, o.outer)), TileKV{},
                                 make_coord(_0{}, _0{}));  // (BLK_N, D)
          auto src = get<0>(tma_partition(tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gp)));
          load_k_into(kv_iter, src);
          load_v_into(kv_iter, src);
          ++kv_iter;
          return;
        }
      }
      load_k_into(kv_iter, get<0>(k_parts)(_, n_first + n));
      load_v_into(kv_iter, get<0>(v_parts)(_, n_first + n));
      ++kv_iter;
    };
    if (n_blocks > 0) load_kv(0);  // ahead of Q: overlaps the previous tile's epilogue
    if constexpr (Storage::kQHalves) {  // each warpgroup's rows into its own tile, as it frees it
      using WgTile = Shape<Int<Traits::kWarpgroupRows>, typename Traits::HeadDim>;
      Tensor mQw = p.tma_q_warpgroup.get_tma_tensor(make_shape(p.seqlen_q, int(Traits::kHeadDim), p.heads_q, p.batch));
      CUTE_UNROLL
      for (int w = 0; w < Traits::kWarpgroups; ++w) {
        Tensor sQw = make_tensor(make_smem_ptr(ss.q.data() + w * cosize_v<typename Traits::SmemLayoutQWarpgroup>),
                                 typename Traits::SmemLayoutQWarpgroup{});  // (WG_M, D)
        Tensor gQw = local_tile(seq_view(mQw, c.h, qo), WgTile{}, make_coord(c.m_block * Traits::kWarpgroups + w, _0{}));
        auto parts = tma_partition(p.tma_q_warpgroup, _0{}, Layout<_1>{}, group_modes<0, 2>(sQw), group_modes<0, 2>(gQw));
        EmptyBarrier::wait(&ss.q_empty_wg[w], (q_iter & 1) ^ 1u);
        // The options kernels do not load a half wholly past the sequence's last row: its
        // warpgroup's rows are never stored, and a TMA box wholly out of bounds faulted in
        // variable-length batches (an illegal address, with unmapped memory before q: the
        // end-aligned view's base lies max_len rows before it; --guard q of bin/diag_varlen,
        // 2026-12-06). The barrier completes with a plain arrival; the warpgroup then computes
        // on the stale Q rows of its tile, for rows that go nowhere.
        bool past_end = false;
        if constexpr (kOptions)
          past_end = (c.m_block * Traits::kWarpgroups + w) * Traits::kWarpgroupRows >= (sched.is_varlen() ? c.len_q : p.seqlen_q);
        if (past_end) {
          FullBarrier::arrive(&ss.q_full_wg[w]);
        } else {
          FullBarrier::arrive_and_expect_tx(&ss.q_full_wg[w], Traits::kTmaBytesQWarpgroup);
          copy(p.tma_q_warpgroup.with(ss.q_full_wg[w]), get<0>(parts), get<1>(parts));
        }
      }
    } else {
      EmptyBarrier::wait(&ss.q_empty, (q_iter & 1) ^ 1u);
      if (packed_list<Traits, kOptions>(p)) {  // a packed KV-cache list (padded q: qo = (0, b))
        if constexpr (kKvCacheLists<Traits, kOptions>) load_packed_q<Traits>(p, &ss.q_full, ss.q.data(), c.m_block, c.h, qo.batch);
      } else {
        FullBarrier::arrive_and_expect_tx(&ss.q_full, Traits::kTmaBytesQ);
        copy(p.tma_q.with(ss.q_full), get<0>(q_parts), get<1>(q_parts));
      }
    }
    ++q_iter;
    if constexpr (kOptions) {  // not unrolled: unrolled, with the dynamic dealing's dealer beside it,
      // the producer spilled 76 bytes at its 24 registers (hdim 64, ptxas 2026-12-06)
      CUTE_NO_UNROLL
      for (int n = 1; n < n_blocks; ++n) load_kv(n);
    } else {
      for (int n = 1; n < n_blocks; ++n) load_kv(n);
    }
  }
}

// The consumer warpgroups' turns (ping-pong, the shared O tile) and Q's release: sm90_fwd_ws_turns.hpp.

// One tile's mainloop (consume_tile, consume_tile_serial, skip_block) and the operand views it
// takes: sm90_fwd_ws_mainloop.hpp.

template <class Traits, class Mask, bool kPingPong, bool kPersistent, bool kOverlap, bool kOptions, class Storage,
          class Params>
CUTE_DEVICE void consume(Params const& p, Storage& ss,
                         FwdTileScheduler<Mask, kPersistent, kOptions> const& sched) {
  using namespace cute;
  using Element = typename Traits::Element;
  using BlockM = typename Traits::BlockM;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  constexpr int kConsumerThreads = Traits::kThreads;  // the consumer warpgroups
  const int thread_idx = int(threadIdx.x) - 128;  // among the consumers
  // From lane 0 (warp_uniform): skip_block, and so the loop's ring positions, depend on it.
  const Turns<kPingPong, Traits::kWarpgroups> turns{warp_uniform(int(threadIdx.x) / 128)};
  const Mask mask = kernel_mask<Mask, kOptions>(p);
  auto n_blocks_of = [&](int t) {
    const TileCoord c = sched.coord(t);
    if (!c.valid) return 0;
    if constexpr (kKvCacheLists<Traits, kOptions>)  // a KV-cache list: its entry's split of the range
      if (p.varlen_ranges != nullptr) return list_kv_range(p, t).n_blocks;
    return kv_block_count<Traits, kOptions>(tile_mask<kOptions>(mask, sched, c), c.m_block);
  };

  // (BLK_M, D); with Q halves, row m is row m % 64 of warpgroup tile m / 64 (WsSharedStorageQHalvesSharedO).
  using SmemLayoutQ = std::conditional_t<Storage::kQHalves, typename Traits::SmemLayoutQRowsOfWarpgroups,
                                         typename Traits::SmemLayoutQ>;
  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});   // (BLK_N, D, PIPE)
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});  // (D, BLK_N, PIPE)
  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(thread_idx);
  auto thr_pv = mma_pv.get_thread_slice(thread_idx);
  // (MMA, MMA_M, MMA_K): Q's descriptors, or with Q in registers its fragment (load_q_registers).
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);
  Tensor tSrK = thr_qk.partition_fragment_B(sK);                          // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);                         // (MMA, MMA_N, MMA_K, PIPE)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});    // (MMA, MMA_M, MMA_N)
  // (MMA, MMA_M, MMA_N); with row sums by the MMA, kPvN = HeadDim + 8 columns, the last group the sums.
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, Int<Traits::kPvN>>{});
  // O's first HeadDim columns, what the epilogue stores (tOrO itself without row sums by the MMA):
  // TiledMmaO's fragment, a prefix of tOrO's registers (8-column groups 0 .. HeadDim / 8 - 1).
  typename Traits::TiledMmaO mma_o;
  auto&& tOrOut = o_columns<Traits>(tOrO);
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));
  Tensor tOrP = make_p_fragment<Traits>(tSrS);
  Tensor tOrP_a = p_as_a_operand<Traits>(tOrP);  // (MMA, MMA_M, MMA_K)
  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  float alpha[kRows];

  int kv_iter = 0, q_iter = 0;
  bool granted_first_turn = false;
  SharedOTurn<Storage> o_turn{nullptr, turns.warpgroup, thread_idx % 128 == 0};
  if constexpr (Storage::kSharedO) o_turn.o_free = &ss.o_free;
  TileCursor cursor;
  for (int t = cursor_next<false, kOptions>(cursor, p, ss, sched, true); t < sched.end();
       t = cursor_next<false, kOptions>(cursor, p, ss, sched, false)) {
    const TileCoord c = kOptions ? warp_uniform(sched.coord(t)) : sched.coord(t);
    if (!c.valid) continue;  // a folded position without a tile (the producer skips it too)
    const Mask tmask = packed_tile_mask<Traits, kOptions>(p, tile_mask<kOptions>(mask, sched, c), c.m_block);
    // KV tiles n_first, n_first + 1, ... (the plain kernels as before: from the position again).
    int n_blocks = kOptions ? kv_block_count<Traits, kOptions>(tmask, c.m_block) : n_blocks_of(t);
    int n_first = first_kv_block<Traits, kOptions>(tmask, c.m_block);
    if constexpr (kKvCacheLists<Traits, kOptions>) {  // a KV-cache list: its entry's split of the range
      if (p.varlen_ranges != nullptr) {
        const ListKvRange r = list_kv_range(p, t);
        n_first = warp_uniform(r.n_first), n_blocks = warp_uniform(r.n_blocks);
      }
    }
    clear(tOrO);
    // e4m3 P: FlashAttention-3's offset of 8 (OnlineSoftmax's comment) and exact row maxima; with
    // the row sums by the MMA (which sum the rounded weights, so a kept maximum's weight 2^(8 + lag)
    // rounds in the sum as in O) a maximum may lag by up to kFp8MaxLagLog2, P <= 2^8.8 < 448.
    OnlineSoftmax<kRows, Traits::kFp8 ? 8 : 0, Traits::kMmaRowSum> softmax(
        tile_softmax_scale<Traits>(p, c),
        Traits::kFp8 ? (Traits::kMmaRowSum ? fminf(p.stale_max_log2, kFp8MaxLagLog2) : 0.0f) : p.stale_max_log2,
        p.softcap_scale);
    if constexpr (Storage::kQHalves)
      FullBarrier::wait(&ss.q_full_wg[turns.warpgroup - 1], q_iter & 1);
    else
      FullBarrier::wait(&ss.q_full, q_iter & 1);
    ++q_iter;
    if (n_blocks == 0) release_q_after_last_s(ss, turns.warpgroup);  // no S reads this tile's Q
    o_turn.release();  // the last O store has long been issued: report it read before the turn wait
    if (n_blocks > 0) {
      // Q in registers: loaded before the turn wait (the loads run while the warpgroup waits), in
      // the block that uses it, so that the fragment is dead outside it (loaded under an if of its
      // own, ptxas kept it live through the epilogue, which spilled 180 bytes causal); Q's shared
      // memory is still released after the tile's last S (release_q_after_last_s).
      if constexpr (Traits::kQInRegisters) load_q_registers<Traits>(mma_qk, sQ, tSrQ, thread_idx);
      if (kPingPong && turns.last() && !granted_first_turn) turns.pass();  // warpgroup 1 goes first
      granted_first_turn = true;
      // No later tile of this CTA has a key to visit: the last warpgroup skips its very last pass.
      // Dynamic dealing cannot look ahead: it always passes, and warpgroup 1 takes that last pass
      // before it exits (below).
      bool last_work = !dynamic_dealing<kOptions>(p, sched);
      if (last_work)
        for (int j = cursor.k + 1, u = sched.tile(j); u < sched.end() && last_work; u = sched.tile(++j))
          last_work = n_blocks_of(u) == 0;
      // This warpgroup's rows of the tile end at row 64 w.
      // Causal: a warpgroup skips the tile's last block when none of its rows see it (skip_block).
      const int row_end = 64 * turns.warpgroup;
      int skipped = 0;
      // (seen counts from tile 0; the warpgroup keeps at least the tile's first block.)
      if constexpr (Mask::kCausal && kOverlap) {
        const int seen = tmask.template n_blocks_seen<Traits::kBlockM, Traits::kBlockN>(c.m_block, row_end);
        if (p.skip_unseen_blocks && seen > n_first) skipped = n_first + n_blocks - min(seen, n_first + n_blocks);
      }
      const PvWidth last_width = p.narrow_pv ? pv_width_of_last_block<Traits::kBlockM, Traits::kBlockN, Traits::kPvKeysPerKBlock>(
                                                   tmask, c.m_block, n_first + n_blocks - skipped - 1, row_end)
                                             : PvWidth::kFull;
      if constexpr (kOverlap)
        consume_tile<Traits, kOptions>(p, ss, tmask, turns, mma_qk, mma_pv, tSrQ, tSrK, tOrV, tSrS, tOrO, tScS, tOrP, tOrP_a,
                                       softmax, alpha, c.m_block, n_first, n_blocks - skipped, last_width,
                                       last_work && skipped == 0, kv_iter);
      else
        consume_tile_serial<Traits>(ss, tmask, turns, mma_qk, mma_pv, tSrQ, tSrK, tOrV, tSrS, tOrO, tScS, tOrP,
                                    tOrP_a, softmax, alpha, c.m_block, n_first, n_blocks, last_work, kv_iter);
      if (skipped > 0) skip_block<Traits>(ss, turns, last_work, kv_iter);
    }
    float lse[kRows];
    // The sinks: in the combine when the KV is split (each row's joins once), here otherwise.
    softmax.finalize(tOrO, lse,
                     kOptions && p.sinks != nullptr && !(kKvCacheLists<Traits, kOptions> && p.split_o != nullptr)
                         ? p.sinks[c.h] * float(M_LOG2E)
                         : -INFINITY);
    if constexpr (Traits::kFp8) apply_v_descale(p, c, tOrOut);
    // Where the tile's rows go: (batch b, rows up to seqlen_q) of padded calls, or its sequence's
    // (the entry read again rather than its fields held through the mainloop).
    FwdOutTile out{p.seqlen_q, 0, c.b, int64_t(c.b) * p.lse_batch_stride + int64_t(c.h) * p.lse_head_stride};
    if constexpr (kOptions) {
      if (sched.is_varlen()) {
        const TileCoord e = sched.coord(t);
        const SeqOrigin qo = q_origin(sched, e, p.seqlen_q);
        out = {e.len_q, qo.row, qo.batch, int64_t(e.h) * p.lse_head_stride + int64_t(e.q_offset) * p.lse_seq_stride};
        if constexpr (kKvCacheLists<Traits, kOptions>) {
          // A KV-cache list's Q tile (padded q, qo = (0, b)): its LSE is addressed by batch.
          if (p.padded_q_list) out.lse_base = int64_t(e.h) * p.lse_head_stride + int64_t(qo.batch) * p.lse_batch_stride;
          // A split (several per Q tile): fp32 partials for the decode combine, straight from the
          // registers; the epilogue below then stores no row (len_q 0) but keeps its barriers and
          // staging (skipping it on a branch of its own made ptxas spill 12-28 bytes in this
          // kernel, 2026-12-06).
          // A packed list always splits (partials at one split too): each row its (head, position).
          if (p.split_o != nullptr) {
            if (packed_list<Traits, kOptions>(p))
              store_split_partial_packed<Traits>(p, mma_o, tOrOut, lse, e.m_block, e.h, e.b, list_kv_range(p, t).split,
                                                 thread_idx);
            else
              store_split_partial<Traits>(p, mma_o, tOrOut, lse, e.m_block, e.h, e.b, list_kv_range(p, t).split, thread_idx);
            out.len_q = 0;
          }
        }
      }
    }
    if constexpr (Storage::kSharedO) {
      // One staging tile for both warpgroups, taken in turn (SharedOTurn); Q's half was freed at
      // the last S.
      store_o_and_lse_warpgroup<Traits, true, kOptions>(p, ss.o_staging(), mma_o, tOrOut, tScS, lse, c.m_block, c.h, out,
                                              thread_idx,
                                              uint32_t(FwdNamedBarrier::kEpilogueWarpgroup) + turns.warpgroup - 1,
                                              [&] { o_turn.acquire(); });
      o_turn.stored();
    } else if constexpr (Storage::kSeparateStagingO) {
      // O has its own staging tiles: each warpgroup stores its rows on its own (no CTA-wide sync).
      store_o_and_lse_warpgroup<Traits, false, kOptions>(p, ss.o_staging(), mma_o, tOrOut, tScS, lse, c.m_block, c.h, out,
                                               thread_idx,
                                               uint32_t(FwdNamedBarrier::kEpilogueWarpgroup) + turns.warpgroup - 1,
                                               [] { tma_store_wait<0>(); });
    } else {
      store_o_and_lse<Traits>(
          p, ss.o_staging(), mma_o, tOrOut, tScS, lse, c.m_block, c.h, c.b, thread_idx,
          [] { cutlass::arch::NamedBarrier::sync(kConsumerThreads, uint32_t(FwdNamedBarrier::kConsumers)); });
      // O staged in Q's space: the store has read it (store_o_and_lse waited), Q's space is free.
      if (thread_idx == 0) EmptyBarrier::arrive(&ss.q_empty);
    }
  }
  // Each warpgroup's last O store must have read shared memory before the CTA exits (and, with the
  // shared tile, warpgroup 1's last may still be awaited by warpgroup 2's last epilogue).
  if (Storage::kSeparateStagingO && thread_idx % 128 == 0) tma_store_wait<0>();
  o_turn.release();
  // Dynamic dealing: the last warpgroup's very last pass (last_work above) is warpgroup 1's.
  if (kPingPong && dynamic_dealing<kOptions>(p, sched) && turns.warpgroup == 1 && granted_first_turn) turns.wait();
}

}  // namespace ws

// The transposing threads of an e4m3 kernel's storage (WithVTranspose), 0 for the others.
template <class Storage>
constexpr int kTransposeThreads = 0;
template <class Storage, class Traits>
constexpr int kTransposeThreads<WithVTranspose<Storage, Traits>> = WithVTranspose<Storage, Traits>::kTransposeThreads;

// Threads of a ws CTA: the consumer warpgroups (Traits::kThreads) and the producer warpgroup.
template <class Traits>
constexpr int kWsThreads = Traits::kThreads + 128;

// kOverlap false: no intra-warpgroup overlap (consume_tile_serial; the ws_serial_* and
// ws_pingpong_serial_* ablation rows).
// kOptions: the options row's kernel (FwdKernelSpec::options; consume_tile).
// The body of ws_forward_kernel (Traits::Params) and ws_forward_kernel_kvlists (KvListParams, the
// ws::kKvCacheLists instance): one body, so the other instances compile as before.
template <class Traits, class Mask, bool kPingPong, bool kPersistent, bool kOverlap, bool kOptions, class Params>
CUTE_DEVICE void ws_forward_body(Params const& p) {
  static_assert(Traits::kWarpgroups == 2 || Traits::kWarpgroups == 3, "two or three consumer warpgroups");
  constexpr int kConsumerThreads = Traits::kThreads;  // the consumer warpgroups
  constexpr bool kLists = std::is_same_v<Params, ws::KvListParams<Traits>>;
  static_assert(!kLists || Traits::kWarpgroups == 2, "the KV-cache list instance: two consumer warpgroups");
  static_assert(ws::producer_registers<Traits, kLists>() * 128 + ws::consumer_registers<Traits, kLists>() * kConsumerThreads <=
                    launch_pool_registers(kWsThreads<Traits>),
                "setmaxnreg budgets exceed the CTA's launch pool (the consumers' setmaxnreg.inc would wait forever)");
  extern __shared__ char smem_raw[];
  using Storage = WsKernelStorage<Traits, kPersistent, kOptions>;
  auto& ss = *reinterpret_cast<Storage*>(smem_raw);
  ws::FwdTileScheduler<Mask, kPersistent, kOptions> sched{(p.seqlen_q + Traits::kBlockM - 1) / Traits::kBlockM,
                                                          p.heads_q, p.batch, p.causal_group};
  if (threadIdx.x == 0) {
    ws::FullBarrier::init(&ss.q_full, 1);
    ws::EmptyBarrier::init(&ss.q_empty, Storage::kSeparateStagingO ? kConsumerThreads : 1);
    if constexpr (Storage::kQHalves)
      for (int w = 0; w < Traits::kWarpgroups; ++w) {
        ws::FullBarrier::init(&ss.q_full_wg[w], 1);
        ws::EmptyBarrier::init(&ss.q_empty_wg[w], 128);
      }
    if constexpr (Storage::kSharedO) ws::EmptyBarrier::init(&ss.o_free, 1);
    if constexpr (kOptions) {
      for (int s = 0; s < ws::VarlenUnitRing::kSlots; ++s) {
        ws::FullBarrier::init(&ss.unit_ring.full[s], 1);
        ws::EmptyBarrier::init(&ss.unit_ring.empty[s], kConsumerThreads + 1);  // and the producer
      }
      ws::EmptyBarrier::init(&ss.unit_ring.request, 1);
    }
    for (int s = 0; s < Traits::kStages; ++s) {
      ws::FullBarrier::init(&ss.k_full[s], 1);
      // e4m3: the transposing warps' arrivals (transpose_v), no transaction bytes
      ws::FullBarrier::init(&ss.v_full[s], Storage::kTransposeV ? kTransposeThreads<Storage> : 1);
      ws::EmptyBarrier::init(&ss.k_empty[s], kConsumerThreads);  // every consumer thread
      ws::EmptyBarrier::init(&ss.v_empty[s], kConsumerThreads);
      if constexpr (Storage::kTransposeV) {  // V's TMA into v_raw
        ws::FullBarrier::init(&ss.v_raw_full[s], 1);
        ws::EmptyBarrier::init(&ss.v_raw_empty[s], Storage::kTransposeThreads);
      }
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if constexpr (kOptions) {  // a variable-length batch: the list the prepare kernel wrote
    sched.varlen = p.varlen_tiles;
    if (p.varlen_tiles != nullptr) {
      // Launched as the prepare kernel's programmatic dependent (FwdParams::varlen_pdl), this CTA
      // may have started before the list was written: wait for the prepare grid to complete and
      // its writes to be visible (a no-op in a kernel launched without the attribute).
      asm volatile("griddepcontrol.wait;" ::: "memory");
      sched.varlen_count = *p.varlen_count;
    }
  }
  if (threadIdx.x < 128) {  // producer warpgroup
    cutlass::arch::warpgroup_reg_dealloc<ws::producer_registers<Traits, kLists>()>();
    if (threadIdx.x == 0) {
      if constexpr (std::is_same_v<Params, ws::KvListParams<Traits>>)
        if (p.pack_group > 1) cute::prefetch_tma_descriptor(&p.packed_q);  // a packed list's Q load
      ws::produce<Traits, Mask, kPersistent, kOptions>(p, ss, sched);
    } else if constexpr (kOptions) {  // the dealer of dynamic dealing (its own branch: ptxas then
      // fits both in the producer warpgroup's 24 registers; after produce() it spilled 76 bytes)
      if (threadIdx.x == 32 && p.varlen_tiles != nullptr && p.varlen_claim != nullptr)
        ws::deal_units(ss.unit_ring, p.varlen_claim, *p.varlen_count);
    } else if constexpr (Storage::kTransposeV) {  // e4m3: warps 1-3 transpose V (warp 0 is the TMA thread's)
      static_assert(Storage::kTransposeThreads == 96);
      if (threadIdx.x >= 32) ws::transpose_v<Traits, 3>(p, ss, sched, int(threadIdx.x) / 32 - 1);
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<ws::consumer_registers<Traits, kLists>()>();
    ws::consume<Traits, Mask, kPingPong, kPersistent, kOverlap, kOptions>(p, ss, sched);
  }
}

template <class Traits, class Mask, bool kPingPong, bool kPersistent, bool kOverlap = true, bool kOptions = false>
__global__ void __launch_bounds__(kWsThreads<Traits>, 1)
    ws_forward_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  static_assert(!ws::kKvCacheLists<Traits, kOptions>, "the instance that reads KV-cache lists: ws_forward_kernel_kvlists");
  ws_forward_body<Traits, Mask, kPingPong, kPersistent, kOverlap, kOptions>(p);
}

// The instance that reads KV-cache lists (ws::kKvCacheLists: the 16-bit options row of hdim 128):
// KvListParams as its grid-constant parameter, so a packed list's Q descriptor stays a kernel
// parameter (the TMA unit reads it in the parameter space; prefetched by the producer thread).
template <class Traits, class Mask, bool kPingPong, bool kPersistent, bool kOverlap = true, bool kOptions = false>
__global__ void __launch_bounds__(kWsThreads<Traits>, 1)
    ws_forward_kernel_kvlists(CUTE_GRID_CONSTANT ws::KvListParams<Traits> const p) {
  static_assert(ws::kKvCacheLists<Traits, kOptions>, "KvListParams: the instance that reads KV-cache lists only");
  ws_forward_body<Traits, Mask, kPingPong, kPersistent, kOverlap, kOptions>(p);
}

}  // namespace hopattn::attention
