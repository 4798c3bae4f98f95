// `hopattn bench`: the default grid is the FlashAttention-3 paper's prefill grid (16k tokens per
// batch, hidden 2048, bf16, head dims 64/128/256, causal and not, seqlen 512..16k), with the
// ceilings (cuBLAS bf16 GEMM 8192³, device copy) and cuDNN's SDPA measured in the same run.
// `hopattn bench --op decode`: attention over a KV cache (hopattn_kvcache_attention) against
// cuDNN's SDPA at the same shape, with the copy ceiling; see docs/decode.md ("Benchmark").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hopattn/hopattn.hpp"
#include "results.hpp"

namespace hopattn::baselines {
class CudnnSdpa;
}

namespace hopattn::bench {

// --shapes: one attention cell beyond the FA3 grid (GQA prefill, a short chunk against a cache).
struct AttnShape {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv;
  bool window = false;  // B:SQ:SK:HQ:HKV:WL:WR: a sliding window (WL, WR; -1 unbounded)
  int window_left = -1, window_right = -1;
};

struct BenchOptions {
  std::string csv_path;   // empty: no CSV
  std::string cudnn_library;  // --cudnn-lib: the libcudnn.so.9 the baseline uses (empty: the loader's)
  std::string plot_path;  // empty: no plot (SVG: TFLOP/s vs seqlen per head dim and mask)
  std::vector<int> hdims = {64, 128, 256};
  std::vector<int> seqlens = {512, 1024, 2048, 4096, 8192, 16384};
  std::vector<int> causal = {0, 1};
  hopattn_dtype_t dtype = HOPATTN_DTYPE_BF16;
  int tokens = 16384;  // batch = tokens / seqlen
  int hidden = 2048;   // heads = hidden / hdim
  bool ceilings = true;
  bool bf16_values = false;  // --bf16-values: fp16 inputs holding bf16-rounded values (a power A/B)
  std::vector<AttnShape> shapes;     // --shapes: replaces the (tokens, hidden, seqlen) grid
  float softcap = 0.0f;              // --softcap: every attention cell's (0: none)
  bool sinks = false;                // --sinks: every attention cell with random per-head sinks
  // --kernels: hopattn kernels to time, by registry name (`hopattn info`); "default": the
  // defaults table's choice per call. Forward names with --op attn, decode names with --op decode;
  // with --op decode also "decode" and "fwd": the KV-cache call's path forced (Overrides::decode_path:
  // the decode split kernels, or the chunk path's forward kernel with split-KV), for A/B rows.
  std::vector<std::string> kernels = {"default"};
  // --override KEY=VALUE,...: the forward experiments of experimental::Overrides for every hopattn
  // row (stale_max_log2, narrow_pv, skip_unseen, causal_group, persistent_group).
  std::vector<std::pair<std::string, double>> overrides;
  double target_group_ms = 25.0;
  int rounds = 1;  // attention and decode: each cell's implementations timed this many times, interleaved
  // attention: the cell's first implementation runs this long, untimed, before the cell is timed
  double warmup_ms = 200.0;

  std::string op = "attn";  // attn or decode (gemm is dispatched by the CLI before parsing)
  // --op decode: causal, every sequence's cache full (cache_seqlens = cache length), default
  // heuristics (num_splits 0, pack_gqa -1). The grid is heads × caches × q_lens × cache dtypes.
  std::vector<int> qlens = {1, 4, 16};                                 // --qlen: query rows per sequence
  std::vector<std::pair<int, int>> decode_heads = {{64, 8}, {32, 8}, {8, 1}};  // --heads Q:KV,...
  std::vector<std::pair<int, int>> decode_caches = {{1, 8192},  {1, 65536},  {8, 8192},
                                                    {32, 8192}, {128, 2048}, {16, 32768}};  // --cache B:LEN,...
  std::vector<std::string> kv_dtypes = {"bf16", "int8"};  // --kv-dtype: bf16, fp16, int8 (bf16 queries)
  std::vector<int> decode_hdims = {128};                   // --hdim with --op decode
  std::vector<int> splits = {0};    // --splits: KvCacheArgs::num_splits values timed (0 = heuristic)
  bool int8_tail = false;           // --int8-tail: int8 rows also with 16-bit tail blocks (rows <impl>:tail)
  int quant_block = 128;            // --quant-block 64|128: tokens per K scale block of the int8 caches
  bool decode_isolated = false;
  bool decode_cold = false;  // --cold: calls rotate over copies of the cache that together exceed L2 2.5 times  // --isolated: also time each call with a plain dependency before the next
  int decode_window = -1;  // --window L: each hopattn row also timed with a sliding window of L keys (rows <impl>:wL)
  std::vector<int> page_sizes = {0};  // --page-sizes: 0 the contiguous cache; P > 0 the same cache as a pool
                                      // of P-token pages in shuffled order (16-bit; rows <impl>:pP)

