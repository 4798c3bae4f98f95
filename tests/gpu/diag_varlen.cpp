// A diagnosis tool, not a test (no CTest entry): one variable-length forward case run through
// experimental::attention_forward with the overrides given on the command line, checked against
// the per-sequence float64 references (tests/reference/varlen_check.hpp). For bisecting a fault
// one process per case (a fault ends the process's CUDA context). It found the hdim-256 fault of
// 2026-12-06 (docs/attention-varlen.md): --guard q made it fault on the first call.
//
//   diag_varlen [--hdim 256] [--dtype bf16|fp16] [--causal 0|1] [--heads HQ:HKV]
//               [--lens LQ:LK,...] [--q-start N] [--k-start N] [--seed N] [--repeat N]
//               [--reuse | --keep] [--guard q|k|v|o] [--poison-workspace BYTE] [--kernel NAME] [--narrow-pv 0|1] [--skip-unseen 0|1]
// Default lengths: AttentionVarlen.MixedLengthsMatchFloat64Reference's batch (offsets 2 and 1,
// heads 6:2). Exit 0 if every repeat passed, 1 on a wrong answer, 2 on a bad command line; a
// CUDA fault aborts with its message.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attention/experimental.hpp"
#include "common/cuda_check.hpp"
#include "attention/fwd_varlen.hpp"
#include "varlen_check.hpp"

namespace {

using namespace hopattn;
using namespace hopattn::reference;

bool parse_lens(const char* s, std::vector<int>& lq, std::vector<int>& lk) {
  lq.clear(), lk.clear();
  std::string str(s);
  size_t pos = 0;
  while (pos < str.size()) {
    size_t comma = str.find(',', pos);
    if (comma == std::string::npos) comma = str.size();
    const std::string item = str.substr(pos, comma - pos);
    int a = 0, b = 0;
    if (std::sscanf(item.c_str(), "%d:%d", &a, &b) != 2 || a < 0 || b < 0) return false;
    lq.push_back(a), lk.push_back(b);
    pos = comma + 1;
  }
  return !lq.empty();
}

// The tile list the prepare kernel wrote, against the case: the count, and every entry's fields in
// range and matching its sequence (m_block -1 marks a position without a tile).
void check_tile_list(const VarlenCase& c, const VarlenRun& r) {
  const char* ws = static_cast<const char*>(r.workspace.get());
  int32_t count = 0;
  HOPATTN_CUDA_CHECK(cudaMemcpy(&count, ws, 4, cudaMemcpyDeviceToHost));
  const int64_t batch = int64_t(c.len_q.size());
  const int64_t capacity = attention::varlen_tile_capacity(r.total_q, batch, c.p.heads_q);
  std::printf("tile list: %d entries (capacity %lld)\n", count, (long long)capacity);
  if (count < 0 || count > capacity) return;
  std::vector<attention::FwdVarlenTile> e(size_t(count) + 1);
  if (count > 0)
    HOPATTN_CUDA_CHECK(cudaMemcpy(e.data(), ws + attention::varlen_entries_offset(batch),
                                  size_t(count) * sizeof(attention::FwdVarlenTile), cudaMemcpyDeviceToHost));
  const std::vector<int32_t> cu_q = varlen_prefix(c.q_start, c.len_q), cu_k = varlen_prefix(c.k_start, c.len_k);
  int bad = 0, tiles = 0;
  for (int i = 0; i < count; ++i) {
    const attention::FwdVarlenTile& t = e[size_t(i)];
    if (t.m_block < 0) continue;
    ++tiles;
    const bool ok = t.b >= 0 && t.b < batch && t.h >= 0 && t.h < c.p.heads_q && t.q_offset == cu_q[size_t(t.b)] &&
                    t.len_q == c.len_q[size_t(t.b)] && t.k_offset == cu_k[size_t(t.b)] &&
                    t.len_k == (c.used_k.empty() ? c.len_k[size_t(t.b)] : c.used_k[size_t(t.b)]) &&
                    t.m_block * 64 < std::max(1, t.len_q) && t.n_blocks >= 0;
    if (!ok && bad++ < 8)
      std::printf("  bad entry %d: m %d h %d b %d n %d q %d+%d k %d+%d\n", i, t.m_block, t.h, t.b, t.n_blocks, t.q_offset,
                  t.len_q, t.k_offset, t.len_k);
  }
  std::printf("tile list: %d tiles, %d bad entries\n", tiles, bad);
}

// A copy of `bytes` at `src` in device memory whose preceding `front` bytes (rounded up to the
// allocation granularity) are reserved but not mapped: an access before the copy faults at once
// (--guard). The mapping is left in place until the process ends.
void* guarded_copy(const void* src, size_t bytes, size_t front) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const size_t pre = (front + gran - 1) / gran * gran + gran, body = (bytes + gran - 1) / gran * gran + gran;
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle h{};
  if (cuMemAddressReserve(&base, pre + body, 0, 0, 0) != CUDA_SUCCESS || cuMemCreate(&h, body, &prop, 0) != CUDA_SUCCESS ||
      cuMemMap(base + pre, body, 0, h, 0) != CUDA_SUCCESS) {
    std::printf("guarded_copy: the VMM calls failed\n");
    std::exit(4);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  cuMemSetAccess(base + pre, body, &access, 1);
  void* dst = reinterpret_cast<void*>(base + pre);
  HOPATTN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  std::printf("guarded copy at %p, %zu bytes unmapped before it\n", dst, pre);
  return dst;
}

}  // namespace

