#include "gemm_reference.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

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

namespace {
// 2^floor(log2 x) for x > 0.
double leading_bit(double x) {
  int e = 0;
  std::frexp(x, &e);
  return std::ldexp(1.0, e - 1);
}
// ulp is a power of two: x / ulp is exact, and x is on the grid when that is an integer.
bool on_grid(double x, double ulp) {
  const double q = x / ulp;
  return std::floor(q) == q;
}
}  // namespace

double fp8_accumulation_bound(const double* p, int64_t k) {
  double bound = 0.0, sum = 0.0;
  for (int64_t k0 = 0; k0 < k; k0 += kFp8StepK) {
    const int64_t k1 = std::min<int64_t>(k, k0 + kFp8StepK);
    double largest = 0.0;
    for (int64_t i = k0; i < k1; ++i) largest = std::max(largest, std::fabs(p[i]));
    if (largest > 0.0) {
      const double ulp = leading_bit(largest) * std::ldexp(1.0, -11);
      for (int64_t i = k0; i < k1; ++i) {
        sum += p[i];
        if (!on_grid(p[i], ulp)) bound += std::min(std::fabs(p[i]), ulp);
      }
    }
    if (sum != 0.0) {
      const double ulp = leading_bit(std::fabs(sum)) * std::ldexp(1.0, -12);
      if (!on_grid(sum, ulp)) bound += ulp;
    }
  }
  return kFp8ModelMargin * bound;
}

Fp8Reference reference_gemm_e4m3(const HostMatrix& a, const HostMatrix& b, const HostMatrix* c, double alpha,
                                 float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  Fp8Reference r;
  r.d.assign(size_t(m * n), 0.0);
  r.accumulation_bound.assign(size_t(m * n), 0.0);
  r.c_term.assign(size_t(m * n), 0.0);
  std::vector<double> bt(size_t(n * k));  // B as (N, K): each dot product reads contiguous memory
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) bt[size_t(j * k + p)] = b.at(p, j);
  auto rows = [&](int64_t i0, int64_t i1) {
    std::vector<double> products(size_t(std::max<int64_t>(k, 1)));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;  // exact: products of e4m3 values span far fewer than 53 bits
        for (int64_t p = 0; p < k; ++p) {
          products[size_t(p)] = double(a.at(i, p)) * bt[size_t(j * k + p)];
          sum += products[size_t(p)];
        }
        const size_t idx = size_t(i * n + j);
        const double cv = beta != 0.0f ? double(beta) * double(c->at(i, j)) : 0.0;
        r.d[idx] = alpha * sum + cv;
        r.accumulation_bound[idx] = std::fabs(alpha) * fp8_accumulation_bound(products.data(), k);
        r.c_term[idx] = std::fabs(cv);
      }
  };
  const int64_t threads = std::clamp<int64_t>(int64_t(std::thread::hardware_concurrency()), 1, 32);
  const int64_t per = (m + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t i0 = 0; i0 < m; i0 += per) pool.emplace_back(rows, i0, std::min(m, i0 + per));
  for (std::thread& t : pool) t.join();
  return r;
}

double tolerance_e4m3(double reference, double accumulation_bound, double c_term, hopattn_dtype_t out_dtype) {
  const double epilogue = (std::fabs(reference) + c_term + accumulation_bound) * std::ldexp(1.0, -22);
  return accumulation_bound + epilogue + std::fabs(reference) * half_ulp(out_dtype) + tiny(out_dtype);
}

std::string compare_with_e4m3_reference(const HostMatrix& d, const Fp8Reference& ref, hopattn_dtype_t out_dtype) {
  if (ref.d.size() != size_t(d.rows * d.cols)) return "compare_with_e4m3_reference: the reference does not match D's shape";
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j) {
      const size_t idx = size_t(i * d.cols + j);
      const double got = d.v[idx], want = ref.d[idx];
      const double tol = tolerance_e4m3(want, ref.accumulation_bound[idx], ref.c_term[idx], out_dtype);
      if (!(std::fabs(got - want) <= tol)) {
        std::ostringstream os;
        os << "D(" << i << ", " << j << ") = " << got << ", fp64 reference " << want << ", |error| "
           << std::fabs(got - want) << " > tolerance " << tol << " (FP8 accumulation bound "
           << ref.accumulation_bound[idx] << ")";
        return os.str();
      }
    }
  return "";
}

}  // namespace hopattn::gemm::tools
