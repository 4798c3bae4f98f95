// check_attention_forward: every rule on the forward arguments that needs no device memory.
// Each failure names the argument (q, k.stride[1], lse, stream, ...) and the reason.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "attention/device/attention_check.hpp"
#include "attention/device/compiled_set.hpp"
#include "attention/fwd_varlen.hpp"
#include "common/dtype.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn {
namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();
constexpr const char* kDimNames[4] = {"batch", "seqlen", "heads", "hdim"};
constexpr const char* kLseDimNames[3] = {"batch", "heads", "seqlen"};
constexpr const char* kSinkDimNames[1] = {"heads"};
// A variable-length batch's packed tensors and its (heads_q, total_q) LSE.
constexpr const char* kPackedDimNames[3] = {"total", "heads", "hdim"};
constexpr const char* kPackedLseDimNames[2] = {"heads", "total"};
constexpr const char* kSeqlensDimNames[1] = {"batch + 1"};
constexpr const char* kSequsedDimNames[1] = {"batch"};
constexpr const char* kDescaleDimNames[2] = {"batch", "heads_kv"};
// The order of DeviceContext::tensor_device for this operation (query_attention_context's).
constexpr int kTensorCount = 13;
constexpr const char* kTensorNames[kTensorCount] = {
    "q",         "k",         "v",        "o",        "lse",       "sinks",    "cu_seqlens_q",
    "cu_seqlens_k", "seqused_k", "workspace", "q_descale", "k_descale", "v_descale"};

bool is_varlen(const AttentionForwardArgs& a) { return a.cu_seqlens_q.data != nullptr; }
bool is_fp8(const AttentionForwardArgs& a) { return a.q.dtype == HOPATTN_DTYPE_E4M3; }

// Where the dimensions sit: (batch, seqlen, heads, hdim) for a padded batch, (total, heads, hdim)
// for a variable-length one (no batch dimension; the token dimension is "seqlen").
struct Dims {
  int rank, seq, heads, hdim;
};
Dims dims_of(const AttentionForwardArgs& a) { return is_varlen(a) ? Dims{3, 0, 1, 2} : Dims{4, 1, 2, 3}; }