int main(int argc, char** argv) {
  VarlenCase c;
  c.len_q = {1, 17, 113, 1000, 0, 129, 64, 65, 5, 127, 300};
  c.len_k = {1, 17, 113, 1000, 7, 129, 64, 65, 0, 40, 200};
  c.q_start = 2, c.k_start = 1;
  c.p.heads_q = 6, c.p.heads_kv = 2, c.p.hdim = 256, c.p.causal = true;
  c.seed = 12;
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;
  int repeat = 1;
  bool reuse = false;  // --reuse: one set of buffers for every repeat (else new ones each time)
  bool keep = false;   // --keep: every repeat's buffers stay allocated (new addresses, old ones still mapped)
  int poison = -1;
  std::string guard;   // --guard q|k|v|o: that tensor moved to a copy with unmapped memory before it     // --poison-workspace BYTE: the workspace filled with BYTE before each call
  experimental::Overrides ov;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&] {
      if (v == nullptr) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      ++i;
      return v;
    };
    if (a == "--hdim") c.p.hdim = std::atoi(need());
    else if (a == "--dtype") dtype = std::strcmp(need(), "fp16") == 0 ? HOPATTN_DTYPE_FP16 : HOPATTN_DTYPE_BF16;
    else if (a == "--causal") c.p.causal = std::atoi(need()) != 0;
    else if (a == "--heads") {
      if (std::sscanf(need(), "%d:%d", &c.p.heads_q, &c.p.heads_kv) != 2) return 2;
    } else if (a == "--lens") {
      if (!parse_lens(need(), c.len_q, c.len_k)) {
        std::fprintf(stderr, "--lens: LQ:LK,... with non-negative counts\n");
        return 2;
      }
    } else if (a == "--q-start") c.q_start = std::atoi(need());
    else if (a == "--k-start") c.k_start = std::atoi(need());
    else if (a == "--seed") c.seed = std::strtoull(need(), nullptr, 10);
    else if (a == "--repeat") repeat = std::atoi(need());
    else if (a == "--reuse") reuse = true;
    else if (a == "--keep") keep = true;
    else if (a == "--guard") guard = need();
    else if (a == "--poison-workspace") poison = std::atoi(need());
    else if (a == "--kernel") ov.fwd_kernel = need();
    else if (a == "--narrow-pv") ov.fwd_narrow_pv = std::atoi(need()) != 0;
    else if (a == "--skip-unseen") ov.fwd_skip_unseen = std::atoi(need()) != 0;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("case %s dtype %s narrow_pv %d skip_unseen %d kernel '%s'\n", c.to_string().c_str(),
              hopattn_dtype_name(dtype), int(ov.fwd_narrow_pv), int(ov.fwd_skip_unseen), ov.fwd_kernel.c_str());
  int failed = 0;
  VarlenRun kept;
  std::vector<VarlenRun> all(size_t(std::max(repeat, 1)));
  const uint64_t seed0 = c.seed;
  for (int it = 0; it < repeat; ++it) {
    VarlenRun fresh;
    VarlenRun& r = reuse ? kept : keep ? all[size_t(it)] : fresh;
    if (keep) c.seed = seed0 + uint64_t(it);  // other inputs: reading an earlier repeat's would show
    if (Status s = reuse && it > 0 ? Status() : build_varlen_run(c, dtype, r); !s.ok()) {
      std::printf("workspace size refused: %s\n", s.to_string().c_str());
      return 1;
    }
    {
      const auto& a = r.args;
      auto shift = [](const Tensor& t, int max_len) { return int64_t(max_len) * t.stride[0] * 2; };
      std::printf("q %p k %p v %p o %p ws %p; end-aligned shifts q %lld k %lld o %lld bytes\n", a.q.data, a.k.data,
                  a.v.data, a.o.data, a.workspace, (long long)shift(a.q, a.max_seqlen_q),
                  (long long)shift(a.k, a.max_seqlen_k), (long long)shift(a.o, a.max_seqlen_q));
    }
    if (!guard.empty()) {
      auto& a = r.args;
      Tensor* t = guard == "q" ? &a.q : guard == "k" ? &a.k : guard == "v" ? &a.v : &a.o;
      const int max_len = guard == "q" || guard == "o" ? a.max_seqlen_q : a.max_seqlen_k;
      const size_t bytes = size_t(t->shape[0]) * size_t(t->stride[0]) * 2;
      t->data = guarded_copy(t->data, bytes, size_t(max_len) * size_t(t->stride[0]) * 2);
    }
    if (poison >= 0) HOPATTN_CUDA_CHECK(cudaMemset(r.workspace.get(), poison, r.args.workspace_bytes));
    std::string name;
    if (Status s = experimental::forward_kernel_name(r.args, ov, &name); s.ok()) std::printf("kernel %s\n", name.c_str());
    if (Status s = experimental::attention_forward(r.args, nullptr, ov); !s.ok()) {
      std::printf("call refused: %s\n", s.to_string().c_str());
      return 1;
    }
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("repeat %d: CUDA error %s\n", it, cudaGetErrorString(e));
      return 3;
    }
    if (Status s = attention_device_check(nullptr); !s.ok()) std::printf("device record: %s\n", s.to_string().c_str());
    if (guard == "o")  // the output landed in the copy
      HOPATTN_CUDA_CHECK(cudaMemcpy(r.o.get(), r.args.o.data, size_t(r.args.o.shape[0]) * size_t(r.args.o.stride[0]) * 2,
                                    cudaMemcpyDeviceToDevice));
    check_tile_list(c, r);
    const VarlenCheckResult res = check_varlen_outputs(c, dtype, r);
    for (const VarlenSequenceError& q : res.sequences)
      std::printf("  (%d:%d) O err %.3g (bound %.3g) LSE err %.3g (bound %.3g)\n", q.lq, q.lk, q.o.max_abs, q.o_bound,
                  q.lse.max_abs, q.lse_bound);
    std::printf("repeat %d: %s%s\n", it, res.pass ? "PASS" : "FAIL ", res.message.c_str());
    failed += !res.pass;
  }
  return failed ? 1 : 0;
}
