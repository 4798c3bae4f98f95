// Decode over an int8 KV cache with mma.sync (registry rows kv8_mma_8w_1cta, kv8_mma_4w_3cta,
// kv8_mma_swap_8w_1cta, kv8_mma_swap_4w_3cta; device/decode_registry.hpp): the int8 tiles are
// dequantized in the registers of the warps that multiply them (mma.sync m16n8k16), with no
// transform warpgroup and no converted copy of K or V in shared memory. hdim 128, at most 16
// packed query rows per CTA (8 for the swap rows; decode with a GQA group of <= 16; more rows take
// several CTAs).
//
// Why (docs/decode.md): the WGMMA kernels (kv8_wgmma_*, sm90_decode_int8.hpp) convert each int8
// tile into a 16-bit tile in shared memory, ~5,970 warp instructions per 64-key tile, and their
// consumer warpgroup's per-tile chain (wait, S WGMMA, reductions through shared memory, P through
// shared memory, P·V WGMMA) runs at ~2,300 cycles per tile. Here each warp takes whole 64-key
// tiles on its own: its mma.sync operands come straight from registers, so K and V are read from
// shared memory once (16-byte loads) and nothing is written back; the softmax reductions stay
// inside quads (shuffles).
//
// One kernel, decode_int8_mma_warp_rings_kernel (its comment has the roles): no producer, each of
// the kWarps warps loads its own tiles into a private ring of half-tile slots (three a warp; two
// with three CTAs per SM); full[slot] 33 arrivals (lane 0's arrive.expect_tx, every lane's
// cp.async.mbarrier.arrive.noinc), no empty barriers (a warp refills only slots it has read).
// The values (Int8MmaMath): K's value · scale in one FFMA (dequant_fma: exact for the
// quantizer's 15-bit scales), rounded once to Element as the host's dequantization does; V's int8
// values exact in fp16 with each key's scale folded into P (tile_pv_fold). kv8_mma_8w_1cta: 8
// warps, one CTA per SM; kv8_mma_4w_3cta: 4 warps, two slots a warp, three CTAs per SM (K's
// channels an eighth and V's words two at a time: <= 168 registers). The swap rows (Int8MmaMath::
// kSwapPackedK, at most 8 packed rows): the keys as the mma's M and the rows as its N = 8
// (Sᵀ = K·Qᵀ, Oᵀ = Vᵀ·Pᵀ; "Keys as the mma's M" below), K dequantized in packed bf16 pairs
// (k_pair_bf16, exact for the quantizer's 8-bit K scales) at bf16; at fp16 K as the other rows.
//
// Per tile (warp, lane = 4·g + c, the mma fragment coordinates), the rows as M:
//   S = Q·Kᵀ (16 rows × 64 keys) as 8 n8 tiles × 8 k16 steps, a part of the channels at a time
//   (its K scales and Q fragments reloaded from shared memory); K's B fragment from 16-byte loads
//   per key row, value · scale (fp32) rounded once to Element: bit for bit the K that the host
//   dequantization and the WGMMA kernels use. Mask, online softmax in registers, P' (P times V's
//   scales) as the A fragment of O += P'·V (16 n8 tiles × 4 k16 steps), V's B fragment from 16-byte
//   loads per k16 step, its int8 values exact in fp16.
// End: a named barrier over the consumer threads; each warp writes (max, sum, O) into the free
//   ring; each thread merges one (row, 8 channels) over the warps by log-sum-exp weights and
//   writes O (or the split's fp32 partial) and LSE, rows unpacked to (position, q-head).
//
// Permutations (the reason no data moves between lanes): S sums over channels and O += P·V over
// keys, so K and Q may share any channel order, K and V (and P) any key order, and O's columns
// any order that the epilogue undoes.
//   - Channels of S: thread c's k16 steps s = 0..3 read physical channels [16c, 16c + 16), steps
//     4..7 [64 + 16c, 64 + 16c + 16); in step s the fragment's k = 2c + i is channel
//     64·(s/4) + 16c + 4·(s%4) + i and k = 2c + 8 + i that + 2 (int8_mma_channel).
//   - Keys: column n of S's n8 tile j is key 8j + int8_mma_key_perm(n), which makes both the K loads
//     (rows of lanes g = 2m, 2m+1 differ in bit 2: disjoint 16-byte chunks under the swizzle) and
//     the V loads (the four keys of lanes c = 0..3 differ in bits 1-2) free of bank conflicts.
//   - O's columns: n8 tile t, column n is channel 16n + t, so V's B fragment for all 16 n8 tiles
//     comes from one 16-byte load per key (channels 16g .. 16g + 15), and a thread's O row holds
//     channels [32c, 32c + 32).
// host test: tests/host/test_decode_int8_mma_layout.cu checks these maps and the bank claims.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cuda_fp16.h>
#include <cutlass/numeric_conversion.h>

#include <type_traits>

#include "attention/collective/sm90_decode_int8_convert.hpp"
#include "attention/collective/sm90_decode_tile.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"
#include "attention/kernel/sm90_fwd_fa2.hpp"  // Fa2Traits::GmemLayout

