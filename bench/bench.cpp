#include "bench.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "attention/device/compiled_set.hpp"
#include "attention/experimental.hpp"
#include "attention_reference.hpp"
#include "attn_rounds.hpp"
#include "baselines/baselines.hpp"
#include "cli_parse.hpp"
#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "device_utils.hpp"
#include "gpu_state.hpp"
#include "plot.hpp"
#include "results.hpp"
#include "timing.hpp"

namespace hopattn::bench {
namespace {

using reference::DeviceBuffer;

constexpr int64_t kIntMax = INT32_MAX;

// A comma-separated list of integers in [lo, hi] (cli_parse.hpp: whole tokens, the flag named).
std::vector<int> parse_int_list(const std::string& flag, const std::string& s, int64_t lo = 1, int64_t hi = kIntMax) {
  std::vector<int> out;
  for (int64_t v : cli::parse_int_list(flag, s, lo, hi)) out.push_back(int(v));
  return out;
}

void progress(int done, int total, const std::string& what) {
  std::fprintf(stderr, "[bench %d/%d] %s\n", done, total, what.c_str());
  std::fflush(stderr);
}

}  // namespace

// ---- ceilings ----------------------------------------------------------------------------------

Row measure_gemm_ceiling(Stream stream, double target_ms) {
  const int n = 8192;
  DeviceBuffer a(size_t(n) * n * 2), b(size_t(n) * n * 2), d(size_t(n) * n * 2);
  reference::fill_normal(a.get(), HOPATTN_DTYPE_BF16, int64_t(n) * n, 11, 1.0f, stream);
  reference::fill_normal(b.get(), HOPATTN_DTYPE_BF16, int64_t(n) * n, 12, 1.0f, stream);
  baselines::CublasGemm gemm;
  const Timing t = time_launches(
      [&] {
        const Status s = gemm.gemm_bf16(n, n, n, a.get(), b.get(), d.get(), stream);
        if (!s.ok()) throw std::runtime_error(s.to_string());
      },
      stream, target_ms);
  Row r;
  r.op = "ceiling", r.impl = "cublas", r.dtype = "bf16";
  r.m = r.n = r.k = n;
  r.layout = "rrr";
  r.ms = t.median_ms;
  r.tflops = 2.0 * n * double(n) * n / (t.median_ms * 1e-3) / 1e12;
  r.note = "bf16 GEMM 8192^3, fp32 accumulation";
  return r;
}

Row measure_copy_ceiling(Stream stream, double target_ms) {
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer src(bytes), dst(bytes);
  reference::fill_normal(src.get(), HOPATTN_DTYPE_FP32, int64_t(bytes / 4), 13, 1.0f, stream);
  const Timing t = time_launches(
      [&] { HOPATTN_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream)); },
      stream, target_ms);
  Row r;
  r.op = "ceiling", r.impl = "copy", r.dtype = "";
  r.ms = t.median_ms;
  r.tbps = 2.0 * bytes / (t.median_ms * 1e-3) / 1e12;
  r.note = "device-to-device copy of 1 GiB, bytes read + written";
  return r;
}

