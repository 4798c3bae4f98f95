// Balanced split-KV decode (16-bit cache, variant 6): the KV range of each row group is cut into
// chunks of kChunkTiles tiles, and the CTAs of a row group claim chunks one after another, so a
// CTA on a faster SM takes more of them (decode_timeline, 2026-11-30 r38: ~44 of 132 SMs stream
// 20-26 % faster than the rest; with static splits a step waits for the slow ones).
//
// Determinism: every chunk has its own partial (O, LSE) slot in the workspace and the combine
// merges a row's chunks in chunk order, so the result does not depend on which CTA computed
// which chunk, nor on the claiming mode below.
//
// Grid and roles: as decode_kernel (sm90_decode.hpp, variant 1 tiles: one warpgroup, thread 0
// also issues the TMA), `ctas` CTAs per row group (blockIdx.x = m_block · ctas + slot).
// Claiming (thread 0, the producer): a CTA's first chunk is its slot; after that dynamic —
// p.ctas + atomicAdd on the row group's counter in the workspace header — when the header's
// magic says the counters were zeroed for at least this many row groups (the combine zeroes
// them and writes the magic after every step); static — chunk slot + ctas, slot + 2·ctas, ...
// — otherwise (a fresh workspace: correct, not balanced).
// Claims stop at the first chunk past the row group's tiles.
//
// The tile stream of a CTA is the concatenation of its chunks' tiles. The producer keeps the
// K/V ring full across chunk boundaries; for each ring stage it writes the tile's chunk, its
// index in the chunk and the chunk's tile count into shared memory before the stage's TMA (its
// arrive on k_full releases them; the consumers' wait acquires them). After the last chunk it
// writes chunk = -1 into the next stage and arrives on k_full without a transaction: the
// consumers leave the loop there. Per chunk the consumers restart the online softmax at its
// first tile and write the chunk's partial after its last (the same epilogue as a split).
//
// Workspace: [header: magic (u64), zeroed counters (u32)] [counters: one u32 per row group]
// [partial O: chunks × rows × hdim fp32] [partial LSE: chunks × rows fp32]; see
// balanced_workspace_layout (host and device agree on it).
#pragma once

#include "attention/kernel/sm90_decode.hpp"

