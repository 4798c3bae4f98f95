#include "results.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "hopattn_commit.h"  // generated at build time: HOPATTN_COMMIT

namespace hopattn::bench {
namespace {

std::string num(double x, const char* fmt = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  return buf;
}
std::string opt(long long x) { return x ? std::to_string(x) : std::string(); }
std::string opt(double x) { return x != 0 ? num(x) : std::string(); }
std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

RunInfo current_run_info() {
  RunInfo info;
  const char* env = std::getenv("HOPATTN_COMMIT");
  info.commit = env && *env ? env : HOPATTN_COMMIT;
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  info.date = buf;
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) info.gpu = prop.name;
  return info;
}

void write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write CSV file " + path);
  f << "commit,date,gpu,op,impl,dtype,hdim,causal,batch,heads_q,heads_kv,seqlen_q,seqlen_k,"
       "m,n,k,layout,ms,tflops,tbps,ratio_vs_cudnn,frac_of_gemm,note\n";
  for (const Row& r : rows) {
    const bool attn = r.op == "attn_fwd" || r.op == "attn_varlen" || r.op == "decode";
    auto a = [&](int x) { return attn ? std::to_string(x) : std::string(); };
    f << info.commit << ',' << info.date << ',' << quoted(info.gpu) << ',' << r.op << ',' << r.impl << ','
      << r.dtype << ',' << a(r.hdim) << ',' << a(r.causal) << ',' << a(r.batch) << ',' << a(r.heads_q)
      << ',' << a(r.heads_kv) << ',' << a(r.seqlen_q) << ',' << a(r.seqlen_k) << ',' << opt(r.m) << ','
      << opt(r.n) << ',' << opt(r.k) << ',' << r.layout << ',' << opt(r.ms) << ',' << opt(r.tflops) << ','
      << opt(r.tbps) << ',' << opt(r.ratio_vs_cudnn) << ',' << opt(r.frac_of_gemm) << ','
      << quoted(r.impl == "cudnn" && !info.cudnn.empty() ? "cuDNN " + info.cudnn + "; " + r.note : r.note) << '\n';
  }
}

}  // namespace hopattn::bench
