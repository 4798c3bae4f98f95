// One attention-over-a-KV-cache case run end to end for `hopattn check` (16-bit caches,
// contiguous or paged): random q and cache (never zeros), the cache rows past each sequence's
// length NaN (a read of them shows), a paged copy in shuffled pages with NaN spare pages,
// NaN-poisoned O and LSE, the public call, the device check, and per sequence the fp64
// reference and the low-precision yardstick under FlashAttention's 2x rule (as varlen_check).
// The GPU tests (tests/gpu/test_kvcache_gpu.cpp) cover far more; this is the user's smoke grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

struct KvCheckCase {
  int seqlen_q = 1, heads_q = 8, heads_kv = 2, hdim = 128, max_len = 1024;
  std::vector<int> lens;  // cache_seqlens; batch = lens.size()
  bool causal = false;
  int page_size = 0;  // > 0: the cache as a pool of such pages through a shuffled page_table
  // The options (kvcache.h): a sliding window (-1: an unbounded side), softcap (0: off), sinks
  // (heads_q logits, or empty).
  bool window = false;
  int window_left = -1, window_right = -1;
  float softcap = 0.0f;
  std::vector<float> sinks;
  float input_std = 1.0f;  // q and k ~ N(0, input_std^2), v ~ N(0, 1)
  uint64_t seed = 1;
  std::string to_string() const;
};

struct KvCheckResult {
  bool pass = false;
  double worst = 0;     // the largest O error as a fraction of its bound, over the sequences
  std::string message;  // the first failure, or ""
};

KvCheckResult run_kvcache_check(const KvCheckCase& c, hopattn_dtype_t dtype);

// The cases `hopattn check` runs at one head dim: odd, empty and full lengths with packed GQA,
// MHA with several causal queries, MQA over a long cache (split-KV), a window with softcap on
// large logits and sinks, a causal chunk of 129 queries with sinks (at hdim 128 the chunk path,
// by decode_defaults.cpp's rules), and the first case again
// over pages of 16 and 128 tokens.
std::vector<KvCheckCase> kvcache_check_cases(int hdim);

}  // namespace hopattn::reference