namespace hopattn::attention {

// kChunkTiles, BalancedHeader, balanced_workspace_layout, balanced_chunks: decode_params.hpp
// (the host plans the workspace with them).

template <class Traits>
struct BalancedParams : Traits::Params {
  BalancedHeader* header;
  uint32_t* counters;  // one per row group: (m_block, group, batch) with m_block fastest
  int ctas;            // CTAs per row group
  int chunks;          // chunk slots in the workspace (the largest row group's chunk count)
  int groups;          // row groups = m_blocks · row groups per batch · batch
};

template <class Traits>
struct BalancedShared {
  typename Traits::SharedStorage base;
  int chunk[Traits::kStages];  // per ring stage: the tile's chunk (-1: no more)
  int tile[Traits::kStages];   // its index in the chunk
  int count[Traits::kStages];  // the chunk's tiles
};

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    decode_balanced_kernel(CUTE_GRID_CONSTANT BalancedParams<Traits> const p) {
  using namespace cute;
  using BlockN = typename Traits::BlockN;
  using HeadDim = typename Traits::HeadDim;
  using BlockM = typename Traits::BlockM;
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kStages = Traits::kStages;
  constexpr int kHeadDim = Traits::kHeadDim;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;

  extern __shared__ char smem_raw[];
  auto& sh = *reinterpret_cast<BalancedShared<Traits>*>(smem_raw);
  auto& ss = sh.base;

  const bool is_tma_thread = threadIdx.x == 0;
  if (is_tma_thread) {
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
  }
  // The row group and this CTA's slot: blockIdx.x = m_block · ctas + slot (DecodeTile reads
  // blockIdx.x / num_splits as the m_block: num_splits is `ctas` in these Params).
  DecodeTile t = DecodeTile::make_rows<typename Traits::Params, kBlockM>(p);
  const int slot = t.split;
  const int len = p.cache_seqlens[t.b];
  QRegisters<Traits> q_regs;
  q_regs.load(p, t, threadIdx.x);
  t.set_length<typename Traits::Params, kBlockM, kBlockN>(p, len);
  if (t.bad && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) record_bad_length(p.error, t.b, t.len);
  const int n_tiles = t.n_total;
  const int my_chunks = balanced_chunks(n_tiles);
  const int group_id = (int(blockIdx.z) * int(gridDim.y) + int(blockIdx.y)) * (int(gridDim.x) / p.ctas) + t.m_block;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Traits::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Traits::SmemLayoutKV{});
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutKV{});
  Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename Traits::SmemLayoutVt{});

  const int tma_len = max(p.max_len, 1);
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(tma_len, kHeadDim, p.heads_kv, p.batch));
  Tensor gK = local_tile(mK(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
  Tensor gV = local_tile(mV(_, _, t.h_kv, t.b), Shape<BlockN, HeadDim>{}, make_coord(_, _0{}));
  auto tma_k_parts = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto tma_v_parts = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
  Tensor tKgK = get<0>(tma_k_parts);
  Tensor tKsK = get<1>(tma_k_parts);
  Tensor tVgV = get<0>(tma_v_parts);
  Tensor tVsV = get<1>(tma_v_parts);

  // The producer's cursor over its chunks (thread 0 only).
  const bool dynamic = p.header->magic == kBalancedMagic && int64_t(p.header->zeroed) >= p.groups;
  // Claims run one chunk ahead: the atomic's result is first read when the chunk after the
  // current one starts, so its round trip (queued behind the SMs' TMA traffic) is off the
  // critical path. (Claiming at the chunk switch cost ~1.7 us per chunk, H200 r44: v6 was
  // 603 us against v1's 497 at 64:8 16 x 32k, 64 chunks per CTA.) A claim past the last chunk
  // is harmless: the counters are reset after every step.
  int claims = 0, cur_chunk = -1, cur_tile = 0, cur_count = 0;
  auto claim = [&]() {
    // The first chunk of every CTA is its slot in both modes (no atomic before the first TMA);
    // the counter hands out the chunks from p.ctas on.
    const int c = claims == 0 ? slot
                  : dynamic   ? p.ctas + int(atomicAdd(&p.counters[group_id], 1u))
                              : slot + claims * p.ctas;
    ++claims;
    return c;
  };
  int next_chunk = 0;  // the claim in flight (raw: compared with my_chunks when used)
  auto advance = [&]() {  // the next tile of the stream into (cur_chunk, cur_tile, cur_count)
    if (cur_chunk >= 0 && cur_tile + 1 < cur_count) {
      ++cur_tile;
      return;
    }
    if (claims > 0 && cur_chunk < 0) return;  // the stream has ended
    if (claims == 0) next_chunk = claim();
    cur_chunk = next_chunk < my_chunks ? next_chunk : -1;
    if (cur_chunk >= 0) next_chunk = claim();
    cur_tile = 0;
    cur_count = cur_chunk < 0 ? 0 : min(kChunkTiles, n_tiles - cur_chunk * kChunkTiles);
  };
  // Fills `stage` with the stream's next tile, or marks the end there (a plain arrive).
  auto load_next = [&](int stage) {
    advance();
    sh.chunk[stage] = cur_chunk, sh.tile[stage] = cur_tile, sh.count[stage] = cur_count;
    if (cur_chunk < 0) {
      Barrier::arrive(&ss.k_full[stage]);
      return;
    }
    const int n = cur_chunk * kChunkTiles + cur_tile;
    Barrier::arrive_and_expect_tx(&ss.k_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_k.with(ss.k_full[stage]), tKgK(_, n), tKsK(_, stage));
    Barrier::arrive_and_expect_tx(&ss.v_full[stage], Traits::kTmaBytesKV);
    copy(p.tma_v.with(ss.v_full[stage]), tVgV(_, n), tVsV(_, stage));
  };
  bool ended = false;  // thread 0: the end mark is written (no stage is loaded after it)
  if (is_tma_thread) {
    CUTE_UNROLL
    for (int s = 0; s < kStages; ++s) Barrier::init(&ss.k_full[s], 1), Barrier::init(&ss.v_full[s], 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if (is_tma_thread)
    for (int i = 0; i < kStages && !ended; ++i) {
      load_next(i);
      ended = cur_chunk < 0;
    }

  q_regs.store(sQ, threadIdx.x);
  cutlass::arch::fence_view_async_shared();
  __syncthreads();

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(threadIdx.x);
  auto thr_pv = mma_pv.get_thread_slice(threadIdx.x);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);
  Tensor tSrK = thr_qk.partition_fragment_B(sK);
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<BlockM, BlockN>{});
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<BlockM, HeadDim>{});
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<BlockM, BlockN>{}));
  Tensor tOcO = thr_pv.partition_C(make_identity_tensor(Shape<BlockM, HeadDim>{}));
  Tensor tOrP = make_tensor_like<Element>(tSrS);
  Tensor tOrP_a = make_tensor(tOrP.data(), acc_to_a_operand_layout(tOrP.layout()));

  constexpr int kRows = decltype(size<0>(acc_rowcol(tSrS)))::value;
  OnlineSoftmax<kRows> softmax(p.softmax_scale);
  CUTE_NO_UNROLL
  for (int i = 0;; ++i) {
    const int stage = i % kStages;
    const uint32_t phase = (i / kStages) & 1;
    Barrier::wait(&ss.k_full[stage], phase);
    const int chunk = sh.chunk[stage], j = sh.tile[stage], count = sh.count[stage];
    if (chunk < 0) break;
    const int n = chunk * kChunkTiles + j;
    if (j == 0) {  // a new chunk: a fresh softmax state and O
      softmax = OnlineSoftmax<kRows>(p.softmax_scale);
      clear(tOrO);
    }
    decode_tile_compute<Traits>(t, ss, n, stage, phase, j == 0, mma_qk, mma_pv, tSrQ, tSrK, tOrV, tSrS, tOrO, tScS,
                                tOrP, tOrP_a, sV, softmax);
    __syncthreads();  // no thread reads this stage (data or metadata) any more
    if (is_tma_thread && !ended) {
      load_next(stage);
      ended = cur_chunk < 0;
    }
    if (j == count - 1) {  // the chunk's last tile: its partial into slot `chunk`
      float lse[kRows];
      softmax.finalize(tOrO, lse);
      DecodeTile tc = t;
      tc.split = chunk, tc.slot = chunk;
      store_decode_output<Traits>(p, tc, tOrO, tOcO, tScS, lse, threadIdx.x, true);
    }
  }
}

