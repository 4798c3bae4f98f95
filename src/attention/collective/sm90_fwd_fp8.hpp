// The FP8 (e4m3) specifics of the warp-specialized forward kernel (FwdKernelSpec::fp8 rows):
// P = e4m3(softmax(S)) as the register A operand of O += P·V, and V transposed in shared memory
// so that it can be that GEMM's B operand.
//
// 8-bit WGMMA reads both operands K-major (contiguous along K). For O = P·V, K is the keys: P
// (rows × keys) comes from registers, and V must sit in shared memory as (hdim, keys) with the
// keys contiguous. The TMA unit loads V as it lies in memory, (keys, hdim) with hdim contiguous,
// into a staging ring (WithVTranspose::v_raw); warps 1-3 of the producer warpgroup transpose each
// stage into the ring the consumers read (v), 4 keys × 4 channels per thread and step: four
// 32-bit shared loads, eight byte permutes (PRMT), four 32-bit shared stores (Fp8VTranspose).
//
// The key permutation. An m64nNk32 WGMMA gives thread t (lane%4 = q) of each quad the accumulator
// columns 8j + 2q + {0, 1} (j = 0..3 within 32 columns), while its 8-bit A operand wants the
// k-indices 16g + 4q + {0..3} (g = 0, 1) of the same rows (PTX ISA, "Register Fragments" of
// wgmma .m64nNk32; CuTe's GMMA::CLayout_64xN and ALayout_64x32). Instead of moving values across
// the quad (shuffles, FlashAttention-3's permute_Aregs_fp8), the second GEMM's k-index ("slot")
// 16g + 4q + i is fed key 16g + 8(i/2) + 2q + i%2 (fp8_pv_key): the thread's own accumulator
// values, in a different register order (convert_p_e4m3), with V's rows stored in the same
// permuted order by the transpose. The permutation stays within each 32 keys, so the first half
// of a block's keys is still the first half of its k-blocks (the causal kernels' narrowed P·V).
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include <cstdint>

namespace hopattn::attention {

// The key whose P column and V row feed k-index `slot` of the P·V GEMM (within a KV block).
CUTE_HOST_DEVICE constexpr int fp8_pv_key(int slot) {
  const int base = slot & ~31, s = slot & 31;
  const int g = s >> 4, q = (s >> 2) & 3, i = s & 3;
  return base + 16 * g + 8 * (i >> 1) + 2 * q + (i & 1);
}

// The register A operand of O += P·V for one warpgroup: ((4, 2, 2), MMA_M = 1, block_n / 32), the
// layout of GMMA::ALayout_64x32's values (k + 1, row + 8, k + 16) per k-block of 32 slots.
template <int kBlockN>
using Fp8PFragmentLayout =
    cute::Layout<cute::Shape<cute::Shape<cute::_4, cute::_2, cute::_2>, cute::_1, cute::Int<kBlockN / 32>>>;

// Two floats to two e4m3 (round to nearest even, saturating to ±448): lo in byte 0, hi in byte 1.
CUTE_DEVICE uint32_t e4m3x2(float lo, float hi) {
  uint16_t out;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(out) : "f"(hi), "f"(lo));  // a: upper byte, b: lower
  return out;
}

// P = e4m3(S) in the slot order of fp8_pv_key. tSrS: the S accumulator ((2, 2, N/8), 1, 1) (value
// (pair, half, j): row + 8·half, column 8j + 2q + pair); tOrP: Fp8PFragmentLayout<N> e4m3 (value
// (i, h, g) of k-block kb: row + 8h, slot 32kb + 16g + 4q + i, which holds key
// 32kb + 16g + 8(i/2) + 2q + i%2, i.e. accumulator (pair i%2, half h, j = 4kb + 2g + i/2)). Each
// 32-bit register of P is two cvt of adjacent accumulator pairs: no data crosses threads.
template <class TensorS, class TensorP>
CUTE_DEVICE void convert_p_e4m3(TensorS const& tSrS, TensorP& tOrP) {
  using namespace cute;
  constexpr int kKBlocks = decltype(size<2>(tOrP))::value;
  static_assert(decltype(size<0, 2>(tSrS))::value == 4 * kKBlocks, "S and P must cover the same keys");
  static_assert(decltype(size<1>(tSrS))::value == 1 && decltype(size<2>(tSrS))::value == 1);
  Tensor p32 = recast<uint32_t>(tOrP);  // ((1, 2, 2), 1, KB): one register per (h, g, kb)
  CUTE_UNROLL
  for (int kb = 0; kb < kKBlocks; ++kb) {
    CUTE_UNROLL
    for (int g = 0; g < 2; ++g) {
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int j = 4 * kb + 2 * g;
        const uint32_t lo = e4m3x2(tSrS(make_coord(make_coord(0, h, j), 0, 0)), tSrS(make_coord(make_coord(1, h, j), 0, 0)));
        const uint32_t hi =
            e4m3x2(tSrS(make_coord(make_coord(0, h, j + 1), 0, 0)), tSrS(make_coord(make_coord(1, h, j + 1), 0, 0)));
        p32(make_coord(make_coord(0, h, g), 0, kb)) = lo | (hi << 16);
      }
    }
  }
}

// __byte_perm on the device, its definition on the host (for tests/host/test_fwd_fp8_layout.cu).
CUTE_HOST_DEVICE uint32_t fp8_byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, selector);
#else
  const uint64_t bytes = uint64_t(x) | (uint64_t(y) << 32);
  uint32_t out = 0;
  for (int k = 0; k < 4; ++k) out |= uint32_t((bytes >> (8 * ((selector >> (4 * k)) & 7))) & 0xff) << (8 * k);
  return out;
