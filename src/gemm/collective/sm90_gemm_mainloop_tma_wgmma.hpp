// The A/B side of every variant: shared-memory layouts, the TMA descriptors, the loads of one
// k-tile (issued by one thread) and the WGMMAs of one k-tile (issued by a warpgroup).
//
// Operands: A (M,K) and B (N,K), each K-major or MN-major. Shared memory uses the 128-byte
// swizzle atoms WGMMA reads without bank conflicts: K-major 8x64 (rows x K) and MN-major 64x8
// for 16-bit types. BLK_K is one swizzle row of 128 bytes: 64 16-bit or 128 8-bit elements.
//
// 8-bit (e4m3) operands: WGMMA reads them K-major only (both A and B), one instruction covers
// k32 instead of k16, so a stage still takes BLK_K / k = 4 WGMMAs per m64 atom. The accumulator
// layout of m64nNk32 e4m3 equals that of m64nNk16 bf16, so the epilogues need no change.
#pragma once

#include <cstdint>

#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

#include "gemm/device/gemm_problem.hpp"
#include "gemm/kernel/sm90_gemm_config.hpp"

namespace hopattn::gemm {

template <Major kMajor>
constexpr cute::GMMA::Major gmma_major() {
  return kMajor == Major::kK ? cute::GMMA::Major::K : cute::GMMA::Major::MN;
}

// (ROWS, BLK_K, PIPE) swizzled stages of one operand. The atoms repeat along the operand's
// strided dimension first: K-major atoms (8 rows x 64 K) stack rows first (BLK_K is one atom
// wide, so either order gives the same layout), MN-major atoms (64 rows x 8 K) stack K first, so
// that a (64 rows, BLK_K) block is one contiguous 8 KiB TMA box. (Rows first would cut each
// stage of an MN-major operand into (ROWS / 64) x (BLK_K / 8) boxes of 1 KiB: 48 per stage for
// the 128x256 tile.) Both orders are canonical GMMA layouts; the descriptor takes either.
template <class Element, Major kMajor, int kRows, int kBlockK, int kStages>
using OperandSmemLayout = decltype(cute::tile_to_shape(
    cute::conditional_t<kMajor == Major::kK, cute::GMMA::Layout_K_SW128_Atom<Element>,
                        cute::GMMA::Layout_MN_SW128_Atom<Element>>{},
    cute::make_shape(cute::Int<kRows>{}, cute::Int<kBlockK>{}, cute::Int<kStages>{}),
    cute::conditional_t<kMajor == Major::kK, cute::Step<cute::_1, cute::_2, cute::_3>,
                        cute::Step<cute::_2, cute::_1, cute::_3>>{}));

// The global (rows, K) layout of an operand; the contiguous mode's stride is static 1, which
// TMA requires and which selects the box orientation.
template <Major kMajor>
CUTE_HOST_DEVICE auto operand_gmem_layout(int rows, int k, int64_t ld) {
  using namespace cute;
  if constexpr (kMajor == Major::kK) {
    return make_layout(make_shape(rows, k), make_stride(ld, Int<1>{}));
  } else {
    return make_layout(make_shape(rows, k), make_stride(Int<1>{}, ld));
  }
}

template <class Element_, Major kMajorA, Major kMajorB, hopattn_gemm_variant_t kVariant>
struct Sm90GemmMainloop {
  using Element = Element_;
  static constexpr TileConfig kCfg = tile_config(kVariant, int(sizeof(Element)));
  static constexpr int kBlockM = kCfg.kBlockM;
  static constexpr int kBlockN = kCfg.kBlockN;
  static constexpr int kBlockK = kCfg.kBlockK;
  static constexpr int kStages = kCfg.kStages;

  using SmemLayoutA = OperandSmemLayout<Element, kMajorA, kBlockM, kBlockK, kStages>;  // (BLK_M, BLK_K, PIPE)
  using SmemLayoutB = OperandSmemLayout<Element, kMajorB, kBlockN, kBlockK, kStages>;  // (BLK_N, BLK_K, PIPE)

