// Pieces shared by the measurement tools decode_timeline.cu and decode_int8_timeline.cu (not part
// of the library): a CUDA check that exits, hash-filled inputs (timing only; correctness is the
// gpu tests'), the lengths, and "A:B" option parsing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace hopattn::timeline {

__device__ inline uint32_t mix(int64_t i, uint32_t seed) {
  uint32_t x = uint32_t(i) * 2654435761u ^ seed;
  x ^= x >> 15, x *= 2246822519u, x ^= x >> 13;
  return x;
}
// 16-bit values in [-1, 1).
template <class T>
__global__ void fill_uniform(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = T(float(mix(i, seed) & 0xffff) / 32768.0f - 1.0f);
}
// int8 values in [-127, 127].
__global__ inline void fill_int8(int8_t* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = int8_t(int(mix(i, seed) % 255u) - 127);
}
// Floats in [lo, hi) (the scales).
__global__ inline void fill_float(float* p, int64_t n, uint32_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = lo + (hi - lo) * float(mix(i, seed) & 0xffff) / 65536.0f;
}
__global__ inline void fill_int(int32_t* p, int n, int v) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = v;
}

inline bool parse_pair(const char* s, int* a, int* b) { return s != nullptr && std::sscanf(s, "%d:%d", a, b) == 2; }

}  // namespace hopattn::timeline
