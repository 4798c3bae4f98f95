// Epilogue through shared memory and TMA store: D = alpha·acc + beta·C, converted to the output
// type, written into a swizzled shared-memory chunk, stored by one thread with a TMA bulk copy.
//
// Each consumer warpgroup stores its own rows of the tile in chunks of 64 x 32 fp32, 64 x 64
// 16-bit row-major (both 64 rows x 128 bytes) or 64 x 32 16-bit column-major elements, in a ring of
// B buffers per warpgroup (kFp32Buffers x 8 KiB: B = kFp32Buffers fp32 or row-major 16-bit
// chunks, twice as many column-major 16-bit ones), so the two warpgroups never wait for each
// other. Per chunk j (buffer b = j mod B):
//
//   all 128 threads:  read C (plain predicated loads, beta != 0 only), write the chunk into
//                     buffer b, fence.proxy.async (generic-proxy writes visible to TMA)
//   leader (thread 0 of the warpgroup): tma_store_wait<B - 2> — at most B - 2 stores still
//                     reading: chunk j - B + 1's, the last user of buffer (j + 1) mod B, is done
//   all 128 threads:  named barrier kEpilogueWg1/2 (128 threads): buffer b is complete, the next
//                     one free
//   leader:           TMA store of buffer b, commit group
//
// So B - 1 chunks' stores overlap the next chunk's conversion (a store's read of shared memory
// takes long against a chunk's conversion: with B = 2 the conversion waited on every store), and
// the tile's last stores overlap the next tile's mainloop. The kernel waits for every
// store to finish reading shared memory before it exits (store_tail).
//
// Residues: the TMA unit clips the box at D's outer edge exactly, but at the inner (contiguous)
// edge only to the next 16-byte boundary of the row: it writes the elements from the extent up
// to that boundary (seen on the H200: m = 129 column-major bf16 wrote rows 129..135 of D's
// padding; triton-lang/triton#11583 reports the same). So a chunk that reaches the inner edge
// of a D whose contiguous extent is not a multiple of 16 bytes is stored directly from registers
// with predicated stores (a uniform branch per warpgroup; at most one chunk column per row of
// tiles); every other chunk goes through TMA. A chunk entirely past the edge is skipped. C is
// read with plain loads (any strides), only when beta != 0, so a NaN-filled C cannot leak into D.
//
// D's layout is chosen at run time: row- or column-major, 16-bit (bf16/fp16 bits, stored as
// uint16_t) or fp32, one TMA descriptor each; the chunk's shared-memory layout is the 128-byte
// swizzle atom along D's contiguous dimension (fp32 row-major: 32 x 4 B; 16-bit row-major:
// 64 x 2 B; column-major: 64 x 2 or 4 B).
#pragma once

#include <cstdint>

#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/bfloat16.h>
#include <cutlass/half.h>

#include "gemm/device/gemm_problem.hpp"
#include "gemm/kernel/sm90_gemm_named_barriers.hpp"

namespace hopattn::gemm {

// (kRows, kCols, kBuffers): chunks in shared memory, swizzled along D's contiguous dimension.
template <class T, bool kRowMajor, int kRows, int kCols, int kBuffers>
CUTE_HOST_DEVICE constexpr auto epilogue_chunk_layout() {
  using namespace cute;
  constexpr int contiguous_bytes = (kRowMajor ? kCols : kRows) * int(sizeof(T));
  static_assert(contiguous_bytes % 64 == 0, "the chunk's contiguous run must fill a 64- or 128-byte swizzle row");
  const auto shape = make_shape(Int<kRows>{}, Int<kCols>{}, Int<kBuffers>{});
  if constexpr (kRowMajor) {
    if constexpr (contiguous_bytes % 128 == 0) return tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, shape);
    else return tile_to_shape(GMMA::Layout_K_SW64_Atom<T>{}, shape);
  } else {
    // Columns first: a 32-row fp32 atom repeats along N before M, so one TMA box covers 32x32
    // (2 stores per chunk) instead of 32x8 (8 stores per chunk).
    using ColumnsFirst = Step<_2, _1, _3>;
    if constexpr (contiguous_bytes % 128 == 0) return tile_to_shape(GMMA::Layout_MN_SW128_Atom<T>{}, shape, ColumnsFirst{});
    else return tile_to_shape(GMMA::Layout_MN_SW64_Atom<T>{}, shape, ColumnsFirst{});
  }
}