  // kMmaWarpgroups warpgroups split the tile along M; each issues (BLK_M / WG) x BLK_N x 16 WGMMAs.
  using WarpgroupTile = cute::Shape<cute::Int<kBlockM / kCfg.kMmaWarpgroups>, cute::Int<kBlockN>, cute::Int<kBlockK>>;
  using MmaOp = decltype(cute::GMMA::ss_op_selector<Element, Element, float, WarpgroupTile,
                                                    gmma_major<kMajorA>(), gmma_major<kMajorB>()>());
  using TiledMma = decltype(cute::make_tiled_mma(
      MmaOp{}, cute::Layout<cute::Shape<cute::Int<kCfg.kMmaWarpgroups>, cute::_1, cute::_1>>{}));
  static_assert(kBlockM % (64 * kCfg.kMmaWarpgroups) == 0, "each warpgroup needs whole m64 atoms");
  static_assert(kBlockK * sizeof(Element) == 128, "a stage's K is one 128-byte swizzle row");
  static_assert(sizeof(Element) == 2 || (kMajorA == Major::kK && kMajorB == Major::kK),
                "WGMMA reads 8-bit operands K-major only");

  // Bytes one stage receives: TMA counts whole boxes, zero-filled ones included.
  static constexpr uint32_t kTxBytes = uint32_t((kBlockM + kBlockN) * kBlockK * sizeof(Element));

  struct TensorStorage {
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutA>> a;  // 1024: the SW128 period
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutB>> b;
  };

  // kClusterN > 1: the CTAs of a cluster along N share A's tile; each loads 1/kClusterN of it
  // and multicasts that part to all of them. kClusterM > 1: the same for B along M. A cluster
  // spans one dimension only.
  static constexpr int kClusterM = kCfg.kClusterM;
  static constexpr int kClusterN = kCfg.kClusterN;
  static_assert(kClusterM == 1 || kClusterN == 1, "clusters along M or along N, not both");
  static auto make_tma_a(const Element* ptr, int m, int k, int64_t ld) {
    using namespace cute;
    cute::Tensor g = make_tensor(make_gmem_ptr(ptr), operand_gmem_layout<kMajorA>(m, k, ld));  // (M, K)
    if constexpr (kClusterN > 1)
      return make_tma_atom(SM90_TMA_LOAD_MULTICAST{}, g, take<0, 2>(SmemLayoutA{}),
                           make_shape(Int<kBlockM>{}, Int<kBlockK>{}), Int<kClusterN>{});
    else
      return make_tma_atom(SM90_TMA_LOAD{}, g, take<0, 2>(SmemLayoutA{}), make_shape(Int<kBlockM>{}, Int<kBlockK>{}));
  }
  static auto make_tma_b(const Element* ptr, int n, int k, int64_t ld) {
    using namespace cute;
    cute::Tensor g = make_tensor(make_gmem_ptr(ptr), operand_gmem_layout<kMajorB>(n, k, ld));  // (N, K)
    if constexpr (kClusterM > 1)
      return make_tma_atom(SM90_TMA_LOAD_MULTICAST{}, g, take<0, 2>(SmemLayoutB{}),
                           make_shape(Int<kBlockN>{}, Int<kBlockK>{}), Int<kClusterM>{});
    else
      return make_tma_atom(SM90_TMA_LOAD{}, g, take<0, 2>(SmemLayoutB{}), make_shape(Int<kBlockN>{}, Int<kBlockK>{}));
  }
  using TmaA = decltype(make_tma_a(nullptr, 1, 1, 8));
  using TmaB = decltype(make_tma_b(nullptr, 1, 1, 8));

  struct Params {
    TmaA tma_a;
    TmaB tma_b;
    int m, n, k;
  };

  static Params to_params(const GemmProblem& p) {
    const auto* a = static_cast<const Element*>(p.a);
    const auto* b = static_cast<const Element*>(p.b);
    return Params{make_tma_a(a, p.m, p.k, p.lda), make_tma_b(b, p.n, p.k, p.ldb), p.m, p.n, p.k};
  }

  CUTE_DEVICE static void prefetch_descriptors(const Params& p) {
    cute::prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_b.get_tma_descriptor());
  }

  CUTE_HOST_DEVICE static int k_tiles(const Params& p) { return (p.k + kBlockK - 1) / kBlockK; }