namespace hopattn::attention {

// The key order inside an n8 tile of S (see the header comment): 0, 4, 2, 6, 5, 1, 7, 3, one
// nibble each (a lookup that device code can index at run time).
CUTE_HOST_DEVICE constexpr int int8_mma_key_perm(int n) { return (0x37156240 >> (4 * n)) & 0xF; }
CUTE_HOST_DEVICE constexpr int int8_mma_key(int j, int n) { return 8 * j + int8_mma_key_perm(n); }

// Physical channel of k = kk (0..15) in k16 step s of S's GEMM.
CUTE_HOST_DEVICE constexpr int int8_mma_channel(int s, int kk) {
  const int c = (kk % 8) / 2, i = kk % 2, hi = kk / 8;
  return 64 * (s / 4) + 16 * c + 4 * (s % 4) + 2 * hi + i;
}

// The V scale slot (of the 64 per tile) holding key `key`'s scale: thread c reads its 16 keys
// (k16 step s' = 0 .. 3, then keys π(2s', 2c), π(2s', 2c+1), π(2s'+1, 2c), π(2s'+1, 2c+1)) as
// slots 16·c + 4s' + 0..3.
CUTE_HOST_DEVICE constexpr int int8_mma_vscale_slot(int key) {
  int n = 0;
  for (int m = 0; m < 8; ++m)
    if (int8_mma_key_perm(m) == key % 8) n = m;
  const int j = key / 8, c = n / 2, e = n % 2;
  return 16 * c + 4 * (j / 2) + 2 * (j % 2) + e;
}

// The swap rows (keys as the mma's M; see "Keys as the mma's M" below): the fragment maps. Register e
// of Sᵀ's m-tile mt in thread (g, c) holds key int8_swap_s_key(mt, e, g) of row int8_swap_row(e, c);
// register e of Oᵀ's m-tile mt holds channel int8_swap_o_channel(mt, e, g) of the same row.
CUTE_HOST_DEVICE constexpr int int8_swap_s_key(int mt, int e, int g) { return int8_mma_key(2 * mt + e / 2, g); }
CUTE_HOST_DEVICE constexpr int int8_swap_o_channel(int mt, int e, int g) { return 16 * g + 2 * mt + e / 2; }
CUTE_HOST_DEVICE constexpr int int8_swap_row(int e, int c) { return 2 * c + e % 2; }
// The V scale slot of key `key` (64-key tiles): thread g reads slots 8g .. 8g + 7, the scales of
// keys int8_mma_key(j, g) for j = 0 .. 7 (the keys of its Sᵀ registers).
CUTE_HOST_DEVICE constexpr int int8_swap_vscale_slot(int key) {
  int n = 0;
  for (int m = 0; m < 8; ++m)
    if (int8_mma_key_perm(m) == key % 8) n = m;
  return 8 * n + key / 8;
}

// Byte offset of (row, 16-byte chunk) in a 1 KB-aligned tile of 128-byte rows under the TMA's
// 128-byte swizzle (chunk ^= row % 8); the host test checks it against CuTe's layout.
CUTE_HOST_DEVICE constexpr int int8_mma_sw128(int row, int chunk) { return row * 128 + ((chunk ^ (row % 8)) * 16); }

// The values of the rows as M (kFmaKFoldV) or of the keys as M (kSwapPackedK; see the header).
enum class Int8MmaMath {
  kFmaKFoldV,    // kv8_mma_8w_1cta, kv8_mma_4w_3cta: K's value · scale in one FFMA; V exact in fp16, its scales folded into P
  kSwapPackedK,  // kv8_mma_swap_*: kFmaKFoldV's values with the keys as the mma's M, <= 8 rows a CTA, K in bf16
                 // pairs at bf16 (at fp16 K as kFmaKFoldV's)
};
// kWarps_: the CTA's warps, each with its own ring. kCtasPerSm_: CTAs sharing an SM: 1 with 8
// warps (213 KB), 3 with 4 warps (two slots each, ~74 KB; the launch bound caps registers at 168).
template <class Element_, int kHeadDim_, int kWarps_, Int8MmaMath kMath_, int kCtasPerSm_ = 1>
struct DecodeInt8MmaTraits {
  static_assert(kHeadDim_ == 128, "hdim 128");
  static_assert((kWarps_ == 8 && kCtasPerSm_ == 1) || (kWarps_ == 4 && kCtasPerSm_ == 3),
                "8 warps and one CTA per SM, or 4 warps and three");
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kInt8Cache = true;
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr bool kSwap = kMath_ == Int8MmaMath::kSwapPackedK;
  // The swap rows at bf16: K's value · scale as packed bf16 pairs (k_pair_bf16), exact for the
  // quantizer's K scales (8 significant bits).
  static constexpr bool kPackedK = kSwap && std::is_same_v<Element_, cutlass::bfloat16_t>;
  static constexpr int kBlockN = 64;  // keys per tile (divides both scale blocks)
  static constexpr int kNTiles = kBlockN / 8;  // n8 tiles of S per tile; k16 steps of P·V: kNTiles / 2
  static constexpr int kTileRows = kSwap ? 8 : 16;  // packed query rows per CTA: the mma's M (swap: N)
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = 32 * kWarps;  // 255 registers a thread at 8 warps
  // Three slots a warp (K_k, V_k, K_k+1 in flight); two with three CTAs per SM.
  static constexpr int kSlotsPerWarp = kCtasPerSm == 3 ? 2 : 3;
  static constexpr int kStages = kSlotsPerWarp * kWarps;
  static constexpr int kTileBytes = kBlockN * kHeadDim;  // one raw K or V tile
  using BlockN = cute::Int<kBlockN>;
  using HeadDim = cute::Int<kHeadDim>;
  using Stages = cute::Int<kStages>;
  // Raw tiles (key, channel, slot), 128-byte swizzle (the TMA writes it, int8_mma_sw128 reads it).
  using SmemLayoutRaw = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<int8_t>{},
                                                     cute::Shape<BlockN, HeadDim, Stages>{}));
  using GmemLayout = typename Fa2Traits<Element_, kHeadDim_, 64, 64, 2>::GmemLayout;  // (seq, D, heads, batch)
  using TmaLoadRaw = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<int8_t const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutRaw{})));

  // The merge after the loops reuses the tile ring: per warp 16 rows × (128 + 4) floats of O, then
  // the rows' maxima and sums.
  static constexpr int kMergeStride = kHeadDim + 4;
  struct SharedStorage {  // slot s of warp w is kSlotsPerWarp·w + s
    cute::array_aligned<int8_t, kStages * kTileBytes, 1024> raw;  // a K or a V tile per slot
    cute::array_aligned<float, kStages * kHeadDim, 16> scale;     // its 128 K scales or 64 V scale slots
    cute::array_aligned<uint32_t, 8 * 32 * 4, 16> q_frag;
    alignas(8) uint64_t full[kStages];
  };
  static_assert(kWarps * kTileRows * (kMergeStride + 2) * 4 <= kStages * kTileBytes, "the merge fits the tile ring");
  static constexpr int kSharedBytes = int(sizeof(SharedStorage));

  struct Params : DecodeInt8SplitParams<Element, TmaLoadRaw, TmaLoadRaw> {
#ifdef HOPATTN_DECODE_STAMPS
    // Measurement builds only (bench/decode_int8_timeline.cu): clock64 per tile, laid out by
    // int8_mma_stamps_per_cta; stamp_tiles tiles per warp.
    uint64_t* stamps;
    int stamp_tiles;
#endif
  };
};

// Stamps of CTA `cta` (measurement builds): slot 0 the SM id; warp w's k-th tile at
// 1 + 3 (w · tiles + k) + {0: before its wait for V, 1: after it, 2: after its last issue}; the
// CTA's i-th tile (i < warps · tiles) at 1 + 3 · warps · tiles + i, when its warp issues its V.
CUTE_HOST_DEVICE constexpr int64_t int8_mma_stamps_per_cta(int warps, int tiles) { return 1 + 4 * int64_t(warps) * tiles; }

template <class T>
struct IsDecodeInt8Mma : std::false_type {};
template <class E, int D, int W, Int8MmaMath M, int C>
struct IsDecodeInt8Mma<DecodeInt8MmaTraits<E, D, W, M, C>> : std::true_type {};

namespace int8_mma_detail {

CUTE_DEVICE uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

CUTE_DEVICE uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
CUTE_DEVICE float4 lds128f(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
  return v;
}

// D = A·B + D, m16n8k16, fp32 accumulators.
template <class Element>
CUTE_DEVICE void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<Element, cutlass::bfloat16_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// Byte b (0..3) of a biased word (x ^ 0x80) under the 2^15 magic: the float 2^15 + u exactly
// (u = value + 128 in mantissa bits 8-15). dequant_fma(x, s, neg) = fma(x, s, -(2^15 + 128)·s)
// is x·s + neg with one rounding: value · s exactly, hence the same fp32 as the host's
// dequantization (value · s in fp32), when s has at most 15 significant bits (then (2^15 + 128)·s, 9 bits
// times 15, is exact, and so is value · s, 8 bits times 15). hopattn's quantizer rounds its
// scales up to 15 bits (kvcache_quantize.cu); other scales are off by at most s · 2^-9 before the
// rounding to Element.
CUTE_DEVICE float biased_byte_magic15(uint32_t biased, int b) {
  return __uint_as_float(__byte_perm(biased, 0x47000000u, 0x7604 + 16 * b));
}
constexpr float kMagic15Offset = 32896.0f;  // 2^15 + 128
CUTE_DEVICE float dequant_fma(float x, float s, float neg_offset_s) { return fmaf(x, s, neg_offset_s); }

CUTE_DEVICE void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
CUTE_DEVICE void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}


// Q's rows g and g + 8 of the CTA's packed rows, channels [16c, 16c + 16) and [64 + 16c, 64 + 16c + 16)
// (8 bf16 pairs per half), zero past the rows; read first, so that its loads reach the memory
// system ahead of the tiles.
template <class Traits>
CUTE_DEVICE void load_q(typename Traits::Params const& p, DecodeTile const& t, int g, int c, uint4 (&qv)[2][4]) {
  using Element = typename Traits::Element;
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int row = t.row0 + g + 8 * h;
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) qv[h][k] = make_uint4(0, 0, 0, 0);
    if (row < t.rows) {
      const Element* src = p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride + t.head(row) * p.q_head_stride;
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) qv[h][k] = *reinterpret_cast<const uint4*>(src + 64 * (k / 2) + 16 * c + 8 * (k % 2));
    }
  }
}

// Q's A fragments to shared memory (one warp; every warp's are the same): k16 step s, registers
// (row g, k 2c..2c+1), (g+8, ...), (g, k 2c+8..2c+9), (g+8, ...) = channel pairs
// 64(s/4) + 16c + 4(s%4) + {0, 2}: words 2(s%4) and 2(s%4) + 1 of the half's 8 words. The loop
// reloads a half's worth per tile (in registers all 32 would spill).
CUTE_DEVICE void publish_q(uint4 const (&qv)[2][4], uint32_t qf_base, int lane) {
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) {
    const int half = s / 4, w = 2 * (s % 4);
    auto word = [&](int h, int k) {
      const uint4& v = qv[h][2 * half + k / 4];
      const int x = k % 4;
      return x == 0 ? v.x : x == 1 ? v.y : x == 2 ? v.z : v.w;
    };
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(qf_base + 16 * (s * 32 + lane)), "r"(word(0, w)),
                 "r"(word(1, w)), "r"(word(0, w + 1)), "r"(word(1, w + 1))
                 : "memory");
  }
}

