// Argument checks shared by every operation: one tensor's geometry, pointer and alignment, byte
// ranges for aliasing, and where the arguments live. Each failure names the argument.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "hopattn/hopattn.hpp"

namespace hopattn {

inline constexpr int kMaxRank = 4;  // hopattn_tensor_t's shape/stride arrays

// The product of the extents, saturated at INT64_MAX (0 when any extent is 0).
int64_t element_count(const Tensor& t);
// Some extent is 0 (no multiplication: a product could overflow to 0).
bool is_empty(const Tensor& t);
// Exact product of the values, saturated to int64's range (for size rules: a * b * c > limit).
int64_t saturating_product(std::initializer_list<int64_t> values);

// The dtype is one of hopattn_dtype_t's values (checked before any size is computed from it).
Status check_dtype(hopattn_dtype_t dtype, const char* name);

// rank, a valid dtype, non-negative sizes and strides, extents below 2^31, strides within TMA's
// 2^40 bytes and a largest byte offset that fits int64 (exact arithmetic; no overflow).
// dims names each dimension for the messages ("batch", "seqlen", ...).
Status check_geometry(const Tensor& t, const char* name, int rank, const char* const* dims);

// An output's strides give every element its own memory (after check_geometry).
Status check_no_self_overlap(const Tensor& t, const char* name);

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
