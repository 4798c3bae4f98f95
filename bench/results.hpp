// One benchmark measurement and its CSV form. All ops share one schema; columns an op does not
// use stay empty (m, n, k, layout for attention; the attention shape columns for GEMM). A row
// that could not be timed (decode: the call returned an error) has ms = 0, written as empty
// ms/tflops/tbps, and its note says why.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace hopattn::bench {

struct Row {
  std::string op;    // attn_fwd, attn_varlen, decode, gemm, ceiling
  // attn_varlen (--varlen): batch = the number of sequences, seqlen_q = seqlen_k = the longest;
  // the note starts with the shape ("packed 16 seqs of 100..7984, 16384 tokens" or "4 x 4096 padded")
  std::string impl;  // hopattn, cudnn, cublas, copy
  std::string dtype;
  // decode: seqlen_q = q_len (query rows per sequence), seqlen_k = cache length, dtype = the
  // cache's (bf16, fp16, int8; the queries are bf16 for an int8 cache)
  int hdim = 0, causal = 0, batch = 0, heads_q = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0;
  long long m = 0, n = 0, k = 0;
  std::string layout;
  double ms = 0, tflops = 0, tbps = 0;  // 0: not timed (empty in the CSV)
  double ratio_vs_cudnn = 0;  // 0: not applicable or no cuDNN row
  double frac_of_gemm = 0;    // tflops / the cuBLAS ceiling of this run
  std::string note;
};

struct RunInfo {
  std::string commit, date, gpu;
  std::string cudnn;  // the cuDNN baseline's version ("9.19.0"), or empty; in every cudnn row's note
};

RunInfo current_run_info();
void write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows);

}  // namespace hopattn::bench
