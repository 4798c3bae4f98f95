// The FP8 (e4m3) specifics of the warp-specialized forward kernel (FwdKernelSpec::fp8 rows):
// P = e4m3(softmax(S)) as the register A operand of O += P·V, and V transposed in shared memory
// so that it can be that GEMM's B operand.
//
// 8-bit WGMMA reads both operands K-major (contiguous along K). For O = P·V, K is the keys: P
// (rows × keys) comes from registers, and V must sit in shared memory as (hdim, keys) with the
// keys contiguous. The TMA unit loads V as it lies in memory, (keys, hdim) with hdim contiguous,
// into a staging ring (WithVTranspose::v_raw); warps 1-3 of the producer warpgroup transpose each
// stage into the ring the consumers read (v), 16 keys × 32 channels per warp and block: one
// ldmatrix.trans, four byte permutes (PRMT), one stmatrix (Fp8VTranspose).
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

// How far (log2 units) an e4m3 row's maximum may lag in the rows whose P·V takes the row sums
// (FwdKernelSpec::mma_row_sum; FwdParams::stale_max_log2 caps it, 0: exact): P <= 2^(8 + 0.8) =
// 445.7 stays within e4m3's 448 (the offset of 8: OnlineSoftmax). The yardsticks model the same rule
// (tests/reference/fp8_accumulate.hpp, kFp8MmaSumsLagLog2).
inline constexpr float kFp8MaxLagLog2 = 0.8f;

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