  // --varlen SPEC (--op attn): a packed variable-length batch instead of the grid (bench/varlen.cpp).
  // The lengths of its sequences (q and k equal: self-attention prefill); empty: no varlen mode.
  std::vector<int> varlen_lens;
  std::string varlen_name;  // "mix16", or "" for an explicit list
  // --varlen-heads HQ:HKV; {0, 0}: MHA with hidden / hdim heads (the FA3 grid's rule)
  std::pair<int, int> varlen_heads = {0, 0};
};

// Parses bench flags (argv[0] is "bench"). Returns false and prints usage on error.
bool parse_bench_options(int argc, char** argv, BenchOptions* out, std::string* error);
std::string bench_usage();

// The ceilings of this GPU, measured now: cuBLAS bf16 GEMM 8192³ (TFLOP/s) and a 1 GiB
// device-to-device copy (TB/s, bytes read + written).
Row measure_gemm_ceiling(Stream stream, double target_group_ms);
Row measure_copy_ceiling(Stream stream, double target_group_ms);

// Runs the benchmark; prints the table to stdout and progress to stderr. Returns the exit code.
int run_bench(const BenchOptions& options);

// --op decode figures. FLOPs = 4·b·hq·q_len·len·d (QKᵀ and PV over the whole cache, the causal
// triangle of the last q_len keys not subtracted). Bytes = the K and V cache read once:
// 2·b·len·hkv·d·bytes per element, plus for int8 the fp32 scales (K: one per block of
// quant_block tokens, kv-head and channel; V: one per token and kv-head).
double decode_flops(int batch, int heads_q, int qlen, int cache_len, int hdim);
double decode_kv_bytes(int batch, int cache_len, int heads_kv, int hdim, hopattn_dtype_t cache_dtype,
                       int quant_block = 128);

// --varlen: the named length sets ("mix16": 16 sequences of 100..7984 tokens, 16384 in all);
// empty for an unknown name.
std::vector<int> varlen_preset(const std::string& name);

// FLOPs of a packed batch: 4·hdim·heads_q per visible (query, key) pair, summed over the
// sequences (lens_q[b] queries against lens_k[b] keys). Causal is bottom-right aligned per
// sequence: query i sees key j iff j <= i + lk - lq (lq == lk: lq·(lq + 1)/2 pairs).
double varlen_flops(const std::vector<int>& lens_q, const std::vector<int>& lens_k, int heads_q, int hdim,
                    bool causal);

// The equal-length padded batch that --varlen compares a packed batch of `total` tokens with:
// (batch, seqlen) = (total / seqlen rounded to the nearest, at least 1; seqlen), or (1, total)
// when total < seqlen. mix16 (16384 tokens): 4 x 4096 for seqlen 4096, 8 x 2048 for 2048.
std::pair<int, int> varlen_padded_shape(int64_t total, int seqlen);

// The --varlen section (bench/varlen.cpp), called by run_bench after the ceilings: per (hdim,
// causal) the rows hopattn:varlen, hopattn:padded-equal, hopattn:varlen-uniform and
// hopattn:padded-uniform (op attn_varlen), timed in rotating rounds; appends them to `rows`,
// prints its table and ratios. gemm_tflops: the ceiling of this run, 0 if not measured; done,
// total: the progress count so far and in all (one per cell). Returns the exit code.
int run_varlen_bench(const BenchOptions& options, Stream stream, double gemm_tflops, int done, int total,
                     std::vector<Row>* rows);

// The decode section (bench/decode.cpp), called by run_bench once the GPU, the stream and cuDNN
// (null when it could not be loaded) are set up. Returns the exit code.
int run_decode_bench(const BenchOptions& options, Stream stream, const RunInfo& info,
                     const baselines::CudnnSdpa* cudnn);

}  // namespace hopattn::bench