namespace {

// ---- attention ---------------------------------------------------------------------------------

struct AttnBuffers {
  DeviceBuffer q, k, v, o;
  DeviceBuffer sinks;    // --sinks: (heads_q) float32 for the largest head count, else empty
  DeviceBuffer descale;  // --dtype e4m3: ones, (batch, heads_kv) float32 for the largest such product
};

// One cell of the attention grid: the FlashAttention-3 grid's (batch = tokens / seqlen, heads =
// hidden / hdim, seqlen_q = seqlen_k, MHA) or one of --shapes (GQA prefill, short chunks).
struct AttnCell {
  int hdim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv;
  bool window = false;
  int window_left = -1, window_right = -1;
  int64_t q_elems() const { return int64_t(batch) * seqlen_q * heads_q * hdim; }
  int64_t kv_elems() const { return int64_t(batch) * seqlen_k * heads_kv * hdim; }
};

AttentionForwardArgs attention_args(const AttnBuffers& buf, hopattn_dtype_t dtype, const AttnCell& c, float softcap) {
  AttentionForwardArgs args{};
  args.q = tensor_bshd(buf.q.get(), dtype, c.batch, c.seqlen_q, c.heads_q, c.hdim);
  args.k = tensor_bshd(buf.k.get(), dtype, c.batch, c.seqlen_k, c.heads_kv, c.hdim);
  args.v = tensor_bshd(buf.v.get(), dtype, c.batch, c.seqlen_k, c.heads_kv, c.hdim);
  // e4m3 inputs: bf16 O and descales of 1 (read per tile like any others).
  args.o = tensor_bshd(buf.o.get(), dtype == HOPATTN_DTYPE_E4M3 ? HOPATTN_DTYPE_BF16 : dtype, c.batch, c.seqlen_q,
                       c.heads_q, c.hdim);
  if (dtype == HOPATTN_DTYPE_E4M3 && buf.descale.get() != nullptr)
    args.q_descale = args.k_descale = args.v_descale = tensor_descale(buf.descale.as<float>(), c.batch, c.heads_kv);
  args.causal = c.causal;
  if (c.window) {
    args.window = 1;
    args.window_left = c.window_left;
    args.window_right = c.causal != 0 && c.window_right > 0 ? 0 : c.window_right;
  }
  args.softcap = softcap;
  if (buf.sinks.get() != nullptr) {
    args.sinks.data = buf.sinks.get();
    args.sinks.dtype = HOPATTN_DTYPE_FP32;
    args.sinks.rank = 1;
    args.sinks.shape[0] = c.heads_q;
    args.sinks.stride[0] = 1;
  }
  return args;
}

// What a cell computes beyond plain attention, for the rows' notes ("" when nothing).
std::string cell_options(const AttentionForwardArgs& a) {
  std::ostringstream os;
  if (a.window != 0) os << "window " << a.window_left << ":" << a.window_right;
  if (a.softcap > 0) os << (os.tellp() > 0 ? "; " : "") << "softcap " << a.softcap;
  if (a.sinks.data != nullptr) os << (os.tellp() > 0 ? "; " : "") << "sinks";
  return os.str();
}

// The cudnn row's arguments for an e4m3 cell: the hopattn row's without its (batch, heads_kv)
// descales of 1 (cuDNN's are per tensor; the plugin's own are 1), with its bf16 O where cuDNN takes
// that; where cuDNN writes no 16-bit O for FP8 inputs (Hopper: cudnn-frontend's support surface
// gives bf16/fp16 O to Blackwell with cuDNN 9.13+), the same buffer as an e4m3 O (1-byte elements,
// the same element strides: it fits). One untimed call per cell decides; `note` says what the row is.
AttentionForwardArgs cudnn_fp8_args(const baselines::CudnnSdpa& cudnn, const AttentionForwardArgs& hopattn_args,
                                    Stream stream, std::string* note) {
  AttentionForwardArgs args = hopattn_args;
  args.q_descale = args.k_descale = args.v_descale = Tensor{};
  // No FP8 entry point in the plugin, or options the baseline does not take: the row's reason says so.
  if (!cudnn.has_fp8() || args.window != 0 || args.softcap > 0 || args.sinks.data != nullptr) return args;
  const Status bf16 = cudnn.forward(args, stream);
  HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bf16.ok() || bf16.code() != StatusCode::kNotSupported) {
    *note = "cuDNN FP8 SDPA, O bf16, descales 1";
    return args;  // a failure of another kind is the row's reason when it is timed
  }
  AttentionForwardArgs e4m3 = args;
  e4m3.o.dtype = HOPATTN_DTYPE_E4M3;
  *note = "cuDNN FP8 SDPA, O e4m3 (scale_o 1; bf16 O: " + bf16.message() + "), descales 1";
  return e4m3;
}

void print_attention_table(const std::vector<Row>& rows, double gemm_tflops) {
  std::printf("\n%-8s %-5s %6s %11s %7s %6s %-22s %9s %9s %9s %9s\n", "op", "hdim", "causal", "seqlen",
              "batch", "heads", "impl", "ms", "TFLOP/s", "vs_cudnn", "vs_gemm");
  for (const Row& r : rows) {
    if (r.op != "attn_fwd") continue;
    char ratio[16] = "-", gemm[16] = "-";
    if (r.ratio_vs_cudnn > 0) std::snprintf(ratio, sizeof(ratio), "%.3f", r.ratio_vs_cudnn);
    if (gemm_tflops > 0) std::snprintf(gemm, sizeof(gemm), "%.3f", r.tflops / gemm_tflops);
    char seq[32], heads[32];
    std::snprintf(seq, sizeof(seq), r.seqlen_q == r.seqlen_k ? "%d" : "%d:%d", r.seqlen_q, r.seqlen_k);
    std::snprintf(heads, sizeof(heads), r.heads_q == r.heads_kv ? "%d" : "%d:%d", r.heads_q, r.heads_kv);
    if (r.ms <= 0) {  // not timed: the reason is in the row's note (CSV) and the notes above the table
      std::printf("%-8s %-5d %6d %11s %7d %6s %-22s %9s %9s %9s %9s\n", r.op.c_str(), r.hdim, r.causal, seq, r.batch,
                  heads, r.impl.c_str(), "-", "-", "-", "-");
      continue;
    }
    std::printf("%-8s %-5d %6d %11s %7d %6s %-22s %9.4f %9.1f %9s %9s\n", r.op.c_str(), r.hdim, r.causal, seq,
                r.batch, heads, r.impl.c_str(), r.ms, r.tflops, ratio, gemm);
  }
}

}  // namespace

