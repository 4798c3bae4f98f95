// A diagnosis tool, not a test (no CTest entry): one variable-length forward case run through
// experimental::attention_forward with the overrides given on the command line, checked against
// the per-sequence float64 references (tests/reference/varlen_check.hpp). For bisecting a fault
// one process per case (a fault ends the process's CUDA context); --varlen-hdim256 lifts the
// argument check's hdim-256 refusal (Overrides::fwd_varlen_hdim256).
//
//   diag_varlen [--hdim 256] [--dtype bf16|fp16] [--causal 0|1] [--heads HQ:HKV]
//               [--lens LQ:LK,...] [--q-start N] [--k-start N] [--seed N] [--repeat N]
//               [--reuse] [--kernel NAME] [--narrow-pv 0|1] [--skip-unseen 0|1] [--varlen-hdim256]
// Default lengths: AttentionVarlen.MixedLengthsMatchFloat64Reference's batch (offsets 2 and 1,
// heads 6:2). Exit 0 if every repeat passed, 1 on a wrong answer, 2 on a bad command line; a
// CUDA fault aborts with its message.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attention/experimental.hpp"
#include "common/cuda_check.hpp"
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
    else if (a == "--kernel") ov.fwd_kernel = need();
    else if (a == "--narrow-pv") ov.fwd_narrow_pv = std::atoi(need()) != 0;
    else if (a == "--skip-unseen") ov.fwd_skip_unseen = std::atoi(need()) != 0;
    else if (a == "--varlen-hdim256") ov.fwd_varlen_hdim256 = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("case %s dtype %s narrow_pv %d skip_unseen %d kernel '%s'\n", c.to_string().c_str(),
              hopattn_dtype_name(dtype), int(ov.fwd_narrow_pv), int(ov.fwd_skip_unseen), ov.fwd_kernel.c_str());
  int failed = 0;
  VarlenRun kept;
  for (int it = 0; it < repeat; ++it) {
    VarlenRun fresh;
    VarlenRun& r = reuse ? kept : fresh;
    if (Status s = reuse && it > 0 ? Status() : build_varlen_run(c, dtype, r, ov); !s.ok()) {
      std::printf("workspace size refused: %s\n", s.to_string().c_str());
      return 1;
    }
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
    const VarlenCheckResult res = check_varlen_outputs(c, dtype, r);
    for (const VarlenSequenceError& q : res.sequences)
      std::printf("  (%d:%d) O err %.3g (bound %.3g) LSE err %.3g (bound %.3g)\n", q.lq, q.lk, q.o.max_abs, q.o_bound,
                  q.lse.max_abs, q.lse_bound);
    std::printf("repeat %d: %s%s\n", it, res.pass ? "PASS" : "FAIL ", res.message.c_str());
    failed += !res.pass;
  }
  return failed ? 1 : 0;
}
