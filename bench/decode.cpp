// `hopattn bench --op decode`: attention over a KV cache (hopattn_kvcache_attention) against
// cuDNN's SDPA at the same shape, read against the device-copy ceiling of the same run.
//
// Per (heads, cache, cache dtype) the K/V cache is allocated, filled and freed again (with 8 kv
// heads of 128, the 128×2048 cache holds 1 GiB of bf16 K+V and the 16×32768 one 2 GiB); per q_len
// the queries, the output and the split-KV workspace. A call that returns an error (such as
// HOPATTN_NOT_SUPPORTED while the decode kernels are not written) becomes a row without a time whose
// note says why; only a CUDA error the process cannot recover from (a kernel fault) ends the run.
#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/device/decode_registry.hpp"
#include "attention/experimental.hpp"
#include "baselines/baselines.hpp"
#include "bench.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "device_utils.hpp"
#include "gpu_state.hpp"
#include "hopattn/kvcache.hpp"
#include "results.hpp"
#include "timing.hpp"

namespace hopattn::bench {

double decode_flops(int batch, int heads_q, int qlen, int cache_len, int hdim) {
  return 4.0 * batch * heads_q * double(qlen) * cache_len * hdim;
}

double decode_kv_bytes(int batch, int cache_len, int heads_kv, int hdim, hopattn_dtype_t cache_dtype,
                       int quant_block) {
  const double elems = double(batch) * cache_len * heads_kv * hdim;  // of K, and of V
  double bytes = 2.0 * elems * double(dtype_size(cache_dtype));
  if (cache_dtype == HOPATTN_DTYPE_INT8) {
    const double k_scales = double(batch) * ((cache_len + quant_block - 1) / quant_block) * heads_kv * hdim;
    const double v_scales = double(batch) * cache_len * heads_kv;
    bytes += 4.0 * (k_scales + v_scales);
  }
  return bytes;
}

namespace {

using reference::DeviceBuffer;

constexpr int kGraphCalls = 32;   // calls captured into one CUDA graph

hopattn_dtype_t dtype_from_name(const std::string& name) {
  if (name == "bf16") return HOPATTN_DTYPE_BF16;
  if (name == "fp16") return HOPATTN_DTYPE_FP16;
  if (name == "int8") return HOPATTN_DTYPE_INT8;
  throw std::invalid_argument("cache dtype " + name);
}

[[maybe_unused]] Status from_c(const hopattn_status_t& s) { return Status(StatusCode(s.code), s.message); }

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, x);
  return buf;
}

// One implementation at one shape: back to back, and replayed from a CUDA graph when the calls
// can be captured.
struct Measured {
  std::string error;     // non-empty: the first call failed and nothing was timed
  double b2b_ms = 0;     // back to back (time_launches)
  double graph_ms = 0;   // CUDA graph of kGraphCalls calls, per call; 0: not capturable
  double isolated_ms = 0;  // --isolated: the same with a memset after each call, the memsets' time subtracted
  std::string graph_why; // why not
  GpuState state;        // sampled right after the timings (gpu_state.hpp)
  bool ok() const { return error.empty(); }
  double ms() const { return graph_ms > 0 ? graph_ms : b2b_ms; }
  const char* how() const { return !ok() ? "-" : graph_ms > 0 ? "graph" : "b2b"; }
};

// --isolated: a 4-byte memset after each call in the graph is a plain dependency, which no
// programmatic dependent launch crosses: the next call cannot start its kernels (prologue, loads)
// while this one finishes, as in a model where other kernels run between two attention calls.
// The memsets alone, in a graph of their own, are subtracted.
double isolated_graph_ms(const std::function<void()>& launch, Stream stream, double target_ms) {
  static void* separator = [] {
    void* p = nullptr;
    HOPATTN_CUDA_CHECK(cudaMalloc(&p, 256));
    return p;
  }();
  const auto sep = [&] { HOPATTN_CUDA_CHECK(cudaMemsetAsync(separator, 0, 4, static_cast<cudaStream_t>(stream))); };
  Timing with, alone;
  std::string why;
  if (!time_graph([&] { launch(), sep(); }, stream, kGraphCalls, target_ms, &with, &why)) return 0;
  if (!time_graph(sep, stream, kGraphCalls, target_ms, &alone, &why)) return 0;
  return std::max(with.median_ms - alone.median_ms, 0.0);
}

