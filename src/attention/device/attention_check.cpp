// check_attention_forward: every rule on the forward arguments that needs no device memory.
// Each failure names the argument (q, k.stride[1], lse, stream, ...) and the reason.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "attention/device/attention_check.hpp"
#include "attention/device/compiled_set.hpp"
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
// The order of DeviceContext::tensor_device for this operation.
constexpr const char* kTensorNames[6] = {"q", "k", "v", "o", "lse", "sinks"};

std::string supported_head_dims() {
  std::string s;
  for (int d : attention::compiled_head_dims()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}
std::string supported_dtypes() {
  std::string s;
  for (hopattn_dtype_t t : attention::compiled_dtypes())
    s += (s.empty() ? "" : ", ") + std::string(hopattn_dtype_name(t));
  return s;
}

Status check_types(const AttentionForwardArgs& a) {
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
  const int64_t d = a.q.shape[3];
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
  for (int i = 1; i < 4; ++i) {
    if (ts[i]->shape[0] != q.shape[0])
      return Status::invalid(cat(names[i], ".shape[0] (batch) = ", ts[i]->shape[0],
                                 " differs from q's batch ", q.shape[0]));
    if (ts[i]->shape[3] != q.shape[3])
      return Status::invalid(cat(names[i], ".shape[3] (hdim) = ", ts[i]->shape[3],
                                 " differs from q's head dim ", q.shape[3]));
  }
  if (o.shape[1] != q.shape[1] || o.shape[2] != q.shape[2])
    return Status::invalid(cat("o: shape (seqlen, heads) = (", o.shape[1], ", ", o.shape[2],
                               ") differs from q's (", q.shape[1], ", ", q.shape[2], ")"));
  if (v.shape[1] != k.shape[1] || v.shape[2] != k.shape[2])
    return Status::invalid(cat("v: shape (seqlen, heads) = (", v.shape[1], ", ", v.shape[2],
                               ") differs from k's (", k.shape[1], ", ", k.shape[2], ")"));
  const int64_t heads_q = q.shape[2], heads_kv = k.shape[2];
  if (heads_kv == 0 && heads_q != 0)
    return Status::invalid(cat("k: heads = 0 while q has ", heads_q, " heads"));
  if (heads_kv != 0 && heads_q % heads_kv != 0)
    return Status::invalid(cat("q: heads_q = ", heads_q, " is not a multiple of heads_kv = ",
                               heads_kv, " (k.shape[2])"));
  for (int i = 0; i < 4; ++i) {
    if (ts[i]->stride[3] != 1 && ts[i]->shape[3] > 1)
      return Status::invalid(cat(names[i], ".stride[3] = ", ts[i]->stride[3],
                                 ": the last dimension (hdim) must be contiguous (stride 1)"));
  }
  // Rows are counted in 32 bits inside the kernels (tile indices, LSE offsets).
  const int64_t q_rows = saturating_product({q.shape[0], q.shape[1], q.shape[2]});
  const int64_t k_rows = saturating_product({k.shape[0], k.shape[1], k.shape[2]});
  if (q_rows > kMaxExtent)
    return Status::invalid(cat("q: batch * seqlen_q * heads_q = ", q_rows,
                               " exceeds 2^31-1: 32-bit row indices would overflow"));
  if (k_rows > kMaxExtent)
    return Status::invalid(cat("k: batch * seqlen_k * heads_kv = ", k_rows,
                               " exceeds 2^31-1: 32-bit row indices would overflow"));
  return Status();
}

Status check_lse(const AttentionForwardArgs& a) {
  const Tensor& l = a.lse;
  if (l.data == nullptr) return Status();  // optional output, not requested
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
  return Status();
}

// The options of 0.3: a sliding window, the softcap and the attention sinks (hopattn.h).
Status check_options(const AttentionForwardArgs& a) {
  if (a.window == 0) {
    // A window side set without the switch would silently attend to everything.
    if (a.window_left != 0)
      return Status::invalid(cat("window_left: ", a.window_left, " is set but window is 0 (set window = 1 to use it)"));
    if (a.window_right != 0)
      return Status::invalid(cat("window_right: ", a.window_right, " is set but window is 0 (set window = 1 to use it)"));
  } else {
    if (a.window_left < -1)
      return Status::invalid(cat("window_left: must be >= 0, or -1 for unbounded, got ", a.window_left));
    if (a.window_right < -1)
      return Status::invalid(cat("window_right: must be >= 0, or -1 for unbounded, got ", a.window_right));
    if (a.causal != 0 && a.window_right > 0)
      return Status::invalid(cat("window_right: must be 0 or -1 with causal (a causal row sees no later key), got ",
                                 a.window_right));
    // The band's arithmetic (FwdMask) adds the two lengths in 32 bits.
    if (a.q.shape[1] + a.k.shape[1] > (int64_t(1) << 30))
      return Status::unsupported(cat("window: seqlen_q + seqlen_k = ", a.q.shape[1] + a.k.shape[1],
                                     " exceeds 2^30 with a sliding window"));
  }
  if (!std::isfinite(a.softcap) || a.softcap < 0.0f)
    return Status::invalid(cat("softcap: must be finite and >= 0 (0: off), got ", a.softcap));
  const Tensor& t = a.sinks;
  if (t.data == nullptr) return Status();  // optional input, not given
  if (Status s = check_geometry(t, "sinks", 1, kSinkDimNames); !s.ok()) return s;
  if (t.dtype != HOPATTN_DTYPE_FP32)
    return Status::invalid(cat("sinks: dtype must be fp32, got ", hopattn_dtype_name(t.dtype)));
  if (t.shape[0] != a.q.shape[2])
    return Status::invalid(cat("sinks: shape (", t.shape[0], ") must be (heads_q) = (", a.q.shape[2], ")"));
  if (t.stride[0] != 1 && t.shape[0] > 1)
    return Status::invalid(cat("sinks.stride[0] = ", t.stride[0], ": must be contiguous (stride 1)"));
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0) return Status::invalid("sinks: data pointer is not 4-byte aligned");
  return Status();
}

}  // namespace

