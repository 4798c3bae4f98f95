// Device-side helpers for tests, the check command and the bench: deterministic random inputs,
// NaN poisoning and conversions between device tensors of a 16-bit dtype and host floats.
#pragma once

#include <cstdint>
#include <vector>

#include "hopattn/hopattn.hpp"

namespace hopattn::reference {

// Fills n elements of dtype (BF16/FP16/FP32/E4M3/INT8) with N(mean, stddev^2) values, a counter-based
// generator: the value at index i depends only on (seed, i). Values are rounded to the dtype
// (INT8: to the nearest integer, clamped to [-127, 127]).
void fill_normal(void* data, hopattn_dtype_t dtype, int64_t n, uint64_t seed, float stddev,
                 Stream stream = nullptr);
// Fills with quiet NaN (BF16/FP16/FP32/FP64 by element size).
void fill_nan(void* data, size_t element_size, int64_t n, Stream stream = nullptr);

// Copies n device elements of dtype (BF16/FP16/FP32/E4M3) to host floats (synchronous).
std::vector<float> download_as_float(const void* data, hopattn_dtype_t dtype, int64_t n);
// Copies host floats to device elements of dtype, rounding (synchronous).
void upload_from_float(void* data, hopattn_dtype_t dtype, const float* host, int64_t n);

// RAII device buffer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// The int32 values (lengths, cu_seqlens, a page table) in a device buffer of their own (at least 4
// bytes, so that an empty list still has an address); synchronous.
DeviceBuffer upload_ints(const std::vector<int32_t>& v);

}  // namespace hopattn::reference