// kWarpgroups consumer warpgroups split the (kBlockM, kBlockN) tile along M; each stores
// (kBlockM / kWarpgroups) x kCols chunks.
template <class TiledMma, int kBlockM, int kBlockN, int kWarpgroups, int kCols, int kFp32Buffers = 2>
struct Sm90GemmEpilogueTma {
  static constexpr int kRows = kBlockM / kWarpgroups;  // rows of a chunk: one warpgroup's rows
  // Columns of a chunk of output type T: kCols for fp32, twice that for 16-bit outputs, so that a
  // chunk row is 128 bytes either way (the widest swizzle) and a 16-bit tile takes half as many
  // fences, barriers and TMA stores.
  template <class T, bool kRowMajor>
  static constexpr int kColsOf = sizeof(T) == 2 && kRowMajor ? 2 * kCols : kCols;
  template <class T, bool kRowMajor>
  static constexpr int kChunksOf = kBlockN / kColsOf<T, kRowMajor>;  // chunks per tile and warpgroup
  // Per warpgroup, room for kFp32Buffers chunks (kRows x kCols fp32 = kRows x 2·kCols 16-bit each).
  static constexpr int kWarpgroupBytes = kFp32Buffers * kRows * kCols * 4;
  template <class T, bool kRowMajor>
  static constexpr int kBuffers = kWarpgroupBytes / (kRows * kColsOf<T, kRowMajor> * int(sizeof(T)));
  static_assert(kBlockN % (2 * kCols) == 0 && kCols % 8 == 0, "chunks of whole n8 accumulator blocks");

  template <class T, bool kRowMajor>
  using ChunkLayout = decltype(epilogue_chunk_layout<T, kRowMajor, kRows, kColsOf<T, kRowMajor>, kBuffers<T, kRowMajor>>());  // (ROWS, COLS, BUF)

  struct TensorStorage {
    alignas(1024) uint8_t chunks[kWarpgroups][kWarpgroupBytes];  // 1024: the SW128 period
  };

  template <class T, bool kRowMajor>
  static auto make_tma_d(T* ptr, int m, int n, int64_t ld) {
    using namespace cute;
    auto stride = [&] {
      if constexpr (kRowMajor) return make_stride(ld, Int<1>{});
      else return make_stride(Int<1>{}, ld);
    }();
    cute::Tensor g = make_tensor(make_gmem_ptr(ptr), make_layout(make_shape(m, n), stride));  // (M, N)
    return make_tma_atom(SM90_TMA_STORE{}, g, take<0, 2>(ChunkLayout<T, kRowMajor>{}),
                         make_shape(Int<kRows>{}, Int<kColsOf<T, kRowMajor>>{}));
  }
  using TmaRow16 = decltype(make_tma_d<uint16_t, true>(nullptr, 1, 1, 8));
  using TmaCol16 = decltype(make_tma_d<uint16_t, false>(nullptr, 1, 1, 8));
  using TmaRow32 = decltype(make_tma_d<float, true>(nullptr, 1, 1, 8));
  using TmaCol32 = decltype(make_tma_d<float, false>(nullptr, 1, 1, 8));

  // Only the descriptor of D's layout and type is built; the others stay zero and unused.
  struct Params {
    TmaRow16 tma_row16;
    TmaCol16 tma_col16;
    TmaRow32 tma_row32;
    TmaCol32 tma_col32;
    const void* c = nullptr;
    int64_t c_stride_m = 0, c_stride_n = 0;
    void* d = nullptr;  // for the direct stores of chunks at a ragged inner edge
    int64_t d_ld = 0;
    bool ragged_inner = false;  // D's contiguous extent is not a multiple of 16 bytes
    float alpha = 1.0f, beta = 0.0f;
    int m = 0, n = 0;
    hopattn_dtype_t out_dtype = HOPATTN_DTYPE_BF16;
    bool row_major = true;
  };