// kWords (4, 2 or 1) consecutive 32-bit words of shared memory at addr (aligned to their size):
// a K row's or a V row's bytes of the pass.
template <int kWords>
CUTE_DEVICE void lds_words(uint32_t (&w)[kWords], uint32_t addr) {
  if constexpr (kWords == 4) {
    const uint4 raw = lds128(addr);
    w[0] = raw.x, w[1] = raw.y, w[2] = raw.z, w[3] = raw.w;
  } else if constexpr (kWords == 2) {
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(addr));
  } else {
    static_assert(kWords == 1, "4, 2 or 1 words");
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(w[0]) : "r"(addr));
  }
}

// S = Q·Kᵀ of one tile (16 rows × 64 keys) from the raw K tile at k_tile and its 128 K scales at
// ks_addr, kSteps k16 steps (a half, or with kSteps = 1 an eighth of the channels) at a time:
// their K scales in registers (the other passes' would not fit beside O, S and Q; the three-CTA
// kernel's 168 registers need eighths once the FFMA's constants sit beside the scales). K's
// value · scale in one FFMA (dequant_fma), rounded once to Element. k_off: the thread's row
// offsets for chunks c and c + 4.
template <class Element, int kNTiles, int kSteps = 4>
CUTE_DEVICE void tile_scores(float (&s_acc)[kNTiles][4], uint32_t k_tile, uint32_t ks_addr, uint32_t qf_base,
                             const int (&k_off)[2], int c, int lane) {
  static_assert(kSteps == 4 || kSteps == 2 || kSteps == 1, "a half, a quarter or an eighth of the channels per pass");
  CUTE_UNROLL
  for (int j = 0; j < kNTiles; ++j) s_acc[j][0] = s_acc[j][1] = s_acc[j][2] = s_acc[j][3] = 0.0f;
  // Not unrolled (nor is the P·V loop): fully unrolled, the tile's body was ~2,450 instructions
  // (39 KB of code) and ncu's top stall was no_instruction (r85: 1.60 cycles per issue), eight
  // warps at different places of a loop larger than the instruction cache.
#pragma unroll 1
  for (int pass = 0; pass < 8 / kSteps; ++pass) {
    const int half = pass * kSteps / 4, q0 = pass * kSteps % 4;  // k16 steps 4·half + q0 + (0 .. kSteps - 1)
    const int k_off_p = (half ? k_off[1] : k_off[0]) + 4 * q0;
    float ks[4 * kSteps];  // channels 64·half + 16c + 4·q0 .. + 4·kSteps - 1
    float kn[4 * kSteps];  // -(2^15 + 128) · ks
    uint4 qa[kSteps];  // Q's A fragments of the pass's k16 steps
    CUTE_UNROLL
    for (int q = 0; q < kSteps; ++q) {
      const float4 f = lds128f(ks_addr + 4 * (64 * half + 16 * c + 4 * (q0 + q)));
      ks[4 * q] = f.x, ks[4 * q + 1] = f.y, ks[4 * q + 2] = f.z, ks[4 * q + 3] = f.w;
      qa[q] = lds128(qf_base + 16 * ((4 * half + q0 + q) * 32 + lane));
    }
    CUTE_UNROLL
    for (int i = 0; i < 4 * kSteps; ++i) kn[i] = -kMagic15Offset * ks[i];
    // Channel i of the pass's: value · scale in fp32.
    auto deq = [&](uint32_t w, int b, int i) { return dequant_fma(biased_byte_magic15(w, b), ks[i], kn[i]); };
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) {
      uint32_t w4[kSteps];  // bytes 4·q0 .. 4·(q0 + kSteps) - 1 of the row's chunk, biased
      lds_words<kSteps>(w4, k_tile + 1024 * j + k_off_p);
      CUTE_UNROLL
      for (int q = 0; q < kSteps; ++q) {  // k16 step 4·half + q0 + q: bytes 4q .. 4q + 3 of w4
        const uint32_t w = w4[q] ^ 0x80808080u;
        const uint32_t b0 = pack_pair<Element>(deq(w, 0, 4 * q), deq(w, 1, 4 * q + 1));
        const uint32_t b1 = pack_pair<Element>(deq(w, 2, 4 * q + 2), deq(w, 3, 4 * q + 3));
        mma16816<Element>(s_acc[j], qa[q].x, qa[q].y, qa[q].z, qa[q].w, b0, b1);
      }
    }
  }
}

// The running (max, sum) of rows g and g + 8 over one more tile, whose first key is n·kBlockN:
// the mask (keys at or past a row's limit), then the online softmax with row h's scores times
// scale[h] (log2 units); s_acc becomes P, alpha the factor for the rows' O. hi: whether rows
// g + 8 exist in the CTA (warp-uniform; not with <= 8 packed rows, e.g. 64:8 or 32:8 at q_len 1):
// without them their P is 0 and alpha 1, and the half of the softmax that served them is skipped.
template <int kBlockN, int kNTiles>
CUTE_DEVICE void online_softmax(float (&s_acc)[kNTiles][4], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                                int n, int mask_from, int limit0, int limit1, const float (&scale)[2], int c,
                                bool hi) {
  if ((n + 1) * kBlockN > mask_from) {
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j)
      CUTE_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int key = n * kBlockN + int8_mma_key(j, 2 * c + e);
        if (key >= limit0) s_acc[j][e] = -INFINITY;
        if (key >= limit1) s_acc[j][2 + e] = -INFINITY;
      }
  }
  if (!hi) {
    alpha[1] = 1.0f;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) s_acc[j][2] = s_acc[j][3] = 0.0f;
  }
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (h == 1 && !hi) break;
    float mx = -INFINITY;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s_acc[j][2 * h], s_acc[j][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_run[h], mx * scale[h]);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    alpha[h] = exp2_ftz(m_run[h] - m_use);
    m_run[h] = m_new;
    float sum = 0.0f;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j)
      CUTE_UNROLL
      for (int e = 0; e < 2; ++e) {
        const float pv = exp2_ftz(s_acc[j][2 * h + e] * scale[h] - m_use);
        s_acc[j][2 * h + e] = pv;
        sum += pv;
      }
    l_run[h] = l_run[h] * alpha[h] + sum;
  }
}

CUTE_DEVICE void rescale_o(float (&o)[16][4], float a0, float a1) {  // rows g (a0) and g + 8 (a1)
  CUTE_UNROLL
  for (int tt = 0; tt < 16; ++tt) o[tt][0] *= a0, o[tt][1] *= a0, o[tt][2] *= a1, o[tt][3] *= a1;
}
// The same, skipped when no lane's factor differs from 1 (a row's maximum rarely changes once its
// first tiles are seen; 64 FMULs a tile), and rows g + 8 only when they exist.
CUTE_DEVICE void rescale_o_lazy(float (&o)[16][4], float a0, float a1, bool hi) {
  if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
  if (hi) {
    rescale_o(o, a0, a1);
  } else {
    CUTE_UNROLL
    for (int tt = 0; tt < 16; ++tt) o[tt][0] *= a0, o[tt][1] *= a0;
  }
}

// The P·V loop's fragment of P: pa[0], the rest shifted down (the loop is not unrolled, and a
// register array is indexed only by constants). kRegs: 4 (P's A fragment) or 2 (P'ᵀ's B fragment).
template <int kSteps, int kRegs>
CUTE_DEVICE void pop_front(uint32_t (&pa)[kSteps][kRegs], uint32_t (&out)[kRegs]) {
  CUTE_UNROLL
  for (int x = 0; x < kRegs; ++x) out[x] = pa[0][x];
  CUTE_UNROLL
  for (int r = 0; r < kSteps - 1; ++r)
    CUTE_UNROLL
    for (int x = 0; x < kRegs; ++x) pa[r][x] = pa[r + 1][x];
}

// After the loops: the kWarps warps' (max, sum, O) of the CTA's 16 rows merged by log-sum-exp
// weights through merge_area (free shared memory of at least kWarps · 16 · (kMergeStride + 2)
// floats), then O (or the split's fp32 partial) and LSE written, rows unpacked to (position,
// q-head). Called by all kWarps consumer warps; len: the sequence's length as read before the loop
// (DecodeTile::seq_len: with an int8 call's tail, DecodeTile::len is narrower).
template <class Traits>
CUTE_DEVICE void merge_partials_and_store(typename Traits::Params const& p, const float* merge_area, int len);