std::string bench_usage() {
  return "usage: hopattn bench [--op attn|decode|gemm] [--csv FILE] [--plot FILE.svg] [--hdim 64,128,256] [--seqlen 512,...,16384]\n"
         "                     [--causal 0,1] [--dtype bf16|fp16|e4m3] [--tokens 16384] [--hidden 2048]\n"
         "                     [--no-ceilings] [--quick] [--kernels default,NAME,...] [--shapes B:SQ:SK:HQ:HKV[:WL:WR],...]\n"
         "                     [--softcap X] [--sinks] [--varlen mix16|L1,L2,... [--varlen-heads HQ:HKV]]\n"
         "                     [--rounds 1] [--warmup-ms 200] [--cudnn-lib PATH/libcudnn.so.9]\n"
         "Default grid: FlashAttention-3 paper's (16k tokens, hidden 2048, bf16, head dims 64/128/256,\n"
         "seqlen 512..16k, causal and not), with cuDNN and the ceilings measured in the same run.\n"
         "--quick: a short grid (hdim 128, seqlen 1024 and 4096) for a smoke run.\n"
         "--kernels: hopattn kernels to time by name (`hopattn info` lists them; default: the kernel the\n"
         "library picks for each call); rows of a named kernel have impl hopattn:<name>.\n"
         "--shapes B:SQ:SK:HQ:HKV,...: cells of these shapes (per --hdim and --causal) instead of the\n"
         "FA3 grid: GQA prefill (e.g. 2:4096:4096:32:8), short chunks against a cache (1:77:4096:32:8);\n"
         "B:SQ:SK:HQ:HKV:WL:WR adds a sliding window (WL, WR: keys before and after; -1 unbounded).\n"
         "--softcap X: every cell with the logit softcap X. --sinks: every cell with random per-head\n"
         "attention sinks. The cuDNN row is not timed for such cells; TFLOP/s count the visible pairs.\n"
         "--varlen mix16|L1,L2,...: instead of the grid, a packed variable-length batch (self-attention\n"
         "prefill, q and k lengths equal; mix16: 16 sequences of 100..7984 tokens, 16384 in all) per\n"
         "--hdim and --causal, heads hidden/hdim (MHA) or --varlen-heads HQ:HKV. Rows (op attn_varlen):\n"
         "hopattn:varlen (the packed call), hopattn:padded-equal (the same tokens as sequences of 4096,\n"
         "batch total/4096 rounded; 1 x total below 4096), hopattn:varlen-uniform and hopattn:padded-uniform\n"
         "(sequences of 2048, packed and padded: the varlen path's bare cost), timed in the rotating rounds\n"
         "of the grid; hopattn:NAME:<row> for --kernels NAME. No cuDNN row. TFLOP/s count each sequence's\n"
         "visible pairs; the summary and each varlen row's note give varlen/padded-equal and\n"
         "varlen-uniform/padded-uniform (issue 36's target: varlen/padded-equal >= 0.97).\n"
         "--bf16-values: with --dtype fp16, inputs rounded to bf16's significand first.\n"
         "--dtype e4m3: FP8 Q, K, V (bf16 O, descales of 1): the FP8 kernels' head dims only. The cudnn row\n"
         "is cuDNN's FP8 SDPA (cudnn-frontend sdpa_fp8) on the same inputs, descales of 1, P scaled by 256\n"
         "before its e4m3 rounding as hopattn's: bf16 O where cuDNN writes one for FP8 inputs (Blackwell,\n"
         "cuDNN 9.13+), else e4m3 O (scale_o 1; Hopper), the row's note says which; causal cells need\n"
         "seqlen_q == seqlen_k on Hopper (cuDNN's FP8 mask there is top-left). A configuration cuDNN does\n"
         "not take (or a plugin built before its FP8 entry point) is a row with the reason, not a time.\n"
         "--override KEY=VALUE,...: forward experiments for every hopattn row (stale_max_log2, narrow_pv,\n"
         "skip_unseen, causal_group, persistent_group, varlen_pdl, varlen_dynamic: attention/experimental.hpp). A --kernels\n"
         "entry NAME+KEY=VALUE+... (NAME may be default) is a row with experiments of its own.\n"
         "--rounds N: time each cell's implementations N times, interleaved (the order rotates each\n"
         "round), and report each one's median (note: the spread); one round moves a cell by up to ~5 %.\n"
         "--warmup-ms T: before each cell, run its first implementation T ms untimed (default 200; 0:\n"
         "none), so that the first one timed does not get the GPU fresh from the previous cell's pause.\n"
         "--cudnn-lib PATH: the cuDNN the baseline uses (both ops), e.g. PyTorch's newer one in\n"
         "site-packages/nvidia/cudnn/lib/libcudnn.so.9, instead of the loader's first; its version is in\n"
         "every cudnn row's note (scripts/gpu-run.sh passes the newest it finds).\n"
         "\n"
         "usage: hopattn bench --op decode [--csv FILE] [--quick] [--qlen 1,4,16] [--heads 64:8,32:8,8:1]\n"
         "                     [--cache 1:8192,1:65536,8:8192,32:8192,128:2048,16:32768]\n"
         "                     [--kv-dtype bf16,int8] [--kernels default,NAME,...] [--splits 0,2,16] [--hdim 128]\n"
         "                     [--no-ceilings] [--rounds 1] [--int8-tail] [--quant-block 128] [--page-sizes 0] [--window L]\n"
         "                     [--isolated] [--cold]\n"
         "Attention over a KV cache (hopattn_kvcache_attention, causal, every cache full, default\n"
         "heuristics) vs cuDNN SDPA at the same shape and 16-bit dtype, with the device-copy ceiling\n"
         "(TB/s; not with --no-ceilings).\n"
         "--qlen: query rows per sequence (1: decode; 4, 16: speculative). --heads: heads_q:heads_kv.\n"
         "--cache: batch:cache length. --kv-dtype: cache dtypes (bf16, fp16, int8 with fp32 scales,\n"
         "quant_block --quant-block (128; or 64), bf16 queries); a call that fails (e.g. not supported yet) is a row with its\n"
         "reason instead of a time. --quick: heads 32:8, caches 1:8192 and 8:8192, qlen 1 (flags given\n"
         "explicitly win). --kernels: decode kernels by name (kv16_* for 16-bit caches, kv8_* for int8;\n"
         "NAME+combine_pdl=0: the split-KV combine launched plainly, not as a programmatic dependent;\n"
         "NAME+split_pdl=0: the 16-bit split kernel likewise (the two may be combined: +a=0+b=0);\n"
         "NAME+pack=0|1: the chunk path may not / may pack GQA groups into its Q tiles (Overrides::chunk_pack_gqa; rows\n"
         ":nopack / :pack; without it, the library's default: packing on);\n"
         "a name of the other cache type is skipped; \"decode\" and \"fwd\": the path forced, the decode kernels or the\n"
         "chunk path's forward kernel with split-KV, rows hopattn:decode and hopattn:fwd). --splits: KvCacheArgs::num_splits values timed (0:\n"
         "the heuristic; others forced, capped at one split per 128 keys; rows hopattn[:NAME]:sK). --rounds N: as for attention\n"
         "(every row and the cell's cuDNN row timed N times in rotating order; medians). --int8-tail: each\n"
         "int8 row also timed with 16-bit tail blocks given (KvCacheArgs::k_tail, v_tail; rows <impl>:tail);\n"
         "the caches are full blocks, so the tails hold 0 tokens: the cost of the tail kernel and combine.\n"
         "--page-sizes 0,128,256: 0 the contiguous cache; P the same cache bytes read as a pool of P-token\n"
         "pages through a shuffled page table (rows <impl>:pP; len a multiple of P; int8 caches: P a multiple\n"
         "of --quant-block, the scales paged alike: --quant-block 64 to time pages of 64).\n"
         "--window L: each hopattn row also timed with a sliding window of the L keys before each query\n"
         "(KvCacheArgs::window, window_left L; int8 caches: the default rows and kv8_wgmma_options_1cta's, the\n"
         "int8 kernel that takes windows; rows <impl>:wL, whose note gives their time over the\n"
         "same row without the window: the tiles outside the window are skipped, not masked; their\n"
         "TFLOP/s and TB/s count the window's keys: len -> min(len, L + 1) per row, min(len, L + qlen) read).\n"
         "--isolated: each row's note also gives the time per call when every call in the graph is followed\n"
         "by a 4-byte memset (a plain dependency no programmatic launch crosses, as the other kernels of a\n"
         "model step are), the memsets' own time subtracted: a call that cannot overlap the next one.\n"
         "--cold: consecutive calls read different copies of the cache (and scales), as many as make 2.5x\n"
         "the L2 cache together, so that a cache smaller than L2 is not served from it on the next call\n"
         "(a model step reads each layer's cache once); without it a 1 x 8k cache (34 MB) stays in an\n"
         "H100's 50 MB L2 across the timed calls. The note says how many copies.\n"
         "Figures: ms per call (CUDA graph replay when capturable, else back to back),\n"
         "TFLOP/s = 4*b*hq*qlen*len*d/t, TB/s = K+V cache bytes (+ scales)/t; docs/decode.md.\n";
}

