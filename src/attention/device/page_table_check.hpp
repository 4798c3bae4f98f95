// A paged KV cache's page table, as the attention over a KV cache and the append both take it
// (include/hopattn/kvcache.h): the rules they share (kvcache_check.cpp), and the cache's positions.
#pragma once

#include <cstdint>

#include "hopattn/hopattn.hpp"

namespace hopattn {

// A page table is given when its descriptor has a rank (its pointer may be null for an empty
// table, as PyTorch's empty CUDA tensors have).
inline bool is_paged(const Tensor& page_table) { return page_table.rank != 0; }

// max_seqlen_k: the cache's rows, or a paged cache's max_pages * page_size.
inline int64_t cache_positions(const Tensor& k_cache, const Tensor& page_table) {
  return is_paged(page_table) ? page_table.shape[1] * k_cache.shape[1] : k_cache.shape[1];
}

// None (rank 0 and no pointer), or (batch, max_pages) int32 with contiguous rows, 4-byte aligned;
// the pool's page_size (k_cache.shape[1]) a power of two in [16, 256]; max_pages * page_size and
// the pool's pages below 2^31. What each call supports of it (dtypes, page sizes) it checks itself.
Status check_page_table(const Tensor& page_table, const Tensor& k_cache, int64_t batch);

}  // namespace hopattn
