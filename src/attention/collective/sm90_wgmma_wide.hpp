// WGMMA atoms for the two N sizes of FlashAttention-3's tiles that CuTe keeps behind
// CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED: m64n176k16 (S = Q·Kᵀ over 176-key tiles at hdim 128) and
// m64n80k16 (80-key tiles at hdim 256), both operands in shared memory, fp32 accumulators, bf16 or
// fp16 inputs. CuTe's extended header defines every N from 8 to 256 for every type pair and
// multiplied an instance file's compile time ~5x (sm90_fwd_config.hpp); these four ops do not.
//
// Each op has CuTe's MMA-operation form (ARegisters/BRegisters: one 64-bit shared-memory
// descriptor each; CRegisters: N/2 floats per thread in CuTe's 64xN accumulator layout) and an
// MMA_Traits specialization, so make_tiled_mma, partition_fragment_* and cute::gemm treat them as
// CuTe's own atoms. CuTe's WGMMA mma_unpack (namespace cute::SM90::GMMA) is found by
// argument-dependent lookup only for ops declared in that namespace; the mma_unpack below forwards
// to it for these ops (more specialized than cute's generic one, so overload resolution picks it).
//
// qk_ss_op<Element, N, K>() picks the op of S = Q·Kᵀ (M = 64, K-major Q and K): these for N = 176
// and 80, CuTe's ss_op_selector for the sizes it defines.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
#include <cute/atom/mma_traits_sm90_gmma.hpp>
// clang-format on

