// Argument checks shared by every operation: one tensor's geometry, pointer and alignment, byte
// ranges for aliasing, and where the arguments live. Each failure names the argument.
#pragma once

#include <cstdint>

#include "hopattn/hopattn.hpp"

namespace hopattn {

int64_t element_count(const Tensor& t);
inline bool is_empty(const Tensor& t) { return element_count(t) == 0; }

// rank, non-negative sizes and strides, extents below 2^31, offsets addressable by TMA.
// dims names each dimension for the messages ("batch", "seqlen", ...).
Status check_geometry(const Tensor& t, const char* name, int rank, const char* const* dims);

// Non-null data (unless empty), `alignment`-byte aligned pointer and strides of every dimension
// but the last (TMA needs 16).
Status check_pointer_and_alignment(const Tensor& t, const char* name, int alignment);

// Bytes [lo, hi) a tensor's elements occupy (empty for an empty or absent tensor).
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
};
ByteRange byte_range(const Tensor& t);
inline bool overlaps(ByteRange a, ByteRange b) { return a.lo < b.hi && b.lo < a.hi; }

// The stream belongs to the current device, and no tensor lives on the host or another device.
// names[i] names ctx.tensor_device[i]; count <= kDeviceContextTensors.
Status check_placement(const DeviceContext& ctx, const char* const* names, int count);

// A context that says nothing about placement (every tensor "not queried"): the argument rules
// checked before the device is asked, so that they report without a usable GPU too.
inline DeviceContext host_only_context() { return DeviceContext{}; }

// Device of the memory behind `ptr`: its device, kHostMemory, or kUnknownDevice for null.
int pointer_device(const void* ptr);

// Fills ctx for `stream` and the given pointers (in the operation's documented order).
Status query_device_context(Stream stream, const void* const* ptrs, int count, DeviceContext* ctx);

}  // namespace hopattn