// The frame of both merges: once every consumer is past its loop (so the tile ring is no longer
// read), write(merge_o, merge_ml) stores the warp's O rows (warp, row, kStride) and (max, sum)
// pairs (warp, row, {m, l}); then, after a second barrier, merge_partials_and_store.
template <class Traits, class Write>
CUTE_DEVICE void merge_through_shared(typename Traits::Params const& p, float* merge_area, int len, Write&& write) {
  constexpr int kWarps = Traits::kWarps, kStride = Traits::kMergeStride;
  float* merge_o = merge_area;
  float* merge_ml = merge_o + kWarps * 16 * kStride;
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));
  write(merge_o, merge_ml);
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));
  merge_partials_and_store<Traits>(p, merge_area, len);
}

template <class Traits>
CUTE_DEVICE void merge_and_store(typename Traits::Params const& p, float* merge_area, float (&o)[16][4],
                                 float (&m_run)[2], float (&l_run)[2], int len, int warp, int lane) {
  constexpr int kStride = Traits::kMergeStride;
  const int g = lane / 4, c = lane % 4;
  // Row sums over the quad first; every lane of a quad then holds its rows'.
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  merge_through_shared<Traits>(p, merge_area, len, [&](float* merge_o, float* merge_ml) {
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      float* dst = merge_o + (warp * 16 + g + 8 * h) * kStride;
      CUTE_UNROLL
      for (int tt = 0; tt < 16; ++tt) dst[32 * c + tt] = o[tt][2 * h], dst[32 * c + 16 + tt] = o[tt][2 * h + 1];
      if (c == 0) merge_ml[(warp * 16 + g + 8 * h) * 2] = m_run[h], merge_ml[(warp * 16 + g + 8 * h) * 2 + 1] = l_run[h];
    }
  });
}

// The second half of the merge, once every warp's (max, sum, O) sits in merge_area (rows of 16 a
// warp, as merge_and_store writes them).
template <class Traits>
CUTE_DEVICE void merge_partials_and_store(typename Traits::Params const& p, const float* merge_area, int len) {
  using Element = typename Traits::Element;
  constexpr int kWarps = Traits::kWarps, kHeadDim = Traits::kHeadDim, kStride = Traits::kMergeStride;
  const float* merge_o = merge_area;                       // (warp, row, kStride)
  const float* merge_ml = merge_o + kWarps * 16 * kStride;  // (warp, row, {m, l})
  // Items (row, 8 channels): the CTA's rows × 16 chunks over the consumer threads.
  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, Traits::kTileRows>(p);
  t.template set_length<typename Traits::Params, Traits::kTileRows, Traits::kBlockN>(p, len);
  for (int item = threadIdx.x; item < Traits::kTileRows * 16; item += 32 * kWarps) {
    const int row_l = item / 16, ch = 8 * (item % 16);
    const int row = t.row0 + row_l;
    if (row >= t.rows) continue;
    float m_all = -INFINITY;
    CUTE_UNROLL
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, merge_ml[(w * 16 + row_l) * 2]);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, l_all = 0.0f;
    if (m_all != -INFINITY) {
      CUTE_UNROLL
      for (int w = 0; w < kWarps; ++w) {
        const float wt = exp2_ftz(merge_ml[(w * 16 + row_l) * 2] - m_all);
        l_all += wt * merge_ml[(w * 16 + row_l) * 2 + 1];
        const float* src = merge_o + (w * 16 + row_l) * kStride + ch;
        const float4 x0 = *reinterpret_cast<const float4*>(src), x1 = *reinterpret_cast<const float4*>(src + 4);
        acc[0] += wt * x0.x, acc[1] += wt * x0.y, acc[2] += wt * x0.z, acc[3] += wt * x0.w;
        acc[4] += wt * x1.x, acc[5] += wt * x1.y, acc[6] += wt * x1.z, acc[7] += wt * x1.w;
      }
    }
    const float inv = t.bad ? NAN : (l_all > 0.0f ? 1.0f / l_all : 0.0f);
    const float lse = t.bad ? NAN : (l_all > 0.0f ? m_all * 0.6931471805599453f + logf(l_all) : -INFINITY);
    CUTE_UNROLL
    for (int k = 0; k < 8; ++k) acc[k] *= inv;
    const int sp = t.pos(row), h = t.head(row);
    const bool partial = p.o_part != nullptr;
    if (item % 16 == 0) {
      if (partial)
        p.lse_part[((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp] = lse;
      else if (p.lse != nullptr)
        p.lse[t.b * p.lse_batch_stride + h * p.lse_head_stride + sp * p.lse_seq_stride] = lse;
    }
    if (partial) {
      float* dst = p.o_part + (((int64_t(t.slot) * p.batch + t.b) * p.heads_q + h) * p.seqlen_q + sp) * kHeadDim + ch;
      *reinterpret_cast<float4*>(dst) = make_float4(acc[0], acc[1], acc[2], acc[3]);
      *reinterpret_cast<float4*>(dst + 4) = make_float4(acc[4], acc[5], acc[6], acc[7]);
    } else {
      Element* dst = p.o + t.b * p.o_batch_stride + sp * p.o_seq_stride + h * p.o_head_stride + ch;
      CUTE_UNROLL
      for (int k = 0; k < 8; k += 2) *reinterpret_cast<uint32_t*>(dst + k) = pack_pair<Element>(acc[k], acc[k + 1]);
    }
  }
}

// ---- V exact in fp16 ----
// V's int8 values x are exact in fp16 as the byte under the 1024 magic, minus 1152, and each
// key's scale is folded into P with a power-of-two exponent e_V per tile (the largest scaled
// value in [2^14, 2^15), so nothing overflows fp16); O is kept as O · 2^-e_V and the factor comes
// back exactly at the end.

// e with m · 2^-e in [2^14, 2^15) for m > 0 (0 otherwise), kept within [-100, 100].
CUTE_DEVICE int half_exponent(float m) {
  if (!(m > 0.0f)) return 0;
  const int e = int((__float_as_uint(m) >> 23) & 0xFF) - 127 - 14;
  return e < -100 ? -100 : (e > 100 ? 100 : e);
}
// 2^e as a float for e in [-126, 127]; 0 below.
CUTE_DEVICE float exp2_int(int e) { return e < -126 ? 0.0f : __uint_as_float(uint32_t(e + 127) << 23); }

CUTE_DEVICE uint32_t hadd2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// (b ? a ^ c : c) per bit: the low bytes of each half of a, sign-flipped (biased), under the high byte 0x64.
CUTE_DEVICE uint32_t bias_into_magic(uint32_t a) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(d) : "r"(a), "r"(0x00FF00FFu), "r"(0x64806480u));
  return d;
}
constexpr uint32_t kMinus1152x2 = 0xE480E480u;  // -(1024 + 128) in both fp16 halves

// The tile's V exponent from its 64 V scales (the thread's 16 and the quad's shuffles), never more
// than 80 below the previous (so O, rescaled by 2^(e_prev - e), stays far from overflow).
CUTE_DEVICE int tile_v_exponent(uint32_t vs_addr, int c, int e_prev) {
  float m = 0.0f;
  CUTE_UNROLL
  for (int q = 0; q < 4; ++q) {
    const float4 f = lds128f(vs_addr + 4 * (16 * c + 4 * q));
    m = fmaxf(m, fmaxf(fmaxf(f.x, f.y), fmaxf(f.z, f.w)));
  }
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
  const int e = half_exponent(127.0f * m);
  return e < e_prev - 80 ? e_prev - 80 : e;
}