std::string supported_head_dims() {
  std::string s;
  for (int d : attention::compiled_head_dims()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}
std::string supported_fp8_head_dims() {
  std::string s;
  for (int d : attention::compiled_fp8_head_dims()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}
std::string supported_dtypes() {
  std::string s;
  for (hopattn_dtype_t t : attention::compiled_dtypes())
    s += (s.empty() ? "" : ", ") + std::string(hopattn_dtype_name(t));
  if (!attention::compiled_fp8_head_dims().empty())
    s += (s.empty() ? "" : ", ") + cat("e4m3 (head dims ", supported_fp8_head_dims(), ")");
  return s;
}

// e4m3 q (FP8, since 0.5): k and v e4m3 too, o bf16, a head dim with FP8 kernels.
Status check_fp8_types(const AttentionForwardArgs& a) {
  if (attention::compiled_fp8_head_dims().empty())
    return Status::unsupported(cat("q: dtype e4m3 is not supported in this build (no FP8 kernels: HOPATTN_FP8_HEAD_DIMS); supported: ",
                                   supported_dtypes()));
  const Tensor* inputs[2] = {&a.k, &a.v};
  const char* names[2] = {"k", "v"};
  for (int i = 0; i < 2; ++i)
    if (inputs[i]->dtype != HOPATTN_DTYPE_E4M3)
      return Status::invalid(cat(names[i], ": dtype ", hopattn_dtype_name(inputs[i]->dtype), " does not match q's e4m3"));
  if (a.o.dtype != HOPATTN_DTYPE_BF16)
    return Status::invalid(cat("o: dtype must be bf16 when q is e4m3, got ", hopattn_dtype_name(a.o.dtype)));
  const int64_t d = a.q.shape[dims_of(a).hdim];
  bool hdim_ok = false;
  for (int h : attention::compiled_fp8_head_dims()) hdim_ok |= (d == h);
  if (!hdim_ok)
    return Status::unsupported(cat("q: head dim ", d, " is not supported with e4m3 inputs; supported: ",
                                   supported_fp8_head_dims()));
  return Status();
}

// What the FP8 kernels do not take yet (hopattn.h, "Since 0.5"): refused by name.
Status check_fp8_refusals(const AttentionForwardArgs& a) {
  const char* why = " is not supported with e4m3 inputs (FP8 forward: padded batches without window, softcap or sinks)";
  if (is_varlen(a)) return Status::unsupported(cat("cu_seqlens_q: a variable-length batch", why));
  if (a.window != 0) return Status::unsupported(cat("window: a sliding window", why));
  if (a.softcap != 0.0f) return Status::unsupported(cat("softcap: a logit softcap", why));
  if (a.sinks.data != nullptr) return Status::unsupported(cat("sinks: attention sinks", why));
  return Status();
}

// The descales (since 0.5): unset for 16-bit inputs; for e4m3 all three or none, each a (batch,
// heads_kv) float32 tensor, 4-byte aligned (any strides: an input may broadcast).
Status check_descales(const AttentionForwardArgs& a) {
  const Tensor* ts[3] = {&a.q_descale, &a.k_descale, &a.v_descale};
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  int given = 0, first = -1;
  for (int i = 0; i < 3; ++i)
    if (ts[i]->data != nullptr) ++given, first = first < 0 ? i : first;
  if (given == 0) return Status();
  if (!is_fp8(a)) {
    for (int i = 0; i < 3; ++i)
      if (ts[i]->data != nullptr)
        return Status::invalid(cat(names[i], ": set, but q is ", hopattn_dtype_name(a.q.dtype),
                                   " (descales apply to e4m3 inputs only)"));
  }
  for (int i = 0; i < 3; ++i)
    if (ts[i]->data == nullptr)
      return Status::invalid(cat(names[i], ": null while ", names[first], " is set (give all three descales or none)"));
  const int64_t batch = a.q.shape[0], heads_kv = a.k.shape[2];
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = *ts[i];
    if (Status s = check_geometry(t, names[i], 2, kDescaleDimNames); !s.ok()) return s;
    if (t.dtype != HOPATTN_DTYPE_FP32)
      return Status::invalid(cat(names[i], ": dtype must be fp32, got ", hopattn_dtype_name(t.dtype)));
    if (t.shape[0] != batch || t.shape[1] != heads_kv)
      return Status::invalid(cat(names[i], ": shape (", t.shape[0], ", ", t.shape[1], ") must be (batch, heads_kv) = (",
                                 batch, ", ", heads_kv, ")"));
    if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0)
      return Status::invalid(cat(names[i], ": data pointer is not 4-byte aligned"));
  }
  return Status();
}

Status check_types(const AttentionForwardArgs& a) {
  if (is_fp8(a)) return check_fp8_types(a);
  bool dtype_ok = false;
  for (hopattn_dtype_t t : attention::compiled_dtypes()) dtype_ok |= (a.q.dtype == t);
  if (!dtype_ok)
    return Status::unsupported(cat("q: dtype ", hopattn_dtype_name(a.q.dtype),
                                   " is not supported; supported: ", supported_dtypes()));
  const Tensor* others[3] = {&a.k, &a.v, &a.o};
  const char* names[3] = {"k", "v", "o"};
  for (int i = 0; i < 3; ++i) {
    if (others[i]->dtype != a.q.dtype)
      return Status::invalid(cat(names[i], ": dtype ", hopattn_dtype_name(others[i]->dtype),
                                 " does not match q's ", hopattn_dtype_name(a.q.dtype)));
  }
  const int64_t d = a.q.shape[dims_of(a).hdim];
  bool hdim_ok = false;
  for (int h : attention::compiled_head_dims()) hdim_ok |= (d == h);
  if (!hdim_ok)
    return Status::unsupported(cat("q: head dim ", d, " is not supported; supported: ",
                                   supported_head_dims()));
  return Status();
}