  // p must pass can_implement's TMA-store rule (16-byte aligned pointer and leading dimension).
  static Params to_params(const GemmProblem& p) {
    Params e{};
    const bool fp32 = p.out_dtype == HOPATTN_DTYPE_FP32;
    const OutputLayout l = output_layout(p, fp32 ? 4 : 2);
    e.row_major = l.row_major;
    if (fp32 && l.row_major) e.tma_row32 = make_tma_d<float, true>(static_cast<float*>(p.d), p.m, p.n, l.ld);
    if (fp32 && !l.row_major) e.tma_col32 = make_tma_d<float, false>(static_cast<float*>(p.d), p.m, p.n, l.ld);
    if (!fp32 && l.row_major) e.tma_row16 = make_tma_d<uint16_t, true>(static_cast<uint16_t*>(p.d), p.m, p.n, l.ld);
    if (!fp32 && !l.row_major) e.tma_col16 = make_tma_d<uint16_t, false>(static_cast<uint16_t*>(p.d), p.m, p.n, l.ld);
    e.c = p.c, e.c_stride_m = p.c_stride_m, e.c_stride_n = p.c_stride_n;
    e.d = p.d, e.d_ld = l.ld;
    e.ragged_inner = (int64_t(l.row_major ? p.n : p.m) * (fp32 ? 4 : 2)) % 16 != 0;
    e.alpha = p.alpha, e.beta = p.beta;
    e.m = p.m, e.n = p.n;
    e.out_dtype = p.out_dtype;
    return e;
  }

  CUTE_DEVICE static void prefetch_descriptor(const Params& p) {
    const bool fp32 = p.out_dtype == HOPATTN_DTYPE_FP32;
    if (fp32) {
      cute::prefetch_tma_descriptor(p.row_major ? p.tma_row32.get_tma_descriptor() : p.tma_col32.get_tma_descriptor());
    } else {
      cute::prefetch_tma_descriptor(p.row_major ? p.tma_row16.get_tma_descriptor() : p.tma_col16.get_tma_descriptor());
    }
  }

  // Stores tile (m_blk, n_blk). acc: the (MMA, MMA_M, MMA_N) accumulators of `thread` (its index
  // among the consumer threads, 0 .. 128·kWarpgroups - 1); chunk: this warpgroup's running chunk
  // count, which picks the buffer and continues across tiles.
  template <class Accum>
  CUTE_DEVICE static void store(const Params& p, TensorStorage& s, const Accum& acc, int thread, int m_blk,
                                int n_blk, int& chunk) {
    switch (p.out_dtype) {
      case HOPATTN_DTYPE_FP32:
        if (p.row_major) store_as<float, float, true>(p, p.tma_row32, s, acc, thread, m_blk, n_blk, chunk);
        else store_as<float, float, false>(p, p.tma_col32, s, acc, thread, m_blk, n_blk, chunk);
        break;
      case HOPATTN_DTYPE_FP16:
        if (p.row_major) store_as<cutlass::half_t, uint16_t, true>(p, p.tma_row16, s, acc, thread, m_blk, n_blk, chunk);
        else store_as<cutlass::half_t, uint16_t, false>(p, p.tma_col16, s, acc, thread, m_blk, n_blk, chunk);
        break;
      default:
        if (p.row_major) store_as<cutlass::bfloat16_t, uint16_t, true>(p, p.tma_row16, s, acc, thread, m_blk, n_blk, chunk);
        else store_as<cutlass::bfloat16_t, uint16_t, false>(p, p.tma_col16, s, acc, thread, m_blk, n_blk, chunk);
        break;
    }
  }

  // Called once by every consumer thread after its last tile: a CTA must not exit while a TMA
  // store still reads its shared memory.
  CUTE_DEVICE static void store_tail(int thread) {
    if (thread % 128 == 0) cute::tma_store_wait<0>();
  }

