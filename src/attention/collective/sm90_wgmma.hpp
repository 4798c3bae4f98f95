// Issuing WGMMA batches on CuTe fragments, and converting accumulators to 16-bit fragments.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/numeric_conversion.h>

namespace hopattn::attention {

// Issues tC (+)= tA · tB over every k-block (or the first kKBlocks of them) as one WGMMA batch
// and commits it; the caller waits with cute::warpgroup_wait<N>(). kZeroInit: the first k-block
// overwrites tC (S = Q·Kᵀ); otherwise all accumulate (O += P·V). A register A operand (tA in
// rmem) is fenced too, so the compiler neither moves its writes past the arrive nor reuses its
// registers early.
template <bool kZeroInit, int kKBlocks = -1, class TiledMma, class TensorA, class TensorB, class TensorC>
CUTE_DEVICE void wgmma_issue(TiledMma& mma, TensorA const& tA, TensorB const& tB, TensorC& tC) {
  constexpr int kAll = decltype(cute::size<2>(tA))::value;
  static_assert(kKBlocks <= kAll);
  constexpr int kIssued = kKBlocks < 0 ? kAll : kKBlocks;
  // A is either a tensor of shared-memory descriptors (SS) or of register values (RS).
  constexpr bool kRegisterA = !cute::is_same_v<typename TensorA::value_type, cute::GMMA::DescriptorIterator::value_type>;
  if constexpr (kRegisterA) cute::warpgroup_fence_operand(const_cast<TensorA&>(tA));
  cute::warpgroup_fence_operand(tC);
  cute::warpgroup_arrive();
  mma.accumulate_ = kZeroInit ? cute::GMMA::ScaleOut::Zero : cute::GMMA::ScaleOut::One;
  CUTE_UNROLL
  for (int k = 0; k < kIssued; ++k) {
    cute::gemm(mma, tA(cute::_, cute::_, k), tB(cute::_, cute::_, k), tC);
    mma.accumulate_ = cute::GMMA::ScaleOut::One;
  }
  cute::warpgroup_commit_batch();
  cute::warpgroup_fence_operand(tC);
  if constexpr (kRegisterA) cute::warpgroup_fence_operand(const_cast<TensorA&>(tA));
}

// Keeps the instructions that compute `value` ahead of the next cute::warpgroup_wait<N>() in the
// SASS. ptxas schedules a wgmma.wait_group like a cheap instruction: with nothing tying it down it
// hoisted the wait for the in-flight P·V above the softmax exponentials (into the latency of the
// row-maximum shuffles), so no softmax overlapped P·V (SASS of every warp-specialized kernel before
// 2026-12-01: WARPGROUP.DEPBAR.LE gsb0, 0x0 ahead of every MUFU.EX2 of the loop). It does keep a
// shared-memory store before a later wait; this one is predicated on value < 0, never true for
// the row sums passed in (sums of exponentials: >= 0, or NaN, which compares false), so it stores
// nothing, and it costs one compare and one (predicated-off) store. A conditional wait instead
// made ptxas serialise every WGMMA (C7514).
CUTE_DEVICE void keep_before_wgmma_wait(float value, void const* smem) {
  const uint32_t addr = cute::cast_smem_ptr_to_uint(smem);
  asm volatile(
      "{\n"
      " .reg .pred p;\n"
      " setp.lt.f32 p, %0, 0f00000000;\n"
      " @p st.shared.u32 [%1], 0;\n"
      "}\n" ::"f"(value),
      "r"(addr)
      : "memory");
}

// Converts a float fragment to `To` (bf16/fp16), two values per cvt instruction.
template <class To, class TensorFrom, class TensorTo>
CUTE_DEVICE void convert_fragment(TensorFrom const& from, TensorTo& to) {
  static_assert(decltype(cute::size(from))::value % 2 == 0);
  cutlass::NumericArrayConverter<To, float, 2> conv;
  CUTE_UNROLL
  for (int i = 0; i < cute::size(from); i += 2) {
    cutlass::Array<float, 2> in;
    in[0] = from(i);
    in[1] = from(i + 1);
    const cutlass::Array<To, 2> pair = conv(in);
    to(i) = pair[0];
    to(i + 1) = pair[1];
  }
}

}  // namespace hopattn::attention