Status check_shapes(const AttentionForwardArgs& a) {
  const Tensor &q = a.q, &k = a.k, &v = a.v, &o = a.o;
  const char* names[4] = {"q", "k", "v", "o"};
  const Tensor* ts[4] = {&q, &k, &v, &o};
  const Dims d = dims_of(a);
  for (int i = 1; i < 4; ++i) {
    if (!is_varlen(a) && ts[i]->shape[0] != q.shape[0])
      return Status::invalid(cat(names[i], ".shape[0] (batch) = ", ts[i]->shape[0],
                                 " differs from q's batch ", q.shape[0]));
    if (ts[i]->shape[d.hdim] != q.shape[d.hdim])
      return Status::invalid(cat(names[i], ".shape[", d.hdim, "] (hdim) = ", ts[i]->shape[d.hdim],
                                 " differs from q's head dim ", q.shape[d.hdim]));
  }
  const char* seq = is_varlen(a) ? "total" : "seqlen";
  if (o.shape[d.seq] != q.shape[d.seq] || o.shape[d.heads] != q.shape[d.heads])
    return Status::invalid(cat("o: shape (", seq, ", heads) = (", o.shape[d.seq], ", ", o.shape[d.heads],
                               ") differs from q's (", q.shape[d.seq], ", ", q.shape[d.heads], ")"));
  if (v.shape[d.seq] != k.shape[d.seq] || v.shape[d.heads] != k.shape[d.heads])
    return Status::invalid(cat("v: shape (", seq, ", heads) = (", v.shape[d.seq], ", ", v.shape[d.heads],
                               ") differs from k's (", k.shape[d.seq], ", ", k.shape[d.heads], ")"));
  const int64_t heads_q = q.shape[d.heads], heads_kv = k.shape[d.heads];
  if (heads_kv == 0 && heads_q != 0)
    return Status::invalid(cat("k: heads = 0 while q has ", heads_q, " heads"));
  if (heads_kv != 0 && heads_q % heads_kv != 0)
    return Status::invalid(cat("q: heads_q = ", heads_q, " is not a multiple of heads_kv = ",
                               heads_kv, " (k.shape[", d.heads, "])"));
  for (int i = 0; i < 4; ++i) {
    if (ts[i]->stride[d.hdim] != 1 && ts[i]->shape[d.hdim] > 1)
      return Status::invalid(cat(names[i], ".stride[", d.hdim, "] = ", ts[i]->stride[d.hdim],
                                 ": the last dimension (hdim) must be contiguous (stride 1)"));
  }
  // Rows are counted in 32 bits inside the kernels (tile indices, LSE offsets).
  const int64_t q_rows = is_varlen(a) ? saturating_product({q.shape[0], q.shape[1]})
                                      : saturating_product({q.shape[0], q.shape[1], q.shape[2]});
  const int64_t k_rows = is_varlen(a) ? saturating_product({k.shape[0], k.shape[1]})
                                      : saturating_product({k.shape[0], k.shape[1], k.shape[2]});
  if (q_rows > kMaxExtent)
    return Status::invalid(cat("q: ", is_varlen(a) ? "total_q * heads_q" : "batch * seqlen_q * heads_q", " = ", q_rows,
                               " exceeds 2^31-1: 32-bit row indices would overflow"));
  if (k_rows > kMaxExtent)
    return Status::invalid(cat("k: ", is_varlen(a) ? "total_k * heads_kv" : "batch * seqlen_k * heads_kv", " = ", k_rows,
                               " exceeds 2^31-1: 32-bit row indices would overflow"));
  return Status();
}