namespace {

std::vector<std::pair<int, int>> parse_pair_list(const std::string& s, const std::string& flag) {
  std::vector<std::pair<int, int>> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw std::invalid_argument(flag + ": '" + item + "' is not A:B");
    if (item.find(':', colon + 1) != std::string::npos) throw std::invalid_argument(flag + ": '" + item + "' is not A:B");
    out.emplace_back(int(cli::parse_int(flag, item.substr(0, colon), 1, kIntMax)),
                     int(cli::parse_int(flag, item.substr(colon + 1), 1, kIntMax)));
  }
  if (out.empty()) throw std::invalid_argument(flag + ": empty list");
  return out;
}

std::vector<std::string> parse_word_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (out.empty()) throw std::invalid_argument(s);
  return out;
}

// "B:SQ:SK:HQ:HKV,...": batch, query and key lengths, query and KV heads.
std::vector<AttnShape> parse_shape_list(const std::string& s) {
  std::vector<AttnShape> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::vector<int> v;
    std::stringstream fs(item);
    std::string f;
    while (std::getline(fs, f, ':')) v.push_back(int(cli::parse_int("--shapes", f, v.size() < 5 ? 1 : -1, kIntMax)));
    if ((v.size() != 5 && v.size() != 7) || v[3] % v[4] != 0)
      throw std::invalid_argument("--shapes: '" + item +
                                  "' is not B:SQ:SK:HQ:HKV[:WL:WR] (positive, HQ a multiple of HKV; window sides >= -1)");
    AttnShape shape{v[0], v[1], v[2], v[3], v[4]};
    if (v.size() == 7) shape.window = true, shape.window_left = v[5], shape.window_right = v[6];
    out.push_back(shape);
  }
  if (out.empty()) throw std::invalid_argument("--shapes: empty list");
  return out;
}