 private:
  // Explicit shared-memory stores at a shared-window address: through a generic pointer the
  // compiler emitted generic ST.E (r11 ncu: one 16-bit generic store per element).
  template <class Out, class Storage>
  CUTE_DEVICE static void store_shared(uint32_t addr, float v) {
    if constexpr (sizeof(Storage) == 4) {
      asm volatile("st.shared.b32 [%0], %1;" : : "r"(addr), "r"(__float_as_uint(v)));
    } else {
      asm volatile("st.shared.b16 [%0], %1;" : : "r"(addr), "h"(to_storage<Out, Storage>(v)));
    }
  }
  template <class Out, class Storage>
  CUTE_DEVICE static void store_pair_shared(uint32_t addr, float v0, float v1) {
    if constexpr (sizeof(Storage) == 4) {
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};" : : "r"(addr), "f"(v0), "f"(v1));
    } else {
      const uint32_t packed = uint32_t(to_storage<Out, Storage>(v0)) | (uint32_t(to_storage<Out, Storage>(v1)) << 16);
      asm volatile("st.shared.b32 [%0], %1;" : : "r"(addr), "r"(packed));
    }
  }

  template <class Out, class Storage>
  CUTE_DEVICE static Storage to_storage(float v) {
    if constexpr (sizeof(Storage) == sizeof(float)) {
      return v;
    } else {
      return Out(v).raw();  // bf16 / fp16 bits
    }
  }

  template <class Out, class Storage, bool kRowMajor, class Tma, class Accum>
  CUTE_DEVICE static void store_as(const Params& p, const Tma& tma, TensorStorage& s, const Accum& acc, int thread,
                                   int m_blk, int n_blk, int& chunk) {
    using namespace cute;
    using AccLayout = typename Accum::layout_type;
    constexpr int kChunkCols = kColsOf<Storage, kRowMajor>, kTileChunks = kChunksOf<Storage, kRowMajor>;
    static_assert(rank_v<AccLayout> == 3 && size<1>(AccLayout{}) == 1 && size<2>(AccLayout{}) == 1 &&
                      size<0>(AccLayout{}) == kRows * kBlockN / 128,
                  "one m64nN atom per warpgroup: its registers run over n8 blocks in order, (2 cols, 2 rows, N/8)");
    constexpr int kRegsPerChunk = size(AccLayout{}) / kTileChunks;  // 4 per n8 block
    const int warpgroup = thread / 128;
    const bool leader = thread % 128 == 0;
    const auto barrier = warpgroup == 0 ? GemmNamedBarrier::kEpilogueWg1 : GemmNamedBarrier::kEpilogueWg2;

    cute::Tensor cD = make_identity_tensor(make_shape(Int<kBlockM>{}, Int<kBlockN>{}));  // (BLK_M, BLK_N) -> (m, n)
    cute::Tensor tCcD = TiledMma{}.get_slice(thread).partition_C(cD);                     // (MMA, MMA_M, MMA_N)
    cute::Tensor mD = tma.get_tma_tensor(make_shape(p.m, p.n));                           // (M, N) TMA coordinates
    cute::Tensor gD = local_tile(mD, make_shape(Int<kRows>{}, Int<kChunkCols>{}), make_coord(_, _));  // (ROWS, COLS, m, n)
    Storage* base = reinterpret_cast<Storage*>(s.chunks[warpgroup]);
    cute::Tensor sD = make_tensor(make_smem_ptr(base), ChunkLayout<Storage, kRowMajor>{});  // (ROWS, COLS, BUF)
    auto part = tma_partition(tma, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sD), group_modes<0, 2>(gD));
    cute::Tensor tDgD = get<0>(part);  // (TMA, m, n)
    cute::Tensor tDsD = get<1>(part);  // (TMA, BUF)

    // Parameters in registers: the fences and barriers below clobber memory, which would make
    // every element reload them from the constant bank.
    const Out* c = static_cast<const Out*>(p.c);
    const float alpha = p.alpha, beta = p.beta;
    const int m_total = p.m, n_total = p.n;
    const bool read_c = beta != 0.0f;
    const int m_tile = m_blk * kBlockM, n_tile = n_blk * kBlockN;
    const int m_chunk = m_blk * kWarpgroups + warpgroup;  // this warpgroup's row of chunks
    const int row0 = warpgroup * kRows;                    // its first row in the tile
    // Shared-memory addresses of this thread's registers of chunk 0 in buffer 0, computed once per
    // tile (r17: the swizzled address arithmetic per element made the epilogue cost ~6 us per tile).
    // Chunk j's register j·kRegsPerChunk + r sits at register r's (row, column) within its chunk,
    // and a buffer is a whole number of 1024-byte swizzle periods, so chunk j in buffer b is at
    // addr[r] + b·kBufferBytes. Row-major pairs share one address.
    constexpr int kBuf = kBuffers<Storage, kRowMajor>;
    constexpr int kBufferBytes = kRows * kChunkCols * int(sizeof(Storage));
    static_assert(kBufferBytes % 1024 == 0, "a buffer must not change the swizzle's XOR bits");
    // Row-major: one address per n8 block (registers 4b .. 4b + 3: rows r and r + 8, columns
    // n, n + 1); a chunk row is 128 bytes, so row r + 8 is one whole swizzle period (1024 bytes)
    // further on. Column-major: one address per register.
    static_assert(!kRowMajor || kChunkCols * int(sizeof(Storage)) == 128, "row-major chunk rows of 128 bytes");
    constexpr int kAddrs = kRowMajor ? kRegsPerChunk / 4 : kRegsPerChunk;
    uint32_t addr[kAddrs];
    CUTE_UNROLL
    for (int a = 0; a < kAddrs; ++a) {
      const int r = kRowMajor ? 4 * a : a;
      addr[a] = cute::cast_smem_ptr_to_uint(&sD(int(get<0>(tCcD(r))) - row0, int(get<1>(tCcD(r))), 0));
    }
    CUTE_UNROLL
    for (int j = 0; j < kTileChunks; ++j) {
      if (m_chunk * kRows >= m_total || (n_blk * kTileChunks + j) * kChunkCols >= n_total) continue;  // wholly past the edge
      const bool direct = p.ragged_inner && (kRowMajor ? (n_blk * kTileChunks + j + 1) * kChunkCols > n_total
                                                       : (m_chunk + 1) * kRows > m_total);
      if (direct) {  // the inner edge of a ragged D: predicated stores, no TMA (see the top)
        Storage* d = static_cast<Storage*>(p.d);
        CUTE_UNROLL
        for (int r = 0; r < kRegsPerChunk; ++r) {
          const int i = j * kRegsPerChunk + r;
          const int gm = m_tile + int(get<0>(tCcD(i))), gn = n_tile + int(get<1>(tCcD(i)));
          if (gm < m_total && gn < n_total) {
            float v = alpha * acc(i);
            if (read_c) v += beta * float(c[gm * p.c_stride_m + gn * p.c_stride_n]);
            d[kRowMajor ? gm * p.d_ld + gn : gm + gn * p.d_ld] = to_storage<Out, Storage>(v);
          }
        }
        continue;
      }
      const int buf = int(unsigned(chunk) % unsigned(kBuf));
      const uint32_t buf_offset = uint32_t(buf * kBufferBytes);
      auto write_chunk = [&](auto read_c_tag) {
        constexpr bool kReadC = decltype(read_c_tag)::value;
        if constexpr (kRowMajor) {
          // Registers i, i + 1 (i even) hold columns n, n + 1 of one row, and the swizzle moves
          // 16-byte units only, so the pair stays adjacent in the chunk: one 32-bit (16-bit
          // output) or 64-bit (fp32) shared store per pair.
          CUTE_UNROLL
          for (int r = 0; r < kRegsPerChunk; r += 2) {
            const int i = j * kRegsPerChunk + r;
            float v0 = alpha * acc(i), v1 = alpha * acc(i + 1);
            if constexpr (kReadC) {
              const int gm = m_tile + int(get<0>(tCcD(i))), gn = n_tile + int(get<1>(tCcD(i)));
              if (gm < m_total && gn < n_total) v0 += beta * float(c[gm * p.c_stride_m + gn * p.c_stride_n]);
              if (gm < m_total && gn + 1 < n_total) v1 += beta * float(c[gm * p.c_stride_m + (gn + 1) * p.c_stride_n]);
            }
            store_pair_shared<Out, Storage>(addr[r / 4] + uint32_t((r / 2) % 2 * 1024) + buf_offset, v0, v1);
          }
        } else {
          CUTE_UNROLL
          for (int r = 0; r < kRegsPerChunk; ++r) {
            const int i = j * kRegsPerChunk + r;
            float v = alpha * acc(i);
            if constexpr (kReadC) {
              const int gm = m_tile + int(get<0>(tCcD(i))), gn = n_tile + int(get<1>(tCcD(i)));
              if (gm < m_total && gn < n_total) v += beta * float(c[gm * p.c_stride_m + gn * p.c_stride_n]);
            }
            store_shared<Out, Storage>(addr[r] + buf_offset, v);
          }
        }
      };
      if (read_c) write_chunk(cute::true_type{});
      else write_chunk(cute::false_type{});
      tma_store_fence();  // this thread's shared-memory writes, visible to the TMA unit
      // At most kBuf - 2 stores still reading: the store of chunk - (kBuf - 1), the last one
      // that used the buffer the next chunk writes, is done with it.
      if (leader) tma_store_wait<kBuf - 2>();
      named_barrier_sync(barrier, 128);
      if (leader) {
        copy(tma, tDsD(_, buf), tDgD(_, m_chunk, n_blk * kTileChunks + j));
        tma_store_arrive();
      }
      ++chunk;
    }
  }
};

}  // namespace hopattn::gemm
