// hopattn_kvcache_append: new K/V rows into a 16-bit or int8 cache (include/hopattn/kvcache.h),
// with optional rotary embedding of the new K rows and of q, and the lengths after the append.
//
// Kernels, in stream order (each reads what the ones before it left):
//   1. quantize_blocks_kernel  int8 only: the blocks the append completes, K per (block, head,
//                              channel) and V per (token, head), reading the tails' old rows
//   2. append_rows_kernel      q rotated at its rows' positions into q_rotated (optional); a 16-bit
//                              cache's new rows, or an int8 cache's rows of the block left partial
//                              into the tails (after 1); seqlens_out unless it is cache_seqlens
//   3. lengths_in_place_kernel seqlens_out when it is cache_seqlens (last: the others read them)
// The quantization is kvcache_quantize.cu's, value for value (the same functions,
// kvcache_int8_rounding.cuh; the GPU test compares the two bit for bit).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "attention/device/decode_dispatch.hpp"
#include "attention/device/kvcache_int8_rounding.cuh"
#include "attention/device/page_table_check.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/kvcache.hpp"

namespace hopattn {
namespace {

// python/hopattn/ops.py packs this struct byte for byte (_APPEND): header, 9 tensors, 2 int32, 6 tensors.
static_assert(sizeof(hopattn_kvcache_append_args_t) == 8 + 15 * sizeof(hopattn_tensor_t) + 8,
              "hopattn_kvcache_append_args_t's layout is mirrored in python/hopattn/ops.py");

constexpr int kTensors = 15;
constexpr const char* kNames[kTensors] = {"k_new",   "v_new",      "k_cache",    "v_cache", "cache_seqlens",
                                          "k_scale", "v_scale",    "k_tail",     "v_tail",  "rotary_cos",
                                          "rotary_sin", "q",       "q_rotated",  "seqlens_out", "page_table"};
constexpr const char* kDims[4] = {"batch", "seqlen", "heads", "hdim"};
constexpr const char* kKScaleDims[4] = {"batch", "blocks", "heads_kv", "hdim"};
constexpr const char* kVScaleDims[3] = {"batch", "seqlen", "heads_kv"};
constexpr const char* kTableDims[2] = {"seqlen_ro", "rotary_dim / 2"};
constexpr const char* kSeqlensDims[1] = {"batch"};

const Tensor* tensors(const KvCacheAppendArgs& a, int i) {
  const Tensor* all[kTensors] = {&a.k_new,   &a.v_new,  &a.k_cache,    &a.v_cache, &a.cache_seqlens,
                                 &a.k_scale, &a.v_scale, &a.k_tail,    &a.v_tail,  &a.rotary_cos,
                                 &a.rotary_sin, &a.q,   &a.q_rotated,  &a.seqlens_out, &a.page_table};
  return all[i];
}

// Strides (batch, seq, head) of a rank-4 tensor, and its data.
struct Rows {
  void* data;
  int64_t b, s, h;
};

struct AppendParams {
  Rows k_new, v_new, k_cache, v_cache, k_tail, v_tail, q, q_rot;
  float* k_scale;
  float* v_scale;
  int64_t ks_st[3], vs_st[3];
  const int32_t* seqlens;
  int32_t* seqlens_out;
  const void *cos, *sin;
  int64_t table_stride;  // elements between table rows
  int table_rows, rotary_half;
  bool table_fp32, interleaved;
  int batch, n_new, heads_kv, hdim, max_len, block, seqlen_q, heads_q;
  bool bf16, int8;
  int32_t* error;
  // A paged cache: k_cache / v_cache rows are pages (Rows::b steps a page), position t of
  // sequence b is row t & page_mask of page page_table[b * pt_stride + (t >> page_shift)]. An int8
  // pool's scales are paged alike (ks_st[0], vs_st[0] step a page); its tails stay per sequence.
  const int32_t* page_table;
  int64_t pt_stride;
  int page_shift, num_pages;
};

// Position t of sequence b: its page (its sequence unpaged) and its row there. Paged: the id is
// not checked here (cache_row checks it; the quantizer's pages passed pages_ok).
__device__ void cache_pos(const AppendParams& p, int b, int t, int64_t* outer, int* row) {
  if (p.page_table == nullptr) {
    *outer = b, *row = t;
    return;
  }
  *outer = p.page_table[b * p.pt_stride + (t >> p.page_shift)];
  *row = t & ((1 << p.page_shift) - 1);
}

// Where position t of sequence b's cache rows start (element offset of channel 0, head 0), or -1
// for a page id outside the pool (recorded). Contiguous caches: b * rows.b + t * rows.s.
__device__ int64_t cache_row(const AppendParams& p, const Rows& rows, int b, int t) {
  int64_t outer;
  int row;
  cache_pos(p, b, t, &outer, &row);
  if (p.page_table != nullptr && (outer < 0 || outer >= p.num_pages)) return -1;
  return outer * rows.b + int64_t(row) * rows.s;
}
// Whether every page the append writes for a sequence is in the pool: positions [len, len +
// n_new), and in an int8 pool from the start of the block len lies in (a completed block is
// written whole, and with pages smaller than the block its first pages hold only older positions).
__device__ bool pages_ok(const AppendParams& p, int b, int len, int* bad_id) {
  if (p.page_table == nullptr || p.n_new == 0) return true;
  const int first = p.int8 ? len / p.block * p.block : len;
  for (int j = first >> p.page_shift; j <= (len + p.n_new - 1) >> p.page_shift; ++j) {
    const int page = p.page_table[b * p.pt_stride + j];
    if (page < 0 || page >= p.num_pages) {
      *bad_id = page;
      return false;
    }
  }
  return true;
}

__device__ float load(const void* base, int64_t i, bool bf16) { return int8_rounding::load_element(base, i, bf16); }
__device__ float round_to(float x, bool bf16) {
  return bf16 ? __bfloat162float(__float2bfloat16_rn(x)) : __half2float(__float2half_rn(x));
}
__device__ void store(void* base, int64_t i, float x, bool bf16) {
  if (bf16) static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(x);
  else static_cast<__half*>(base)[i] = __float2half_rn(x);
}

__device__ bool bad_length(const AppendParams& p, int len) { return len < 0 || int64_t(len) + p.n_new > p.max_len; }

// Channel c of a row at `pos` (whose channel-0 element is at base[off]) after the rotary
// embedding, in fp32; channels past rotary_dim pass through.
__device__ float rotated(const AppendParams& p, const void* base, int64_t off, int c, int pos) {
  const float x = load(base, off + c, p.bf16);
  if (p.cos == nullptr || c >= 2 * p.rotary_half) return x;
  int i, partner;
  float sign;
  if (p.interleaved) {
    i = c / 2, partner = c ^ 1, sign = (c & 1) ? 1.0f : -1.0f;
  } else {
    i = c % p.rotary_half, partner = c < p.rotary_half ? c + p.rotary_half : c - p.rotary_half;
    sign = c < p.rotary_half ? -1.0f : 1.0f;
  }
  const int64_t t = int64_t(pos) * p.table_stride + i;
  const float cs = p.table_fp32 ? static_cast<const float*>(p.cos)[t] : load(p.cos, t, p.bf16);
  const float sn = p.table_fp32 ? static_cast<const float*>(p.sin)[t] : load(p.sin, t, p.bf16);
  return fmaf(x, cs, sign * load(base, off + partner, p.bf16) * sn);
}

// Channel c of K at position t of sequence b (len old rows): from the tail (t < len) or the new
// rows (rotated, rounded to the cache's 16-bit type as a stored row would be).
__device__ float k_at(const AppendParams& p, int b, int h, int t, int len, int c) {
  if (t < len) {
    const int64_t off = b * p.k_tail.b + int64_t(t % p.block) * p.k_tail.s + h * p.k_tail.h;
    return load(p.k_tail.data, off + c, p.bf16);
  }
  const int64_t off = b * p.k_new.b + int64_t(t - len) * p.k_new.s + h * p.k_new.h;
  return round_to(rotated(p, p.k_new.data, off, c, t), p.bf16);
}
__device__ float v_at(const AppendParams& p, int b, int h, int t, int len, int c) {
  if (t < len) return load(p.v_tail.data, b * p.v_tail.b + int64_t(t % p.block) * p.v_tail.s + h * p.v_tail.h + c, p.bf16);
  return load(p.v_new.data, b * p.v_new.b + int64_t(t - len) * p.v_new.s + h * p.v_new.h + c, p.bf16);
}

using int8_rounding::k_scale_of;
using int8_rounding::quantize_value;
using int8_rounding::v_scale_of;

// The blocks sequence b's append completes: [first, end) in block indices.
__device__ void completed_blocks(const AppendParams& p, int len, int* first, int* end) {
  *first = len / p.block;
  *end = int((int64_t(len) + p.n_new) / p.block);
}

// q row element e (of batch * seqlen_q * heads_q * hdim) rotated at its row's position.
__device__ void rotate_q_element(const AppendParams& p, int64_t e) {
  const int c = int(e % p.hdim);
  const int h = int(e / p.hdim % p.heads_q);
  const int i = int(e / (int64_t(p.hdim) * p.heads_q) % p.seqlen_q);
  const int b = int(e / (int64_t(p.hdim) * p.heads_q * p.seqlen_q));
  const int len = p.seqlens[b];
  const int64_t dst = b * p.q_rot.b + int64_t(i) * p.q_rot.s + h * p.q_rot.h + c;
  if (bad_length(p, len)) {
    store(p.q_rot.data, dst, __int_as_float(0x7fc00000), p.bf16);
    return;
  }
  const int pos = len + p.n_new - p.seqlen_q + i;
  const int64_t src = b * p.q.b + int64_t(i) * p.q.s + h * p.q.h;
  store(p.q_rot.data, dst, pos >= 0 ? rotated(p, p.q.data, src, c, pos) : load(p.q.data, src + c, p.bf16), p.bf16);
}

// New-row element e (of batch * seqlen_new * heads_kv * hdim): a 16-bit cache's row, or an int8
// cache's row of the block left partial (into the tails). Records a bad length.
__device__ void store_row_element(const AppendParams& p, int64_t e) {
  const int c = int(e % p.hdim);
  const int h = int(e / p.hdim % p.heads_kv);
  const int i = int(e / (int64_t(p.hdim) * p.heads_kv) % p.n_new);
  const int b = int(e / (int64_t(p.hdim) * p.heads_kv * p.n_new));
  const int len = p.seqlens[b];
  if (bad_length(p, len)) {
    if (i == 0 && h == 0 && c == 0 && atomicCAS(p.error, 0, attention::kDecodeErrorAppend) == 0)
      p.error[1] = b, p.error[2] = len;
    return;
  }
  const int t = len + i;
  if (p.int8 && t < int((int64_t(len) + p.n_new) / p.block) * p.block) return;  // in a completed block
  // An int8 pool: a sequence with a bad page id among its new positions gets nothing written (its
  // tails too: the partial block's rows would overwrite the rows its unchanged length still needs).
  int bad_id = 0;
  if (p.int8 && p.page_table != nullptr && !pages_ok(p, b, len, &bad_id)) {
    if (c == 0 && h == 0 && atomicCAS(p.error, 0, attention::kDecodeErrorPageId) == 0) p.error[1] = b, p.error[2] = bad_id;
    return;
  }
  const float kv = rotated(p, p.k_new.data, b * p.k_new.b + int64_t(i) * p.k_new.s + h * p.k_new.h, c, t);
  const float vv = load(p.v_new.data, b * p.v_new.b + int64_t(i) * p.v_new.s + h * p.v_new.h + c, p.bf16);
  const Rows &k = p.int8 ? p.k_tail : p.k_cache, &v = p.int8 ? p.v_tail : p.v_cache;
  if (p.page_table != nullptr && !p.int8) {  // a row on a bad page is not written (int8: into the tails)
    const int64_t k_off = cache_row(p, k, b, t), v_off = cache_row(p, v, b, t);
    if (k_off < 0) {
      if (c == 0 && h == 0 && atomicCAS(p.error, 0, attention::kDecodeErrorPageId) == 0)
        p.error[1] = b, p.error[2] = p.page_table[b * p.pt_stride + (t >> p.page_shift)];
      return;
    }
    store(k.data, k_off + h * k.h + c, kv, p.bf16);
    store(v.data, v_off + h * v.h + c, vv, p.bf16);
    return;
  }
  const int row = p.int8 ? t % p.block : t;
  store(k.data, b * k.b + int64_t(row) * k.s + h * k.h + c, kv, p.bf16);
  store(v.data, b * v.b + int64_t(row) * v.s + h * v.h + c, vv, p.bf16);
}

// A sequence's new length: unchanged when its length is bad or, paged, a page its new rows go to
// is outside the pool (those rows were not written; the id is recorded, if nothing was before).
__device__ void store_length(const AppendParams& p, int b) {
  const int len = p.seqlens[b];
  int bad_id = 0;
  const bool bad = bad_length(p, len);
  const bool pages_good = bad || pages_ok(p, b, len, &bad_id);  // (not read for a bad length)
  if (!pages_good && atomicCAS(p.error, 0, attention::kDecodeErrorPageId) == 0) p.error[1] = b, p.error[2] = bad_id;
  p.seqlens_out[b] = bad || !pages_good ? len : len + p.n_new;
}

// Everything but the int8 blocks in one launch (one grid-stride loop over q's elements, the new
// rows' elements and, unless they overwrite cache_seqlens, the lengths): a decode step's append
// is a few thousand elements, and each launch costs ~2 us of GPU time in a graph (r151: four
// launches took 6.3-7.2 us).
__global__ void append_rows_kernel(AppendParams p, int64_t q_elements, int64_t row_elements, int lengths) {
  const int64_t total = q_elements + row_elements + lengths;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    if (e < q_elements) rotate_q_element(p, e);
    else if (e < q_elements + row_elements) store_row_element(p, e - q_elements);
    else store_length(p, int(e - q_elements - row_elements));
  }
}

// The lengths written over cache_seqlens: after every kernel that reads them.
__global__ void lengths_in_place_kernel(AppendParams p) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < p.batch; b += gridDim.x * blockDim.x) store_length(p, b);
}

