// `hopattn bench --varlen SPEC`: a packed variable-length batch (hopattn.h, "variable-length
// batches") against the same number of tokens as equal-length padded sequences, and the bare
// overhead of the varlen path (equal lengths, packed vs padded). Issue 36's target: a packed batch
// of mixed lengths reaches >= 0.97x the TFLOP/s of the same work as equal-length batches.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

#include "attention/experimental.hpp"
#include "attn_rounds.hpp"
#include "bench.hpp"
#include "common/cuda_check.hpp"
#include "device_utils.hpp"

namespace hopattn::bench {

std::vector<int> varlen_preset(const std::string& name) {
  // 16 sequences of 100..7984 tokens, 16384 in all (a packed prefill batch of mixed prompts).
  if (name == "mix16") return {7984, 2500, 1300, 900, 700, 500, 450, 400, 350, 300, 250, 200, 150, 120, 100, 180};
  return {};
}

double varlen_flops(const std::vector<int>& lens_q, const std::vector<int>& lens_k, int heads_q, int hdim,
                    bool causal) {
  double pairs = 0;
  for (size_t b = 0; b < lens_q.size() && b < lens_k.size(); ++b) {
    const double lq = lens_q[b], lk = lens_k[b];
    if (!causal) {
      pairs += lq * lk;
    } else {
      // Query i sees max(0, i + off + 1) keys, off = lk - lq (never more than lk).
      const double off = lk - lq;
      pairs += off >= 0 ? lq * (off + 1) + lq * (lq - 1) / 2  // every query sees off + 1.. keys
                        : lk * (lk + 1) / 2;                 // the first -off queries see none
    }
  }
  return 4.0 * hdim * heads_q * pairs;
}

std::pair<int, int> varlen_padded_shape(int64_t total, int seqlen) {
  if (total < seqlen) return {1, int(std::max<int64_t>(total, 1))};
  const int batch = int(std::max<long long>(1, std::llround(double(total) / seqlen)));
  return {batch, seqlen};
}

namespace {

using reference::DeviceBuffer;

// The (batch + 1) int32 offsets, uploaded once.
struct CuSeqlens {
  std::vector<int> lens;
  DeviceBuffer offsets;
  int max_len = 0;
  int64_t total = 0;
  explicit CuSeqlens(const std::vector<int>& l) : lens(l), offsets(sizeof(int32_t) * (l.size() + 1)) {
    std::vector<int32_t> host(l.size() + 1, 0);
    for (size_t b = 0; b < l.size(); ++b) host[b + 1] = host[b] + l[b];
    total = host.back();
    max_len = *std::max_element(l.begin(), l.end());
    HOPATTN_CUDA_CHECK(cudaMemcpy(offsets.get(), host.data(), sizeof(int32_t) * host.size(), cudaMemcpyHostToDevice));
  }
  Tensor tensor() const { return tensor_cu_seqlens(offsets.as<int32_t>(), int64_t(lens.size())); }
};

struct Buffers {
  DeviceBuffer q, k, v, o, sinks, workspace;
};

// The shape of one row: a packed batch (cu != null) or a padded (batch, seqlen) one.
struct RowShape {
  std::string kind;  // varlen, padded-equal, varlen-uniform, padded-uniform
  const CuSeqlens* cu = nullptr;
  int batch = 0, seqlen = 0;  // padded
  std::vector<int> lens() const { return cu ? cu->lens : std::vector<int>(size_t(batch), seqlen); }
  int64_t tokens() const { return cu ? cu->total : int64_t(batch) * seqlen; }
  int max_len() const { return cu ? cu->max_len : seqlen; }
  std::string describe(const std::string& preset) const {
    std::ostringstream os;
    if (!cu) {
      os << batch << " x " << seqlen << " padded";
    } else {
      const auto [lo, hi] = std::minmax_element(cu->lens.begin(), cu->lens.end());
      os << "packed " << cu->lens.size() << " seqs of " << *lo << ".." << *hi << ", " << cu->total << " tokens";
      if (kind == "varlen" && !preset.empty()) os << " (" << preset << ")";
    }
    return os.str();
  }
};

AttentionForwardArgs row_args(const Buffers& buf, DType dtype, const RowShape& s, int hdim, int causal, int heads_q,
                              int heads_kv, float softcap) {
  AttentionForwardArgs a{};
  if (s.cu) {
    a.q = tensor_thd(buf.q.get(), dtype, s.cu->total, heads_q, hdim);
    a.k = tensor_thd(buf.k.get(), dtype, s.cu->total, heads_kv, hdim);
    a.v = tensor_thd(buf.v.get(), dtype, s.cu->total, heads_kv, hdim);
    a.o = tensor_thd(buf.o.get(), dtype, s.cu->total, heads_q, hdim);
    a.cu_seqlens_q = a.cu_seqlens_k = s.cu->tensor();  // self-attention: q and k lengths equal
    a.max_seqlen_q = a.max_seqlen_k = s.cu->max_len;
  } else {
    a.q = tensor_bshd(buf.q.get(), dtype, s.batch, s.seqlen, heads_q, hdim);
    a.k = tensor_bshd(buf.k.get(), dtype, s.batch, s.seqlen, heads_kv, hdim);
    a.v = tensor_bshd(buf.v.get(), dtype, s.batch, s.seqlen, heads_kv, hdim);
    a.o = tensor_bshd(buf.o.get(), dtype, s.batch, s.seqlen, heads_q, hdim);
  }
  a.causal = causal;
  a.softcap = softcap;
  if (buf.sinks.get() != nullptr) {
    a.sinks.data = buf.sinks.get();
    a.sinks.dtype = HOPATTN_DTYPE_FP32;
    a.sinks.rank = 1;
    a.sinks.shape[0] = heads_q;
    a.sinks.stride[0] = 1;
  }
  return a;
}

void progress(int done, int total, const std::string& what) {
  std::fprintf(stderr, "[bench %d/%d] %s\n", done, total, what.c_str());
  std::fflush(stderr);
}

void print_varlen_table(const std::vector<Row>& rows, double gemm_tflops) {
  std::printf("\n%-11s %-5s %6s %6s %-34s %-44s %9s %9s %9s\n", "op", "hdim", "causal", "heads", "impl", "shape", "ms",
              "TFLOP/s", "vs_gemm");
  for (const Row& r : rows) {
    if (r.op != "attn_varlen") continue;
    char gemm[16] = "-", heads[32];
    if (gemm_tflops > 0) std::snprintf(gemm, sizeof(gemm), "%.3f", r.tflops / gemm_tflops);
    std::snprintf(heads, sizeof(heads), r.heads_q == r.heads_kv ? "%d" : "%d:%d", r.heads_q, r.heads_kv);
    const std::string shape = r.note.substr(0, r.note.find(';'));  // the note starts with the shape
    std::printf("%-11s %-5d %6d %6s %-34s %-44s %9.4f %9.1f %9s\n", r.op.c_str(), r.hdim, r.causal, heads,
                r.impl.c_str(), shape.c_str(), r.ms, r.tflops, gemm);
  }
}

}  // namespace

int run_varlen_bench(const BenchOptions& opt, Stream stream, double gemm_tflops, int done, int total,
                     std::vector<Row>* rows) {
  int device = 0;
  HOPATTN_CUDA_CHECK(cudaGetDevice(&device));
  const CuSeqlens mixed(opt.varlen_lens);
  const std::pair<int, int> eq = varlen_padded_shape(mixed.total, 4096);
  const std::pair<int, int> uni = varlen_padded_shape(mixed.total, 2048);
  const CuSeqlens uniform(std::vector<int>(size_t(uni.first), uni.second));
  const std::vector<RowShape> shapes = {
      {"varlen", &mixed},
      {"padded-equal", nullptr, eq.first, eq.second},
      {"varlen-uniform", &uniform},
      {"padded-uniform", nullptr, uni.first, uni.second},
  };
  auto heads_of = [&](int hdim) {
    return opt.varlen_heads.first > 0 ? opt.varlen_heads : std::pair<int, int>{opt.hidden / hdim, opt.hidden / hdim};
  };

  int64_t elems = 0;  // the largest Q (or O) of any row: heads_q >= heads_kv, so K and V fit too
  int max_heads = 1;
  for (int hdim : opt.hdims) {
    const int hq = heads_of(hdim).first;
    max_heads = std::max(max_heads, hq);
    for (const RowShape& s : shapes) elems = std::max(elems, s.tokens() * hq * hdim);
  }
  Buffers buf;
  for (DeviceBuffer* b : {&buf.q, &buf.k, &buf.v, &buf.o}) *b = DeviceBuffer(elems * 2);
  if (opt.sinks) buf.sinks = DeviceBuffer(size_t(max_heads) * 4);
  fill_attention_inputs(buf.q.get(), buf.k.get(), buf.v.get(), elems, opt.sinks ? buf.sinks.get() : nullptr, max_heads,
                        opt, stream);

  {
    const auto [lo, hi] = std::minmax_element(mixed.lens.begin(), mixed.lens.end());
    std::printf("varlen: %zu sequences of %d..%d tokens, %lld in all%s%s; padded-equal %d x %d, uniform %d x %d "
                "(packed and padded); no cuDNN row (the baseline has no ragged path)\n",
                mixed.lens.size(), *lo, *hi, (long long)mixed.total, opt.varlen_name.empty() ? "" : ", ",
                opt.varlen_name.c_str(), eq.first, eq.second, uni.first, uni.second);
  }

  // Rows per kernel: hopattn:<kind> for the library's choice, hopattn:<name>:<kind> for --kernels NAME.
  std::vector<std::pair<std::string, std::string>> prefixes;  // (row prefix, kernel)
  for (const std::string& k : opt.kernels)
    prefixes.emplace_back(k == "default" ? "hopattn" : "hopattn:" + k, k == "default" ? "" : k);

  std::map<std::string, std::string> skipped;
  std::vector<std::string> ratio_lines;
  for (int hdim : opt.hdims)
    for (int causal : opt.causal) {
      const auto [hq, hkv] = heads_of(hdim);
      std::ostringstream what;
      what << "attn_varlen " << hopattn_dtype_name(opt.dtype) << " hdim=" << hdim << " causal=" << causal
           << " heads=" << hq << ":" << hkv << " " << shapes[0].describe(opt.varlen_name);
      progress(++done, total, what.str());

      std::vector<AttentionForwardArgs> args;
      size_t need = 0;  // the varlen rows' workspace
      for (const RowShape& s : shapes) {
        args.push_back(row_args(buf, opt.dtype, s, hdim, causal, hq, hkv, opt.softcap));
        size_t bytes = 0;
        if (s.cu && attention_forward_workspace_size(args.back(), &bytes).ok()) need = std::max(need, bytes);
      }
      if (need > buf.workspace.bytes()) buf.workspace = DeviceBuffer((need + 255) / 256 * 256);
      for (size_t i = 0; i < shapes.size(); ++i)
        if (shapes[i].cu) args[i].workspace = buf.workspace.get(), args[i].workspace_bytes = buf.workspace.bytes();

      std::vector<TimedCall> calls;
      std::vector<size_t> shape_of;  // calls[i]'s shapes index
      for (const auto& [prefix, kernel] : prefixes) {
        const ForwardFn fn = hopattn_forward_fn(kernel, opt.overrides);
        for (size_t i = 0; i < shapes.size(); ++i) {
          calls.push_back({prefix + ":" + shapes[i].kind, fn, args[i]});
          shape_of.push_back(i);
        }
      }
      const std::vector<RoundsTiming> timed = time_in_rounds(calls, size_t(done - 1), opt, stream, device, &skipped);

      std::vector<std::optional<Row>> measured(calls.size());
      for (size_t c = 0; c < calls.size(); ++c) {
        if (!timed[c].timed) continue;
        const RowShape& s = shapes[shape_of[c]];
        Row r;
        r.op = "attn_varlen", r.impl = calls[c].name, r.dtype = hopattn_dtype_name(opt.dtype);
        r.hdim = hdim, r.causal = causal, r.batch = int(s.lens().size()), r.heads_q = hq, r.heads_kv = hkv;
        r.seqlen_q = r.seqlen_k = s.max_len();  // packed: the longest sequence
        r.ms = timed[c].ms;
        const std::vector<int> lens = s.lens();
        r.tflops = varlen_flops(lens, lens, hq, hdim, causal != 0) / (r.ms * 1e-3) / 1e12;
        // Q, K, V read and O written once
        r.tbps = 2.0 * (2.0 * s.tokens() * hq * hdim + 2.0 * s.tokens() * hkv * hdim) / (r.ms * 1e-3) / 1e12;
        if (gemm_tflops > 0) r.frac_of_gemm = r.tflops / gemm_tflops;
        r.note = s.describe(opt.varlen_name);
        if (prefixes[c / shapes.size()].second.empty()) {
          std::string picked;
          if (!experimental::forward_kernel_name(calls[c].args, experimental::Overrides{}, &picked).ok()) picked = "?";
          r.note += "; kernel " + picked;
        }
        if (opt.softcap > 0) r.note += "; softcap " + std::to_string(opt.softcap);
        if (opt.sinks) r.note += "; sinks";
        if (!timed[c].rounds_note.empty()) r.note += "; " + timed[c].rounds_note;
        if (!timed[c].gpu_state.empty()) r.note += "; " + timed[c].gpu_state;
        measured[c] = r;
      }
      // The ratios: varlen / padded-equal and varlen-uniform / padded-uniform (TFLOP/s), per kernel.
      for (size_t p = 0; p < prefixes.size(); ++p) {
        std::optional<Row>* m = &measured[p * shapes.size()];
        std::ostringstream line;
        line << "hdim " << hdim << " causal " << causal << " " << prefixes[p].first << ":";
        for (const auto& [num, den] : {std::pair<int, int>{0, 1}, std::pair<int, int>{2, 3}}) {
          line << "  " << shapes[num].kind << "/" << shapes[den].kind << " ";
          if (!m[num] || !m[den]) {
            line << "-";
            continue;
          }
          const double ratio = m[num]->tflops / m[den]->tflops;
          char text[32];
          std::snprintf(text, sizeof(text), "%.3f", ratio);
          line << text;
          m[num]->note += std::string("; vs ") + shapes[den].kind + " " + text;
        }
        ratio_lines.push_back(line.str());
      }
      for (std::optional<Row>& r : measured)
        if (r) rows->push_back(*r);
    }
  for (const auto& [name, reason] : skipped) std::printf("note: %s was not timed: %s\n", name.c_str(), reason.c_str());
  print_varlen_table(*rows, gemm_tflops);
  std::printf("\nTFLOP/s ratios (issue 36's target: varlen/padded-equal >= 0.97):\n");
  for (const std::string& l : ratio_lines) std::printf("  %s\n", l.c_str());
  std::printf("TFLOP/s = 4*hdim*heads_q*(visible (q,k) pairs, per sequence) / t; calls back to back, median of 11 "
              "groups of about %.0f ms%s.\n",
              opt.target_group_ms, opt.rounds > 1 ? ", then the median of the rounds" : "");
  return 0;
}

}  // namespace hopattn::bench
