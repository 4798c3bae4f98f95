// Between the checked public KV-cache call and the decode kernels.
#pragma once

#include <cstdint>

#include "attention/decode_params.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::attention {

// Launches the decode kernel (and the split-KV combine) for p (batch, seqlen_q, heads_q > 0).
Status run_decode(const DecodeParams& p, Stream stream);
// Launches the split-KV combine alone over the partials in p.workspace (p.num_splits > 1; a
// KV-cache call's chunk path, whose forward kernel wrote them).
Status run_decode_combine(const DecodeParams& p, Stream stream);

// The current device's record of the first bad cache_seqlens entry, {kind, batch, length}: kind 0
// nothing recorded, kDecodeErrorAttention by the decode kernels, kDecodeErrorAppend by the append;
// the varlen forward's prepare kernel (fwd_varlen_prepare.cu) records {kind, sequence, value} with
// kind kVarlenErrorCuSeqlensQ (cu_seqlens_q[b] or [b + 1] out of order or range, or the length over
// max_seqlen_q; value: cu_seqlens_q[b + 1]), kVarlenErrorCuSeqlensK (the same for k; value:
// cu_seqlens_k[b + 1]) or kVarlenErrorSequsedK (value: seqused_k[b]).
constexpr int32_t kDecodeErrorAttention = 1;
constexpr int32_t kDecodeErrorAppend = 2;
constexpr int32_t kVarlenErrorCuSeqlensQ = 3;
constexpr int32_t kVarlenErrorCuSeqlensK = 4;
constexpr int32_t kVarlenErrorSequsedK = 5;
constexpr int32_t kDecodeErrorPageId = 6;  // a paged cache's page_table entry out of range: {6, b, id}
Status decode_error_record(int32_t** ptr);
// Waits for stream, copies the record out and clears it.
Status read_and_clear_decode_error(Stream stream, int32_t (&record)[3]);
// The record as a Status: OK when nothing is recorded, else the bad entry named (kvcache_check.cpp;
// hopattn_kvcache_device_check and hopattn_attention_device_check both report every kind).
Status device_record_status(const int32_t (&record)[3]);

}  // namespace hopattn::attention
