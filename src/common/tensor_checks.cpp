#include "common/tensor_checks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "common/cuda_check.hpp"
#include "common/dtype.hpp"
#include "common/status_util.hpp"

namespace hopattn {
namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxStrideBytes = int64_t(1) << 40;  // TMA: global strides below 2^40 bytes

}  // namespace

int64_t element_count(const Tensor& t) {
  if (t.rank < 0 || t.rank > kMaxRank) return 0;
  if (is_empty(t)) return 0;
  __int128 n = 1;
  for (int i = 0; i < t.rank; ++i) {
    n *= t.shape[i] < 0 ? 0 : t.shape[i];
    if (n > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  }
  return int64_t(n);
}

bool is_empty(const Tensor& t) {
  if (t.rank < 0 || t.rank > kMaxRank) return false;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] == 0) return true;
  return false;
}

int64_t saturating_product(std::initializer_list<int64_t> values) {
  __int128 n = 1;
  for (int64_t v : values) {
    n *= v;
    if (n > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
    if (n < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  }
  return int64_t(n);
}

Status check_dtype(hopattn_dtype_t dtype, const char* name) {
  if (dtype_size(dtype) == 0)
    return Status::invalid(cat(name, ".dtype = ", int(dtype), " is not a hopattn_dtype_t value"));
  return Status();
}

Status check_geometry(const Tensor& t, const char* name, int rank, const char* const* dims) {
  if (t.rank != rank) return Status::invalid(cat(name, ": rank must be ", rank, ", got ", t.rank));
  if (Status s = check_dtype(t.dtype, name); !s.ok()) return s;
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] < 0)
      return Status::invalid(cat(name, ".shape[", i, "] (", dims[i], ") is negative: ", t.shape[i]));
    if (t.shape[i] > kMaxExtent)
      return Status::invalid(cat(name, ".shape[", i, "] (", dims[i], ") = ", t.shape[i],
                                 " exceeds 2^31-1: 32-bit index math would overflow"));
    if (t.stride[i] < 0)
      return Status::invalid(cat(name, ".stride[", i, "] is negative: ", t.stride[i],
                                 " (negative strides are not supported)"));
  }
  const int64_t esize = int64_t(dtype_size(t.dtype));
  if (is_empty(t)) return Status();
  __int128 max_offset = 0;  // in elements; exact (each term < 2^31 * 2^40)
  for (int i = 0; i < rank; ++i) {
    if (t.stride[i] > kMaxStrideBytes / esize)
      return Status::invalid(cat(name, ".stride[", i, "] = ", t.stride[i],
                                 " elements is beyond the 2^40-byte stride limit of TMA"));
    max_offset += __int128(t.shape[i] - 1) * t.stride[i];
  }
  // The last element's byte offset, and the byte after it, must be addressable.
  if ((max_offset + 1) * esize > std::numeric_limits<int64_t>::max() / 2)
    return Status::invalid(cat(name, ": the largest element offset overflows 64-bit byte addressing"));
  return Status();
}

Status check_no_self_overlap(const Tensor& t, const char* name) {
  if (t.data == nullptr || is_empty(t) || t.rank < 0 || t.rank > kMaxRank) return Status();
  // Dimensions of extent > 1 by increasing stride: each stride must step past everything the
  // smaller ones reach, or two indices share an element.
  int order[kMaxRank];
  int n = 0;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] > 1) order[n++] = i;
  for (int a = 1; a < n; ++a)
    for (int b = a; b > 0 && t.stride[order[b]] < t.stride[order[b - 1]]; --b) std::swap(order[b], order[b - 1]);
  __int128 reach = 0;  // the largest offset the dimensions so far reach
  for (int j = 0; j < n; ++j) {
    const int i = order[j];
    if (__int128(t.stride[i]) <= reach)
      return Status::invalid(cat(name, ".stride[", i, "] = ", t.stride[i], " makes elements overlap (",
                                 name, " is an output: each element must have its own memory)"));
    reach += __int128(t.shape[i] - 1) * t.stride[i];
  }
  return Status();
}

Status check_pointer_and_alignment(const Tensor& t, const char* name, int alignment) {
  if (t.data == nullptr) {
    if (is_empty(t)) return Status();
    return Status::invalid(cat(name, ": data pointer is null"));
  }
  if (reinterpret_cast<uintptr_t>(t.data) % alignment != 0)
    return Status::invalid(cat(name, ": data pointer ", t.data, " is not ", alignment, "-byte aligned",
                               alignment == 16 ? " (TMA needs 16-byte aligned tensors)" : ""));
  const int64_t esize = int64_t(dtype_size(t.dtype));
  for (int i = 0; i < t.rank - 1; ++i) {
    if ((t.stride[i] * esize) % alignment != 0)
      return Status::invalid(cat(name, ".stride[", i, "] = ", t.stride[i], " elements (", t.stride[i] * esize,
                                 " bytes) is not a multiple of ", alignment, " bytes",
                                 alignment == 16 ? " (TMA needs it)" : ""));
  }
  return Status();
}

ByteRange byte_range(const Tensor& t) {
  if (t.data == nullptr || is_empty(t) || t.rank < 0 || t.rank > kMaxRank) return {};
  const int64_t esize = int64_t(dtype_size(t.dtype));
  int64_t max_offset = 0;  // callers check the geometry first: no overflow
  for (int i = 0; i < t.rank; ++i) max_offset += (t.shape[i] - 1) * t.stride[i];
  const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
  return {lo, lo + uintptr_t((max_offset + 1) * esize)};
}

Status check_placement(const DeviceContext& ctx, const char* const* names, int count) {
  if (ctx.stream_device != ctx.current_device)
    return Status::invalid(cat("stream: belongs to device ", ctx.stream_device, " but the current device is ",
                               ctx.current_device));
  for (int i = 0; i < count; ++i) {
    if (ctx.tensor_device[i] == kHostMemory)
      return Status::invalid(cat(names[i], ": points to host memory; device memory is required"));
    if (ctx.tensor_device[i] >= 0 && ctx.tensor_device[i] != ctx.current_device)
      return Status::invalid(cat(names[i], ": lives on device ", ctx.tensor_device[i],
                                 " but the current device is ", ctx.current_device));
  }
  return Status();
}

int pointer_device(const void* ptr) {
  if (ptr == nullptr) return kUnknownDevice;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();  // clear the error an unknown pointer leaves behind
    return kHostMemory;
  }
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) return attr.device;
  return kHostMemory;
}

Status query_device_context(Stream stream, const void* const* ptrs, int count, DeviceContext* ctx) {
  HOPATTN_RETURN_IF_CUDA_ERROR(cudaGetDevice(&ctx->current_device));
  ctx->stream_device = ctx->current_device;
  // cudaStreamGetDevice is refused while the stream is being captured into a CUDA graph; there
  // the launch itself reports a stream of another device, so the query is skipped.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream != nullptr) HOPATTN_RETURN_IF_CUDA_ERROR(cudaStreamIsCapturing(stream, &capture));
  if (stream != nullptr && capture == cudaStreamCaptureStatusNone)
    HOPATTN_RETURN_IF_CUDA_ERROR(cudaStreamGetDevice(stream, &ctx->stream_device));
  for (int i = 0; i < count && i < kDeviceContextTensors; ++i) ctx->tensor_device[i] = pointer_device(ptrs[i]);
  return Status();
}

}  // namespace hopattn