constexpr int kQuantThreads = 256;
constexpr int kQuantChannels = 64;  // K channels staged in shared memory at a time

// int8: one CTA per (batch, block slot, kv-head) quantizes a block the append completes (most
// CTAs find no such block and return). K: the block's rows staged kQuantChannels channels at a
// time in shared memory (coalesced loads), then per channel the amax over the rows and the
// quantization; V: a warp per row.
__global__ void __launch_bounds__(kQuantThreads) quantize_blocks_kernel(AppendParams p, int block_slots) {
  __shared__ float tile[128 * kQuantChannels];  // quant_block <= 128 rows
  __shared__ float partial[kQuantThreads];
  const int h = int(blockIdx.x % p.heads_kv);
  const int slot = int(blockIdx.x / p.heads_kv % block_slots);
  const int b = int(blockIdx.x / (int64_t(p.heads_kv) * block_slots));
  const int len = p.seqlens[b];
  if (bad_length(p, len)) return;
  int first, end;
  completed_blocks(p, len, &first, &end);
  const int blk = first + slot;
  if (blk >= end) return;
  const int t0 = blk * p.block;
  // Where the block goes: rows t0.. of sequence b, or in a pool row t & (page_size - 1) of page
  // page_table[b][t / page_size] for each position t (cache_pos): one page, or block / page_size
  // pages when the pages are smaller than the block, each of which then holds the block's K scale
  // row (kvcache.h). A bad page id among the pages the sequence's append writes: nothing of the
  // sequence is written (all or nothing, as its length), the id recorded. Uniform per CTA, before
  // any __syncthreads.
  if (p.page_table != nullptr) {
    int bad_id = 0;
    if (!pages_ok(p, b, len, &bad_id)) {
      if (threadIdx.x == 0 && atomicCAS(p.error, 0, attention::kDecodeErrorPageId) == 0) p.error[1] = b, p.error[2] = bad_id;
      return;
    }
  }
  const int page_size = p.page_table != nullptr ? 1 << p.page_shift : p.block;
  const int k_scale_pages = page_size < p.block ? p.block / page_size : 1;
  int8_t* kq = static_cast<int8_t*>(p.k_cache.data);
  constexpr int kGroups = kQuantThreads / kQuantChannels;  // row groups per channel
  for (int c0 = 0; c0 < p.hdim; c0 += kQuantChannels) {
    const int width = min(kQuantChannels, p.hdim - c0);
    for (int e = threadIdx.x; e < p.block * width; e += kQuantThreads)
      tile[e] = k_at(p, b, h, t0 + e / width, len, c0 + e % width);
    __syncthreads();
    const int c = threadIdx.x % kQuantChannels, g = threadIdx.x / kQuantChannels;
    float amax = 0.0f;
    if (c < width)
      for (int r = g; r < p.block; r += kGroups) amax = fmaxf(amax, fabsf(tile[r * width + c]));
    partial[threadIdx.x] = amax;
    __syncthreads();
    if (c < width) {
      for (int k = 0; k < kGroups; ++k) amax = fmaxf(amax, partial[k * kQuantChannels + c]);
      const float scale = k_scale_of(amax);
      for (int q = g; q < k_scale_pages; q += kGroups) {  // the block's row of K scales, into each page it spans
        int64_t outer;
        int row;
        cache_pos(p, b, t0 + q * page_size, &outer, &row);
        p.k_scale[outer * p.ks_st[0] + (row / p.block) * p.ks_st[1] + h * p.ks_st[2] + c0 + c] = scale;
      }
      for (int r = g; r < p.block; r += kGroups)
        kq[cache_row(p, p.k_cache, b, t0 + r) + h * p.k_cache.h + c0 + c] = quantize_value(tile[r * width + c], scale);
    }
    __syncthreads();  // the tile is refilled next
  }
  int8_t* vq = static_cast<int8_t*>(p.v_cache.data);
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < p.block; r += kQuantThreads / 32) {
    const int t = t0 + r;
    float amax = 0.0f;
    for (int c = lane; c < p.hdim; c += 32) amax = fmaxf(amax, fabsf(v_at(p, b, h, t, len, c)));
    for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    const float scale = v_scale_of(amax);
    const Rows v_scales{p.v_scale, p.vs_st[0], p.vs_st[1], p.vs_st[2]};  // a scale per (position, head)
    if (lane == 0) p.v_scale[cache_row(p, v_scales, b, t) + h * p.vs_st[2]] = scale;
    const int64_t dst = cache_row(p, p.v_cache, b, t) + h * p.v_cache.h;
    for (int c = lane; c < p.hdim; c += 32) vq[dst + c] = quantize_value(v_at(p, b, h, t, len, c), scale);
  }
}