// One 8 x 8 matrix of 16-bit elements per lane octet, four at once (PTX ldmatrix / stmatrix,
// m8n8.x4.b16): lanes 8i .. 8i + 7 give the 16-byte rows of matrix i. ldmatrix .trans gives lane t
// register i = (M_i[2(t%4)][t/4], M_i[2(t%4) + 1][t/4]) (low, high half); stmatrix takes from lane
// t register i = (M_i[t/4][2(t%4)], M_i[t/4][2(t%4) + 1]).
CUTE_DEVICE void ldsm_x4_trans(uint32_t smem, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem)
               : "memory");
}
CUTE_DEVICE void stsm_x4(uint32_t smem, uint32_t const (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

// f(Int<0>{}), f(Int<1>{}), ...: a loop whose index is a constant expression in each body.
template <int... I, class F>
CUTE_HOST_DEVICE constexpr void fp8_static_for(cute::int_sequence<I...>, F&& f) {
  (f(cute::Int<I>{}), ...);
}

// The transpose of one V stage: raw (keys, hdim) as the TMA unit wrote it (LayoutRaw, hdim
// contiguous, 128-byte swizzle) into vt (hdim, slots) as the P·V GEMM reads it (LayoutVt, slots
// contiguous, 128-byte swizzle), slot s holding key fp8_pv_key(s).
//
// A block is one 16-slot group G (slots 16G .. 16G + 15, keys 16G .. 16G + 15 in fp8_pv_key's
// order) × 32 channels from C: one ldmatrix.trans.x4, four byte permutes, one stmatrix.x4 per
// warp. The loaded matrices are 8 keys × 16 channels (bytes seen as 8 16-bit pairs): m0 keys
// 16G + 0..7 and m1 keys 16G + 8..15 at channels C .. C + 15, m2 and m3 the same at C + 16 .. C + 31.
// With .trans, lane t (q = t%4, j = t/4) holds in m0's register the bytes (key 2q, key 2q + 1) ×
// (channel 2j, 2j + 1) as (k2q c2j, k2q c2j+1, k2q+1 c2j, k2q+1 c2j+1), and in m1's the same for keys
// 2q + 8, 2q + 9: exactly the four keys of slots 4q .. 4q + 3 (fp8_pv_key: 2q, 2q + 1, 2q + 8,
// 2q + 9) for two channels. Two permutes make channel C + 2j's 4 slots and channel C + 2j + 1's,
// which are stmatrix's register layout for matrices whose rows are the channels C + 2r (matrix 0),
// C + 2r + 1 (1), C + 16 + 2r (2), C + 17 + 2r (3), 16 slots each. Against the previous 4 x 4-byte
// scheme (four LDS.32, eight PRMT, four STS.32 and their addresses per 64 bytes and lane), a warp
// moves 512 bytes per ldmatrix/stmatrix pair: the H100 profile of 2026-12-06 (r3) had the
// transposing warps' address and permute instructions as the kernel's limit (consumers waiting
// on k_full behind a producer blocked on the staging ring). Banks: each ldmatrix phase reads 8
// consecutive keys' rows (the swizzle spreads them over all 8 16-byte bank groups: no conflict);
// each stmatrix phase writes 8 channels of one parity, 4 row residues mod 8: 2-way.
template <int kBlockN, int kHeadDim>
struct Fp8VTranspose {
  static_assert(kBlockN % 16 == 0 && kHeadDim % 32 == 0);
  static constexpr int kGroups = kBlockN / 16;
  static constexpr int kBlocks = kGroups * (kHeadDim / 32);

  // Lane l's row address in block b's ldmatrix (matrix l / 8, row l % 8) and stmatrix.
  CUTE_HOST_DEVICE static constexpr int load_key(int b, int lane) { return 16 * (b % kGroups) + (lane & 7) + 8 * ((lane >> 3) & 1); }
  CUTE_HOST_DEVICE static constexpr int load_channel(int b, int lane) { return 32 * (b / kGroups) + 16 * (lane >> 4); }
  CUTE_HOST_DEVICE static constexpr int store_channel(int b, int lane) {
    return 32 * (b / kGroups) + 2 * (lane & 7) + ((lane >> 3) & 1) + 16 * (lane >> 4);
  }
  CUTE_HOST_DEVICE static constexpr int store_slot(int b) { return 16 * (b % kGroups); }
  // ldmatrix's four registers into stmatrix's.
  CUTE_HOST_DEVICE static void permute(uint32_t const (&r)[4], uint32_t (&out)[4]) {
    out[0] = fp8_byte_perm(r[0], r[1], 0x6420);  // channel C + 2j: keys 2q, 2q + 1 of m0, 2q + 8, 2q + 9 of m1
    out[1] = fp8_byte_perm(r[0], r[1], 0x7531);  // channel C + 2j + 1
    out[2] = fp8_byte_perm(r[2], r[3], 0x6420);  // channel C + 16 + 2j
    out[3] = fp8_byte_perm(r[2], r[3], 0x7531);  // channel C + 17 + 2j
  }

  // The row addresses with (almost) no per-block arithmetic. Lane l's row offset in block b is,
  // for every layout of the e4m3 rows (checked at compile time for every block in run_worker,
  // and for every worker, block and lane in tests/host/test_fwd_fp8_layout.cu):
  //   offset(b, l) = (offset(0, l) + add_part(b)) ^ xor_part(b),
  // xor_part(b) = offset(b, 0) & kXorBits, add_part(b) = offset(b, 0) & ~kXorBits, a multiple of
  // 128. b's key (or slot) and channel steps reach the swizzle (Swizzle<3, 4, 3> or <2, 4, 3>:
  // byte bits 4-6 or 4-5 ^= bits 7-9 or 7-8) either as whole 8-row periods, multiples of the
  // swizzle's 1024 or 512 bytes, or as another 128-byte atom column (hdim 256's staging tile:
  // add_part), or as bits 4-6 of the column, which the swizzle XORs with the row's own bits
  // (xor_part); the lane's own part is rows 0..15 and column 0 / 16 (loads) or rows 0..31 and
  // column 0 (stores). A 128-byte aligned base B (the stages are 1024-byte aligned) passes
  // through: B + ((x + A) ^ X) = (B + x + A) ^ X when A's and B's bits 0-6 are 0 and X is within
  // bits 4-6. So the kernel computes the lane's block-0 address once and per block at most an add
  // and a LOP3 (fewer where ptxas shares them, and none where the parts are 0 or fold into the
  // instruction's immediate). The add comes first: (x ^ X) + A, with A in the immediate, would be
  // one instruction, but ptxas then keeps each distinct x ^ X as a common subexpression for the
  // whole unrolled sequence, which spilled 4-36 bytes at the producer's 40 registers.
  static constexpr uint32_t kXorBits = 0x70;
  template <class LayoutRaw>
  CUTE_HOST_DEVICE static constexpr uint32_t load_offset(int b, int lane) {
    return uint32_t(LayoutRaw{}(load_key(b, lane), load_channel(b, lane)));
  }
  template <class LayoutVt>
  CUTE_HOST_DEVICE static constexpr uint32_t store_offset(int b, int lane) {
    return uint32_t(LayoutVt{}(store_channel(b, lane), store_slot(b)));
  }
  // Block b's two parts, and its row address from the lane's row address in block 0 (base +
  // offset(0, lane), the base 128-byte aligned).
  template <class LayoutRaw>
  CUTE_HOST_DEVICE static constexpr uint32_t load_xor(int b) { return load_offset<LayoutRaw>(b, 0) & kXorBits; }
  template <class LayoutRaw>
  CUTE_HOST_DEVICE static constexpr uint32_t load_add(int b) { return load_offset<LayoutRaw>(b, 0) & ~kXorBits; }
  template <class LayoutVt>
  CUTE_HOST_DEVICE static constexpr uint32_t store_xor(int b) { return store_offset<LayoutVt>(b, 0) & kXorBits; }
  template <class LayoutVt>
  CUTE_HOST_DEVICE static constexpr uint32_t store_add(int b) { return store_offset<LayoutVt>(b, 0) & ~kXorBits; }
  CUTE_HOST_DEVICE static constexpr uint32_t block_address(uint32_t lane_address, uint32_t x, uint32_t add) {
    return (lane_address + add) ^ x;
  }
  // Whether the decomposition holds for block b, every lane (offsets from base 0; the adds
  // multiples of 128 so that any 128-byte aligned base passes through); per block, so that each
  // static_assert stays within the compiler's constexpr step limit.
  template <class LayoutRaw, class LayoutVt>
  CUTE_HOST_DEVICE static constexpr bool block_separates(int b) {
    if (load_add<LayoutRaw>(b) % 128 != 0 || store_add<LayoutVt>(b) % 128 != 0) return false;
    for (int lane = 0; lane < 32; ++lane)
      if (block_address(load_offset<LayoutRaw>(0, lane), load_xor<LayoutRaw>(b), load_add<LayoutRaw>(b)) !=
              load_offset<LayoutRaw>(b, lane) ||
          block_address(store_offset<LayoutVt>(0, lane), store_xor<LayoutVt>(b), store_add<LayoutVt>(b)) !=
              store_offset<LayoutVt>(b, lane))
        return false;
    return true;
  }

  // The blocks of warp `worker` of kWorkers: worker, worker + kWorkers, ... (block i of the warp:
  // worker + i·kWorkers), two per step so that two ldmatrix are in flight: step j takes the warp's
  // blocks 2j and 2j + 1 (the second when there is one).
  CUTE_HOST_DEVICE static constexpr int worker_blocks(int worker, int workers) {
    return worker < kBlocks ? (kBlocks - worker + workers - 1) / workers : 0;
  }

  // One warp's blocks, unrolled: every block index a constant, its addresses an add and an XOR
  // from the lane's. The same steps as the loop before (blocks b and b + kWorkers: two loads, two
  // permutes and stores), except that a warp with an odd block count no longer loads its last
  // block twice.
  template <class LayoutRaw, class LayoutVt, int kWorker, int kWorkers>
  CUTE_DEVICE static void run_worker(uint32_t load_lane, uint32_t store_lane) {
    constexpr int kMine = worker_blocks(kWorker, kWorkers);
    fp8_static_for(cute::make_int_sequence<(kMine + 1) / 2>{}, [&](auto step) {
      constexpr int b = kWorker + 2 * decltype(step)::value * kWorkers;
      constexpr bool kSecond = 2 * decltype(step)::value + 1 < kMine;
      constexpr int b1 = kSecond ? b + kWorkers : b;
      static_assert(block_separates<LayoutRaw, LayoutVt>(b) && block_separates<LayoutRaw, LayoutVt>(b1),
                    "a block's row address is not the lane's block-0 address plus and XOR constants");
      constexpr uint32_t kLoadXor0 = load_xor<LayoutRaw>(b), kLoadAdd0 = load_add<LayoutRaw>(b);
      constexpr uint32_t kLoadXor1 = load_xor<LayoutRaw>(b1), kLoadAdd1 = load_add<LayoutRaw>(b1);
      constexpr uint32_t kStoreXor0 = store_xor<LayoutVt>(b), kStoreAdd0 = store_add<LayoutVt>(b);
      constexpr uint32_t kStoreXor1 = store_xor<LayoutVt>(b1), kStoreAdd1 = store_add<LayoutVt>(b1);
      uint32_t r0[4], r1[4], out[4];
      ldsm_x4_trans(block_address(load_lane, kLoadXor0, kLoadAdd0), r0);
      if constexpr (kSecond) ldsm_x4_trans(block_address(load_lane, kLoadXor1, kLoadAdd1), r1);
      permute(r0, out);
      stsm_x4(block_address(store_lane, kStoreXor0, kStoreAdd0), out);
      if constexpr (kSecond) {
        permute(r1, out);
        stsm_x4(block_address(store_lane, kStoreXor1, kStoreAdd1), out);
      }
    });
  }

  // load_lane / store_lane: the shared-memory addresses of the lane's rows in block 0 of one stage,
  // raw's and vt's (128-byte aligned) plus load_offset<LayoutRaw>(0, lane) and
  // store_offset<LayoutVt>(0, lane); worker: this warp among the kWorkers transposing warps.
  template <class LayoutRaw, class LayoutVt, int kWorkers>
  CUTE_DEVICE static void run(uint32_t load_lane, uint32_t store_lane, int worker) {
    // ldmatrix / stmatrix are .sync.aligned: the whole warp, converged, after the per-thread
    // barrier waits before this call (their spin loops may leave it diverged).
    __syncwarp();
    fp8_static_for(cute::make_int_sequence<kWorkers>{}, [&](auto w) {
      if (worker == decltype(w)::value) run_worker<LayoutRaw, LayoutVt, decltype(w)::value, kWorkers>(load_lane, store_lane);
    });
  }
};

}  // namespace hopattn::attention