  // The TMA loads of output tile (m_blk, n_blk): a callable (k_tile, stage, barrier) that copies
  // A's and B's boxes of that k-tile into the stage. One thread calls it. In a cluster, cta_rank
  // (the CTA's rank in it) picks the part of the shared operand (B along M, A along N) this CTA
  // loads for all.
  CUTE_DEVICE static auto tile_loader(const Params& p, TensorStorage& s, int m_blk, int n_blk, int cta_rank = 0) {
    using namespace cute;
    cute::Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.m, p.k));  // (M, K) TMA coordinates
    cute::Tensor mB = p.tma_b.get_tma_tensor(make_shape(p.n, p.k));  // (N, K)
    cute::Tensor gA = local_tile(mA, make_shape(Int<kBlockM>{}, Int<kBlockK>{}), make_coord(m_blk, _));  // (BLK_M, BLK_K, k)
    cute::Tensor gB = local_tile(mB, make_shape(Int<kBlockN>{}, Int<kBlockK>{}), make_coord(n_blk, _));  // (BLK_N, BLK_K, k)
    cute::Tensor sA = make_tensor(make_smem_ptr(s.a.begin()), SmemLayoutA{});  // (BLK_M, BLK_K, PIPE)
    cute::Tensor sB = make_tensor(make_smem_ptr(s.b.begin()), SmemLayoutB{});  // (BLK_N, BLK_K, PIPE)
    // No multicast: CTA 0 of a 1-CTA cluster. Mode 0 of each result is one whole TMA box (or the
    // CTA's part of it, multicast).
    auto part_a = [&] {
      if constexpr (kClusterN > 1)
        return tma_partition(p.tma_a, cta_rank, Layout<Int<kClusterN>>{}, group_modes<0, 2>(sA), group_modes<0, 2>(gA));
      else
        return tma_partition(p.tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA), group_modes<0, 2>(gA));
    }();
    auto part_b = [&] {
      if constexpr (kClusterM > 1)
        return tma_partition(p.tma_b, cta_rank, Layout<Int<kClusterM>>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gB));
      else
        return tma_partition(p.tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gB));
    }();
    cute::Tensor tAgA = get<0>(part_a);  // (TMA, k)
    cute::Tensor tAsA = get<1>(part_a);  // (TMA, PIPE)
    cute::Tensor tBgB = get<0>(part_b);  // (TMA, k)
    cute::Tensor tBsB = get<1>(part_b);  // (TMA, PIPE)
    return [=, &p](int k_tile, int stage, uint64_t* full_barrier) {
      if constexpr (kClusterN > 1)
        copy(p.tma_a.with(*full_barrier, uint16_t((1u << kClusterN) - 1u)), tAgA(_, k_tile), tAsA(_, stage));
      else
        copy(p.tma_a.with(*full_barrier), tAgA(_, k_tile), tAsA(_, stage));
      if constexpr (kClusterM > 1)
        copy(p.tma_b.with(*full_barrier, uint16_t((1u << kClusterM) - 1u)), tBgB(_, k_tile), tBsB(_, stage));
      else
        copy(p.tma_b.with(*full_barrier), tBgB(_, k_tile), tBsB(_, stage));
    };
  }

  // The WGMMA operands of `thread` (its index among the warpgroups sharing the tile): shared-
  // memory descriptors, no registers. Returns (tCrA, tCrB): (MMA, MMA_M, MMA_K, PIPE) and
  // (MMA, MMA_N, MMA_K, PIPE).
  CUTE_DEVICE static auto mma_operands(TensorStorage& s, int thread) {
    using namespace cute;
    cute::Tensor sA = make_tensor(make_smem_ptr(s.a.begin()), SmemLayoutA{});  // (BLK_M, BLK_K, PIPE)
    cute::Tensor sB = make_tensor(make_smem_ptr(s.b.begin()), SmemLayoutB{});  // (BLK_N, BLK_K, PIPE)
    auto thr_mma = TiledMma{}.get_slice(thread);
    return make_tuple(thr_mma.make_fragment_A(thr_mma.partition_A(sA)),
                      thr_mma.make_fragment_B(thr_mma.partition_B(sB)));
  }

  // One thread's fp32 accumulators of the tile: (MMA, MMA_M, MMA_N), the same shape for all.
  CUTE_DEVICE static auto make_accumulators() {
    using namespace cute;
    return partition_fragment_C(TiledMma{}, make_shape(Int<kBlockM>{}, Int<kBlockN>{}));
  }

  // Issues the WGMMAs of one stage (BLK_K / 16 instructions per m64 atom) as one commit group.
  // Inlined: a call boundary inside the wgmma sequence would serialize it (ptxas C7510).
  template <class FragA, class FragB, class Accum>
  CUTE_DEVICE static void mma_stage(const FragA& tCrA, const FragB& tCrB, Accum& acc, int stage) {
    using namespace cute;
    TiledMma mma;
    mma.accumulate_ = GMMA::ScaleOut::One;
    warpgroup_fence_operand(acc);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int kb = 0; kb < size<2>(tCrA); ++kb) {
      cute::gemm(mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), acc);
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(acc);
  }
};

}  // namespace hopattn::gemm
