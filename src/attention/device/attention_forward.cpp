// The public forward entry points: query where the arguments live, check them, apply defaults,
// handle the empty cases, and hand a FwdParams to the kernel dispatch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "attention/device/forward_dispatch.hpp"
#include "attention/fwd_params.hpp"
#include "common/cuda_check.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn {
namespace {

Status query_attention_context(const AttentionForwardArgs& a, Stream stream, DeviceContext* ctx) {
  const void* ptrs[5] = {a.q.data, a.k.data, a.v.data, a.o.data, a.lse.data};  // the check's order
  return query_device_context(stream, ptrs, 5, ctx);
}

attention::FwdParams make_params(const AttentionForwardArgs& a) {
  attention::FwdParams p{};
  p.dtype = a.q.dtype;
  p.hdim = int(a.q.shape[3]);
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.o = a.o.data;
  p.lse = static_cast<float*>(a.lse.data);
  p.batch = int(a.q.shape[0]);
  p.seqlen_q = int(a.q.shape[1]);
  p.seqlen_k = int(a.k.shape[1]);
  p.heads_q = int(a.q.shape[2]);
  p.heads_kv = int(a.k.shape[2]);
  p.q_batch_stride = a.q.stride[0], p.q_seq_stride = a.q.stride[1], p.q_head_stride = a.q.stride[2];
  p.k_batch_stride = a.k.stride[0], p.k_seq_stride = a.k.stride[1], p.k_head_stride = a.k.stride[2];
  p.v_batch_stride = a.v.stride[0], p.v_seq_stride = a.v.stride[1], p.v_head_stride = a.v.stride[2];
  p.o_batch_stride = a.o.stride[0], p.o_seq_stride = a.o.stride[1], p.o_head_stride = a.o.stride[2];
  if (p.lse != nullptr) {
    p.lse_batch_stride = a.lse.stride[0];
    p.lse_head_stride = a.lse.stride[1];
    p.lse_seq_stride = a.lse.stride[2];
  }
  p.softmax_scale = a.softmax_scale != 0.0f ? a.softmax_scale : 1.0f / std::sqrt(float(p.hdim));
  p.causal = a.causal != 0;
  p.schedule = a.schedule;
  return p;
}

}  // namespace

Status attention_forward(const AttentionForwardArgs& args, Stream stream) {
  DeviceContext ctx;
  if (Status s = query_attention_context(args, stream, &ctx); !s.ok()) return s;
  if (Status s = check_attention_forward(args, ctx); !s.ok()) return s;
  const attention::FwdParams p = make_params(args);
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return Status();  // nothing to compute
  // No key to attend to: O = 0 and LSE = -inf (the limit of an empty softmax sum).
  if (p.seqlen_k == 0) return attention::write_empty_attention(p, stream);
  return attention::run_forward(p, stream);
}

}  // namespace hopattn

// ---- C ABI ---------------------------------------------------------------------------------------
extern "C" hopattn_status_t hopattn_attention_forward_check(const hopattn_attention_fwd_args_t* args,
                                                            void* stream) {
  return hopattn::guarded_c_call([&] {
    if (args == nullptr) return hopattn::Status::invalid("args: null pointer");
    hopattn::DeviceContext ctx;
    if (hopattn::Status s = hopattn::query_attention_context(*args, static_cast<hopattn::Stream>(stream), &ctx); !s.ok())
      return s;
    return hopattn::check_attention_forward(*args, ctx);
  });
}

extern "C" hopattn_status_t hopattn_attention_forward(const hopattn_attention_fwd_args_t* args,
                                                      void* stream) {
  return hopattn::guarded_c_call([&] {
    if (args == nullptr) return hopattn::Status::invalid("args: null pointer");
    return hopattn::attention_forward(*args, static_cast<hopattn::Stream>(stream));
  });
}
