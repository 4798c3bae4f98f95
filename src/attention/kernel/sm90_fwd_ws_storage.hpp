// The warp-specialized forward kernels' shared memory (sm90_fwd_ws.hpp): the Q/K/V tiles, O's
// staging (per warpgroup, shared by the two, or in Q's space), the pipelines' mbarriers, and for
// the options kernels the unit ring of a variable-length batch's dynamic dealing
// (sm90_fwd_ws_dealing.hpp); which storage a kernel gets (WsKernelStorage); the barrier types.
// sm90_fwd_ws.hpp's header comment describes the pipelines.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hopattn::attention {

template <class Traits>
struct WsSharedStorageBase {
  static constexpr int kStages = Traits::kStages;
  static constexpr bool kTransposeV = false;  // WithVTranspose: V loaded into v_raw, transposed into v
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutQ>, 1024> q;
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> k;
  // V as the P·V GEMM reads it: the K/V tile's bytes, or (row sums by the MMA) V's transposed
  // tile with its rows of ones (Traits::kSumRows).
  static constexpr int kVElems = cute::cosize_v<typename Traits::SmemLayoutKV> > cute::cosize_v<typename Traits::SmemLayoutVt>
                                     ? cute::cosize_v<typename Traits::SmemLayoutKV>
                                     : cute::cosize_v<typename Traits::SmemLayoutVt>;
  cute::array_aligned<typename Traits::Element, kVElems, 1024> v;
  alignas(8) uint64_t q_full;
  alignas(8) uint64_t q_empty;
  alignas(8) uint64_t k_full[kStages];
  alignas(8) uint64_t k_empty[kStages];
  alignas(8) uint64_t v_full[kStages];
  alignas(8) uint64_t v_empty[kStages];
};

// kSeparateO = false: O is staged for its TMA store in Q's space, so Q's buffer is free (q_empty,
// 1 arrival) only once the store has read it. true: O has its own staging tile, Q's buffer is
// free once every consumer thread's last S = Q·Kᵀ of the tile has completed (q_empty, 256
// arrivals), and the producer loads the next tile's Q while this tile's last P·V, softmax and
// epilogue run; the O store is waited for only before the next tile's O is written.
template <class Traits, bool kSeparateO>
struct WsSharedStorage : WsSharedStorageBase<Traits> {
  static constexpr bool kSeparateStagingO = false;
  static constexpr bool kQHalves = false;
  static constexpr bool kSharedO = false;
  static_assert(!Traits::kFp8, "O (bf16) does not fit in the space of an e4m3 Q tile");
  CUTE_DEVICE typename Traits::Element* o_staging() { return this->q.data(); }
};
template <class Traits>
struct WsSharedStorage<Traits, true> : WsSharedStorageBase<Traits> {
  static constexpr bool kSeparateStagingO = true;
  static constexpr bool kQHalves = false;
  static constexpr bool kSharedO = false;
  // One (64, hdim) tile per consumer warpgroup (Traits::SmemLayoutOWarpgroups), of O's type.
  cute::array_aligned<typename Traits::ElementOut, cute::cosize_v<typename Traits::SmemLayoutOWarpgroups>, 1024> o;
  CUTE_DEVICE typename Traits::ElementOut* o_staging() { return o.data(); }
};

// Q's space as one (64, hdim) tile per consumer warpgroup (Traits::SmemLayoutQWarpgroup, the
// same bytes as the 128-row Q tile), each with its own pipeline, and O staged in one (64, hdim)
// tile of its own that the two consumer warpgroups take in turn: the persistent schedule where O
// has no room for a tile per warpgroup (hdim 256). Warpgroup w's Q rows are loaded into tile w
// (q_full_wg[w], 1 arrival + the tile's bytes) and only warpgroup w's S = Q·Kᵀ reads them; tile w
// is free (q_empty_wg[w], 128 arrivals) once every thread of warpgroup w has completed the tile's
// last S = Q·Kᵀ, so warpgroup w's next Q rows load during its last P·V and epilogue, as at hdim
// 128, and the warpgroups no longer meet at a CTA-wide epilogue. Both warpgroups store every
// tile's rows, in the same tile order, so the O tile's turns alternate 1, 2, 1, 2, ... o_free: 1
// arrival per store, by the storing warpgroup's leader once the store has read the tile
// (cp.async.bulk.wait_group.read), done lazily, before the leader's next turn wait; a warpgroup's
// e-th epilogue of the CTA (e counted over both, from 0) waits for e arrivals (SharedOTurn). For
// hdim 256 on 64-key tiles: Q 64 KB + K/V 128 KB + O 32 KB = 224 KB.
template <class Traits>
struct WsSharedStorageQHalvesSharedO : WsSharedStorageBase<Traits> {
  static constexpr bool kSeparateStagingO = false;
  static constexpr bool kQHalves = true;
  static constexpr bool kSharedO = true;
  alignas(8) uint64_t q_full_wg[Traits::kWarpgroups];
  alignas(8) uint64_t q_empty_wg[Traits::kWarpgroups];
  cute::array_aligned<typename Traits::ElementOut, cute::cosize_v<typename Traits::SmemLayoutOWarpgroup>, 1024> o;
  alignas(8) uint64_t o_free;
  CUTE_DEVICE typename Traits::ElementOut* o_staging() { return o.data(); }
};

