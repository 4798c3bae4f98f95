// The public forward entry points: query where the arguments live, check them, apply defaults,
// handle the empty cases, and hand a FwdParams to the kernel dispatch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attention/device/attention_check.hpp"
#include "attention/device/forward_dispatch.hpp"
#include "attention/device/fwd_registry.hpp"
#include "attention/experimental.hpp"
#include "attention/fwd_params.hpp"
#include "attention/fwd_varlen.hpp"
#include "attention/device/decode_dispatch.hpp"
#include "attention/kernel/sm90_fwd_config.hpp"
#include "common/cuda_check.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn {
namespace {

Status query_attention_context(const AttentionForwardArgs& a, Stream stream, DeviceContext* ctx) {
  const void* ptrs[13] = {a.q.data,         a.k.data,          a.v.data,          a.o.data,        a.lse.data,
                          a.sinks.data,     a.cu_seqlens_q.data, a.cu_seqlens_k.data, a.seqused_k.data, a.workspace,
                          a.q_descale.data, a.k_descale.data,  a.v_descale.data};
  return query_device_context(stream, ptrs, 13, ctx);  // the check's order (kTensorNames)
}

bool is_varlen(const AttentionForwardArgs& a) { return a.cu_seqlens_q.data != nullptr; }
void set_options(const AttentionForwardArgs& a, attention::FwdParams& p);

// A window, a softcap, sinks or a variable-length batch: the call needs a row with
// FwdKernelSpec::options (the only rows whose scheduler reads a tile list).
bool has_options(const AttentionForwardArgs& a) {
  return a.window != 0 || a.softcap > 0.0f || a.sinks.data != nullptr || is_varlen(a);
}

// The kernel's parameters of a checked call. A padded batch: (batch, seqlen, heads, hdim) tensors and
// a (batch, heads, seqlen) LSE. A variable-length one: packed (total, heads, hdim) tensors, a
// (heads_q, total_q) LSE, and seqlen_q / seqlen_k carry max_seqlen_q / max_seqlen_k (the
// end-aligned views' row extents and the band's clamp).
attention::FwdParams make_params(const AttentionForwardArgs& a) {
  const bool varlen = is_varlen(a);
  const int s = varlen ? 0 : 1;  // the token dimension; heads s + 1, hdim s + 2
  attention::FwdParams p{};
  p.dtype = a.q.dtype;
  p.hdim = int(a.q.shape[s + 2]);
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.o = a.o.data;
  p.lse = static_cast<float*>(a.lse.data);
  p.heads_q = int(a.q.shape[s + 1]);
  p.heads_kv = int(a.k.shape[s + 1]);
  p.q_seq_stride = a.q.stride[s], p.q_head_stride = a.q.stride[s + 1];
  p.k_seq_stride = a.k.stride[s], p.k_head_stride = a.k.stride[s + 1];
  p.v_seq_stride = a.v.stride[s], p.v_head_stride = a.v.stride[s + 1];
  p.o_seq_stride = a.o.stride[s], p.o_head_stride = a.o.stride[s + 1];
  if (varlen) {
    p.batch = int(a.cu_seqlens_q.shape[0] - 1);
    p.total_q = int(a.q.shape[0]);
    p.total_k = int(a.k.shape[0]);
    // No sequence is longer than its packed tensor: a looser bound only moves the end-aligned views'
    // base further before the tensors (make_fwd_params), so it is tightened here.
    p.seqlen_q = int(std::min<int64_t>(a.max_seqlen_q, std::max<int64_t>(p.total_q, 1)));
    p.seqlen_k = int(std::min<int64_t>(a.max_seqlen_k, std::max<int64_t>(p.total_k, 1)));
    if (p.lse != nullptr) p.lse_head_stride = a.lse.stride[0], p.lse_seq_stride = a.lse.stride[1];
    p.cu_seqlens_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
    p.cu_seqlens_k = static_cast<const int32_t*>(a.cu_seqlens_k.data);
    p.seqused_k = static_cast<const int32_t*>(a.seqused_k.data);
    p.workspace = a.workspace;
  } else {
    p.batch = int(a.q.shape[0]);
    p.seqlen_q = int(a.q.shape[1]);
    p.seqlen_k = int(a.k.shape[1]);
    p.q_batch_stride = a.q.stride[0], p.k_batch_stride = a.k.stride[0];
    p.v_batch_stride = a.v.stride[0], p.o_batch_stride = a.o.stride[0];
    if (p.lse != nullptr)
      p.lse_batch_stride = a.lse.stride[0], p.lse_head_stride = a.lse.stride[1], p.lse_seq_stride = a.lse.stride[2];
  }
  set_options(a, p);
  if (a.q_descale.data != nullptr) {  // e4m3 inputs (the checks: all three or none, (batch, heads_kv))
    p.q_descale = static_cast<const float*>(a.q_descale.data);
    p.k_descale = static_cast<const float*>(a.k_descale.data);
    p.v_descale = static_cast<const float*>(a.v_descale.data);
    p.q_descale_batch_stride = a.q_descale.stride[0], p.q_descale_head_stride = a.q_descale.stride[1];
    p.k_descale_batch_stride = a.k_descale.stride[0], p.k_descale_head_stride = a.k_descale.stride[1];
    p.v_descale_batch_stride = a.v_descale.stride[0], p.v_descale_head_stride = a.v_descale.stride[1];
  }
  return p;
}

// The scale, the softcap, the band and the sinks, for padded and variable-length calls alike.
void set_options(const AttentionForwardArgs& a, attention::FwdParams& p) {
  const float scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0f / std::sqrt(float(p.hdim));
  p.softmax_scale = scale;
  if (a.softcap > 0.0f) {  // exponent softcap · tanh(scale · s / softcap): tanh in the kernel, softcap as the scale
    p.softcap_scale = scale / a.softcap;
    p.softmax_scale = a.softcap;
  }
  // The band: causal is (every earlier key, 0); a window side of -1 reaches every key. Clamped so
  // that the masks' sums stay in int (check_options bounds seqlen_q + seqlen_k).
  // The options rows are compiled for the band only: softcap or sinks without a window run the
  // band with both sides unbounded.
  p.band = a.causal != 0 || has_options(a);
  p.window_left = p.seqlen_k;
  p.window_right = a.causal != 0 ? 0 : p.seqlen_q;
  if (a.window != 0) {
    if (a.window_left >= 0) p.window_left = std::min(a.window_left, p.seqlen_k);
    if (a.window_right >= 0) p.window_right = std::min(a.window_right, p.window_right);
  }
  p.sinks = static_cast<const float*>(a.sinks.data);
}

// The row of this head dim that takes the options (FwdKernelSpec::options), or -1.
int options_kernel(int hdim) {
  for (int i = 0; i < attention::kFwdKernelCount; ++i)
    if (attention::kFwdKernels[i].options && attention::fwd_kernel_compiled(i, hdim)) return i;
  return -1;
}

// The names of the forward kernels compiled at `hdim`, for messages.
std::string fwd_kernel_names(int hdim) {
  std::string out;
  for (int i = 0; i < attention::kFwdKernelCount; ++i)
    if (attention::fwd_kernel_index(attention::kFwdKernels[i].name, hdim) == i)
      out += (out.empty() ? "" : ", ") + std::string(attention::kFwdKernels[i].name);
  return out.empty() ? "none" : out;
}

// The registry row a checked call runs: overrides.fwd_kernel, or the defaults table's.
Status pick_forward_kernel(const AttentionForwardArgs& a, const experimental::Overrides& o, int* index) {
  const int hdim = int(a.q.shape[is_varlen(a) ? 2 : 3]);
  std::string name = o.fwd_kernel;
  if (name.empty() && has_options(a)) {  // one row per head dim takes the options, at every length
    const int i = options_kernel(hdim);
    if (i < 0)
      return Status::unsupported(cat("attention forward: no kernel compiled for hdim ", hdim,
                                     " takes a window, softcap, sinks or a variable-length batch in this build"));
    name = attention::kFwdKernels[i].name;
  } else if (name.empty()) {
    const int64_t group = a.k.shape[2] > 0 ? a.q.shape[2] / a.k.shape[2] : 1;
    const attention::FwdDefaultRule* r =
        attention::fwd_default_rule(hdim, a.causal != 0, a.q.dtype, a.q.shape[1], a.k.shape[1], group);
    if (r == nullptr)
      return Status(StatusCode::kInternal, cat("attention forward: the defaults table has no row for hdim ", hdim,
                                               ", causal ", a.causal != 0, ", seqlen_q ", a.q.shape[1], ", seqlen_k ",
                                               a.k.shape[1], ", group ", group));
    name = r->kernel;
  }
  *index = attention::fwd_kernel_index(name, hdim);
  if (*index < 0)
    return Status::unsupported(cat("attention forward: kernel '", name, "' is not compiled for hdim ", hdim,
                                   " in this build; compiled: ", fwd_kernel_names(hdim)));
  const bool fp8 = a.q.dtype == HOPATTN_DTYPE_E4M3;
  if (attention::kFwdKernels[*index].fp8 != fp8)
    return Status::unsupported(cat("attention forward: kernel '", name, "' at hdim ", hdim, " takes ",
                                   fp8 ? "16-bit" : "e4m3", " inputs, not ", hopattn_dtype_name(a.q.dtype)));
  const bool band = a.causal != 0 || has_options(a);  // the options run the band (causal) mask
  if (!attention::fwd_kernel_compiled(*index, hdim, band))
    return Status::unsupported(cat("attention forward: kernel '", name, "' is compiled for ",
                                   band ? "non-causal" : "causal (and windowed)", " calls only at hdim ", hdim));
  if (has_options(a) && !attention::kFwdKernels[*index].options)
    return Status::unsupported(cat("attention forward: kernel '", name,
                                   "' does not take a window, softcap, sinks or a variable-length batch (the rows that do: ",
                                   options_kernel(hdim) >= 0 ? attention::kFwdKernels[options_kernel(hdim)].name : "none",
                                   ")"));
  return Status();
}

}  // namespace

