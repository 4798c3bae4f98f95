// CUDA error handling shared by the library, the references, the bench and the tests.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "hopattn/hopattn.hpp"

namespace hopattn {

inline std::string cuda_error_string(cudaError_t err, const char* what) {
  return std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

// For code that returns a Status (the library).
#define HOPATTN_RETURN_IF_CUDA_ERROR(expr)                                  \
  do {                                                                      \
    cudaError_t hopattn_err_ = (expr);                                      \
    if (hopattn_err_ != cudaSuccess)                                        \
      return ::hopattn::Status::cuda(::hopattn::cuda_error_string(hopattn_err_, #expr)); \
  } while (0)

// For tools and tests, where a CUDA failure ends the run: throws std::runtime_error with the
// call's text, file and line.
#define HOPATTN_CUDA_CHECK(expr)                                                           \
  do {                                                                                     \
    cudaError_t hopattn_err_ = (expr);                                                     \
    if (hopattn_err_ != cudaSuccess)                                                       \
      throw std::runtime_error(::hopattn::cuda_error_string(hopattn_err_, #expr) + " at " + \
                               __FILE__ + ":" + std::to_string(__LINE__));                 \
  } while (0)

// True when device 0..n-1 includes a compute capability 9.x GPU; `why` says what was found.
bool has_sm90_gpu(std::string* why = nullptr);

}  // namespace hopattn