Rows rows_of(const Tensor& t) { return Rows{t.data, t.stride[0], t.stride[1], t.stride[2]}; }

bool is_16bit(hopattn_dtype_t d) { return d == HOPATTN_DTYPE_BF16 || d == HOPATTN_DTYPE_FP16; }

Status check_shapes(const KvCacheAppendArgs& a) {
  const Tensor &kn = a.k_new, &kc = a.k_cache;
  if (!is_16bit(kn.dtype))
    return Status::unsupported(cat("k_new: dtype ", hopattn_dtype_name(kn.dtype), " is not supported; supported: bf16, fp16"));
  if (a.v_new.dtype != kn.dtype)
    return Status::invalid(cat("v_new: dtype ", hopattn_dtype_name(a.v_new.dtype), " does not match k_new's ",
                               hopattn_dtype_name(kn.dtype)));
  const bool int8 = kc.dtype == HOPATTN_DTYPE_INT8;
  if (kc.dtype != kn.dtype && !int8)
    return Status::invalid(cat("k_cache: dtype ", hopattn_dtype_name(kc.dtype), " is neither k_new's (",
                               hopattn_dtype_name(kn.dtype), ") nor int8"));
  if (a.v_cache.dtype != kc.dtype) return Status::invalid("v_cache: dtype differs from k_cache's");
  for (int d = 0; d < 4; ++d) {
    if (a.v_new.shape[d] != kn.shape[d]) return Status::invalid(cat("v_new: shape differs from k_new's in ", kDims[d]));
    if (a.v_cache.shape[d] != kc.shape[d]) return Status::invalid(cat("v_cache: shape differs from k_cache's in ", kDims[d]));
  }
  const bool paged = is_paged(a.page_table);  // a paged cache's first dimension is its pool's pages
  if (paged && (kn.shape[2] != kc.shape[2] || kn.shape[3] != kc.shape[3]))
    return Status::invalid(cat("k_new: (heads_kv, hdim) = (", kn.shape[2], ", ", kn.shape[3],
                               ") must match the paged k_cache's (", kc.shape[2], ", ", kc.shape[3], ")"));
  if (!paged && (kn.shape[0] != kc.shape[0] || kn.shape[2] != kc.shape[2] || kn.shape[3] != kc.shape[3]))
    return Status::invalid(cat("k_new: (batch, heads_kv, hdim) = (", kn.shape[0], ", ", kn.shape[2], ", ", kn.shape[3],
                               ") must match k_cache's (", kc.shape[0], ", ", kc.shape[2], ", ", kc.shape[3], ")"));
  if (Status s = check_page_table(a.page_table, kc, kn.shape[0]); !s.ok()) return s;
  const int64_t max_len = cache_positions(kc, a.page_table);
  if (kn.shape[1] > max_len)
    return Status::invalid(cat("k_new: seqlen_new = ", kn.shape[1], " is more than max_seqlen_k = ", max_len));
  if (a.cache_seqlens.dtype != HOPATTN_DTYPE_INT32) return Status::invalid("cache_seqlens: dtype must be int32");
  if (a.cache_seqlens.shape[0] != kn.shape[0])
    return Status::invalid(cat("cache_seqlens: has ", a.cache_seqlens.shape[0], " entries, batch is ", kn.shape[0]));
  if (a.cache_seqlens.stride[0] != 1 && a.cache_seqlens.shape[0] > 1)
    return Status::invalid("cache_seqlens: must be contiguous");
  const Tensor* rows4[5] = {&a.k_new, &a.v_new, &a.k_cache, &a.v_cache, &a.q};
  const char* names4[5] = {"k_new", "v_new", "k_cache", "v_cache", "q"};
  for (int i = 0; i < 5; ++i)
    if (rows4[i]->stride[3] != 1 && rows4[i]->shape[3] > 1)
      return Status::invalid(cat(names4[i], ": the last dimension (hdim) must be contiguous"));
  return Status();
}

