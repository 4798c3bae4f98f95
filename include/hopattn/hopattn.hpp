// hopattn — C++ interface. The data types are the C ABI's plain structs (hopattn.h); this header
// adds a Status value type and overloads that take a cudaStream_t. No CUDA or CUTLASS header is
// needed to include it.
#pragma once

#include <string>
#include <utility>

#include "hopattn/hopattn.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace hopattn {

using DType = hopattn_dtype_t;
using Tensor = hopattn_tensor_t;
using Stream = CUstream_st*;

// The C structs with their struct_size set (hopattn.h, "Extensible argument structs"): construct
// one (`hopattn::AttentionForwardArgs args;` or `args{}`), then fill the fields. Converting from
// the C struct copies it as it is.
template <class C>
struct VersionedArgs : C {
  VersionedArgs() : C{} { this->struct_size = uint32_t(sizeof(C)); }
  VersionedArgs(const C& c) : C(c) {}  // NOLINT: implicit, so C structs pass where these are taken
};
using AttentionForwardArgs = VersionedArgs<hopattn_attention_fwd_args_t>;
using Fp8QuantizeArgs = VersionedArgs<hopattn_fp8_quantize_args_t>;

enum class StatusCode {
  kOk = HOPATTN_OK,
  kInvalidArgument = HOPATTN_INVALID_ARGUMENT,
  kNotSupported = HOPATTN_NOT_SUPPORTED,
  kCudaError = HOPATTN_CUDA_ERROR,
  kInternal = HOPATTN_INTERNAL,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  static Status invalid(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status unsupported(std::string message) {
    return Status(StatusCode::kNotSupported, std::move(message));
  }
  static Status cuda(std::string message) { return Status(StatusCode::kCudaError, std::move(message)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

const char* status_code_name(StatusCode code);

// Where the arguments live, as the CUDA runtime reports it. attention_forward queries it;
// tests pass their own to exercise the checks without a GPU.
// tensor_device[i] is the device of the operation's i-th tensor argument, in the order the
// operation documents (attention forward: q, k, v, o, lse, sinks).
constexpr int kDeviceContextTensors = 16;
constexpr int kUnknownDevice = -1;  // not queried (or a null pointer)
constexpr int kHostMemory = -2;     // ordinary or pinned host memory: not usable by the kernels
struct DeviceContext {
  int current_device = 0;  // the caller's current device
  int stream_device = 0;   // the device the stream belongs to
  int tensor_device[kDeviceContextTensors] = {
      kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice,
      kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice,
      kUnknownDevice, kUnknownDevice, kUnknownDevice, kUnknownDevice};
};

// Every rule that can be checked without touching device memory. OK means attention_forward
// will not reject the arguments for their shape, type or placement (a head dim or dtype outside
// the compiled kernel set is reported here too).
Status check_attention_forward(const AttentionForwardArgs& args, const DeviceContext& context);

// Queries the device context of `stream`, checks, then enqueues the forward pass.
Status attention_forward(const AttentionForwardArgs& args, Stream stream);

// Device workspace bytes the call needs (0 for a padded batch; hopattn_attention_forward_workspace_size).
Status attention_forward_workspace_size(const AttentionForwardArgs& args, size_t* bytes);

// The first bad variable-length sequence recorded on this device, or OK (hopattn_attention_device_check).
Status attention_device_check(Stream stream);

// A contiguous (batch, seqlen, heads, hdim) descriptor.
inline Tensor tensor_bshd(void* data, DType dtype, long long batch, long long seqlen,
                          long long heads, long long hdim) {
  return hopattn_tensor_bshd(data, dtype, batch, seqlen, heads, hdim);
}

// A contiguous (batch, heads, seqlen) float32 descriptor for the log-sum-exp output.
Tensor tensor_lse(float* data, long long batch, long long heads, long long seqlen);

// Variable-length batches (since 0.4): a contiguous packed (total, heads, hdim) descriptor, the
// (heads_q, total_q) float32 log-sum-exp and the (batch + 1) int32 cu_seqlens_q / cu_seqlens_k.
inline Tensor tensor_thd(void* data, DType dtype, long long total, long long heads, long long hdim) {
  return hopattn_tensor_thd(data, dtype, total, heads, hdim);
}
Tensor tensor_lse_varlen(float* data, long long heads, long long total);
Tensor tensor_cu_seqlens(int32_t* data, long long batch);

// The attention sinks: a contiguous (heads_q) float32 descriptor, for the forward pass's and the
// KV-cache call's `sinks` (since 0.4).
Tensor tensor_sinks(float* data, long long heads_q);

// A contiguous (batch, heads_kv) float32 descriptor for the forward pass's q_descale, k_descale and
// v_descale (e4m3 inputs, since 0.5).
Tensor tensor_descale(float* data, long long batch, long long heads_kv);

// Every rule of hopattn_fp8_quantize that needs no device memory (context: where the tensors
// live, as for check_attention_forward), and the call itself (since 0.5).
Status check_fp8_quantize(const Fp8QuantizeArgs& args, const DeviceContext& context);
Status fp8_quantize(const Fp8QuantizeArgs& args, Stream stream);

}  // namespace hopattn