Status check_lse(const AttentionForwardArgs& a) {
  const Tensor& l = a.lse;
  if (l.data == nullptr) return Status();  // optional output, not requested
  if (is_varlen(a)) {
    if (Status s = check_geometry(l, "lse", 2, kPackedLseDimNames); !s.ok()) return s;
    if (l.dtype != HOPATTN_DTYPE_FP32)
      return Status::invalid(cat("lse: dtype must be fp32, got ", hopattn_dtype_name(l.dtype)));
    if (l.shape[0] != a.q.shape[1] || l.shape[1] != a.q.shape[0])
      return Status::invalid(cat("lse: shape (", l.shape[0], ", ", l.shape[1], ") must be (heads_q, total_q) = (",
                                 a.q.shape[1], ", ", a.q.shape[0], ")"));
    if (reinterpret_cast<uintptr_t>(l.data) % 4 != 0)
      return Status::invalid("lse: data pointer is not 4-byte aligned");
    return check_no_self_overlap(l, "lse");
  }
  if (Status s = check_geometry(l, "lse", 3, kLseDimNames); !s.ok()) return s;
  if (l.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat("lse: dtype must be fp32, got ", hopattn_dtype_name(l.dtype)));
  if (l.shape[0] != a.q.shape[0] || l.shape[1] != a.q.shape[2] || l.shape[2] != a.q.shape[1])
    return Status::invalid(cat("lse: shape (", l.shape[0], ", ", l.shape[1], ", ", l.shape[2],
                               ") must be (batch, heads_q, seqlen_q) = (", a.q.shape[0], ", ",
                               a.q.shape[2], ", ", a.q.shape[1], ")"));
  if (reinterpret_cast<uintptr_t>(l.data) % 4 != 0)
    return Status::invalid("lse: data pointer is not 4-byte aligned");
  return check_no_self_overlap(l, "lse");
}

Status check_aliasing(const AttentionForwardArgs& a) {
  const ByteRange inputs[3] = {byte_range(a.q), byte_range(a.k), byte_range(a.v)};
  const char* input_names[3] = {"q", "k", "v"};
  const ByteRange o = byte_range(a.o), lse = byte_range(a.lse);
  for (int i = 0; i < 3; ++i) {
    if (overlaps(o, inputs[i]))
      return Status::invalid(cat("o: overlaps input ", input_names[i],
                                 " in memory (the output must not alias an input)"));
    if (overlaps(lse, inputs[i]))
      return Status::invalid(cat("lse: overlaps input ", input_names[i],
                                 " in memory (the output must not alias an input)"));
  }
  if (overlaps(o, lse)) return Status::invalid("lse: overlaps o in memory");
  const ByteRange sinks = byte_range(a.sinks);
  if (overlaps(o, sinks)) return Status::invalid("o: overlaps input sinks in memory (the output must not alias an input)");
  if (overlaps(lse, sinks))
    return Status::invalid("lse: overlaps input sinks in memory (the output must not alias an input)");
  const ByteRange descales[3] = {byte_range(a.q_descale), byte_range(a.k_descale), byte_range(a.v_descale)};
  const char* descale_names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int i = 0; i < 3; ++i) {
    if (overlaps(o, descales[i]))
      return Status::invalid(cat("o: overlaps input ", descale_names[i], " in memory (the output must not alias an input)"));
    if (overlaps(lse, descales[i]))
      return Status::invalid(cat("lse: overlaps input ", descale_names[i], " in memory (the output must not alias an input)"));
  }
  const ByteRange small[3] = {byte_range(a.cu_seqlens_q), byte_range(a.cu_seqlens_k), byte_range(a.seqused_k)};
  const char* small_names[3] = {"cu_seqlens_q", "cu_seqlens_k", "seqused_k"};
  for (int i = 0; i < 3; ++i) {
    if (overlaps(o, small[i]))
      return Status::invalid(cat("o: overlaps input ", small_names[i], " in memory (the output must not alias an input)"));
    if (overlaps(lse, small[i]))
      return Status::invalid(cat("lse: overlaps input ", small_names[i], " in memory (the output must not alias an input)"));
  }
  return Status();
}