void check_decode_options(const BenchOptions& o) {
  for (int q : o.qlens)
    if (q < 1) throw std::invalid_argument("--qlen " + std::to_string(q) + " must be at least 1");
  for (const auto& [hq, hkv] : o.decode_heads)
    if (hq < 1 || hkv < 1 || hq % hkv != 0)
      throw std::invalid_argument("--heads " + std::to_string(hq) + ":" + std::to_string(hkv) +
                                  ": heads_q must be a positive multiple of heads_kv");
  for (const auto& [b, len] : o.decode_caches) {
    if (b < 1 || len < 1)
      throw std::invalid_argument("--cache " + std::to_string(b) + ":" + std::to_string(len) + " must be positive");
    for (int q : o.qlens)  // causal: a sequence needs at least q_len cached tokens
      if (q > len)
        throw std::invalid_argument("--qlen " + std::to_string(q) + " is longer than the cache length " +
                                    std::to_string(len));
  }
  for (const std::string& t : o.kv_dtypes)
    if (t != "bf16" && t != "fp16" && t != "int8")
      throw std::invalid_argument("--kv-dtype: " + t + " is not bf16, fp16 or int8");
  for (int d : o.decode_hdims)
    if (d <= 0) throw std::invalid_argument("--hdim " + std::to_string(d) + " must be positive");
}

}  // namespace