#endif
}

// 4 x 4 bytes transposed: out[c] byte i = r[i] byte c (eight PRMT).
CUTE_HOST_DEVICE void transpose_4x4_bytes(uint32_t const (&r)[4], uint32_t (&out)[4]) {
  const uint32_t a = fp8_byte_perm(r[0], r[1], 0x5140), b = fp8_byte_perm(r[0], r[1], 0x7362);  // (r0, r1) bytes 0, 1 / 2, 3
  const uint32_t c = fp8_byte_perm(r[2], r[3], 0x5140), d = fp8_byte_perm(r[2], r[3], 0x7362);  // (r2, r3)
  out[0] = fp8_byte_perm(a, c, 0x5410);
  out[1] = fp8_byte_perm(a, c, 0x7632);
  out[2] = fp8_byte_perm(b, d, 0x5410);
  out[3] = fp8_byte_perm(b, d, 0x7632);
}

// The transpose of one V stage: raw (keys, hdim) as the TMA unit wrote it (LayoutRaw, hdim
// contiguous, 128-byte swizzle) into vt (hdim, slots) as the P·V GEMM reads it (LayoutVt, slots
// contiguous, 128-byte swizzle), slot s holding key fp8_pv_key(s). The work is 32-lane steps of
// 4 slots × 4 channels per lane; a warp takes steps worker, worker + workers, ...
//
// Lane and step bits (task()): a lane's 4 x 4 block is slots s0 .. s0 + 3, channels n0 .. n0 + 3,
// s0 = 16 S + 4 q and n0 = 4 w. The lane gives q (2 bits), w bit 0, S bit 0 and w bit 2, the step
// the rest. In a 128-byte swizzled row a 32-bit word's bank is 4·(chunk ^ row % 8) + word in
// chunk: the loads' banks vary with (w0, w1 of the chunk word; w2 ^ key bit 0 and q in the chunk
// bits, as a quad's keys are 2q + {0, 1} mod 8), the stores' with (q in the chunk word; S ^ n % 8,
// n % 8 = 4 w0 + c, in the chunk bits). No assignment of the 5 lane bits serves both fully (the
// loads want w0, w1, w2 and q; the stores q, all of S and w0): with this one each side has 16
// banks for 32 lanes, a 2-way conflict (tests/host/test_fwd_fp8_layout.cu counts them).
// Wider accesses would conflict less but do not fit the producer warpgroup's 24 registers.
template <int kBlockN, int kHeadDim>
struct Fp8VTranspose {
  static_assert(kBlockN % 32 == 0 && kHeadDim % 32 == 0);
  static constexpr int kSteps = (kBlockN / 4) * (kHeadDim / 4) / 32;
  struct Task {
    int s0, n0;  // the lane's first slot and first channel
  };
  CUTE_HOST_DEVICE static constexpr Task task(int step, int lane) {
    const int q = lane & 3, w0 = (lane >> 2) & 1, s_lo = (lane >> 3) & 1, w2 = (lane >> 4) & 1;
    const int w1 = step & 1, rest = step >> 1;
    const int w_hi = rest % (kHeadDim / 32), s_hi = rest / (kHeadDim / 32);
    const int w = w0 | (w1 << 1) | (w2 << 2) | (w_hi << 3);
    const int s = s_lo | (s_hi << 1);
    return {16 * s + 4 * q, 4 * w};
  }

  // raw and vt point at one stage; worker / workers: this warp among the transposing warps.
  // LayoutRaw: one stage's (keys, hdim) byte offsets; LayoutVt: one stage's (hdim, slots).
  // Two steps per iteration (the warp's step and the one a round of workers later): eight loads in
  // flight before the first permute, where one step's four loads left each warp waiting on shared
  // memory's latency every step (11 steps per warp and stage at 128 x 128). A warp whose step
  // count is odd loads its last step twice and stores it once.
  template <class LayoutRaw, class LayoutVt>
  CUTE_HOST_DEVICE static void run(uint8_t const* raw, uint8_t* vt, int worker, int workers, int lane) {
    CUTE_NO_UNROLL
    for (int step = worker; step < kSteps; step += 2 * workers) {
      const bool second = step + workers < kSteps;
      const Task t0 = task(step, lane), t1 = task(second ? step + workers : step, lane);
      uint32_t r0[4], r1[4], out[4];
      CUTE_UNROLL
      for (int i = 0; i < 4; ++i) {
        r0[i] = *reinterpret_cast<uint32_t const*>(raw + LayoutRaw{}(fp8_pv_key(t0.s0 + i), t0.n0));
        r1[i] = *reinterpret_cast<uint32_t const*>(raw + LayoutRaw{}(fp8_pv_key(t1.s0 + i), t1.n0));
      }
      transpose_4x4_bytes(r0, out);
      CUTE_UNROLL
      for (int c = 0; c < 4; ++c) *reinterpret_cast<uint32_t*>(vt + LayoutVt{}(t0.n0 + c, t0.s0)) = out[c];
      if (second) {
        transpose_4x4_bytes(r1, out);
        CUTE_UNROLL
        for (int c = 0; c < 4; ++c) *reinterpret_cast<uint32_t*>(vt + LayoutVt{}(t1.n0 + c, t1.s0)) = out[c];
      }
    }
  }
};

}  // namespace hopattn::attention