Status check_int8_parts(const KvCacheAppendArgs& a) {
  const Tensor& kc = a.k_cache;
  const bool int8 = kc.dtype == HOPATTN_DTYPE_INT8;
  const Tensor* parts[4] = {&a.k_scale, &a.v_scale, &a.k_tail, &a.v_tail};
  const char* names[4] = {"k_scale", "v_scale", "k_tail", "v_tail"};
  if (!int8) {
    for (int i = 0; i < 4; ++i)
      if (parts[i]->data != nullptr) return Status::invalid(cat(names[i], ": given, but the cache is not int8"));
    return Status();
  }
  for (int i = 0; i < 4; ++i)
    if (parts[i]->data == nullptr) return Status::invalid(cat(names[i], ": required with an int8 cache"));
  if (a.quant_block != 64 && a.quant_block != 128)
    return Status::invalid(cat("quant_block: ", a.quant_block, " is not 64 or 128"));
  if (Status s = check_geometry(a.k_scale, "k_scale", 4, kKScaleDims); !s.ok()) return s;
  if (Status s = check_geometry(a.v_scale, "v_scale", 3, kVScaleDims); !s.ok()) return s;
  if (Status s = check_geometry(a.k_tail, "k_tail", 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.v_tail, "v_tail", 4, kDims); !s.ok()) return s;
  // A pool (paged): its (num_pages, page_size) take the place of (batch, max_seqlen_k) for the
  // scales, paged by the same ids; the tails stay per sequence (k_new's batch).
  const bool paged = is_paged(a.page_table);
  const char* b_name = paged ? "num_pages" : "batch";
  const char* len_name = paged ? "page_size" : "max_seqlen_k";
  const int64_t b = kc.shape[0], len = kc.shape[1], h = kc.shape[2], d = kc.shape[3], blk = a.quant_block;
  const int64_t batch = a.k_new.shape[0];
  if (a.k_scale.dtype != HOPATTN_DTYPE_FP32 || a.v_scale.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat(a.k_scale.dtype != HOPATTN_DTYPE_FP32 ? "k_scale" : "v_scale", ": dtype must be fp32"));
  // Pages smaller than the block (powers of two: they divide it): one K scale row per page, each
  // page of a block holding the block's.
  const bool small_pages = paged && len < blk;
  if (len % blk != 0 && !small_pages)
    return Status::invalid(cat("k_cache: ", len_name, " = ", len, " is not a multiple of quant_block = ", blk));
  const int64_t k_blocks = small_pages ? 1 : len / blk;
  if (a.k_scale.shape[0] != b || a.k_scale.shape[1] != k_blocks || a.k_scale.shape[2] != h || a.k_scale.shape[3] != d)
    return Status::invalid(cat("k_scale: shape must be (", b_name, ", ", small_pages ? "1" : cat(len_name, " / quant_block"),
                               ", heads_kv, hdim) = (", b, ", ", k_blocks, ", ", h, ", ", d, ")"));
  if (a.v_scale.shape[0] != b || a.v_scale.shape[1] != len || a.v_scale.shape[2] != h)
    return Status::invalid(cat("v_scale: shape must be (", b_name, ", ", len_name, ", heads_kv) = (", b, ", ", len, ", ",
                               h, ")"));
  if (a.k_scale.stride[3] != 1 && d > 1) return Status::invalid("k_scale: the last dimension (hdim) must be contiguous");
  for (int i = 2; i < 4; ++i) {
    const Tensor& t = *parts[i];
    if (t.dtype != a.k_new.dtype) return Status::invalid(cat(names[i], ": dtype must be k_new's"));
    if (t.shape[0] != batch || t.shape[1] != blk || t.shape[2] != h || t.shape[3] != d)
      return Status::invalid(cat(names[i], ": shape must be (batch, quant_block, heads_kv, hdim) = (", batch, ", ", blk,
                                 ", ", h, ", ", d, ")"));
    if (t.stride[3] != 1 && d > 1) return Status::invalid(cat(names[i], ": the last dimension (hdim) must be contiguous"));
  }
  return Status();
}