Status attention_forward(const AttentionForwardArgs& args, Stream stream) {
  return experimental::attention_forward(args, stream, experimental::Overrides{});
}

namespace experimental {

Status forward_kernel_name(const AttentionForwardArgs& args, const Overrides& overrides, std::string* name) {
  int index = -1;
  if (Status s = pick_forward_kernel(args, overrides, &index); !s.ok()) return s;
  *name = attention::kFwdKernels[index].name;
  return Status();
}

Status attention_forward(const AttentionForwardArgs& args, Stream stream, const Overrides& overrides) {
  DeviceContext ctx;
  if (Status s = check_versioned_header<hopattn_attention_fwd_args_t>(args, "args"); !s.ok()) return s;
  // The argument rules first: they need no device (a machine without a GPU still gets them).
  if (Status s = check_attention_forward(args, host_only_context()); !s.ok()) return s;
  if (Status s = query_attention_context(args, stream, &ctx); !s.ok()) return s;
  if (Status s = check_attention_forward_placement(ctx); !s.ok()) return s;
  attention::FwdParams p = make_params(args);
  if (p.varlen()) {
    // Nothing to compute without a query row; the lengths are checked on the device otherwise.
    if (p.batch == 0 || p.total_q == 0 || p.heads_q == 0) return Status();
    if (Status s = attention::decode_error_record(&p.error); !s.ok()) return s;
  } else {
    if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return Status();  // nothing to compute
    // No key to attend to: O = 0 and LSE = -inf (the limit of an empty softmax sum).
    if (p.seqlen_k == 0) return attention::write_empty_attention(p, stream);
  }
  if (Status s = pick_forward_kernel(args, overrides, &p.kernel); !s.ok()) return s;
  p.stale_max_log2 = overrides.fwd_stale_max_log2;
  p.narrow_pv = overrides.fwd_narrow_pv;
  p.skip_unseen = overrides.fwd_skip_unseen;
  p.causal_group = overrides.fwd_causal_group;
  p.persistent_group = overrides.fwd_persistent_group;
  p.varlen_pdl = overrides.fwd_varlen_pdl;
  p.varlen_dynamic = overrides.fwd_varlen_dynamic;
  return attention::run_forward(p, stream);
}

}  // namespace experimental
}  // namespace hopattn