// O' += P'·V8 in fp16 with O' = O · 2^-e_v, from the raw V tile at v_tile and its 64 V scale
// slots at vs_addr (int8_mma_vscale_slot): V's int8 values exact in fp16 (no scale, ~1.5
// instructions a value instead of ~2.75) and each key's scale folded into P:
// P' = fp16(p · s_v · 2^-e_v), 8 FMULs per k16 step. K keeps the host's rounding (tile_scores), so
// its outlier-channel accuracy stays; V's products are not rounded to Element (docs/decode.md).
// k16 step s' covers S tiles 2s', 2s'+1; V's B fragment for n8 tile tt (channel 16g + tt) from
// keys π(2s', 2c), π(2s', 2c+1) (b0) and π(2s'+1, 2c), π(2s'+1, 2c+1) (b1). v_off: the thread's row
// offsets of keys π(2c) and π(2c + 1), chunk g. kVWords: 32-bit words of each key's 16-byte chunk
// held at a time (4, or 2 for the three-CTA kernel's 168 registers: two 8-byte loads a key
// instead of one 16-byte load).
template <int kNTiles, int kVWords = 4>
CUTE_DEVICE void tile_pv_fold(float (&o)[16][4], float const (&s_acc)[kNTiles][4], uint32_t v_tile, uint32_t vs_addr,
                              const int (&v_off)[2], int c, int e_v) {
  constexpr int kPvSteps = kNTiles / 2;
  const float fv = exp2_int(-e_v);
  uint32_t pa[kPvSteps][4];
  CUTE_UNROLL
  for (int sp = 0; sp < kPvSteps; ++sp) {  // the step's keys π(2sp, 2c), π(2sp, 2c+1), π(2sp+1, 2c), π(2sp+1, 2c+1)
    const float4 vsc = lds128f(vs_addr + 4 * (16 * c + 4 * sp));
    const float s0 = vsc.x * fv, s1 = vsc.y * fv, s2 = vsc.z * fv, s3 = vsc.w * fv;
    pa[sp][0] = pack_pair<cutlass::half_t>(s_acc[2 * sp][0] * s0, s_acc[2 * sp][1] * s1);
    pa[sp][1] = pack_pair<cutlass::half_t>(s_acc[2 * sp][2] * s0, s_acc[2 * sp][3] * s1);
    pa[sp][2] = pack_pair<cutlass::half_t>(s_acc[2 * sp + 1][0] * s2, s_acc[2 * sp + 1][1] * s3);
    pa[sp][3] = pack_pair<cutlass::half_t>(s_acc[2 * sp + 1][2] * s2, s_acc[2 * sp + 1][3] * s3);
  }
#pragma unroll 1
  for (int sp = 0; sp < kPvSteps; ++sp) {
    uint32_t a[4];
    pop_front(pa, a);
    CUTE_UNROLL
    for (int w0 = 0; w0 < 4; w0 += kVWords) {
      uint32_t vw[4][kVWords];  // [key 0..3][word w0 + i], raw
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) lds_words<kVWords>(vw[k], v_tile + 1024 * (2 * sp + k / 2) + v_off[k % 2] + 4 * w0);
      CUTE_UNROLL
      for (int tt = 4 * w0; tt < 4 * (w0 + kVWords); ++tt) {
        const int wi = tt / 4 - w0, by = tt % 4;
        const uint32_t sel = uint32_t(by) | (uint32_t(4 + by) << 8);  // byte `by` of keys 0 and 1 (2 and 3)
        const uint32_t b0 = hadd2(bias_into_magic(__byte_perm(vw[0][wi], vw[1][wi], sel)), kMinus1152x2);
        const uint32_t b1 = hadd2(bias_into_magic(__byte_perm(vw[2][wi], vw[3][wi], sel)), kMinus1152x2);
        mma16816<cutlass::half_t>(o[tt], a[0], a[1], a[2], a[3], b0, b1);
      }
    }
  }
}

// ---- Keys as the mma's M: the swap rows (kv8_mma_swap_*), at most 8 packed rows a CTA ----
// Sᵀ = K·Qᵀ (m16n8k16: M = 16 keys, N = 8 rows, K = 16 channels) and Oᵀ = Vᵀ·Pᵀ (M = 16 channels,
// N = 8 rows, K = 16 keys). With <= 8 packed rows (64:8 or 32:8 at q_len 1) the rows-as-M kernel's
// M = 16 rows leave half of every mma, of S's registers and of O's on absent rows; here the rows
// are N = 8: half the HMMAs, Sᵀ in 16 registers, Oᵀ in 32. The values are the rows-as-M kernel's:
// K's A fragment of m-tile mt is its B fragments of n8 tiles 2mt (rows g) and 2mt + 1 (rows
// g + 8), V's A fragment of m-tile mt its B fragments of n8 tiles 2mt and 2mt + 1, so the loads
// and conversions are the same instructions. Pᵀ's B fragment is Sᵀ's C fragment transposed, one
// movmatrix per 8 × 8 block. Maps: int8_swap_s_key, int8_swap_o_channel, int8_swap_row.

// Q's B fragments (row g; the same in every warp) to shared memory: k16 step s, the words of
// channel pairs int8_mma_channel(s, 2c) and int8_mma_channel(s, 2c + 8) (publish_q's a0 and a2).
// kPackedK (the swap rows at bf16): the channels of the four bytes of K's word in the order 0, 2 | 1, 3
// (k_pair_bf16's pairs), Q's likewise.
template <bool kPackedK = false>
CUTE_DEVICE void publish_q_swap(uint4 const (&qv)[2][4], uint32_t qf_base, int lane) {
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) {
    const uint4& v = qv[0][2 * (s / 4) + (s % 4) / 2];
    uint32_t w0 = s % 2 == 0 ? v.x : v.z, w1 = s % 2 == 0 ? v.y : v.w;  // channels (0, 1), (2, 3) of the four
    if constexpr (kPackedK) {
      const uint32_t x = w0;
      w0 = __byte_perm(x, w1, 0x5410), w1 = __byte_perm(x, w1, 0x7632);  // (0, 2), (1, 3)
    }
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(qf_base + 8 * (s * 32 + lane)), "r"(w0), "r"(w1) : "memory");
  }
}

CUTE_DEVICE uint32_t movmatrix_trans(uint32_t x) {
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(x));
  return d;
}

CUTE_DEVICE uint32_t sub_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
CUTE_DEVICE uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// Bytes 0 and 2 of w (raw int8 x = m - 128·sign, m its low 7 bits) times the bf16 scales of the
// pair s2, as a bf16 pair rounded once: 128 + m is the bf16 0x4300 | m and 128 · (1 + sign) the
// bf16 0x4300 | (x & 0x80) (the sign bit lands on the exponent's lowest bit: 128 or 256), so one
// packed subtraction gives x exactly and one packed product x · s rounded to bf16 — the host's
// value when s has at most 8 significant bits (the quantizer's K scales), 4.5 instructions a pair
// with the shift for bytes 1 and 3 instead of tile_scores' 5.5 (XOR, 2 PRMT, 2 FFMA, F2FP).
CUTE_HOST_DEVICE constexpr uint32_t k_pair_value_bits(uint32_t w) { return (w & 0x007F007Fu) | 0x43004300u; }
CUTE_HOST_DEVICE constexpr uint32_t k_pair_offset_bits(uint32_t w) { return (w & 0x00800080u) | 0x43004300u; }
// (a & mask) | c in one LOP3: written out, ptxas splits it in two (both constants immediates).
CUTE_DEVICE uint32_t and_or(uint32_t a, uint32_t mask, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(mask), "r"(c));
  return d;
}
CUTE_DEVICE uint32_t k_pair_bf16(uint32_t w, uint32_t s2) {
  const uint32_t value = and_or(w, 0x007F007Fu, 0x43004300u), offset = and_or(w, 0x00800080u, 0x43004300u);
  return mul_bf16x2(sub_bf16x2(value, offset), s2);  // k_pair_value_bits(w) - k_pair_offset_bits(w), times s2
}