Measured measure(const std::function<Status()>& call, Stream stream, double target_ms, bool isolated = false) {
  Measured m;
  const Status first = call();
  if (!first.ok()) {
    m.error = first.to_string();
    return m;
  }
  HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto launch = [&] {
    const Status s = call();
    if (!s.ok()) throw std::runtime_error(s.to_string());
  };
  m.b2b_ms = time_launches(launch, stream, target_ms).median_ms;
  Timing g;
  if (time_graph(launch, stream, kGraphCalls, target_ms, &g, &m.graph_why)) m.graph_ms = g.median_ms;
  if (isolated && m.graph_ms > 0) m.isolated_ms = isolated_graph_ms(launch, stream, target_ms);
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) m.state = sample_gpu_state(device);
  return m;
}

// cuDNN's time / mine, from figures measured the same way (both graph, else both back to back).
double ratio_vs(const Measured& mine, const Measured& cudnn, bool* from_b2b) {
  *from_b2b = false;
  if (!mine.ok() || !cudnn.ok()) return 0;
  if (mine.graph_ms > 0 && cudnn.graph_ms > 0) return cudnn.graph_ms / mine.graph_ms;
  *from_b2b = true;
  return cudnn.b2b_ms / mine.b2b_ms;
}

struct Shape {
  int heads_q, heads_kv, batch, len, qlen, hdim;
  int quant_block = 128;  // tokens per K scale block of an int8 cache (--quant-block)
};

struct DecodeResult {
  Row row;
  std::string how;  // graph, b2b, or "-" when not timed
  double isolated_ms = 0;  // --isolated
};

Row decode_row(const std::string& impl, const std::string& cache_dtype, const Shape& s) {
  Row r;
  r.op = "decode", r.impl = impl, r.dtype = cache_dtype;
  r.hdim = s.hdim, r.causal = 1, r.batch = s.batch, r.heads_q = s.heads_q, r.heads_kv = s.heads_kv;
  r.seqlen_q = s.qlen, r.seqlen_k = s.len;
  return r;
}

// Fills the figures of a row from a measurement, or the note of a failure. window >= 0 (a row
// with --window): the figures count what the window lets the call read, the last window + qlen
// keys of each sequence, and window + 1 keys per query row (fewer near the start).
void set_figures(Row* r, const Measured& m, const Shape& s, hopattn_dtype_t cache_dtype, int window = -1) {
  if (!m.ok()) {
    r->note = "not timed: " + m.error;
    return;
  }
  r->ms = m.ms();
  const int read = window >= 0 ? std::min(s.len, window + s.qlen) : s.len;
  const int per_row = window >= 0 ? std::min(s.len, window + 1) : s.len;
  r->tflops = decode_flops(s.batch, s.heads_q, s.qlen, per_row, s.hdim) / (r->ms * 1e-3) / 1e12;
  r->tbps = decode_kv_bytes(s.batch, read, s.heads_kv, s.hdim, cache_dtype, s.quant_block) / (r->ms * 1e-3) / 1e12;
  if (m.graph_ms > 0)
    r->note = "CUDA graph of " + std::to_string(kGraphCalls) + " calls, per call; back to back " +
              fmt("%.5g", m.b2b_ms) + " ms";
  else
    r->note = "back to back (CUDA graph capture failed: " + m.graph_why + ")";
  if (m.isolated_ms > 0) r->note += "; isolated " + fmt("%.5g", m.isolated_ms) + " ms per call (--isolated)";
  const std::string state = describe_gpu_states(&m.state, 1);
  if (!state.empty()) r->note += "; " + state;
}

void print_decode_table(const std::vector<DecodeResult>& results, double copy_tbps) {
  std::printf("\n%-6s %-4s %-6s %4s %5s %6s %-5s %-8s %9s %8s %7s %7s %8s %-6s %s\n", "op", "hdim", "heads", "qlen",
              "batch", "len", "dtype", "impl", "ms", "TFLOP/s", "TB/s", "vs_copy", "vs_cudnn", "timing", "isolated_ms");
  for (const DecodeResult& d : results) {
    const Row& r = d.row;
    const std::string heads = std::to_string(r.heads_q) + ":" + std::to_string(r.heads_kv);
    std::string ms = "-", tf = "-", tb = "-", copy = "-", ratio = "-", how = d.how;
    if (r.ms > 0) {
      ms = fmt("%.4f", r.ms), tf = fmt("%.2f", r.tflops), tb = fmt("%.3f", r.tbps);
      if (copy_tbps > 0) copy = fmt("%.3f", r.tbps / copy_tbps);
      if (r.ratio_vs_cudnn > 0) ratio = fmt("%.3f", r.ratio_vs_cudnn);
    } else {
      how = r.note.find("not supported") != std::string::npos ? "unsupported" : "failed";
    }
    const std::string iso = d.isolated_ms > 0 ? fmt("%.4f", d.isolated_ms) : "-";
    std::printf("%-6s %-4d %-6s %4d %5d %6d %-5s %-8s %9s %8s %7s %7s %8s %-6s %s\n", r.op.c_str(), r.hdim,
                heads.c_str(), r.seqlen_q, r.batch, r.seqlen_k, r.dtype.c_str(), r.impl.c_str(), ms.c_str(),
                tf.c_str(), tb.c_str(), copy.c_str(), ratio.c_str(), how.c_str(), iso.c_str());
  }
}