// The options of 0.3: a sliding window, the softcap and the attention sinks (hopattn.h).
Status check_options(const AttentionForwardArgs& a) {
  // The band's arithmetic (FwdMask) adds the two lengths in 32 bits (a varlen batch bounds its own).
  const int64_t band = is_varlen(a) ? -1 : a.q.shape[1] + a.k.shape[1];
  return check_logit_options(a.window, a.window_left, a.window_right, a.causal != 0, band, "seqlen_q + seqlen_k",
                             a.softcap, a.sinks, a.q.shape[dims_of(a).heads]);
}

// A lengths tensor: rank 1, int32, contiguous, 4-byte aligned, `count` entries.
Status check_lengths_tensor(const Tensor& t, const char* name, const char* const* dims, int64_t count,
                            const char* count_name) {
  if (Status s = check_geometry(t, name, 1, dims); !s.ok()) return s;
  if (t.dtype != HOPATTN_DTYPE_INT32)
    return Status::invalid(cat(name, ": dtype must be int32, got ", hopattn_dtype_name(t.dtype)));
  if (t.shape[0] != count)
    return Status::invalid(cat(name, ": shape (", t.shape[0], ") must be (", count_name, ") = (", count, ")"));
  if (t.stride[0] != 1 && t.shape[0] > 1)
    return Status::invalid(cat(name, ".stride[0] = ", t.stride[0], ": must be contiguous (stride 1)"));
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0)
    return Status::invalid(cat(name, ": data pointer is not 4-byte aligned"));
  return Status();
}

// A padded batch leaves the variable-length fields zero (hopattn.h): one set alone would be ignored.
Status check_padded_has_no_varlen_fields(const AttentionForwardArgs& a) {
  const char* only = " is set only with cu_seqlens_q (a variable-length batch); this call is a padded batch";
  if (a.cu_seqlens_k.data != nullptr) return Status::invalid(cat("cu_seqlens_k:", only));
  if (a.seqused_k.data != nullptr) return Status::invalid(cat("seqused_k:", only));
  if (a.max_seqlen_q != 0) return Status::invalid(cat("max_seqlen_q: ", a.max_seqlen_q, only));
  if (a.max_seqlen_k != 0) return Status::invalid(cat("max_seqlen_k: ", a.max_seqlen_k, only));
  return Status();
}

bool varlen_is_noop(const AttentionForwardArgs& a) {
  return a.cu_seqlens_q.shape[0] <= 1 || a.q.shape[0] == 0 || a.q.shape[1] == 0;
}

// The lengths' descriptors and the host-side bounds (the values live on the device, which checks them).
Status check_varlen_lengths(const AttentionForwardArgs& a) {
  if (Status s = check_geometry(a.cu_seqlens_q, "cu_seqlens_q", 1, kSeqlensDimNames); !s.ok()) return s;
  const int64_t batch = a.cu_seqlens_q.shape[0] - 1;
  if (batch < 0) return Status::invalid("cu_seqlens_q: shape (0) must be (batch + 1) with batch >= 0");
  if (Status s = check_lengths_tensor(a.cu_seqlens_q, "cu_seqlens_q", kSeqlensDimNames, batch + 1, "batch + 1");
      !s.ok())
    return s;
  if (a.cu_seqlens_k.data == nullptr)
    return Status::invalid("cu_seqlens_k: null; a variable-length batch needs both cu_seqlens_q and cu_seqlens_k");
  if (Status s = check_lengths_tensor(a.cu_seqlens_k, "cu_seqlens_k", kSeqlensDimNames, batch + 1, "batch + 1");
      !s.ok())
    return s;
  if (a.seqused_k.data != nullptr) {
    if (Status s = check_lengths_tensor(a.seqused_k, "seqused_k", kSequsedDimNames, batch, "batch"); !s.ok())
      return s;
  }
  if (varlen_is_noop(a)) return Status();
  if (a.max_seqlen_q < 1)
    return Status::invalid(cat("max_seqlen_q: must be >= 1 (at least every sequence's query count), got ",
                               a.max_seqlen_q));
  if (a.max_seqlen_k < 1)
    return Status::invalid(cat("max_seqlen_k: must be >= 1 (at least every sequence's key count), got ",
                               a.max_seqlen_k));
  // The band's arithmetic (FwdMask) adds the two lengths in 32 bits.
  if (int64_t(a.max_seqlen_q) + a.max_seqlen_k >= (int64_t(1) << 30))
    return Status::unsupported(cat("max_seqlen_q + max_seqlen_k = ", int64_t(a.max_seqlen_q) + a.max_seqlen_k,
                                   " must be below 2^30"));
  const int64_t capacity = attention::varlen_tile_capacity(a.q.shape[0], batch, a.q.shape[1]);
  if (capacity > kMaxExtent)
    return Status::invalid(cat("q: (total_q / 64 + batch) * heads_q (rounded up to even) = ", capacity,
                               " tiles exceed 2^31-1 (the tile list's 32-bit count)"));
  return Status();
}