// Sᵀ = K·Qᵀ of one tile (64 keys × 8 rows: m-tiles mt = 0..3), kSteps k16 steps a pass, K as
// tile_scores dequantizes it (value · scale in one FFMA, rounded once to Element), or with
// kPackedK in bf16 pairs (k_pair_bf16; channels 0, 2 | 1, 3 of each word, as publish_q_swap).
template <class Element, int kSteps = 4, bool kPackedK = false>
CUTE_DEVICE void tile_scores_swap(float (&s_acc)[4][4], uint32_t k_tile, uint32_t ks_addr, uint32_t qf_base,
                                  const int (&k_off)[2], int c, int lane) {
  static_assert(kSteps == 4 || kSteps == 2 || kSteps == 1, "a half, a quarter or an eighth of the channels per pass");
  CUTE_UNROLL
  for (int mt = 0; mt < 4; ++mt) s_acc[mt][0] = s_acc[mt][1] = s_acc[mt][2] = s_acc[mt][3] = 0.0f;
#pragma unroll 1
  for (int pass = 0; pass < 8 / kSteps; ++pass) {
    const int half = pass * kSteps / 4, q0 = pass * kSteps % 4;  // k16 steps 4·half + q0 + (0 .. kSteps - 1)
    const int k_off_p = (half ? k_off[1] : k_off[0]) + 4 * q0;
    float ks[kPackedK ? 1 : 4 * kSteps] = {}, kn[kPackedK ? 1 : 4 * kSteps] = {};  // K scales, -(2^15 + 128) times them
    uint32_t ks2[kSteps][2];  // kPackedK: bf16 scale pairs of channels (0, 2) and (1, 3) of each word
    uint32_t qb[kSteps][2];  // Q's B fragments of the pass's k16 steps
    CUTE_UNROLL
    for (int q = 0; q < kSteps; ++q) {
      const float4 f = lds128f(ks_addr + 4 * (64 * half + 16 * c + 4 * (q0 + q)));
      if constexpr (kPackedK) {
        ks2[q][0] = pack_pair<cutlass::bfloat16_t>(f.x, f.z), ks2[q][1] = pack_pair<cutlass::bfloat16_t>(f.y, f.w);
      } else {
        ks[4 * q] = f.x, ks[4 * q + 1] = f.y, ks[4 * q + 2] = f.z, ks[4 * q + 3] = f.w;
      }
      asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                   : "=r"(qb[q][0]), "=r"(qb[q][1])
                   : "r"(qf_base + 8 * ((4 * half + q0 + q) * 32 + lane)));
    }
    if constexpr (!kPackedK) {
      CUTE_UNROLL
      for (int i = 0; i < 4 * kSteps; ++i) kn[i] = -kMagic15Offset * ks[i];
    }
    auto deq = [&](uint32_t w, int b, int i) { return dequant_fma(biased_byte_magic15(w, b), ks[i], kn[i]); };
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) {
      uint32_t wa[kSteps], wb[kSteps];  // key rows int8_mma_key(2mt, g) (A's rows g) and (2mt + 1, g) (rows g + 8)
      lds_words<kSteps>(wa, k_tile + 1024 * (2 * mt) + k_off_p);
      lds_words<kSteps>(wb, k_tile + 1024 * (2 * mt + 1) + k_off_p);
      CUTE_UNROLL
      for (int q = 0; q < kSteps; ++q) {
        uint32_t a0, a1, a2, a3;  // (key A, k 2c..), (key B, 2c..), (A, 2c + 8..), (B, 2c + 8..)
        if constexpr (kPackedK) {
          a0 = k_pair_bf16(wa[q], ks2[q][0]), a2 = k_pair_bf16(wa[q] >> 8, ks2[q][1]);
          a1 = k_pair_bf16(wb[q], ks2[q][0]), a3 = k_pair_bf16(wb[q] >> 8, ks2[q][1]);
        } else {
          const uint32_t xa = wa[q] ^ 0x80808080u, xb = wb[q] ^ 0x80808080u;
          a0 = pack_pair<Element>(deq(xa, 0, 4 * q), deq(xa, 1, 4 * q + 1));
          a1 = pack_pair<Element>(deq(xb, 0, 4 * q), deq(xb, 1, 4 * q + 1));
          a2 = pack_pair<Element>(deq(xa, 2, 4 * q + 2), deq(xa, 3, 4 * q + 3));
          a3 = pack_pair<Element>(deq(xb, 2, 4 * q + 2), deq(xb, 3, 4 * q + 3));
        }
        mma16816<Element>(s_acc[mt], a0, a1, a2, a3, qb[q][0], qb[q][1]);
      }
    }
  }
}

// online_softmax for Sᵀ: rows 2c and 2c + 1 (registers e % 2), their maxima over the thread's 8
// keys each and the 8 lanes g; l_run holds the thread's partial sums (merge_and_store_swap adds
// the lanes'). limit[r]: the first key row 2c + r must not see.
CUTE_DEVICE void online_softmax_swap(float (&s_acc)[4][4], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                                     int n, int mask_from, const int (&limit)[2], float scale, int g) {
  if ((n + 1) * 64 > mask_from) {
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt)
      CUTE_UNROLL
      for (int e = 0; e < 4; ++e)
        if (n * 64 + int8_swap_s_key(mt, e, g) >= limit[e % 2]) s_acc[mt][e] = -INFINITY;
  }
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) mx = fmaxf(mx, fmaxf(s_acc[mt][r], s_acc[mt][2 + r]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
    const float m_new = fmaxf(m_run[r], mx * scale);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = exp2_ftz(m_run[r] - m_use);
    m_run[r] = m_new;
    float sum = 0.0f;
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt)
      CUTE_UNROLL
      for (int e = r; e < 4; e += 2) {
        const float pv = exp2_ftz(s_acc[mt][e] * scale - m_use);
        s_acc[mt][e] = pv;
        sum += pv;
      }
    l_run[r] = l_run[r] * alpha[r] + sum;
  }
}

// Oᵀ's columns (rows 2c, 2c + 1) times a0, a1; skipped when no lane's factor differs from 1.
CUTE_DEVICE void rescale_o_swap(float (&o)[8][4], float a0, float a1) {
  if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
  CUTE_UNROLL
  for (int mt = 0; mt < 8; ++mt) o[mt][0] *= a0, o[mt][1] *= a1, o[mt][2] *= a0, o[mt][3] *= a1;
}

// Oᵀ' += Vᵀ·P'ᵀ in fp16 with Oᵀ' = Oᵀ · 2^-e_v (tile_pv_fold's values): V's int8 exact in fp16,
// P' = fp16(p · s_v · 2^-e_v), its B fragment of k16 step sp from Sᵀ's m-tile sp by movmatrix
// (k = 2c + i is key int8_mma_key(2sp, 2c + i), k = 2c + 8 + i key int8_mma_key(2sp + 1, 2c + i),
// the keys V's loads give: v_off as tile_pv_fold's). vs_addr: the tile's scales by int8_swap_vscale_slot.
template <int kVWords = 4>
CUTE_DEVICE void tile_pv_swap(float (&o)[8][4], float const (&s_acc)[4][4], uint32_t v_tile, uint32_t vs_addr,
                              const int (&v_off)[2], int g, int e_v) {
  const float fv = exp2_int(-e_v);
  const float4 sa = lds128f(vs_addr + 32 * g), sb = lds128f(vs_addr + 32 * g + 16);
  const float sv[8] = {sa.x * fv, sa.y * fv, sa.z * fv, sa.w * fv, sb.x * fv, sb.y * fv, sb.z * fv, sb.w * fv};
  uint32_t pb[4][2];
  CUTE_UNROLL
  for (int sp = 0; sp < 4; ++sp) {  // registers 0, 1: key int8_mma_key(2sp, g); 2, 3: (2sp + 1, g)
    pb[sp][0] = movmatrix_trans(pack_pair<cutlass::half_t>(s_acc[sp][0] * sv[2 * sp], s_acc[sp][1] * sv[2 * sp]));
    pb[sp][1] =
        movmatrix_trans(pack_pair<cutlass::half_t>(s_acc[sp][2] * sv[2 * sp + 1], s_acc[sp][3] * sv[2 * sp + 1]));
  }
#pragma unroll 1
  for (int sp = 0; sp < 4; ++sp) {
    uint32_t b[2];
    pop_front(pb, b);
    CUTE_UNROLL
    for (int w0 = 0; w0 < 4; w0 += kVWords) {
      uint32_t vw[4][kVWords];  // [key 0..3][word w0 + i], raw
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) lds_words<kVWords>(vw[k], v_tile + 1024 * (2 * sp + k / 2) + v_off[k % 2] + 4 * w0);
      CUTE_UNROLL
      for (int mt = 2 * w0; mt < 2 * (w0 + kVWords); ++mt) {  // channels 16g + 2mt (rows g), + 1 (rows g + 8)
        uint32_t lo[2], hi[2];  // keys 0, 1 (k = 2c + i) and 2, 3 (k = 2c + 8 + i)
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int tt = 2 * mt + h, wi = tt / 4 - w0, by = tt % 4;
          const uint32_t sel = uint32_t(by) | (uint32_t(4 + by) << 8);
          lo[h] = hadd2(bias_into_magic(__byte_perm(vw[0][wi], vw[1][wi], sel)), kMinus1152x2);
          hi[h] = hadd2(bias_into_magic(__byte_perm(vw[2][wi], vw[3][wi], sel)), kMinus1152x2);
        }
        mma16816<cutlass::half_t>(o[mt], lo[0], lo[1], hi[0], hi[1], b[0], b[1]);
      }
    }
  }
}