Status check_rotary_and_q(const KvCacheAppendArgs& a) {
  const bool tables = a.rotary_cos.data != nullptr || a.rotary_sin.data != nullptr;
  const bool q = a.q.data != nullptr || a.q_rotated.data != nullptr;
  if (tables && (a.rotary_cos.data == nullptr || a.rotary_sin.data == nullptr))
    return Status::invalid(cat(a.rotary_cos.data ? "rotary_sin" : "rotary_cos", ": give both rotary tables or neither"));
  if (q && (a.q.data == nullptr || a.q_rotated.data == nullptr))
    return Status::invalid(cat(a.q.data ? "q_rotated" : "q", ": give q and q_rotated both or neither"));
  if (q && !tables) return Status::invalid("q: rotating q needs rotary_cos and rotary_sin");
  if (tables) {
    if (Status s = check_geometry(a.rotary_cos, "rotary_cos", 2, kTableDims); !s.ok()) return s;
    if (Status s = check_geometry(a.rotary_sin, "rotary_sin", 2, kTableDims); !s.ok()) return s;
    for (const Tensor* t : {&a.rotary_cos, &a.rotary_sin}) {
      const char* name = t == &a.rotary_cos ? "rotary_cos" : "rotary_sin";
      if (t->dtype != a.k_new.dtype && t->dtype != HOPATTN_DTYPE_FP32)
        return Status::invalid(cat(name, ": dtype must be k_new's or fp32"));
      if (t->stride[1] != 1 && t->shape[1] > 1) return Status::invalid(cat(name, ": rows must be contiguous"));
    }
    if (a.rotary_sin.dtype != a.rotary_cos.dtype || a.rotary_sin.shape[0] != a.rotary_cos.shape[0] ||
        a.rotary_sin.shape[1] != a.rotary_cos.shape[1] || a.rotary_sin.stride[0] != a.rotary_cos.stride[0])
      return Status::invalid("rotary_sin: dtype, shape and strides must be rotary_cos's");
    const int64_t rotary_dim = 2 * a.rotary_cos.shape[1];
    if (rotary_dim == 0 || rotary_dim > a.k_new.shape[3])
      return Status::invalid(cat("rotary_cos: rotary_dim = 2 x ", a.rotary_cos.shape[1], " must be in [2, hdim = ",
                                 a.k_new.shape[3], "]"));
    if (a.rotary_interleaved != 0 && a.rotary_interleaved != 1)
      return Status::invalid(cat("rotary_interleaved: ", a.rotary_interleaved, " is not 0 or 1"));
    // Every position a new row can take must have a table row.
    const int64_t max_len = cache_positions(a.k_cache, a.page_table);
    if (a.rotary_cos.shape[0] < max_len)
      return Status::invalid(cat("rotary_cos: seqlen_ro = ", a.rotary_cos.shape[0], " is less than max_seqlen_k = ",
                                 max_len, " (a table row for every position of the cache)"));
  }
  if (q) {
    if (Status s = check_geometry(a.q, "q", 4, kDims); !s.ok()) return s;
    if (Status s = check_geometry(a.q_rotated, "q_rotated", 4, kDims); !s.ok()) return s;
    if (a.q.dtype != a.k_new.dtype || a.q_rotated.dtype != a.k_new.dtype)
      return Status::invalid(cat(a.q.dtype != a.k_new.dtype ? "q" : "q_rotated", ": dtype must be k_new's"));
    for (int d = 0; d < 4; ++d)
      if (a.q_rotated.shape[d] != a.q.shape[d]) return Status::invalid(cat("q_rotated: shape differs from q's in ", kDims[d]));
    if (a.q.shape[0] != a.k_new.shape[0] || a.q.shape[3] != a.k_new.shape[3])
      return Status::invalid("q: batch and hdim must be k_new's");
    if (a.q.shape[1] > a.k_new.shape[1])
      return Status::invalid(cat("q: seqlen_q = ", a.q.shape[1], " is more than seqlen_new = ", a.k_new.shape[1],
                                 " (each query row is one of the appended positions)"));
    if (a.q_rotated.stride[3] != 1 && a.q.shape[3] > 1)
      return Status::invalid("q_rotated: the last dimension (hdim) must be contiguous");
  }
  if (a.seqlens_out.data != nullptr) {
    if (Status s = check_geometry(a.seqlens_out, "seqlens_out", 1, kSeqlensDims); !s.ok()) return s;
    if (a.seqlens_out.dtype != HOPATTN_DTYPE_INT32) return Status::invalid("seqlens_out: dtype must be int32");
    if (a.seqlens_out.shape[0] != a.k_new.shape[0])
      return Status::invalid(cat("seqlens_out: has ", a.seqlens_out.shape[0], " entries, batch is ", a.k_new.shape[0]));
    if (a.seqlens_out.stride[0] != 1 && a.seqlens_out.shape[0] > 1)
      return Status::invalid("seqlens_out: must be contiguous");
  }
  return Status();
}

