#include "gemm/tools/gemm_reference.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "device_utils.hpp"

namespace hopattn::gemm::tools {

int64_t storage_elements(const Tensor& t) {
  if (t.shape[0] == 0 || t.shape[1] == 0) return 0;
  return (t.shape[0] - 1) * t.stride[0] + (t.shape[1] - 1) * t.stride[1] + 1;
}

HostMatrix download_matrix(const Tensor& t) {
  HostMatrix h;
  h.rows = t.shape[0], h.cols = t.shape[1];
  const std::vector<float> raw = reference::download_as_float(t.data, t.dtype, storage_elements(t));
  h.v.resize(size_t(h.rows * h.cols));
  for (int64_t i = 0; i < h.rows; ++i)
    for (int64_t j = 0; j < h.cols; ++j) h.v[size_t(i * h.cols + j)] = raw[size_t(i * t.stride[0] + j * t.stride[1])];
  return h;
}

Reference reference_gemm(const HostMatrix& a, const HostMatrix& b, const HostMatrix* c, float alpha, float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  Reference r;
  r.d.assign(size_t(m * n), 0.0);
  r.magnitude.assign(size_t(m * n), 0.0);
  std::vector<double> row(static_cast<size_t>(n)), mag(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double x = a.at(i, p);
      const float* brow = &b.v[size_t(p * n)];
      for (int64_t j = 0; j < n; ++j) {
        row[size_t(j)] += x * double(brow[j]);
        mag[size_t(j)] += std::fabs(x * double(brow[j]));
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      double v = double(alpha) * row[size_t(j)];
      double g = std::fabs(double(alpha)) * mag[size_t(j)];
      if (beta != 0.0f) {
        v += double(beta) * double(c->at(i, j));
        g += std::fabs(double(beta) * double(c->at(i, j)));
      }
      r.d[size_t(i * n + j)] = v;
      r.magnitude[size_t(i * n + j)] = g;
    }
  }
  return r;
}

namespace {
double half_ulp(hopattn_dtype_t t) {
  if (t == HOPATTN_DTYPE_BF16) return std::ldexp(1.0, -8);
  if (t == HOPATTN_DTYPE_FP16) return std::ldexp(1.0, -11);
  return std::ldexp(1.0, -24);
}
// Smallest normal of the output type: below it the relative rounding bound no longer holds.
double tiny(hopattn_dtype_t t) {
  if (t == HOPATTN_DTYPE_FP16) return std::ldexp(1.0, -14);
  return std::ldexp(1.0, -126);
}
}  // namespace

double tolerance(double reference, double magnitude, hopattn_dtype_t out_dtype) {
  return magnitude * std::ldexp(1.0, -18) + std::fabs(reference) * half_ulp(out_dtype) + tiny(out_dtype);
}

double tolerance_vs_library(double value, int64_t k, double input_scale, hopattn_dtype_t out_dtype) {
  return double(k) * std::ldexp(1.0, -19) * input_scale * input_scale + std::fabs(value) * half_ulp(out_dtype) +
         tiny(out_dtype);
}

std::string compare_with_reference(const HostMatrix& d, const Reference& ref, hopattn_dtype_t out_dtype) {
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j) {
      const size_t idx = size_t(i * d.cols + j);
      const double got = d.v[idx], want = ref.d[idx];
      const double tol = tolerance(want, ref.magnitude[idx], out_dtype);
      if (!(std::fabs(got - want) <= tol)) {
        std::ostringstream os;
        os << "D(" << i << ", " << j << ") = " << got << ", fp64 reference " << want << ", |error| "
           << std::fabs(got - want) << " > tolerance " << tol;
        return os.str();
      }
    }
  return "";
}

std::string compare_with_library(const HostMatrix& d, const HostMatrix& product, const HostMatrix* c, float beta,
                                 int64_t k, double input_scale, hopattn_dtype_t out_dtype) {
  if (product.rows != d.rows || product.cols != d.cols || (beta != 0.0f && c == nullptr))
    return "compare_with_library: the reference does not match D's shape (or beta != 0 without C)";
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j) {
      const size_t idx = size_t(i * d.cols + j);
      const double got = d.v[idx];
      const double want = double(product.v[idx]) + (beta != 0.0f ? double(beta) * double(c->v[idx]) : 0.0);
      const double tol = tolerance_vs_library(want, k, input_scale, out_dtype);
      if (!(std::fabs(got - want) <= tol)) {
        std::ostringstream os;
        os << "D(" << i << ", " << j << ") = " << got << ", cuBLAS fp32 reference " << want << ", |difference| "
           << std::fabs(got - want) << " > tolerance " << tol << " (K = " << k << ")";
        return os.str();
      }
    }
  return "";
}

}  // namespace hopattn::gemm::tools
