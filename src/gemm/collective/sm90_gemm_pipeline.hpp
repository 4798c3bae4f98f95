// A TMA → WGMMA pipeline on mbarriers: kStages shared-memory slots, each with a "full" barrier
// (the producer arms it with the byte count it expects; TMA completes the transaction) and an
// "empty" barrier (every consumer thread arrives when its WGMMAs no longer read the slot).
//
//   full[s]:  1 arrival (the producer's arrive_and_expect_tx) + the TMA bytes of one stage
//   empty[s]: kConsumerThreads arrivals
//
// Phases: a slot is filled and drained once per trip around the ring; PipelineState carries the
// slot index and the parity of the trip. The producer waits on empty[] with the opposite parity,
// so its first trip finds every slot free without anyone arriving.
#pragma once

#include <cstdint>

#include "cutlass/arch/barrier.h"
#include "cute/config.hpp"

namespace hopattn::gemm {

template <int kStages>
struct PipelineState {
  int index = 0;
  uint32_t phase = 0;

  CUTE_DEVICE void operator++() {
    if (++index == kStages) {
      index = 0;
      phase ^= 1u;
    }
  }
  // Skips n slots (another consumer's tile in the ping-pong kernel).
  CUTE_DEVICE void advance(int n) {
    const int total = index + n;
    phase ^= uint32_t((total / kStages) & 1);
    index = total % kStages;
  }
};

template <int kStages>
struct PipelineStorage {
  alignas(8) uint64_t full[kStages];
  alignas(8) uint64_t empty[kStages];
};

template <int kStages>
struct TmaPipeline {
  using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
  using EmptyBarrier = cutlass::arch::ClusterBarrier;
  PipelineStorage<kStages>& s;

  // One thread initializes; the caller then makes the init visible (fence + CTA barrier).
  CUTE_DEVICE static void init(PipelineStorage<kStages>& storage, int consumer_threads) {
    for (int i = 0; i < kStages; ++i) {
      FullBarrier::init(&storage.full[i], 1);
      EmptyBarrier::init(&storage.empty[i], consumer_threads);
    }
    cutlass::arch::fence_barrier_init();
  }

  // Producer: wait until the slot is free, then arm its full barrier with the bytes to come.
  // Returns the barrier the TMA copies complete on.
  CUTE_DEVICE uint64_t* producer_acquire(const PipelineState<kStages>& st, uint32_t tx_bytes) {
    EmptyBarrier::wait(&s.empty[st.index], st.phase ^ 1u);
    FullBarrier::arrive_and_expect_tx(&s.full[st.index], tx_bytes);
    return &s.full[st.index];
  }
  // Producer, first trip only: every slot starts free, no wait needed.
  CUTE_DEVICE uint64_t* producer_arm(const PipelineState<kStages>& st, uint32_t tx_bytes) {
    FullBarrier::arrive_and_expect_tx(&s.full[st.index], tx_bytes);
    return &s.full[st.index];
  }
  CUTE_DEVICE void consumer_wait(const PipelineState<kStages>& st) {
    FullBarrier::wait(&s.full[st.index], st.phase);
  }
  CUTE_DEVICE void consumer_release(const PipelineState<kStages>& st) {
    EmptyBarrier::arrive(&s.empty[st.index]);
  }
};

}  // namespace hopattn::gemm