// The workspace: large enough, 16-byte aligned, its own memory.
Status check_varlen_workspace(const AttentionForwardArgs& a) {
  if (varlen_is_noop(a)) return Status();
  const size_t need = attention::varlen_workspace_bytes(a.q.shape[0], a.cu_seqlens_q.shape[0] - 1, a.q.shape[1]);
  if (a.workspace == nullptr)
    return Status::invalid(cat("workspace: null; a variable-length batch needs ", need,
                               " bytes of device memory (hopattn_attention_forward_workspace_size)"));
  if (a.workspace_bytes < need)
    return Status::invalid(cat("workspace_bytes: ", a.workspace_bytes, " is less than the ", need,
                               " bytes this call needs (hopattn_attention_forward_workspace_size)"));
  if (reinterpret_cast<uintptr_t>(a.workspace) % 16 != 0)
    return Status::invalid("workspace: data pointer is not 16-byte aligned");
  const ByteRange w{reinterpret_cast<uintptr_t>(a.workspace), reinterpret_cast<uintptr_t>(a.workspace) + need};
  const Tensor* ts[9] = {&a.q, &a.k, &a.v, &a.o, &a.lse, &a.sinks, &a.cu_seqlens_q, &a.cu_seqlens_k, &a.seqused_k};
  for (int i = 0; i < 9; ++i) {  // (no descale: a variable-length call has none)
    if (overlaps(w, byte_range(*ts[i])))
      return Status::invalid(cat("workspace: overlaps ", kTensorNames[i], " in memory"));
  }
  return Status();
}

// Every rule but the placement; `workspace`: the workspace's own rules too.
Status check_arguments(const AttentionForwardArgs& a, bool workspace) {
  if (Status s = check_versioned_header<hopattn_attention_fwd_args_t>(a, "args"); !s.ok()) return s;
  const Tensor* ts[4] = {&a.q, &a.k, &a.v, &a.o};
  const char* names[4] = {"q", "k", "v", "o"};
  const bool varlen = is_varlen(a);
  for (int i = 0; i < 4; ++i) {
    if (Status s = check_geometry(*ts[i], names[i], varlen ? 3 : 4, varlen ? kPackedDimNames : kDimNames); !s.ok())
      return s;
  }
  if (Status s = check_types(a); !s.ok()) return s;
  if (Status s = check_shapes(a); !s.ok()) return s;
  if (is_fp8(a)) {
    if (Status s = check_fp8_refusals(a); !s.ok()) return s;
  }
  if (varlen) {
    if (Status s = check_varlen_lengths(a); !s.ok()) return s;
  } else if (Status s = check_padded_has_no_varlen_fields(a); !s.ok()) {
    return s;
  }
  for (int i = 0; i < 4; ++i) {
    if (Status s = check_pointer_and_alignment(*ts[i], names[i], 16); !s.ok()) return s;
  }
  if (Status s = check_no_self_overlap(a.o, "o"); !s.ok()) return s;
  if (Status s = check_lse(a); !s.ok()) return s;
  if (Status s = check_options(a); !s.ok()) return s;
  if (Status s = check_descales(a); !s.ok()) return s;
  if (Status s = check_aliasing(a); !s.ok()) return s;
  if (!std::isfinite(a.softmax_scale))
    return Status::invalid(cat("softmax_scale: must be finite, got ", a.softmax_scale));
  // The kernels keep the running maximum of the raw scores: with a negative scale the exponents
  // would grow instead of shrink and overflow to inf on ordinary inputs.
  if (a.softmax_scale < 0.0f)
    return Status::invalid(cat("softmax_scale: must be positive (0 selects 1/sqrt(hdim)), got ", a.softmax_scale));
  if (workspace && varlen) return check_varlen_workspace(a);
  return Status();
}

}  // namespace