namespace hopattn {

Status attention_forward_workspace_size(const AttentionForwardArgs& args, size_t* bytes) {
  if (bytes == nullptr) return Status::invalid("bytes: null pointer");
  // The size reads the shapes: they must pass the argument rules first (the workspace's own rules
  // aside: it is what is being asked for).
  if (Status s = check_attention_forward_sizing(args); !s.ok()) return s;
  *bytes = attention_forward_workspace_bytes(args);
  return Status();
}

Status attention_device_check(Stream stream) {
  int32_t record[3] = {0, 0, 0};
  if (Status s = attention::read_and_clear_decode_error(stream, record); !s.ok()) return s;
  return attention::device_record_status(record);
}

}  // namespace hopattn

// ---- C ABI ---------------------------------------------------------------------------------------
extern "C" hopattn_status_t hopattn_attention_forward_workspace_size(const hopattn_attention_fwd_args_t* args,
                                                                     size_t* bytes) {
  if (bytes == nullptr) return hopattn::to_c_status(hopattn::Status::invalid("bytes: null pointer"));
  return hopattn::versioned_c_call(args, [&](const hopattn::AttentionForwardArgs& a) {
    return hopattn::attention_forward_workspace_size(a, bytes);
  });
}

extern "C" hopattn_status_t hopattn_attention_device_check(void* stream) {
  return hopattn::guarded_c_call([&] { return hopattn::attention_device_check(static_cast<hopattn::Stream>(stream)); });
}

extern "C" hopattn_status_t hopattn_attention_forward_check(const hopattn_attention_fwd_args_t* args,
                                                            void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::AttentionForwardArgs& a) {
    // The argument rules first: they need no device (a machine without a GPU still gets them).
    if (hopattn::Status s = hopattn::check_attention_forward(a, hopattn::host_only_context()); !s.ok()) return s;
    hopattn::DeviceContext ctx;
    if (hopattn::Status s = hopattn::query_attention_context(a, static_cast<hopattn::Stream>(stream), &ctx); !s.ok())
      return s;
    return hopattn::check_attention_forward_placement(ctx);
  });
}

extern "C" hopattn_status_t hopattn_attention_forward(const hopattn_attention_fwd_args_t* args,
                                                      void* stream) {
  return hopattn::versioned_c_call(args, [&](const hopattn::AttentionForwardArgs& a) {
    return hopattn::attention_forward(a, static_cast<hopattn::Stream>(stream));
  });
}