Status check_attention_forward_placement(const DeviceContext& ctx) { return check_placement(ctx, kTensorNames, 6); }

Status check_attention_forward(const AttentionForwardArgs& a, const DeviceContext& ctx) {
  if (Status s = check_versioned_header<hopattn_attention_fwd_args_t>(a, "args"); !s.ok()) return s;
  const Tensor* ts[4] = {&a.q, &a.k, &a.v, &a.o};
  const char* names[4] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; ++i) {
    if (Status s = check_geometry(*ts[i], names[i], 4, kDimNames); !s.ok()) return s;
  }
  if (Status s = check_types(a); !s.ok()) return s;
  if (Status s = check_shapes(a); !s.ok()) return s;
  for (int i = 0; i < 4; ++i) {
    if (Status s = check_pointer_and_alignment(*ts[i], names[i], 16); !s.ok()) return s;
  }
  if (Status s = check_no_self_overlap(a.o, "o"); !s.ok()) return s;
  if (Status s = check_lse(a); !s.ok()) return s;
  if (Status s = check_options(a); !s.ok()) return s;
  if (Status s = check_aliasing(a); !s.ok()) return s;
  if (!std::isfinite(a.softmax_scale))
    return Status::invalid(cat("softmax_scale: must be finite, got ", a.softmax_scale));
  // The kernels keep the running maximum of the raw scores: with a negative scale the exponents
  // would grow instead of shrink and overflow to inf on ordinary inputs.
  if (a.softmax_scale < 0.0f)
    return Status::invalid(cat("softmax_scale: must be positive (0 selects 1/sqrt(hdim)), got ", a.softmax_scale));
  return check_attention_forward_placement(ctx);
}

}  // namespace hopattn
