#include "gemm_workspace.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_check.hpp"
#include "common/dtype.hpp"

namespace hopattn::gemm::tools {

bool parse_layout(const std::string& text, GemmSetup* s) {
  if (text.size() != 3) return false;
  for (char ch : text)
    if (ch != 'r' && ch != 'c') return false;
  s->a_row = text[0] == 'r', s->b_row = text[1] == 'r', s->d_row = text[2] == 'r';
  return true;
}

std::string layout_string(const GemmSetup& s) {
  return std::string(1, s.a_row ? 'r' : 'c') + (s.b_row ? 'r' : 'c') + (s.d_row ? 'r' : 'c');
}

bool parse_dtype(const std::string& text, hopattn_dtype_t* out) {
  for (hopattn_dtype_t t : {HOPATTN_DTYPE_BF16, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP32, HOPATTN_DTYPE_E4M3}) {
    if (text == hopattn_dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

double gemm_flops(const GemmSetup& s) { return 2.0 * double(s.m) * double(s.n) * double(s.k); }

namespace {
int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
}  // namespace

GemmBuffers::GemmBuffers(const GemmSetup& setup, int copies, uint64_t seed) : setup_(setup) {
  const int64_t in_size = int64_t(dtype_size(setup.dtype)), out_size = int64_t(dtype_size(setup.out));
  const int64_t per16 = 16 / in_size;
  lda_ = round_up(setup.a_row ? setup.k : setup.m, per16);
  ldb_ = round_up(setup.b_row ? setup.n : setup.k, per16);
  ldd_ = std::max<int64_t>(setup.d_row ? setup.n : setup.m, 1);
  const int64_t a_elems = lda_ * (setup.a_row ? setup.m : setup.k);
  const int64_t b_elems = ldb_ * (setup.b_row ? setup.k : setup.n);
  const int64_t d_elems = ldd_ * (setup.d_row ? setup.m : setup.n);
  const int64_t bytes = (a_elems + b_elems) * in_size + d_elems * out_size;
  if (copies <= 0) {
    int l2 = 0, device = 0;
    HOPATTN_CUDA_CHECK(cudaGetDevice(&device));
    HOPATTN_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    copies = int(std::clamp<int64_t>((2 * int64_t(l2) + bytes - 1) / std::max<int64_t>(bytes, 1), 1, 8));
  }
  for (int i = 0; i < copies; ++i) {
    Set s{reference::DeviceBuffer(size_t(std::max<int64_t>(a_elems, 1) * in_size)),
          reference::DeviceBuffer(size_t(std::max<int64_t>(b_elems, 1) * in_size)),
          reference::DeviceBuffer(size_t(std::max<int64_t>(d_elems, 1) * out_size))};
    reference::fill_normal(s.a.get(), setup.dtype, a_elems, seed + 3 * uint64_t(i), 1.0f);
    reference::fill_normal(s.b.get(), setup.dtype, b_elems, seed + 3 * uint64_t(i) + 1, 1.0f);
    if (setup.beta != 0.0f)
      reference::fill_normal(s.d.get(), setup.out, d_elems, seed + 3 * uint64_t(i) + 2, 1.0f);
    else
      reference::fill_nan(s.d.get(), size_t(out_size), d_elems);
    sets_.push_back(std::move(s));
  }
  HOPATTN_CUDA_CHECK(cudaDeviceSynchronize());
}

GemmArgs GemmBuffers::args(int i) const {
  const Set& s = sets_[size_t(i) % sets_.size()];
  GemmArgs g{};
  g.a = matrix(s.a.get(), setup_.dtype, setup_.m, setup_.k, setup_.a_row, lda_);
  g.b = matrix(s.b.get(), setup_.dtype, setup_.k, setup_.n, setup_.b_row, ldb_);
  g.d = matrix(s.d.get(), setup_.out, setup_.m, setup_.n, setup_.d_row, ldd_);
  g.c = g.d;
  g.alpha = setup_.alpha, g.beta = setup_.beta;
  g.variant = setup_.variant;
  return g;
}

}  // namespace hopattn::gemm::tools