// Outputs: k_cache, v_cache, k_scale, v_scale, k_tail, v_tail, q_rotated, seqlens_out.
bool is_output(int i) { return (i >= 2 && i <= 8 && i != 4) || i == 12 || i == 13; }

Status check_memory(const KvCacheAppendArgs& a) {
  for (int i = 0; i < kTensors; ++i) {
    const Tensor& t = *tensors(a, i);
    if (i == 14) continue;                            // page_table: check_page_table checked it
    if (t.data == nullptr && i >= 5) continue;        // optional ones absent
    const int esize = int(dtype_size(t.dtype));
    if (Status s = check_pointer_and_alignment(t, kNames[i], std::max(esize, 1)); !s.ok()) return s;
    if (is_output(i))
      if (Status s = check_no_self_overlap(t, kNames[i]); !s.ok()) return s;
  }
  for (int i = 0; i < kTensors; ++i) {
    if (!is_output(i)) continue;
    for (int j = 0; j < kTensors; ++j) {
      if (j == i) continue;
      const Tensor &x = *tensors(a, i), &y = *tensors(a, j);
      if (i == 13 && j == 4 && x.data == y.data && (x.stride[0] == y.stride[0] || x.shape[0] <= 1))
        continue;  // the lengths updated in place
      if (overlaps(byte_range(x), byte_range(y))) return Status::invalid(cat(kNames[i], ": overlaps ", kNames[j], " in memory"));
    }
  }
  return Status();
}