// merge_and_store for Oᵀ: the row sums over the 8 lanes g, then each warp's rows 2c, 2c + 1 into
// merge_area in merge_and_store's layout.
template <class Traits>
CUTE_DEVICE void merge_and_store_swap(typename Traits::Params const& p, float* merge_area, float (&o)[8][4],
                                      float (&m_run)[2], float (&l_run)[2], int len, int warp, int lane) {
  constexpr int kStride = Traits::kMergeStride;
  const int g = lane / 4, c = lane % 4;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 4);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 8);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 16);
  }
  merge_through_shared<Traits>(p, merge_area, len, [&](float* merge_o, float* merge_ml) {
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int row = warp * 16 + int8_swap_row(r, c);
      CUTE_UNROLL
      for (int mt = 0; mt < 8; ++mt)
        CUTE_UNROLL
        for (int e = r; e < 4; e += 2) merge_o[row * kStride + int8_swap_o_channel(mt, e, g)] = o[mt][e];
      if (g == 0) merge_ml[row * 2] = m_run[r], merge_ml[row * 2 + 1] = l_run[r];
    }
  });
}

// The TMA views of the CTA's KV head: get<0> the K pair, get<1> the V pair, each (source tiles of
// the cache indexed (_, tile), destination slots of the ring at k_smem / v_smem indexed (_, slot)).
template <class Traits>
CUTE_DEVICE auto tma_views(typename Traits::Params const& p, DecodeTile const& t, int8_t* k_smem, int8_t* v_smem) {
  using namespace cute;
  constexpr int kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim;
  Tensor sK = make_tensor(make_smem_ptr(k_smem), typename Traits::SmemLayoutRaw{});  // (BLK_N, D, SLOT)
  Tensor sV = make_tensor(make_smem_ptr(v_smem), typename Traits::SmemLayoutRaw{});  // (BLK_N, D, SLOT)
  const int tma_len = max(p.max_len, 1);
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor gK = local_tile(mK(_, _, t.h_kv, t.b), Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  Tensor gV = local_tile(mV(_, _, t.h_kv, t.b), Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));  // (BLK_N, D, n)
  return make_tuple(tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK)),
                    tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV)));
}

// The thread's row offsets in a tile (row 8j + σ sits at 1024 j + the offset of row σ: the
// swizzle acts within each 1 KB of 8 rows, so j becomes an immediate): K rows σ = perm(g),
// chunks c and c + 4; V rows σ = perm(2c), perm(2c + 1), chunk g.
struct Int8MmaOffsets {
  int k[2], v[2];
  CUTE_DEVICE Int8MmaOffsets(int g, int c)
      : k{int8_mma_sw128(int8_mma_key_perm(g), c), int8_mma_sw128(int8_mma_key_perm(g), c + 4)},
        v{int8_mma_sw128(int8_mma_key_perm(2 * c), g), int8_mma_sw128(int8_mma_key_perm(2 * c + 1), g)} {}
};

#ifdef HOPATTN_DECODE_STAMPS
// Measurement builds: lane 0's stamp slots of consumer warp `warp`'s k-th tile (nullptr past the
// recorded tiles) and the issue slot of the CTA's i-th tile.
template <class Params>
CUTE_DEVICE uint64_t* consumer_stamps(Params const& p, int warp, int k, int warps, int lane) {
  if (lane != 0 || p.stamps == nullptr || k >= p.stamp_tiles) return nullptr;
  return p.stamps + stamp_cta() * int8_mma_stamps_per_cta(warps, p.stamp_tiles) + 1 + 3 * (int64_t(warp) * p.stamp_tiles + k);
}
template <class Params>
CUTE_DEVICE void producer_stamp(Params const& p, int i, int warps) {
  if (p.stamps == nullptr || i >= warps * p.stamp_tiles) return;
  uint64_t* st = p.stamps + stamp_cta() * int8_mma_stamps_per_cta(warps, p.stamp_tiles);
  st[1 + 3 * int64_t(warps) * p.stamp_tiles + i] = clock64();
  if (i == 0) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    st[0] = smid;
  }
}
#endif

}  // namespace int8_mma_detail