Status check_attention_forward_placement(const DeviceContext& ctx) {
  return check_placement(ctx, kTensorNames, kTensorCount);
}

Status check_attention_forward_sizing(const AttentionForwardArgs& a) { return check_arguments(a, false); }

size_t attention_forward_workspace_bytes(const AttentionForwardArgs& a) {
  if (!is_varlen(a) || varlen_is_noop(a)) return 0;
  return attention::varlen_workspace_bytes(a.q.shape[0], a.cu_seqlens_q.shape[0] - 1, a.q.shape[1]);
}

Status check_attention_forward(const AttentionForwardArgs& a, const DeviceContext& ctx) {
  if (Status s = check_arguments(a, true); !s.ok()) return s;
  return check_attention_forward_placement(ctx);
}

Status check_logit_options(int32_t window, int32_t window_left, int32_t window_right, bool causal, int64_t band,
                           const char* band_what, float softcap, const Tensor& t, int64_t heads_q) {
  if (window == 0) {
    // A window side set without the switch would silently attend to everything.
    if (window_left != 0)
      return Status::invalid(cat("window_left: ", window_left, " is set but window is 0 (set window = 1 to use it)"));
    if (window_right != 0)
      return Status::invalid(cat("window_right: ", window_right, " is set but window is 0 (set window = 1 to use it)"));
  } else {
    if (window_left < -1) return Status::invalid(cat("window_left: must be >= 0, or -1 for unbounded, got ", window_left));
    if (window_right < -1)
      return Status::invalid(cat("window_right: must be >= 0, or -1 for unbounded, got ", window_right));
    if (causal && window_right > 0)
      return Status::invalid(cat("window_right: must be 0 or -1 with causal (a causal row sees no later key), got ",
                                 window_right));
    if (band > (int64_t(1) << 30))
      return Status::unsupported(cat("window: ", band_what, " = ", band, " exceeds 2^30 with a sliding window"));
  }
  if (!std::isfinite(softcap) || softcap < 0.0f)
    return Status::invalid(cat("softcap: must be finite and >= 0 (0: off), got ", softcap));
  if (t.data == nullptr) return Status();  // optional input, not given
  if (Status s = check_geometry(t, "sinks", 1, kSinkDimNames); !s.ok()) return s;
  if (t.dtype != HOPATTN_DTYPE_FP32) return Status::invalid(cat("sinks: dtype must be fp32, got ", hopattn_dtype_name(t.dtype)));
  if (t.shape[0] != heads_q)
    return Status::invalid(cat("sinks: shape (", t.shape[0], ") must be (heads_q) = (", heads_q, ")"));
  if (t.stride[0] != 1 && t.shape[0] > 1)
    return Status::invalid(cat("sinks.stride[0] = ", t.stride[0], ": must be contiguous (stride 1)"));
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0) return Status::invalid("sinks: data pointer is not 4-byte aligned");
  return Status();
}

}  // namespace hopattn