void progress(int done, int total, const std::string& what) {
  std::fprintf(stderr, "[bench decode %d/%d] %s\n", done, total, what.c_str());
  std::fflush(stderr);
}

}  // namespace

int run_decode_bench(const BenchOptions& opt, Stream stream, const RunInfo& info, const baselines::CudnnSdpa* cudnn) {
  const int kQuantBlock = opt.quant_block;  // tokens per K scale block of the int8 cache (--quant-block)
  int device = 0, sms = 0;
  HOPATTN_CUDA_CHECK(cudaGetDevice(&device));
  HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));

  // Cache dtypes: the 16-bit ones first, so that an int8 row can be read against cuDNN bf16.
  std::vector<std::string> dtypes = opt.kv_dtypes;
  std::stable_partition(dtypes.begin(), dtypes.end(), [](const std::string& t) { return t != "int8"; });

  std::vector<Row> rows;
  std::vector<DecodeResult> results;
  double copy_tbps = 0;
  const int cells = int(opt.decode_hdims.size() * opt.decode_heads.size() * opt.decode_caches.size() *
                        dtypes.size() * opt.qlens.size());
  const int total = cells + (opt.ceilings ? 1 : 0);
  int done = 0;
  if (opt.ceilings) {
    progress(++done, total, "ceiling: device copy 1 GiB");
    rows.push_back(measure_copy_ceiling(stream, opt.target_group_ms));
    copy_tbps = rows.back().tbps;
    std::printf("ceiling: device copy %.2f TB/s (bytes read + written)\n", copy_tbps);
  }

  std::map<std::pair<std::string, std::string>, std::pair<int, std::string>> failures;  // (impl, dtype) -> (rows, first reason)
  for (int hdim : opt.decode_hdims)
    for (const auto& [heads_q, heads_kv] : opt.decode_heads)
      for (const auto& [batch, len] : opt.decode_caches) {
        std::map<int, Measured> cudnn_bf16;  // q_len -> cuDNN at the bf16 cache of this shape
        DeviceBuffer seqlens(size_t(batch) * 4);
        {
          const std::vector<int32_t> host(size_t(batch), len);  // every sequence's cache is full
          HOPATTN_CUDA_CHECK(cudaMemcpy(seqlens.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
        }
        for (const std::string& dtype_name : dtypes) {
          const hopattn_dtype_t cache_dtype = dtype_from_name(dtype_name);
          const bool int8 = cache_dtype == HOPATTN_DTYPE_INT8;
          const hopattn_dtype_t q_dtype = int8 ? HOPATTN_DTYPE_BF16 : cache_dtype;
          const int64_t cache_elems = int64_t(batch) * len * heads_kv * hdim;
          const int64_t k_scale_elems = int64_t(batch) * ((len + kQuantBlock - 1) / kQuantBlock) * heads_kv * hdim;
          const int64_t v_scale_elems = int64_t(batch) * len * heads_kv;
          DeviceBuffer k, v, k_scale, v_scale, k_tail, v_tail;
          // --cold: copies 1.. of the cache (copy 0 is k, v, k_scale, v_scale), the calls rotating over them.
          std::vector<DeviceBuffer> k_copies, v_copies, ks_copies, vs_copies;
          int copies = 1;
          const int64_t tail_elems = int64_t(batch) * kQuantBlock * heads_kv * hdim;
          std::string alloc_error;
          try {
            k = DeviceBuffer(size_t(cache_elems) * dtype_size(cache_dtype));
            v = DeviceBuffer(size_t(cache_elems) * dtype_size(cache_dtype));
            reference::fill_normal(k.get(), cache_dtype, cache_elems, 21, int8 ? 40.0f : 1.0f, stream);
            reference::fill_normal(v.get(), cache_dtype, cache_elems, 22, int8 ? 40.0f : 1.0f, stream);
            if (int8) {
              // fp32 scales of a plausible size: every byte 0x3c makes each float 0.0115.
              k_scale = DeviceBuffer(size_t(k_scale_elems) * 4);
              v_scale = DeviceBuffer(size_t(v_scale_elems) * 4);
              HOPATTN_CUDA_CHECK(cudaMemsetAsync(k_scale.get(), 0x3c, k_scale.bytes(), stream));
              HOPATTN_CUDA_CHECK(cudaMemsetAsync(v_scale.get(), 0x3c, v_scale.bytes(), stream));
              if (opt.int8_tail) {  // bf16 tail blocks (the caches are full blocks: no tail token is read)
                k_tail = DeviceBuffer(size_t(tail_elems) * 2), v_tail = DeviceBuffer(size_t(tail_elems) * 2);
                reference::fill_normal(k_tail.get(), HOPATTN_DTYPE_BF16, tail_elems, 24, 1.0f, stream);
                reference::fill_normal(v_tail.get(), HOPATTN_DTYPE_BF16, tail_elems, 25, 1.0f, stream);
              }
            }
            if (opt.decode_cold) {
              int l2 = 0;
              HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
              const double bytes = double(k.bytes() + v.bytes() + k_scale.bytes() + v_scale.bytes());
              copies = int(std::clamp(std::ceil(2.5 * double(l2) / bytes), 1.0, 64.0));
              for (int c = 1; c < copies; ++c) {
                auto dup = [&](const DeviceBuffer& src, std::vector<DeviceBuffer>& into) {
                  into.emplace_back(src.bytes());
                  if (src.bytes())
                    HOPATTN_CUDA_CHECK(cudaMemcpyAsync(into.back().get(), src.get(), src.bytes(),
                                                       cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
                };
                dup(k, k_copies), dup(v, v_copies);
                if (int8) dup(k_scale, ks_copies), dup(v_scale, vs_copies);
              }
            }
          } catch (const std::exception& e) {  // out of memory: report the shape, go on with the next
            alloc_error = std::string("allocating the cache: ") + e.what();
            k_copies.clear(), v_copies.clear(), ks_copies.clear(), vs_copies.clear();
            copies = 1;
            k = DeviceBuffer(), v = DeviceBuffer(), k_scale = DeviceBuffer(), v_scale = DeviceBuffer();
            k_tail = DeviceBuffer(), v_tail = DeviceBuffer();
            cudaGetLastError();
          }
          for (int qlen : opt.qlens) {
            const Shape shape{heads_q, heads_kv, batch, len, qlen, hdim, kQuantBlock};
            std::ostringstream what;
            what << "decode " << dtype_name << " hdim=" << hdim << " heads=" << heads_q << ":" << heads_kv
                 << " batch=" << batch << " len=" << len << " qlen=" << qlen;
            progress(++done, total, what.str());
            const size_t first_result = results.size();
            const int64_t q_elems = int64_t(batch) * qlen * heads_q * hdim;
            DeviceBuffer q, o;
            if (alloc_error.empty()) {
              q = DeviceBuffer(size_t(q_elems) * dtype_size(q_dtype));
              o = DeviceBuffer(size_t(q_elems) * dtype_size(q_dtype));
              reference::fill_normal(q.get(), q_dtype, q_elems, 23, 1.0f, stream);
            }

            KvCacheArgs args{};
            args.q = tensor_bshd(q.get(), q_dtype, batch, qlen, heads_q, hdim);
            args.k_cache = tensor_bshd(k.get(), cache_dtype, batch, len, heads_kv, hdim);
            args.v_cache = tensor_bshd(v.get(), cache_dtype, batch, len, heads_kv, hdim);
            args.cache_seqlens = tensor_seqlens(seqlens.as<int32_t>(), batch);
            args.o = tensor_bshd(o.get(), q_dtype, batch, qlen, heads_q, hdim);
            if (int8) {
              args.k_scale = tensor_bshd(k_scale.get(), HOPATTN_DTYPE_FP32, batch, (len + kQuantBlock - 1) / kQuantBlock,
                                         heads_kv, hdim);
              args.v_scale = tensor_v_scale(v_scale.as<float>(), batch, len, heads_kv);
              args.quant_block = kQuantBlock;
            }
            args.causal = 1;
            args.num_splits = 0;  // set per --splits entry below (0: the heuristic)
            args.pack_gqa = -1;   // heuristic

            // What this cell times: hopattn's --variants x --splits entries, then cuDNN SDPA at the
            // same shape, reading the same cache (16-bit caches only). With --rounds R they are all
            // timed R times, the order rotating by one entry per round (and per cell), and each
            // row reports the median of its rounds (the same kernel timed twice in one round-robin
            // moves by up to 5 %: perf-log, fifteenth session).
            struct Entry {
              std::string impl;
              bool cudnn = false;
              std::string kernel;  // "" the library's choice, else a registry name
              std::string path;    // "decode" / "fwd": Overrides::decode_path (--kernels decode,fwd)
              int splits = 0;
              bool tail = false;  // int8 with 16-bit tail blocks (--int8-tail)
              int page = 0;       // > 0: the cache as a pool of such pages (--page-sizes)
              bool combine_pdl = true;  // NAME+combine_pdl=0: the combine launched plainly
              bool split_pdl = true;    // NAME+split_pdl=0: the 16-bit split kernel launched plainly
              bool pack = experimental::Overrides{}.chunk_pack_gqa;  // or NAME+pack=0|1 (rows :nopack, :pack)
              int window = -1;    // >= 0: a sliding window of that many keys before each query (--window)
              int dense = -1;     // a windowed row: the index of the same row without the window
              DeviceBuffer table; // its page table (batch, len / page), a shuffled permutation
              DeviceBuffer k_scale_pages;  // int8, pages smaller than quant_block: (pages, 1, heads_kv, hdim)
              std::string plan_note;
              DeviceBuffer workspace;
              size_t ws_bytes = 0;
              std::vector<Measured> runs;
              std::string error;  // why it is not timed (then runs stops growing)
            };
            std::vector<Entry> entries;
            // An entry's call: args, or with a page size the same bytes as (batch * len / page)
            // pages of `page` tokens through its shuffled table (an int8 cache's scales likewise:
            // (pages, page / quant_block, ...) and (pages, page, ...); pages smaller than
            // quant_block: their own K scale rows, (pages, 1, ...), each page its block's).
            auto call_of = [&](const Entry& e) {
              KvCacheArgs call = args;
              if (e.page > 0) {
                const long long pages = (long long)batch * (len / e.page);
                call.k_cache = tensor_bshd(k.get(), cache_dtype, pages, e.page, heads_kv, hdim);
                call.v_cache = tensor_bshd(v.get(), cache_dtype, pages, e.page, heads_kv, hdim);
                if (cache_dtype == HOPATTN_DTYPE_INT8) {
                  call.k_scale = e.page < kQuantBlock
                                     ? tensor_bshd(e.k_scale_pages.get(), HOPATTN_DTYPE_FP32, pages, 1, heads_kv, hdim)
                                     : tensor_bshd(k_scale.get(), HOPATTN_DTYPE_FP32, pages, e.page / kQuantBlock, heads_kv, hdim);
                  call.v_scale = tensor_v_scale(v_scale.as<float>(), pages, e.page, heads_kv);
                }
                call.page_table = tensor_page_table(e.table.as<int32_t>(), batch, len / e.page);
              }
              return call;
            };
            const Tensor tails[2] = {tensor_bshd(k_tail.get(), HOPATTN_DTYPE_BF16, batch, kQuantBlock, heads_kv, hdim),
                                     tensor_bshd(v_tail.get(), HOPATTN_DTYPE_BF16, batch, kQuantBlock, heads_kv, hdim)};
            auto set_tail = [&](bool on) {
              args.k_tail = on ? tails[0] : Tensor{};
              args.v_tail = on ? tails[1] : Tensor{};
            };
            // --window: the causal call with a window of `w` keys before each query (-1: none).
            auto set_window = [&](int w) {
              args.window = w >= 0 ? 1 : 0;
              args.window_left = w >= 0 ? w : 0;
              args.window_right = 0;
            };
            const attention::DecodeCache cache = int8 ? attention::DecodeCache::kInt8 : attention::DecodeCache::k16Bit;
            const attention::DecodeCache other = int8 ? attention::DecodeCache::k16Bit : attention::DecodeCache::kInt8;
            for (const std::string& entry_name : opt.kernels) {
              // NAME[+combine_pdl=0|1][+split_pdl=0|1]: the row's own experiments
              // (Overrides::decode_combine_pdl, decode_split_pdl).
              const size_t plus = entry_name.find('+');
              const std::string name = entry_name.substr(0, plus);
              bool combine_pdl = true, split_pdl = true, pack = experimental::Overrides{}.chunk_pack_gqa;
              int pack_asked = -1;
              for (size_t at = plus; at != std::string::npos;) {
                const size_t next = entry_name.find('+', at + 1);
                const std::string kv = entry_name.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
                if (kv == "combine_pdl=0" || kv == "combine_pdl=1") combine_pdl = kv.back() == '1';
                else if (kv == "split_pdl=0" || kv == "split_pdl=1") split_pdl = kv.back() == '1';
                else if (kv == "pack=0" || kv == "pack=1") pack = kv.back() == '1', pack_asked = pack ? 1 : 0;
                else
                  throw std::invalid_argument("--kernels: '" + entry_name +
                                              "': decode rows take only +combine_pdl=0|1, +split_pdl=0|1 and +pack=0|1");
                at = next;
              }
              // "decode" and "fwd": the path forced (Overrides::decode_path), the kernel the plan's.
              const std::string path = name == "decode" || name == "fwd" ? name : "";
              const std::string kernel = name == "default" || !path.empty() ? "" : name;
              // A kernel of the other cache type does not apply to this cell: no row.
              if (!kernel.empty() && attention::decode_kernel_index(kernel, cache, hdim) < 0 &&
                  attention::decode_kernel_index(kernel, other, hdim) >= 0)
                continue;
              for (int page : opt.page_sizes)
              for (int splits : opt.splits)
                for (int tail = 0; tail < (int8 && opt.int8_tail ? 2 : 1); ++tail)
                for (int windowed = 0; windowed < (opt.decode_window >= 0 && (!int8 || kernel.empty() || kernel == attention::kInt8OptionsKernel) ? 2 : 1); ++windowed) {
                // paged: caches of whole pages (int8: pages of whole scale blocks, or dividing one)
                if (page > 0 && (len % page != 0 || (int8 && page % kQuantBlock != 0 && kQuantBlock % page != 0))) continue;
                Entry e;
                e.impl = (kernel.empty() ? std::string("hopattn") : "hopattn:" + kernel) + (path.empty() ? "" : ":" + path) +
                         (splits == 0 ? "" : ":s" + std::to_string(splits)) + (tail ? ":tail" : "") +
                         (page > 0 ? ":p" + std::to_string(page) : "") + (combine_pdl ? "" : ":nopdl") + (split_pdl ? "" : ":nosplitpdl") + (pack_asked < 0 ? "" : pack_asked ? ":pack" : ":nopack") +
                         (windowed ? ":w" + std::to_string(opt.decode_window) : "");
                e.kernel = kernel, e.path = path, e.splits = splits, e.tail = tail != 0, e.page = page, e.combine_pdl = combine_pdl;
                e.split_pdl = split_pdl;
                e.pack = pack;
                if (windowed) e.window = opt.decode_window, e.dense = int(entries.size()) - 1;  // the row just before
                if (page > 0 && alloc_error.empty()) {  // every page of the pool in some sequence, shuffled
                  std::vector<int32_t> ids(size_t(batch) * (len / page));
                  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
                  std::mt19937 rng(uint32_t(1234 + page));
                  std::shuffle(ids.begin(), ids.end(), rng);
                  e.table = DeviceBuffer(ids.size() * 4);
                  HOPATTN_CUDA_CHECK(cudaMemcpy(e.table.get(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
                  if (int8 && page < kQuantBlock) {  // pool page P: the K scale row of the block its bytes lie in
                    const size_t row = size_t(heads_kv) * hdim * sizeof(float);
                    e.k_scale_pages = DeviceBuffer(ids.size() * row);
                    for (size_t P = 0; P < ids.size(); ++P)
                      HOPATTN_CUDA_CHECK(cudaMemcpy(static_cast<char*>(e.k_scale_pages.get()) + P * row,
                                                    static_cast<const char*>(k_scale.get()) + (P * page / kQuantBlock) * row,
                                                    row, cudaMemcpyDeviceToDevice));
                  }
                }
                args.num_splits = splits;
                experimental::Overrides overrides;
                overrides.decode_kernel = kernel;
                overrides.decode_path = path;
                overrides.decode_combine_pdl = combine_pdl;
                overrides.decode_split_pdl = split_pdl;
                overrides.chunk_pack_gqa = pack;
                set_tail(e.tail);
                set_window(e.window);  // the plan (splits, workspace) follows the window
                if (!alloc_error.empty()) {
                  e.error = alloc_error;
                } else {
                  // The workspace is queried and allocated before anything is timed.
                  const KvCachePlan plan = experimental::plan_kvcache_attention(call_of(e), sms, overrides);
                  if (plan.kernel[0] == '\0') {
                    e.error = !path.empty() ? "the " + path + " path does not take this call (experimental::Overrides::decode_path)"
                                            : "no kernel '" + kernel + "' for this cache and head dim";
                  } else {
                    e.ws_bytes = plan.workspace_bytes;
                    e.workspace = DeviceBuffer(e.ws_bytes);
                    args.workspace = e.workspace.get(), args.workspace_bytes = e.ws_bytes;
                    e.plan_note = std::string("; plan: ") + plan.kernel + (plan.fwd_path ? " (chunk path)" : "") + ", " +
                                  std::to_string(plan.num_splits) +
                                  " KV splits, pack_gqa " + (plan.pack_gqa ? "on" : "off") + ", workspace " +
                                  std::to_string(e.ws_bytes) + " B";
                  }
                }
                entries.push_back(std::move(e));
              }
            }
            const bool have_cudnn = cudnn && !int8;
            if (have_cudnn) {
              Entry e;
              e.impl = "cudnn", e.cudnn = true, e.error = alloc_error;
              entries.push_back(std::move(e));
            }
            AttentionForwardArgs fa{};
            fa.q = args.q, fa.k = args.k_cache, fa.v = args.v_cache, fa.o = args.o;
            // Bottom-right causal: query row i sees keys j <= i + len - qlen. With one query that is
            // every key, and cuDNN is given no mask, as a user calls it for decode. With the mask its
            // row read 0.099 ms at 1 x 8k, 64:8 heads (H100, 2026-12-06), where issue 39 timed cuDNN
            // 9.19 through PyTorch, unmasked, at 0.0112 ms (H200).
            fa.causal = qlen > 1 ? 1 : 0;
            const size_t n_entries = entries.size();
            for (int round = 0; round < opt.rounds; ++round)
              for (size_t j = 0; j < n_entries; ++j) {
                Entry& e = entries[(size_t(done) + size_t(round) + j) % n_entries];
                if (!e.error.empty()) continue;
                Measured m;
                if (e.cudnn) {
                  std::vector<AttentionForwardArgs> fas(size_t(copies), fa);
                  for (int c = 1; c < copies; ++c)
                    fas[size_t(c)].k.data = k_copies[size_t(c - 1)].get(), fas[size_t(c)].v.data = v_copies[size_t(c - 1)].get();
                  int next = 0;
                  m = measure([&] { return cudnn->forward(fas[size_t(next++ % copies)], stream); }, stream,
                              opt.target_group_ms, opt.decode_isolated);
                } else {
                  args.num_splits = e.splits;
                  set_tail(e.tail);
                  set_window(e.window);
                  args.workspace = e.workspace.get(), args.workspace_bytes = e.ws_bytes;
                  experimental::Overrides overrides;
                  overrides.decode_kernel = e.kernel;
                  overrides.decode_path = e.path;
                  overrides.decode_combine_pdl = e.combine_pdl;
                  overrides.decode_split_pdl = e.split_pdl;
                  overrides.chunk_pack_gqa = e.pack;
                  // --cold: the same call over each copy of the cache (a paged call views each copy as its pool;
                  // an int8 pool's own K scale rows, pages smaller than quant_block, are not copied).
                  std::vector<KvCacheArgs> calls(size_t(copies), call_of(e));
                  for (int c = 1; c < copies; ++c) {
                    KvCacheArgs& a = calls[size_t(c)];
                    a.k_cache.data = k_copies[size_t(c - 1)].get(), a.v_cache.data = v_copies[size_t(c - 1)].get();
                    if (int8) a.v_scale.data = vs_copies[size_t(c - 1)].get();
                    if (int8 && e.k_scale_pages.get() == nullptr) a.k_scale.data = ks_copies[size_t(c - 1)].get();
                  }
                  int next = 0;
                  m = measure([&] { return experimental::kvcache_attention(calls[size_t(next++ % copies)], stream, overrides); },
                              stream, opt.target_group_ms, opt.decode_isolated);
                }
                if (!m.ok()) e.error = m.error;
                else e.runs.push_back(m);
              }
            // An entry's figures: the run with the median time (its own graph and back-to-back
            // figures and GPU state), and the spread of the rounds.
            auto median_of = [](const Entry& e, std::string* spread) {
              Measured m;
              if (!e.error.empty() || e.runs.empty()) {
                m.error = e.error.empty() ? "not timed" : e.error;
                return m;
              }
              std::vector<size_t> order(e.runs.size());
              for (size_t i = 0; i < order.size(); ++i) order[i] = i;
              std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return e.runs[a].ms() < e.runs[b].ms(); });
              m = e.runs[order[order.size() / 2]];
              if (e.runs.size() > 1)
                *spread = "; median of " + std::to_string(e.runs.size()) + " rounds, " +
                          fmt("%.4f", e.runs[order.front()].ms()) + "-" + fmt("%.4f", e.runs[order.back()].ms()) + " ms";
              return m;
            };
            Measured theirs;
            std::string theirs_spread;
            if (have_cudnn) {
              theirs = median_of(entries.back(), &theirs_spread);
              if (cache_dtype == HOPATTN_DTYPE_BF16) cudnn_bf16[qlen] = theirs;
            }
            const Measured* baseline = nullptr;  // what the ratio is against
            if (have_cudnn) baseline = &theirs;
            else if (int8 && cudnn_bf16.count(qlen)) baseline = &cudnn_bf16[qlen];

            for (const Entry& e : entries) {
              if (e.cudnn) continue;
              std::string spread;
              const Measured mine = median_of(e, &spread);
              Row r = decode_row(e.impl, dtype_name, shape);
              set_figures(&r, mine, shape, cache_dtype, e.window);
              if (mine.ok() && copies > 1) r.note += "; --cold: calls rotate over " + std::to_string(copies) + " copies of the cache";
              if (mine.ok()) {
                r.note += spread + e.plan_note;
                if (e.dense >= 0) {  // a windowed row beside the same row without the window
                  std::string unused;
                  const Measured dense = median_of(entries[size_t(e.dense)], &unused);
                  if (dense.ok() && dense.ms() > 0)
                    r.note += fmt("; window %.0f keys: ", double(e.window)) + fmt("%.3f", mine.ms() / dense.ms()) +
                              "x the time of " + entries[size_t(e.dense)].impl;
                }
                bool from_b2b = false;
                if (baseline) r.ratio_vs_cudnn = ratio_vs(mine, *baseline, &from_b2b);
                if (r.ratio_vs_cudnn > 0) {
                  if (int8) r.note += "; vs_cudnn against cuDNN bf16";
                  if (from_b2b && mine.graph_ms > 0) r.note += "; vs_cudnn from back-to-back figures";
                }
              } else {
                auto& f = failures[{e.impl, dtype_name}];
                if (f.first++ == 0) f.second = mine.error;
              }
              results.push_back({r, mine.how(), mine.isolated_ms});
            }
            if (have_cudnn) {
              Row c = decode_row("cudnn", dtype_name, shape);
              set_figures(&c, theirs, shape, cache_dtype);
              if (theirs.ok() && copies > 1) c.note += "; --cold: calls rotate over " + std::to_string(copies) + " copies of the cache";
              if (theirs.ok()) {
                c.note += theirs_spread;
                c.ratio_vs_cudnn = 1.0;
              } else {
                auto& f = failures[{"cudnn", dtype_name}];
                if (f.first++ == 0) f.second = theirs.error;
              }
              results.push_back({c, theirs.how(), theirs.isolated_ms});
            }
            // This shape's rows at once on stderr: a run cut short keeps what it measured.
            for (size_t r = first_result; r < results.size(); ++r)
              std::fprintf(stderr, "[bench decode row] %s qlen=%d batch=%d len=%d %.5f ms%s\n",
                           results[r].row.impl.c_str(), qlen, batch, len, results[r].row.ms,
                           results[r].row.ratio_vs_cudnn > 0 ? fmt(" vs_cudnn %.3f", results[r].row.ratio_vs_cudnn).c_str() : "");
          }
        }
      }

  for (const DecodeResult& d : results) rows.push_back(d.row);
  print_decode_table(results, copy_tbps);
  std::printf("\ntiming: 'graph' = a CUDA graph of %d calls replayed, per call; 'b2b' = calls launched back to back "
              "(graph capture failed, see the CSV note); median of 11 groups of about %.0f ms.\n"
              "TFLOP/s = 4*b*hq*qlen*len*d / t; TB/s = K+V cache bytes (+ int8 scales) / t; vs_copy = TB/s over "
              "the device-copy ceiling; vs_cudnn = cuDNN's time / this row's (int8 rows: against cuDNN bf16).\n",
              kGraphCalls, opt.target_group_ms);
  if (!cudnn) std::printf("note: cuDNN not loaded: no cudnn rows, no vs_cudnn\n");
  for (const auto& [key, f] : failures)
    std::printf("note: %s %s: %d row%s not timed; first reason: %s\n", key.first.c_str(), key.second.c_str(), f.first,
                f.first == 1 ? "" : "s", f.second.c_str());
  if (!opt.csv_path.empty()) {
    write_csv(opt.csv_path, info, rows);
    std::printf("CSV written to %s (%zu rows)\n", opt.csv_path.c_str(), rows.size());
  }
  return 0;
}

}  // namespace hopattn::bench