// No producer. Each warp loads its own tiles (TMA and the bulk copy by lane 0, the V scales by
// cp.async from all lanes) into a private ring of kSlotsPerWarp half-tile slots, holding K and V
// tiles alternately: K_0, V_0, K_1 first (three slots); K_k's slot is refilled with V_{k+1} as
// soon as S_k is computed, V_k's with K_{k+2} after P·V. A slot is reused only by the warp that
// read it, so no barrier orders warps against each other and none waits for another's release
// (an in-order producer warp, retired, kept released stages empty ~7,100 cycles per tile:
// docs/decode.md, Tried and retired).
// Roles (kv8_mma_8w_1cta): warps 0-7, 256 threads, 255 registers allowed, one CTA per SM, 213 KB
// of shared memory (24 slots × (8 KB + 512 B of scales), Q's fragments, 24 barriers).
// Per warp and tile: wait full[K slot] -> S -> issue V_{k+1} -> softmax -> wait full[V slot] ->
// P·V -> issue K_{k+2}. The warps' own instructions bound a tile, not the loads (docs/decode.md).
// O is kept as O · 2^-e_v with e_v the largest V exponent so far (tile_pv_fold, tile_pv_swap).
template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kCtasPerSm)
    decode_int8_mma_warp_rings_kernel(CUTE_GRID_CONSTANT typename Traits::Params const p) {
  using namespace cute;
  using namespace int8_mma_detail;
  using Element = typename Traits::Element;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockN = Traits::kBlockN, kHeadDim = Traits::kHeadDim, kSlots = Traits::kStages;
  constexpr int kNTiles = Traits::kNTiles, kWarps = Traits::kWarps, kTileBytes = Traits::kTileBytes;
  constexpr int kRing = Traits::kSlotsPerWarp;
  static_assert(kBlockN == 64, "two keys of V's scales per lane");
  // Three CTAs per SM (168 registers): K's channels an eighth at a time, V's words two at a time
  // (the swap rows' Sᵀ and Oᵀ take half the registers: they keep the whole passes).
  constexpr bool kSwap = Traits::kSwap;
  constexpr int kSteps = Traits::kCtasPerSm == 3 && !kSwap ? 1 : 4;
  constexpr int kVWords = Traits::kCtasPerSm == 3 && !kSwap ? 2 : 4;
  constexpr int kSTiles = kSwap ? 4 : kNTiles, kOTiles = kSwap ? 8 : 16;  // S's and O's fragments

  extern __shared__ char smem_raw[];
  auto& ss = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;

  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, Traits::kTileRows>(p);
  uint4 qv[2][4];  // [row g / g + 8][half 0 lo, half 0 hi, half 1 lo, half 1 hi]
  load_q<Traits>(p, t, g, c, qv);
  if (threadIdx.x == 0) {  // 33 arrivals: lane 0's arrive.expect_tx and every lane's cp.async arrival
    for (int s = 0; s < kSlots; ++s) Barrier::init(&ss.full[s], 33);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  t.template read_length<typename Traits::Params, Traits::kTileRows, kBlockN>(p);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  const int n_blocks = t.n_end - t.n_begin;
  const int tiles = n_blocks > warp ? (n_blocks - warp + kWarps - 1) / kWarps : 0;  // this warp's: warp + kWarps·k
  const int items = 2 * tiles;  // K_0, V_0, K_1, V_1, ...: item j in slot j % kRing of the warp's ring

  const auto views = tma_views<Traits>(p, t, ss.raw.data(), ss.raw.data());  // K and V share the slots
  const auto tk = get<0>(views), tv = get<1>(views);
  const float* k_scale = p.k_scale + t.b * p.ks_batch_stride + t.h_kv * p.ks_head_stride;
  const float* v_scale = p.v_scale + t.b * p.vs_batch_stride + t.h_kv * p.vs_head_stride;
  const int vslot0 = kSwap ? int8_swap_vscale_slot(2 * lane) : int8_mma_vscale_slot(2 * lane);
  const int vslot1 = kSwap ? int8_swap_vscale_slot(2 * lane + 1) : int8_mma_vscale_slot(2 * lane + 1);
  const int n_first = t.n_begin + warp, len = t.len, seq_len = t.seq_len;
  const int qb_shift = 31 - __clz(p.quant_block);  // 64 or 128 (checked on the host)
  // Item j into slot kRing·warp + j % kRing. The warp read the slot's previous item before this
  // call (its values are in registers): __syncwarp orders the other lanes' reads and, with the
  // proxy fence, the TMA's writes after them.
  auto issue = [&](int j) {
    const int slot = kRing * warp + j % kRing, n = n_first + kWarps * (j / 2);
    uint64_t* bar = &ss.full[slot];
    float* scales = ss.scale.data() + slot * kHeadDim;
    __syncwarp();
#ifdef HOPATTN_DECODE_STAMPS
    if (lane == 0 && j % 2 == 1) producer_stamp(p, warp + kWarps * (j / 2), kWarps);  // V's issue
#endif
    if (j % 2 == 0) {
      cp_async_mbarrier_arrive_noinc(bar);  // K: no copies of the lanes' own, arrives at once
      if (lane == 0) {
        cutlass::arch::fence_view_async_shared();
        Barrier::arrive_and_expect_tx(bar, kTileBytes + kHeadDim * sizeof(float));
        copy(p.tma_k.with(*bar), get<0>(tk)(_, n), get<1>(tk)(_, slot));
        SM90_BULK_COPY_G2S::copy(k_scale + ((n * kBlockN) >> qb_shift) * p.ks_block_stride, bar, scales,
                                 kHeadDim * sizeof(float));
      }
    } else {
      // Past the length: nothing read (src-size 0), the slot zero-filled; the address stays in range.
      const uint32_t vs = smem_u32(scales);
      const int tok = n * kBlockN + 2 * lane;
      cp_async_4(vs + 4 * vslot0, v_scale + (tok < len ? tok : 0) * p.vs_seq_stride, tok < len ? 4 : 0);
      cp_async_4(vs + 4 * vslot1, v_scale + (tok + 1 < len ? tok + 1 : 0) * p.vs_seq_stride, tok + 1 < len ? 4 : 0);
      cp_async_mbarrier_arrive_noinc(bar);  // arrives when the lane's copies land
      if (lane == 0) {
        cutlass::arch::fence_view_async_shared();
        Barrier::arrive_and_expect_tx(bar, kTileBytes);
        copy(p.tma_v.with(*bar), get<0>(tv)(_, n), get<1>(tv)(_, slot));
      }
    }
  };
  CUTE_NO_UNROLL
  for (int j = 0; j < min(kRing, items); ++j) issue(j);

  const uint32_t qf_base = smem_u32(ss.q_frag.data());
  if (warp == 0) {
    if constexpr (kSwap) publish_q_swap<Traits::kPackedK>(qv, qf_base, lane);
    else publish_q(qv, qf_base, lane);
  }
  cutlass::arch::NamedBarrier::sync(32 * kWarps, uint32_t(DecodeNamedBarrier::kConsumersQ));

  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  const float scale[2] = {scale_log2, scale_log2};
  float o[kOTiles][4];  // O · 2^-e_v, e_v the largest V exponent so far; the swap rows: Oᵀ
  CUTE_UNROLL
  for (int tt = 0; tt < kOTiles; ++tt) o[tt][0] = o[tt][1] = o[tt][2] = o[tt][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  int e_v = -100;
  const int limit0 = t.key_limit(t.row0 + g), limit1 = t.key_limit(t.row0 + g + 8);
  const int limit_swap[2] = {t.key_limit(t.row0 + 2 * c), t.key_limit(t.row0 + 2 * c + 1)};  // swap: rows 2c, 2c + 1
  const int mask_from = t.mask_from;
  // Rows g + 8 exist (more than 8 packed rows in the CTA); warp-uniform.
  const bool hi = t.rows - t.row0 > 8;
  const uint32_t raw_base = smem_u32(ss.raw.data()), scale_base = smem_u32(ss.scale.data());
  const Int8MmaOffsets off(g, c);

  CUTE_NO_UNROLL
  for (int k = 0; k < tiles; ++k) {
    const int n = n_first + kWarps * k, jk = 2 * k, jv = 2 * k + 1;
    const int slot_k = kRing * warp + jk % kRing, slot_v = kRing * warp + jv % kRing;
    Barrier::wait(&ss.full[slot_k], (jk / kRing) & 1);
    float s_acc[kSTiles][4];
    if constexpr (kSwap) {
      tile_scores_swap<Element, kSteps, Traits::kPackedK>(s_acc, raw_base + slot_k * kTileBytes,
                                                          scale_base + 4 * slot_k * kHeadDim, qf_base, off.k, c, lane);
    } else {
      tile_scores<Element, kNTiles, kSteps>(s_acc, raw_base + slot_k * kTileBytes, scale_base + 4 * slot_k * kHeadDim,
                                            qf_base, off.k, c, lane);
    }
    if (jk + kRing < items) issue(jk + kRing);  // V_{k+1} into K_k's slot
    float alpha[2];
    if constexpr (kSwap) online_softmax_swap(s_acc, m_run, l_run, alpha, n, mask_from, limit_swap, scale[0], g);
    else online_softmax<kBlockN>(s_acc, m_run, l_run, alpha, n, mask_from, limit0, limit1, scale, c, hi);
#ifdef HOPATTN_DECODE_STAMPS
    // Measurement builds: the wait for V is stamped (the wait for K took ~100 cycles).
    uint64_t* st = consumer_stamps(p, warp, k, kWarps, lane);
    if (st != nullptr) st[0] = clock64();
#endif
    Barrier::wait(&ss.full[slot_v], (jv / kRing) & 1);
#ifdef HOPATTN_DECODE_STAMPS
    if (st != nullptr) st[1] = clock64();
#endif
    const uint32_t v_tile = raw_base + slot_v * kTileBytes, vs_addr = scale_base + 4 * slot_v * kHeadDim;
    // The exponent only grows (P' = p · s_v · 2^-e_v stays below 2^15 / 127 as long as e_v is at
    // least the tile's), so O's rescale is mostly skipped.
    const int e_new = max(e_v, tile_v_exponent(vs_addr, c, e_v));
    const float f = exp2_int(e_v - e_new);  // O' from the previous exponent to this tile's
    e_v = e_new;
    if constexpr (kSwap) {
      rescale_o_swap(o, alpha[0] * f, alpha[1] * f);
      tile_pv_swap<kVWords>(o, s_acc, v_tile, vs_addr, off.v, g, e_v);
    } else {
      rescale_o_lazy(o, alpha[0] * f, alpha[1] * f, hi);
      tile_pv_fold<kNTiles, kVWords>(o, s_acc, v_tile, vs_addr, off.v, c, e_v);
    }
    if (jv + kRing < items) issue(jv + kRing);  // K_{k+2} into V_k's slot
#ifdef HOPATTN_DECODE_STAMPS
    if (st != nullptr) st[2] = clock64();
#endif
  }
  {
    const float f = exp2_int(e_v);
    CUTE_UNROLL
    for (int tt = 0; tt < kOTiles; ++tt) o[tt][0] *= f, o[tt][1] *= f, o[tt][2] *= f, o[tt][3] *= f;
  }
  // Every issued item was waited for, so the ring is quiet once all warps pass merge's barrier.
  float* merge_area = reinterpret_cast<float*>(ss.raw.data());
  // The merge re-derives the tile from the sequence's length (not len: an int8 call's tail narrows it).
  if constexpr (kSwap) merge_and_store_swap<Traits>(p, merge_area, o, m_run, l_run, seq_len, warp, lane);
  else merge_and_store<Traits>(p, merge_area, o, m_run, l_run, seq_len, warp, lane);
}

}  // namespace hopattn::attention