Status check_host_rules(const KvCacheAppendArgs& a) {
  if (Status s = check_versioned_header<hopattn_kvcache_append_args_t>(a, "args"); !s.ok()) return s;
  for (int i = 0; i < 4; ++i)
    if (Status s = check_geometry(*tensors(a, i), kNames[i], 4, kDims); !s.ok()) return s;
  if (Status s = check_geometry(a.cache_seqlens, "cache_seqlens", 1, kSeqlensDims); !s.ok()) return s;
  if (Status s = check_shapes(a); !s.ok()) return s;
  if (Status s = check_int8_parts(a); !s.ok()) return s;
  if (Status s = check_rotary_and_q(a); !s.ok()) return s;
  return check_memory(a);
}

Status query_context(const KvCacheAppendArgs& a, Stream stream, DeviceContext* ctx) {
  const void* ptrs[kTensors];
  for (int i = 0; i < kTensors; ++i) ptrs[i] = tensors(a, i)->data;
  return query_device_context(stream, ptrs, kTensors, ctx);
}

AppendParams make_params(const KvCacheAppendArgs& a) {
  AppendParams p{};
  p.k_new = rows_of(a.k_new), p.v_new = rows_of(a.v_new);
  p.k_cache = rows_of(a.k_cache), p.v_cache = rows_of(a.v_cache);
  p.k_tail = rows_of(a.k_tail), p.v_tail = rows_of(a.v_tail);
  p.q = rows_of(a.q), p.q_rot = rows_of(a.q_rotated);
  p.k_scale = static_cast<float*>(a.k_scale.data), p.v_scale = static_cast<float*>(a.v_scale.data);
  for (int i = 0; i < 3; ++i) p.ks_st[i] = a.k_scale.stride[i], p.vs_st[i] = a.v_scale.stride[i];
  p.seqlens = static_cast<const int32_t*>(a.cache_seqlens.data);
  p.seqlens_out = static_cast<int32_t*>(a.seqlens_out.data);
  p.cos = a.rotary_cos.data, p.sin = a.rotary_sin.data;
  p.table_stride = a.rotary_cos.stride[0];
  p.table_rows = int(a.rotary_cos.shape[0]), p.rotary_half = int(a.rotary_cos.shape[1]);
  p.table_fp32 = a.rotary_cos.dtype == HOPATTN_DTYPE_FP32;
  p.interleaved = a.rotary_interleaved != 0;
  p.batch = int(a.k_new.shape[0]), p.n_new = int(a.k_new.shape[1]), p.heads_kv = int(a.k_new.shape[2]);
  p.hdim = int(a.k_new.shape[3]), p.max_len = int(cache_positions(a.k_cache, a.page_table));
  if (is_paged(a.page_table)) {
    p.page_table = static_cast<const int32_t*>(a.page_table.data);
    p.pt_stride = a.page_table.stride[0];
    p.num_pages = int(a.k_cache.shape[0]);
    while ((int64_t(1) << p.page_shift) < a.k_cache.shape[1]) ++p.page_shift;
  }
  p.block = a.k_cache.dtype == HOPATTN_DTYPE_INT8 ? a.quant_block : 1;
  p.seqlen_q = int(a.q.shape[1]), p.heads_q = int(a.q.shape[2]);
  p.bf16 = a.k_new.dtype == HOPATTN_DTYPE_BF16;
  p.int8 = a.k_cache.dtype == HOPATTN_DTYPE_INT8;
  return p;
}