// The combine of variant 6: one CTA of kBalancedCombineWarps warps per output row (b, q-head,
// position). Every warp reduces the chunks' LSEs to the row's; warp w sums the weighted O rows of
// chunks w, w + W, ... in order, then warp 0 sums the W warp results in warp order: the same
// sums on every run.
// The row's chunk count comes from its row group's visible keys (as the split kernel computes
// them). Block 0 then zeroes the row-group counters and writes the header for the next step.
constexpr int kBalancedCombineWarps = 8;

template <class Element, int kHeadDim>
struct BalancedCombineParams {
  const float* o_part;
  const float* lse_part;
  const int32_t* cache_seqlens;
  Element* o;
  int64_t o_batch_stride, o_seq_stride, o_head_stride;
  float* lse;
  int64_t lse_batch_stride, lse_head_stride, lse_seq_stride;
  int batch, seqlen_q, heads_q, heads_kv, max_len, chunks;
  int group, rows;  // as the split kernel's: rows per position when packed, and per row group
  int block_m, block_n;
  bool causal;
  BalancedHeader* header;
  uint32_t* counters;
  int groups;
};

template <class Element, int kHeadDim>
__global__ void __launch_bounds__(32 * kBalancedCombineWarps)
    decode_balanced_combine_kernel(const BalancedCombineParams<Element, kHeadDim> p) {
  constexpr int kPer = kHeadDim / 32;
  constexpr int kW = kBalancedCombineWarps;
  const int64_t rows_total = int64_t(p.batch) * p.heads_q * p.seqlen_q;
  const int64_t row = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (blockIdx.x == 0) {  // every split CTA is done: reset the counters for the next step
    for (int g = threadIdx.x; g < p.groups; g += blockDim.x) p.counters[g] = 0;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      p.header->zeroed = uint32_t(p.groups);
      p.header->magic = kBalancedMagic;
    }
  }
  const int s = int(row % p.seqlen_q);
  const int h = int((row / p.seqlen_q) % p.heads_q);
  const int b = int(row / (int64_t(p.seqlen_q) * p.heads_q));
  const int len = p.cache_seqlens[b];
  const bool bad = bad_cache_length(len, p.max_len, p.seqlen_q, p.causal);
  // The row group's visible keys (DecodeTile::set_length's formula for this row's m_block).
  const int r = p.group > 1 ? s * p.group + h % p.group : s;  // the row within its row group
  const int row0 = (r / p.block_m) * p.block_m;
  const int row_last = min(p.rows, row0 + p.block_m) - 1;
  const int pos_last = p.group > 1 ? row_last / p.group : row_last;
  const int keys = bad ? 0 : (p.causal ? min(len, len - p.seqlen_q + pos_last + 1) : len);
  const int n_chunks = min(balanced_chunks((keys + p.block_n - 1) / p.block_n), p.chunks);

  // Every warp reduces the row's chunk LSEs itself (lane i: chunks i, i + 32, ...; the same
  // sums in every warp, in a fixed order): the row's LSE, then chunk c's weight
  // exp(LSE_c − LSE) needs no further communication. Warp w then adds up the weighted partial
  // O rows of chunks w, w + kW, ..., whose loads do not depend on one another (4 in flight per
  // lane); warp 0 adds the kW warp sums in warp order. (The first version merged a warp's chunks
  // one after another, one memory latency each: 16 in a row at 64:8 1 x 64k.)
  const float* lse_row = p.lse_part + row;
  float m = -INFINITY;
  for (int c = lane; c < n_chunks; c += 32) m = fmaxf(m, lse_row[int64_t(c) * rows_total]);
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  float sum = 0.0f;
  if (m != -INFINITY)
    for (int c = lane; c < n_chunks; c += 32) {
      const float lc = lse_row[int64_t(c) * rows_total];
      sum += lc == -INFINITY ? 0.0f : expf(lc - m);
    }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const float lse = m == -INFINITY ? -INFINITY : m + logf(sum);

  constexpr int kUnroll = 4;
  float acc[kPer] = {};
  for (int c0 = warp; c0 < n_chunks; c0 += kW * kUnroll) {
    float w[kUnroll];
    float2 v[kUnroll][kPer / 2];
    CUTE_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + u * kW;
      const float lc = c < n_chunks ? lse_row[int64_t(c) * rows_total] : -INFINITY;
      w[u] = lc == -INFINITY || lse == -INFINITY ? 0.0f : expf(lc - lse);
      const float* src = p.o_part + (int64_t(c) * rows_total + row) * kHeadDim + lane * kPer;
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2)
        v[u][j / 2] = c < n_chunks ? *reinterpret_cast<const float2*>(src + j) : make_float2(0.0f, 0.0f);
    }
    CUTE_UNROLL
    for (int u = 0; u < kUnroll; ++u)
      CUTE_UNROLL
      for (int j = 0; j < kPer; j += 2) {  // a chunk with no visible key (weight 0) may hold anything
        acc[j] += w[u] != 0.0f ? w[u] * v[u][j / 2].x : 0.0f;
        acc[j + 1] += w[u] != 0.0f ? w[u] * v[u][j / 2].y : 0.0f;
      }
  }
  __shared__ float sm_acc[kW][kHeadDim];
  CUTE_UNROLL
  for (int j = 0; j < kPer; ++j) sm_acc[warp][lane * kPer + j] = acc[j];
  __syncthreads();
  if (warp != 0) return;
  float out_acc[kPer] = {};
  CUTE_UNROLL
  for (int w = 0; w < kW; ++w)
    CUTE_UNROLL
    for (int j = 0; j < kPer; ++j) out_acc[j] += sm_acc[w][lane * kPer + j];
  // The partial O rows are normalised per chunk: O = Σ_c exp(LSE_c − LSE) O_c.
  cutlass::Array<Element, kPer> out;
  CUTE_UNROLL
  for (int j = 0; j < kPer; ++j) out[j] = Element(bad ? NAN : out_acc[j]);
  *reinterpret_cast<cutlass::Array<Element, kPer>*>(p.o + b * p.o_batch_stride + s * p.o_seq_stride +
                                                    h * p.o_head_stride + lane * kPer) = out;
  if (p.lse != nullptr && lane == 0)
    p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + s * p.lse_seq_stride] = bad ? NAN : lse;
}

}  // namespace hopattn::attention