// How a kernel stages O for its TMA store. Non-persistent: in Q's space, CTA-wide
// (WsSharedStorage<., false>). Persistent: per warpgroup in tiles of its own wherever that fits
// in shared memory (hdim 64 and 128: 192 KB at hdim 128 on 128x128x2 tiles); else in one tile
// shared by the two warpgroups beside Q's halves where that fits (hdim 256 on 64-key tiles); else
// CTA-wide in Q's space as the non-persistent kernels (no registry row falls there).
// e4m3 kernels (Traits::kFp8): V's TMA staging ring too (WithVTranspose), and O staged apart only
// (the persistent kernels; O is bf16, twice the bytes of Q's e4m3 tile): per warpgroup, or in one
// tile taken in turns beside Q's halves where that alone fits (hdim 256 on three stages).
template <class Traits>
constexpr size_t ws_v_staging_bytes() {
  return Traits::kFp8 ? cute::cosize_v<typename Traits::SmemLayoutKV> + 2 * 8 * Traits::kStages + 1024 : 0;
}
template <class Traits, bool kPersistent>
constexpr bool ws_separate_o() {
  return kPersistent && sizeof(WsSharedStorage<Traits, true>) + ws_v_staging_bytes<Traits>() <= 227 * 1024;
}
template <class Traits, bool kPersistent>
constexpr bool ws_shared_o() {
  return kPersistent && !ws_separate_o<Traits, kPersistent>() && Traits::kWarpgroups == 2 &&
         sizeof(WsSharedStorageQHalvesSharedO<Traits>) + ws_v_staging_bytes<Traits>() <= 227 * 1024;
}
template <class Traits, bool kPersistent>
using WsStorageOf = std::conditional_t<
    ws_separate_o<Traits, kPersistent>(), WsSharedStorage<Traits, true>,
    std::conditional_t<ws_shared_o<Traits, kPersistent>(), WsSharedStorageQHalvesSharedO<Traits>,
                       WsSharedStorage<Traits, false>>>;

namespace ws {

// The ring through which a variable-length batch's units (dynamic dealing, cursor_next) reach the
// producer and the consumer warpgroups: slot s holds a unit index once full[s] has completed (1
// arrival, by the dealer thread), and is free again once empty[s] has (the producer thread and
// every consumer thread, once each has taken the next unit). request: 1 arrival per unit, by the producer
// once it has issued the unit's loads: the dealer claims the next unit only then (just in time;
// claiming ahead of that left CTAs holding units others could have taken: 0.95-0.99 of the ideal
// balance on mix16 in a model, against 0.97-1.0).
struct VarlenUnitRing {
  static constexpr int kSlots = 4;
  alignas(8) uint64_t full[kSlots];
  alignas(8) uint64_t empty[kSlots];
  alignas(8) uint64_t request;
  int unit[kSlots];
};

using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
using EmptyBarrier = cutlass::arch::ClusterBarrier;

}  // namespace ws

// The options kernels' shared memory: the storage of their tiles plus the unit ring.
template <class Storage>
struct WithUnitRing : Storage {
  ws::VarlenUnitRing unit_ring;
};

// The e4m3 kernels' shared memory: the storage of their tiles, whose `v` ring then holds V
// transposed ((hdim, slots) per stage, Traits::SmemLayoutVt), plus the ring the TMA unit loads V
// into ((keys, hdim), Traits::SmemLayoutKV) and its barriers (sm90_fwd_ws.hpp, "e4m3"):
//   v_raw_full[s]   TMA → transposing warps: 1 arrival (arrive_and_expect_tx) + the tile's bytes
//   v_raw_empty[s]  transposing warps → TMA: one arrival per transposing thread once it has read
//                   the stage (kTransposeThreads)
// v_full[s] then has kTransposeThreads arrivals (each transposing thread, after its writes and a
// proxy fence), no transaction bytes; v_empty[s] is unchanged (the consumers, after P·V).
template <class Storage, class Traits>
struct WithVTranspose : Storage {
  static constexpr bool kTransposeV = true;
  static constexpr int kTransposeThreads = 96;  // warps 1-3 of the producer warpgroup
  cute::array_aligned<typename Traits::Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> v_raw;
  alignas(8) uint64_t v_raw_full[Traits::kStages];
  alignas(8) uint64_t v_raw_empty[Traits::kStages];
};

template <class Traits, bool kPersistent, bool kOptions>
using WsKernelStorage = std::conditional_t<
    kOptions, WithUnitRing<WsStorageOf<Traits, kPersistent>>,
    std::conditional_t<Traits::kFp8, WithVTranspose<WsStorageOf<Traits, kPersistent>, Traits>,
                       WsStorageOf<Traits, kPersistent>>>;

}  // namespace hopattn::attention