unsigned blocks_for(int64_t threads) {
  return unsigned(std::clamp<int64_t>((threads + 255) / 256, 1, 65535));
}

}  // namespace

Status check_kvcache_append(const KvCacheAppendArgs& a, const DeviceContext& ctx) {
  if (Status s = check_host_rules(a); !s.ok()) return s;
  return check_placement(ctx, kNames, kTensors);
}

Status kvcache_append(const KvCacheAppendArgs& a, Stream stream) {
  if (Status s = check_host_rules(a); !s.ok()) return s;
  DeviceContext ctx;
  if (Status s = query_context(a, stream, &ctx); !s.ok()) return s;
  if (Status s = check_placement(ctx, kNames, kTensors); !s.ok()) return s;
  AppendParams p = make_params(a);
  if (p.batch == 0) return Status();
  if (Status s = attention::decode_error_record(&p.error); !s.ok()) return s;
  auto st = static_cast<cudaStream_t>(stream);
  const bool rows = p.n_new > 0 && p.heads_kv > 0 && p.hdim > 0;
  if (p.int8 && rows) {
    // A sequence's append completes at most (seqlen_new + quant_block - 1) / quant_block + 1 blocks.
    const int block_slots = (p.n_new + p.block - 1) / p.block + 1;
    const int64_t ctas = int64_t(p.batch) * block_slots * p.heads_kv;
    if (ctas > INT32_MAX) return Status::unsupported("kvcache append: too many blocks for one grid");
    quantize_blocks_kernel<<<unsigned(ctas), kQuantThreads, 0, st>>>(p, block_slots);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  }
  const bool in_place = p.seqlens_out != nullptr && static_cast<const void*>(p.seqlens_out) == p.seqlens;
  const int64_t q_elements = a.q.data != nullptr ? int64_t(p.batch) * p.seqlen_q * p.heads_q * p.hdim : 0;
  const int64_t row_elements = rows ? int64_t(p.batch) * p.n_new * p.heads_kv * p.hdim : 0;
  const int lengths = p.seqlens_out != nullptr && !in_place ? p.batch : 0;
  if (q_elements + row_elements + lengths > 0) {
    append_rows_kernel<<<blocks_for(q_elements + row_elements + lengths), 256, 0, st>>>(p, q_elements, row_elements,
                                                                                        lengths);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  }
  if (in_place) {
    lengths_in_place_kernel<<<blocks_for(p.batch), 256, 0, st>>>(p);
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  }
  return Status();
}

}  // namespace hopattn

extern "C" hopattn_status_t hopattn_kvcache_append_check(const hopattn_kvcache_append_args_t* args, void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::KvCacheAppendArgs& a) {
    if (hopattn::Status s = hopattn::check_kvcache_append(a, hopattn::host_only_context()); !s.ok()) return s;
    hopattn::DeviceContext ctx;
    if (hopattn::Status s = hopattn::query_context(a, static_cast<hopattn::Stream>(stream), &ctx); !s.ok()) return s;
    return hopattn::check_kvcache_append(a, ctx);
  });
}

extern "C" hopattn_status_t hopattn_kvcache_append(const hopattn_kvcache_append_args_t* args, void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::KvCacheAppendArgs& a) {
    return hopattn::kvcache_append(a, static_cast<hopattn::Stream>(stream));
  });
}