namespace hopattn::attention::gmma {

using cute::SM90::GMMA::Major;
using cute::SM90::GMMA::ScaleOut;

// Eight accumulator parameters, or their asm operands, named x0 .. x7.
#define HOPATTN_GMMA_P8(x) \
  float &x##0, float &x##1, float &x##2, float &x##3, float &x##4, float &x##5, float &x##6, float &x##7
#define HOPATTN_GMMA_O8(x) \
  "+f"(x##0), "+f"(x##1), "+f"(x##2), "+f"(x##3), "+f"(x##4), "+f"(x##5), "+f"(x##6), "+f"(x##7)
#define HOPATTN_GMMA_PARAMS_176 HOPATTN_GMMA_P8(a), HOPATTN_GMMA_P8(b), HOPATTN_GMMA_P8(c), HOPATTN_GMMA_P8(d), HOPATTN_GMMA_P8(e), HOPATTN_GMMA_P8(f), HOPATTN_GMMA_P8(g), HOPATTN_GMMA_P8(h), HOPATTN_GMMA_P8(i), HOPATTN_GMMA_P8(j), HOPATTN_GMMA_P8(k)
#define HOPATTN_GMMA_OUTS_176 HOPATTN_GMMA_O8(a), HOPATTN_GMMA_O8(b), HOPATTN_GMMA_O8(c), HOPATTN_GMMA_O8(d), HOPATTN_GMMA_O8(e), HOPATTN_GMMA_O8(f), HOPATTN_GMMA_O8(g), HOPATTN_GMMA_O8(h), HOPATTN_GMMA_O8(i), HOPATTN_GMMA_O8(j), HOPATTN_GMMA_O8(k)
#define HOPATTN_GMMA_REGS_176 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87"
#define HOPATTN_GMMA_PARAMS_80 HOPATTN_GMMA_P8(a), HOPATTN_GMMA_P8(b), HOPATTN_GMMA_P8(c), HOPATTN_GMMA_P8(d), HOPATTN_GMMA_P8(e)
#define HOPATTN_GMMA_OUTS_80 HOPATTN_GMMA_O8(a), HOPATTN_GMMA_O8(b), HOPATTN_GMMA_O8(c), HOPATTN_GMMA_O8(d), HOPATTN_GMMA_O8(e)
#define HOPATTN_GMMA_REGS_80 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39"

// The body of one op's fma: wgmma.mma_async with N = N_ and input type TYPE ("bf16" or "f16").
// Operands: the N/2 accumulators, then desc_a, desc_b, scale_d (predicate: 0 = overwrite), tnspA,
// tnspB (NUM_*: their operand numbers); the input scales are +1.
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
#define HOPATTN_GMMA_SS_BODY(N_, TYPE, NUM_A, NUM_B, NUM_SD, NUM_TA, NUM_TB)                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #NUM_SD ", 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n" #N_ "k16.f32." TYPE "." TYPE " {" HOPATTN_GMMA_REGS_##N_ \
               "}, %" #NUM_A ", %" #NUM_B ", p, 1, 1, %" #NUM_TA ", %" #NUM_TB ";\n}\n"                   \
               : HOPATTN_GMMA_OUTS_##N_                                                                  \
               : "l"(desc_a), "l"(desc_b), "r"(int32_t(scale_d)), "n"(int32_t(tnspA)), "n"(int32_t(tnspB)));
#else
#define HOPATTN_GMMA_SS_BODY(N_, TYPE, NUM_A, NUM_B, NUM_SD, NUM_TA, NUM_TB) \
  CUTE_INVALID_CONTROL_PATH("hopattn's m64n" #N_ "k16 WGMMA atom needs sm_90a");
#endif

// One op in CuTe's MMA-operation form.
#define HOPATTN_GMMA_SS_OP(NAME, N_, TYPE, NUM_A, NUM_B, NUM_SD, NUM_TA, NUM_TB)                               \
  template <Major tnspA, Major tnspB>                                                                       \
  struct NAME {                                                                                             \
    using DRegisters = void;                                                                                \
    using ARegisters = uint64_t[1];                                                                         \
    using BRegisters = uint64_t[1];                                                                         \
    using CRegisters = float[N_ / 2];                                                                       \
    CUTE_HOST_DEVICE static void fma(uint64_t const &desc_a, uint64_t const &desc_b, HOPATTN_GMMA_PARAMS_##N_, \
                                     ScaleOut const scale_d = ScaleOut::One) {                              \
      HOPATTN_GMMA_SS_BODY(N_, TYPE, NUM_A, NUM_B, NUM_SD, NUM_TA, NUM_TB)                                  \
    }                                                                                                       \
  };

HOPATTN_GMMA_SS_OP(MMA_64x176x16_F32BF16BF16_SS, 176, "bf16", 88, 89, 90, 91, 92)
HOPATTN_GMMA_SS_OP(MMA_64x176x16_F32F16F16_SS, 176, "f16", 88, 89, 90, 91, 92)
HOPATTN_GMMA_SS_OP(MMA_64x80x16_F32BF16BF16_SS, 80, "bf16", 40, 41, 42, 43, 44)
HOPATTN_GMMA_SS_OP(MMA_64x80x16_F32F16F16_SS, 80, "f16", 40, 41, 42, 43, 44)

#undef HOPATTN_GMMA_SS_OP
#undef HOPATTN_GMMA_SS_BODY
#undef HOPATTN_GMMA_PARAMS_176
#undef HOPATTN_GMMA_OUTS_176
#undef HOPATTN_GMMA_REGS_176
#undef HOPATTN_GMMA_PARAMS_80
#undef HOPATTN_GMMA_OUTS_80
#undef HOPATTN_GMMA_REGS_80
#undef HOPATTN_GMMA_P8
#undef HOPATTN_GMMA_O8

// The op of N keys for 16-bit Element (bf16 or fp16).
template <class Element, int N, Major tnspA, Major tnspB>
using WideSsOp = std::conditional_t<
    std::is_same_v<Element, cute::bfloat16_t>,
    std::conditional_t<N == 176, MMA_64x176x16_F32BF16BF16_SS<tnspA, tnspB>, MMA_64x80x16_F32BF16BF16_SS<tnspA, tnspB>>,
    std::conditional_t<N == 176, MMA_64x176x16_F32F16F16_SS<tnspA, tnspB>, MMA_64x80x16_F32F16F16_SS<tnspA, tnspB>>>;

// Forwards to CuTe's WGMMA unpacking (see the top of the file).
template <template <Major, Major> class Op, Major tnspA, Major tnspB, class TD, class DLayout, class TA, class ALayout,
          class TB, class BLayout, class TC, class CLayout>
CUTE_HOST_DEVICE constexpr void mma_unpack(cute::MMA_Traits<Op<tnspA, tnspB>> const &traits,
                                           cute::Tensor<TD, DLayout> &D, cute::Tensor<TA, ALayout> const &A,
                                           cute::Tensor<TB, BLayout> const &B, cute::Tensor<TC, CLayout> const &C) {
  cute::SM90::GMMA::mma_unpack(traits, D, A, B, C);
}

// The op of S = Q·Kᵀ for 64 rows, N keys and K = head dim, both operands K-major.
template <class Element, int N, int K>
CUTE_HOST_DEVICE constexpr auto qk_ss_op() {
  static_assert(std::is_same_v<Element, cute::bfloat16_t> || std::is_same_v<Element, cute::half_t>);
  if constexpr (N == 176 || N == 80)
    return WideSsOp<Element, N, Major::K, Major::K>{};
  else
    return cute::SM90::GMMA::ss_op_selector<Element, Element, float, cute::Shape<cute::_64, cute::Int<N>, cute::Int<K>>>();
}

}  // namespace hopattn::attention::gmma

namespace cute {

template <hopattn::attention::gmma::Major tnspA, hopattn::attention::gmma::Major tnspB, class Element, int N>
struct HopattnWideSsTraits {
  using ValTypeD = float;
  using ValTypeA = Element;
  using ValTypeB = Element;
  using ValTypeC = float;
  using FrgTypeA = SM90::GMMA::smem_desc<tnspA>;
  using FrgTypeB = SM90::GMMA::smem_desc<tnspB>;
  using Shape_MNK = Shape<_64, Int<N>, _16>;
  using ThrID = Layout<_128>;
  using ALayout = SM90::GMMA::ABLayout<64, 16>;
  using BLayout = SM90::GMMA::ABLayout<N, 16>;
  using CLayout = SM90::GMMA::CLayout_64xN<N>;
  SM90::GMMA::ScaleOut accumulate_ = SM90::GMMA::ScaleOut::One;
};

template <SM90::GMMA::Major A, SM90::GMMA::Major B>
struct MMA_Traits<hopattn::attention::gmma::MMA_64x176x16_F32BF16BF16_SS<A, B>> : HopattnWideSsTraits<A, B, bfloat16_t, 176> {};
template <SM90::GMMA::Major A, SM90::GMMA::Major B>
struct MMA_Traits<hopattn::attention::gmma::MMA_64x176x16_F32F16F16_SS<A, B>> : HopattnWideSsTraits<A, B, half_t, 176> {};
template <SM90::GMMA::Major A, SM90::GMMA::Major B>
struct MMA_Traits<hopattn::attention::gmma::MMA_64x80x16_F32BF16BF16_SS<A, B>> : HopattnWideSsTraits<A, B, bfloat16_t, 80> {};
template <SM90::GMMA::Major A, SM90::GMMA::Major B>
struct MMA_Traits<hopattn::attention::gmma::MMA_64x80x16_F32F16F16_SS<A, B>> : HopattnWideSsTraits<A, B, half_t, 80> {};

}  // namespace cute