bool parse_bench_options(int argc, char** argv, BenchOptions* o, std::string* error) {
  try {
    std::vector<std::string> given;  // the flags on the command line, to check them against --op
    std::vector<int> hdim_flag;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      given.push_back(a);
      if (a == "--csv") o->csv_path = value();
      else if (a == "--cudnn-lib") o->cudnn_library = value();
      else if (a == "--plot") o->plot_path = value();
      else if (a == "--hdim") o->hdims = hdim_flag = parse_int_list(a, value(), 1, 1024);
      else if (a == "--seqlen") o->seqlens = parse_int_list(a, value());
      else if (a == "--causal") o->causal = parse_int_list(a, value(), 0, 1);
      else if (a == "--tokens") o->tokens = int(cli::parse_int(a, value(), 1, kIntMax));
      else if (a == "--hidden") o->hidden = int(cli::parse_int(a, value(), 1, kIntMax));
      else if (a == "--no-ceilings") o->ceilings = false;
      else if (a == "--bf16-values") o->bf16_values = true;
      else if (a == "--kernels") o->kernels = parse_word_list(value());
      else if (a == "--override") {
        for (const std::string& kv : parse_word_list(value())) {
          const size_t eq = kv.find('=');
          bool known = false;
          std::string keys;
          for (const std::string& k : forward_override_keys()) {
            known |= eq != std::string::npos && kv.substr(0, eq) == k;
            keys += (keys.empty() ? "" : ", ") + k;
          }
          if (!known) throw std::invalid_argument("--override: '" + kv + "' is not KEY=VALUE with KEY one of " + keys);
          o->overrides.emplace_back(kv.substr(0, eq), cli::parse_real("--override " + kv.substr(0, eq), kv.substr(eq + 1), -1e9, 1e9));
        }
      }
      else if (a == "--shapes") o->shapes = parse_shape_list(value());
      else if (a == "--varlen") {
        const std::string spec = value();
        o->varlen_lens = varlen_preset(spec);
        o->varlen_name = o->varlen_lens.empty() ? "" : spec;
        if (o->varlen_lens.empty()) {
          if (spec.empty() || spec[0] < '0' || spec[0] > '9')
            throw std::invalid_argument("--varlen: '" + spec + "' is not mix16 or a list of lengths L1,L2,...");
          o->varlen_lens = parse_int_list(a, spec, 1, kIntMax);
        }
        int64_t sum = 0;
        for (int l : o->varlen_lens) sum += l;
        if (sum > kIntMax)
          throw std::invalid_argument("--varlen: " + std::to_string(sum) + " tokens in all; at most 2^31 - 1 (int32 offsets)");
      }
      else if (a == "--varlen-heads") {
        const auto heads = parse_pair_list(value(), a);
        if (heads.size() != 1 || heads[0].first % heads[0].second != 0)
          throw std::invalid_argument("--varlen-heads: one HQ:HKV, HQ a multiple of HKV");
        o->varlen_heads = heads[0];
      }
      else if (a == "--softcap") o->softcap = float(cli::parse_real(a, value(), 0.0, 1e6));
      else if (a == "--sinks") o->sinks = true;
      else if (a == "--warmup-ms") {
        o->warmup_ms = cli::parse_real(a, value(), 0, 60000);
      } else if (a == "--rounds") {
        o->rounds = int(cli::parse_int(a, value(), 1, 100));
      }
      else if (a == "--qlen") o->qlens = parse_int_list(a, value(), 1, 65536);
      else if (a == "--heads") o->decode_heads = parse_pair_list(value(), a);
      else if (a == "--cache") o->decode_caches = parse_pair_list(value(), a);
      else if (a == "--kv-dtype") o->kv_dtypes = parse_word_list(value());
      else if (a == "--int8-tail") o->int8_tail = true;
      else if (a == "--quant-block") {
        o->quant_block = int(cli::parse_int(a, value(), 64, 128));
        if (o->quant_block != 64 && o->quant_block != 128) throw std::invalid_argument("--quant-block: 64 or 128");
      }
      else if (a == "--page-sizes") o->page_sizes = parse_int_list(a, value(), 0, 256);
      else if (a == "--window") o->decode_window = int(cli::parse_int(a, value(), 0, INT32_MAX));
      else if (a == "--isolated") o->decode_isolated = true;
      else if (a == "--cold") o->decode_cold = true;
      else if (a == "--splits") {
        o->splits = parse_int_list(a, value(), 0, 128);  // 0: the heuristic
      }
      else if (a == "--op") {
        const std::string op = value();
        if (op != "attn" && op != "decode")
          throw std::invalid_argument("--op: attn (default), decode or gemm (gemm: a build with HOPATTN_BUILD_GEMM)");
        o->op = op;
      }
      else if (a == "--quick") o->hdims = {128}, o->seqlens = {1024, 4096}, o->target_group_ms = 10, quick = true;
      else if (a == "--dtype") {
        const std::string t = value();
        if (t == "bf16") o->dtype = HOPATTN_DTYPE_BF16;
        else if (t == "fp16") o->dtype = HOPATTN_DTYPE_FP16;
        else if (t == "e4m3") o->dtype = HOPATTN_DTYPE_E4M3;
        else throw std::invalid_argument("--dtype: " + t + " is not bf16, fp16 or e4m3");
      } else {
        throw std::invalid_argument("unknown option " + a);
      }
    }
    auto was_given = [&](const char* flag) { return std::find(given.begin(), given.end(), flag) != given.end(); };
    if (o->op == "decode") {
      for (const char* f : {"--plot", "--seqlen", "--causal", "--tokens", "--hidden", "--dtype", "--shapes", "--override",
                            "--softcap", "--sinks", "--varlen", "--varlen-heads"})
        if (was_given(f))
          throw std::invalid_argument(std::string(f) + " applies to --op attn, not decode" +
                                      (std::string(f) == "--dtype" ? " (--kv-dtype sets the cache dtype)" : ""));
      if (quick) {  // a smoke subset; the decode flags given explicitly win
        if (!was_given("--qlen")) o->qlens = {1};
        if (!was_given("--heads")) o->decode_heads = {{32, 8}};
        if (!was_given("--cache")) o->decode_caches = {{1, 8192}, {8, 8192}};
      }
      if (!hdim_flag.empty()) o->decode_hdims = hdim_flag;
      check_decode_options(*o);
    } else {
      for (const char* f : {"--qlen", "--heads", "--cache", "--kv-dtype", "--splits", "--int8-tail", "--quant-block", "--page-sizes",
                            "--window", "--isolated", "--cold"})
        if (was_given(f)) throw std::invalid_argument(std::string(f) + " applies to --op decode only");
      const bool varlen = !o->varlen_lens.empty();
      if (varlen) {  // the packed batch replaces the grid and its seqlens
        for (const char* f : {"--seqlen", "--tokens", "--shapes", "--plot"})
          if (was_given(f)) throw std::invalid_argument(std::string(f) + " does not apply with --varlen");
      } else if (was_given("--varlen-heads")) {
        throw std::invalid_argument("--varlen-heads applies with --varlen only");
      }
      for (int s : o->seqlens)
        if (s <= 0 || o->tokens % s != 0) throw std::invalid_argument("--seqlen " + std::to_string(s) + " must divide --tokens");
      if (!varlen || o->varlen_heads.first == 0)  // heads = hidden / hdim
        for (int d : o->hdims)
          if (d <= 0 || o->hidden % d != 0) throw std::invalid_argument("--hdim " + std::to_string(d) + " must divide --hidden");
    }
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
  return true;
}

int run_bench(const BenchOptions& opt) {
  std::string why;
  if (!has_sm90_gpu(&why)) {
    std::fprintf(stderr,
                 "hopattn bench needs an NVIDIA Hopper GPU (sm_90: H100 or H200) with a working CUDA driver; %s\n",
                 why.c_str());
    return 2;
  }
  cudaStream_t stream;
  HOPATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int device = 0;  // for the NVML samples of each row (gpu_state.hpp)
  HOPATTN_CUDA_CHECK(cudaGetDevice(&device));
  RunInfo info = current_run_info();
  std::printf("hopattn bench  commit %s  %s  %s\n", info.commit.c_str(), info.date.c_str(), info.gpu.c_str());

  std::unique_ptr<baselines::CudnnSdpa> cudnn = baselines::CudnnSdpa::load(&why, opt.cudnn_library);
  if (cudnn) {
    info.cudnn = cudnn->version_string();
    std::printf("cuDNN %s loaded (SDPA through cudnn-frontend)%s%s\n", info.cudnn.c_str(),
                opt.cudnn_library.empty() ? "" : " from ", opt.cudnn_library.c_str());
  } else {
    std::printf("cuDNN baseline unavailable, going on without it: %s\n", why.c_str());
  }

  if (opt.op == "decode") {
    const int rc = run_decode_bench(opt, stream, info, cudnn.get());
    cudaStreamDestroy(stream);
    return rc;
  }

  std::vector<Row> rows;
  double gemm_tflops = 0;
  std::vector<AttnCell> cells;
  const bool varlen = !opt.varlen_lens.empty();  // --varlen: its own cells (bench/varlen.cpp)
  for (int hdim : opt.hdims)
    for (int causal : opt.causal) {
      if (varlen) continue;
      if (opt.shapes.empty())
        for (int seqlen : opt.seqlens) {
          const int batch = opt.tokens / seqlen, heads = opt.hidden / hdim;
          cells.push_back({hdim, causal, batch, seqlen, seqlen, heads, heads});
        }
      for (const AttnShape& s : opt.shapes)
        cells.push_back({hdim, causal, s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv, s.window,
                         s.window_left, s.window_right});
    }
  const int total = int(varlen ? opt.hdims.size() * opt.causal.size() : cells.size()) + (opt.ceilings ? 2 : 0);
  int done = 0;
  if (opt.ceilings) {
    progress(++done, total, "ceiling: cuBLAS bf16 GEMM 8192^3");
    rows.push_back(measure_gemm_ceiling(stream, opt.target_group_ms));
    gemm_tflops = rows.back().tflops;
    progress(++done, total, "ceiling: device copy 1 GiB");
    rows.push_back(measure_copy_ceiling(stream, opt.target_group_ms));
    std::printf("ceilings: cuBLAS bf16 GEMM 8192^3 %.1f TFLOP/s, device copy %.2f TB/s\n", gemm_tflops,
                rows.back().tbps);
  }

  if (varlen) {
    const int rc = run_varlen_bench(opt, stream, gemm_tflops, done, total, &rows);
    if (!opt.csv_path.empty()) {
      write_csv(opt.csv_path, info, rows);
      std::printf("CSV written to %s (%zu rows)\n", opt.csv_path.c_str(), rows.size());
    }
    cudaStreamDestroy(stream);
    return rc;
  }

  int64_t elems = 0;  // the largest Q (or O) and K (or V) of any cell
  for (const AttnCell& c : cells) elems = std::max({elems, c.q_elems(), c.kv_elems()});
  AttnBuffers buf{DeviceBuffer(elems * 2), DeviceBuffer(elems * 2), DeviceBuffer(elems * 2), DeviceBuffer(elems * 2), {}, {}};
  int sink_heads = 1;  // per-head logits of the scores' scale (gpt-oss's are learned, O(1))
  for (const AttnCell& c : cells) sink_heads = std::max(sink_heads, c.heads_q);
  if (opt.sinks) buf.sinks = DeviceBuffer(size_t(sink_heads) * 4);
  if (opt.dtype == HOPATTN_DTYPE_E4M3) {
    int64_t descales = 1;
    for (const AttnCell& c : cells) descales = std::max<int64_t>(descales, int64_t(c.batch) * c.heads_kv);
    const std::vector<float> ones(size_t(descales), 1.0f);
    buf.descale = DeviceBuffer(ones.size() * 4);
    HOPATTN_CUDA_CHECK(cudaMemcpy(buf.descale.get(), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice));
  }
  fill_attention_inputs(buf.q.get(), buf.k.get(), buf.v.get(), elems, opt.sinks ? buf.sinks.get() : nullptr, sink_heads,
                        opt, stream);

  // (row name, kernel: "" the library's choice, a registry name, or "cudnn")
  std::vector<std::pair<std::string, std::string>> impls;
  for (const std::string& k : opt.kernels)
    impls.emplace_back(k == "default" ? "hopattn" : "hopattn:" + k, k == "default" ? "" : k);
  if (cudnn) impls.emplace_back("cudnn", "cudnn");
  auto forward_fn = [&](const std::string& kernel) -> ForwardFn {
    if (kernel == "cudnn")
      return [&](const AttentionForwardArgs& a, Stream s) {
        if (a.window != 0 || a.softcap > 0 || a.sinks.data != nullptr)  // the plugin would compute plain attention
          return Status::unsupported("the cuDNN baseline does not take a window, softcap or sinks here");
        return cudnn->forward(a, s);  // e4m3: its FP8 SDPA (args from cudnn_fp8_args)
      };
    return hopattn_forward_fn(kernel, opt.overrides);
  };

  std::map<std::string, std::string> skipped;  // impl -> first reason
  for (const AttnCell& cell : cells) {
      {
        const int hdim = cell.hdim, causal = cell.causal;
        std::ostringstream what;
        what << "attn_fwd " << hopattn_dtype_name(opt.dtype) << " hdim=" << hdim << " causal=" << causal
             << " seqlen_q=" << cell.seqlen_q << " seqlen_k=" << cell.seqlen_k << " batch=" << cell.batch
             << " heads=" << cell.heads_q << ":" << cell.heads_kv;
        reference::AttnProblem prob{cell.batch, cell.seqlen_q, cell.seqlen_k, cell.heads_q, cell.heads_kv,
                                    hdim,       causal != 0,   0.0f};
        const AttentionForwardArgs args = attention_args(buf, opt.dtype, cell, opt.softcap);
        prob.window = args.window != 0;  // FLOPs: the pairs the window leaves visible
        prob.window_left = args.window_left, prob.window_right = args.window_right;
        const std::string options = cell_options(args);
        if (!options.empty()) what << " " << options;
        progress(++done, total, what.str());
        std::string picked;  // the kernel the library picks for this cell (the "hopattn" row's)
        if (!experimental::forward_kernel_name(args, experimental::Overrides{}, &picked).ok()) picked = "?";
        double cudnn_ms = 0;
        // The cell's implementations in rotating rounds (attn_rounds.hpp), starting one later each cell.
        std::vector<TimedCall> calls;
        std::vector<std::string> call_notes(impls.size());  // a row's own note (the cudnn row's O type)
        for (size_t k = 0; k < impls.size(); ++k) {
          const auto& [name, kernel] = impls[k];
          AttentionForwardArgs call_args = args;
          if (kernel == "cudnn" && opt.dtype == HOPATTN_DTYPE_E4M3)
            call_args = cudnn_fp8_args(*cudnn, args, stream, &call_notes[k]);
          calls.push_back({name, forward_fn(kernel), call_args});
        }
        const std::vector<RoundsTiming> timed = time_in_rounds(calls, size_t(done - 1), opt, stream, device, &skipped);
        const size_t n_impls = impls.size();
        std::vector<std::optional<Row>> measured(n_impls);
        for (size_t k = 0; k < n_impls; ++k) {
          std::optional<Row>& r = measured[k];
          r.emplace();
          r->op = "attn_fwd", r->impl = impls[k].first, r->dtype = hopattn_dtype_name(opt.dtype);
          r->hdim = hdim, r->causal = causal, r->batch = cell.batch, r->heads_q = cell.heads_q;
          r->heads_kv = cell.heads_kv, r->seqlen_q = cell.seqlen_q, r->seqlen_k = cell.seqlen_k;
          if (!timed[k].timed) {  // a row with the reason instead of a time (ms 0: empty in the CSV)
            r->note = "not timed: " + timed[k].reason;
            if (!call_notes[k].empty()) r->note = call_notes[k] + "; " + r->note;
            continue;
          }
          r->ms = timed[k].ms;
          r->note = timed[k].rounds_note;
          if (!call_notes[k].empty()) r->note = call_notes[k] + (r->note.empty() ? "" : "; ") + r->note;
          if (impls[k].second.empty()) r->note = "kernel " + picked + (r->note.empty() ? "" : "; ") + r->note;
          if (!options.empty()) r->note = options + (r->note.empty() ? "" : "; ") + r->note;
          const std::string& state = timed[k].gpu_state;
          if (!state.empty()) r->note += (r->note.empty() ? "" : "; ") + state;
          r->tflops = prob.flops() / (r->ms * 1e-3) / 1e12;
          // Q, K, V read and O written once (e4m3: 1-byte Q, K, V, a bf16 O or the cudnn row's e4m3 O)
          const double in_bytes = opt.dtype == HOPATTN_DTYPE_E4M3 ? 1.0 : 2.0;
          const double out_bytes = calls[k].args.o.dtype == HOPATTN_DTYPE_E4M3 ? 1.0 : 2.0;
          r->tbps = ((cell.q_elems() + 2.0 * cell.kv_elems()) * in_bytes + out_bytes * cell.q_elems()) /
                    (r->ms * 1e-3) / 1e12;
          if (gemm_tflops > 0) r->frac_of_gemm = r->tflops / gemm_tflops;
          if (r->impl == "cudnn") cudnn_ms = r->ms;
        }
        for (std::optional<Row>& r : measured) {
          if (!r) continue;
          if (cudnn_ms > 0 && r->ms > 0) r->ratio_vs_cudnn = cudnn_ms / r->ms;
          rows.push_back(*r);
        }
      }
  }
  for (const auto& [name, reason] : skipped)
    std::printf("note: %s was not timed: %s\n", name.c_str(), reason.c_str());
  print_attention_table(rows, gemm_tflops);
  if (!opt.csv_path.empty()) {
    write_csv(opt.csv_path, info, rows);
    std::printf("CSV written to %s (%zu rows)\n", opt.csv_path.c_str(), rows.size());
  }
  if (!opt.plot_path.empty()) {
    write_svg_plot(opt.plot_path, rows, "hopattn bench, " + info.gpu + ", commit " + info.commit);
    std::printf("plot written to %s\n", opt.plot_path.c_str());
  }
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace hopattn::bench
