// check_gemm: every rule on the GEMM arguments that needs no device memory, and make_problem,
// which turns checked arguments into the canonical problem the kernels see. Each failure names
// the argument (a, b.stride[0], beta, variant, ...) and the reason.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "common/status_util.hpp"
#include "common/tensor_checks.hpp"
#include "gemm/device/gemm_problem.hpp"
#include "gemm/device/gemm_registry.hpp"
#include "gemm/gemm.hpp"

namespace hopattn::gemm {
namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();
constexpr int64_t kTmaAlignment = 16;                   // bytes: base address and leading dimension

bool is_16bit_float(hopattn_dtype_t t) { return t == HOPATTN_DTYPE_BF16 || t == HOPATTN_DTYPE_FP16; }

// Rank, extents and strides of one matrix (the shared tensor check); dim0/dim1 name its
// dimensions ("M", "K").
Status check_geometry(const Tensor& t, const char* name, const char* dim0, const char* dim1) {
  const char* dims[2] = {dim0, dim1};
  return hopattn::check_geometry(t, name, 2, dims);
}

Status check_types(const GemmArgs& a, bool uses_c) {
  if (!is_16bit_float(a.a.dtype) && a.a.dtype != HOPATTN_DTYPE_E4M3)
    return Status::unsupported(cat("a: dtype ", hopattn_dtype_name(a.a.dtype),
                                   " is not supported; supported: bf16, fp16, e4m3"));
  if (a.b.dtype != a.a.dtype)
    return Status::invalid(cat("b: dtype ", hopattn_dtype_name(a.b.dtype), " does not match a's ",
                               hopattn_dtype_name(a.a.dtype)));
  if (!is_16bit_float(a.d.dtype) && a.d.dtype != HOPATTN_DTYPE_FP32)
    return Status::unsupported(cat("d: dtype ", hopattn_dtype_name(a.d.dtype),
                                   " is not supported; supported: bf16, fp16, fp32"));
  if (uses_c && a.c.dtype != a.d.dtype)
    return Status::invalid(cat("c: dtype ", hopattn_dtype_name(a.c.dtype), " does not match d's ",
                               hopattn_dtype_name(a.d.dtype)));
  return Status();
}

Status check_shapes(const GemmArgs& a, bool uses_c) {
  const int64_t m = a.a.shape[0], k = a.a.shape[1], n = a.b.shape[1];
  if (a.b.shape[0] != k)
    return Status::invalid(cat("b.shape[0] (K) = ", a.b.shape[0], " differs from a.shape[1] (K) = ", k));
  if (a.d.shape[0] != m || a.d.shape[1] != n)
    return Status::invalid(cat("d: shape (", a.d.shape[0], ", ", a.d.shape[1], ") must be (M, N) = (", m, ", ", n, ")"));
  if (uses_c && (a.c.shape[0] != m || a.c.shape[1] != n))
    return Status::invalid(cat("c: shape (", a.c.shape[0], ", ", a.c.shape[1], ") must be (M, N) = (", m, ", ", n, ")"));
  if (k == 0 && m != 0 && n != 0)
    return Status::invalid("a.shape[1] (K) is 0: K must be at least 1 (M and N are not 0)");
  return Status();
}

// Row- or column-major, decided from the strides; a stride of an extent-1 dimension is unused.
struct MatrixLayout {
  bool row_major = true;
  int64_t ld = 0;        // leading dimension in elements, as used by the kernels
  int strided_dim = 0;   // which dimension ld steps over (0 for row-major)
};

Status matrix_layout(const Tensor& t, const char* name, bool tma, MatrixLayout* out) {
  const int64_t rows = t.shape[0], cols = t.shape[1];
  const bool row_ok = t.stride[1] == 1 || cols <= 1;
  const bool col_ok = t.stride[0] == 1 || rows <= 1;
  if (!row_ok && !col_ok)
    return Status::invalid(cat(name, ": strides (", t.stride[0], ", ", t.stride[1],
                               ") are neither row-major (stride[1] == 1) nor column-major (stride[0] == 1)"));
  // Both possible (unit strides or extents of 1): take the one whose leading dimension is unused.
  bool row_major = row_ok;
  if (row_ok && col_ok) row_major = rows <= 1 || cols > 1;
  const int strided = row_major ? 0 : 1;
  const int64_t extent = row_major ? cols : rows;         // contiguous run
  const int64_t strided_extent = row_major ? rows : cols; // runs
  const int64_t esize = int64_t(dtype_size(t.dtype));
  const int64_t per_16b = esize > 0 ? kTmaAlignment / esize : 1;
  MatrixLayout l{row_major, t.stride[strided], strided};
  if (strided_extent <= 1) {
    l.ld = tma ? (extent + per_16b - 1) / per_16b * per_16b : std::max<int64_t>(extent, 1);
  } else {
    if (l.ld < extent)
      return Status::invalid(cat(name, ".stride[", strided, "] = ", l.ld, " is less than the ",
                                 row_major ? "row" : "column", " length ", extent, ": ",
                                 row_major ? "rows" : "columns", " would overlap"));
    if (tma && (l.ld * esize) % kTmaAlignment != 0)
      return Status::invalid(cat(name, ".stride[", strided, "] = ", l.ld, " elements (", l.ld * esize,
                                 " bytes) is not a multiple of 16 bytes, which TMA needs: pad the leading dimension to a multiple of ",
                                 per_16b, " elements"));
  }
  *out = l;
  return Status();
}

Status check_pointer(const Tensor& t, const char* name, bool tma) {
  if (is_empty(t)) return Status();
  if (t.data == nullptr) return Status::invalid(cat(name, ": data pointer is null"));
  const uintptr_t align = tma ? uintptr_t(kTmaAlignment) : uintptr_t(dtype_size(t.dtype));
  if (reinterpret_cast<uintptr_t>(t.data) % align != 0)
    return Status::invalid(cat(name, ": data pointer ", t.data, " is not ", align, "-byte aligned",
                               tma ? " (TMA needs 16-byte aligned operands)" : ""));
  return Status();
}

bool same_view(const Tensor& x, const Tensor& y) {
  return x.data == y.data && x.dtype == y.dtype && x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1] &&
         (x.shape[0] <= 1 || x.stride[0] == y.stride[0]) && (x.shape[1] <= 1 || x.stride[1] == y.stride[1]);
}

Status check_aliasing(const GemmArgs& a, bool uses_c) {
  const ByteRange d = byte_range(a.d);
  if (overlaps(d, byte_range(a.a))) return Status::invalid("d: overlaps input a in memory (the output must not alias an input)");
  if (overlaps(d, byte_range(a.b))) return Status::invalid("d: overlaps input b in memory (the output must not alias an input)");
  if (uses_c && !same_view(a.c, a.d) && overlaps(d, byte_range(a.c)))
    return Status::invalid("c: overlaps d in memory without being the same matrix (only c == d, in place, is allowed)");
  return Status();
}

// e4m3: WGMMA reads 8-bit operands K-major only, and only the kk instances are compiled (the
// transposed problem of a K-major pair would need MN-major operands): A (M,K) row-major, B (K,N)
// column-major. The layouts are those matrix_layout decided (an extent-1 matrix may be either).
Status check_fp8_layouts(const GemmArgs& a) {
  if (a.a.dtype != HOPATTN_DTYPE_E4M3) return Status();
  MatrixLayout la, lb;
  matrix_layout(a.a, "a", true, &la);
  matrix_layout(a.b, "b", true, &lb);
  if (!la.row_major)
    return Status::unsupported(cat("a: e4m3 operands must be K-major (a row-major, stride[1] == 1); got strides (",
                                   a.a.stride[0], ", ", a.a.stride[1],
                                   "): WGMMA reads 8-bit operands K-major only; transpose a in memory"));
  if (lb.row_major)
    return Status::unsupported(cat("b: e4m3 operands must be K-major (b column-major, stride[0] == 1); got strides (",
                                   a.b.stride[0], ", ", a.b.stride[1],
                                   "): WGMMA reads 8-bit operands K-major only; store b as (N, K) row-major, i.e. "
                                   "b column-major (K, N)"));
  return Status();
}

// A per-tensor scale: 0 reads as 1 (an unset field).
float effective_scale(float s) { return s == 0.0f ? 1.0f : s; }

Status check_scalars(const GemmArgs& a) {
  if (!std::isfinite(a.alpha)) return Status::invalid(cat("alpha: must be finite, got ", a.alpha));
  if (!std::isfinite(a.beta)) return Status::invalid(cat("beta: must be finite, got ", a.beta));
  if (a.a.dtype == HOPATTN_DTYPE_E4M3) {
    if (!std::isfinite(a.scale_a)) return Status::invalid(cat("scale_a: must be finite, got ", a.scale_a));
    if (!std::isfinite(a.scale_b)) return Status::invalid(cat("scale_b: must be finite, got ", a.scale_b));
    const double folded = double(a.alpha) * effective_scale(a.scale_a) * effective_scale(a.scale_b);
    if (!(std::fabs(folded) <= double(std::numeric_limits<float>::max())))
      return Status::invalid(cat("alpha·scale_a·scale_b = ", folded, " overflows fp32 (alpha ", a.alpha, ", scale_a ",
                                 a.scale_a, ", scale_b ", a.scale_b, ")"));
    return Status();
  }
  if (a.scale_a != 0.0f && a.scale_a != 1.0f)
    return Status::invalid(cat("scale_a: ", a.scale_a, " given for ", hopattn_dtype_name(a.a.dtype),
                               " inputs; per-tensor scales apply to e4m3 only (use 0 or 1)"));
  if (a.scale_b != 0.0f && a.scale_b != 1.0f)
    return Status::invalid(cat("scale_b: ", a.scale_b, " given for ", hopattn_dtype_name(a.b.dtype),
                               " inputs; per-tensor scales apply to e4m3 only (use 0 or 1)"));
  return Status();
}

Status check_device_context(const GemmDeviceContext& ctx, bool uses_c) {
  if (ctx.stream_device != ctx.current_device)
    return Status::invalid(cat("stream: belongs to device ", ctx.stream_device, " but the current device is ",
                               ctx.current_device));
  for (int i = 0; i < kGemmTensors; ++i) {
    if (i == 2 && !uses_c) continue;
    if (ctx.tensor_device[i] == kHostMemory)
      return Status::invalid(cat(kGemmTensorNames[i], ": points to host memory; device memory is required"));
    if (ctx.tensor_device[i] >= 0 && ctx.tensor_device[i] != ctx.current_device)
      return Status::invalid(cat(kGemmTensorNames[i], ": lives on device ", ctx.tensor_device[i],
                                 " but the current device is ", ctx.current_device));
  }
  return Status();
}

std::string compiled_list(hopattn_dtype_t dtype) {
  std::string s;
  for (Variant v : compiled_variants(dtype)) s += (s.empty() ? "" : ", ") + std::string(variant_name(v));
  return s.empty() ? "none" : s;
}

// A TMA store needs D's base address and leading dimension to be multiples of 16 bytes (the
// direct epilogue of the other variants takes any strides).
bool can_tma_store_d(const GemmInstance& inst, const GemmProblem& p, std::string* why) {
  const int64_t esize = int64_t(dtype_size(p.out_dtype));
  const OutputLayout l = output_layout(p, int(esize));
  // D as the caller passed it: make_problem transposes the problem for some layouts.
  const int user_dim = (l.row_major != p.swapped) ? 0 : 1;
  if ((l.ld * esize) % kTmaAlignment != 0) {
    *why = cat(inst.name, " stores D with TMA: d.stride[", user_dim, "] = ", l.ld, " elements (", l.ld * esize,
               " bytes) is not a multiple of 16 bytes; pad d's leading dimension to a multiple of ",
               kTmaAlignment / esize, " elements or use another variant");
    return false;
  }
  if (reinterpret_cast<uintptr_t>(p.d) % uintptr_t(kTmaAlignment) != 0) {
    *why = cat(inst.name, " stores D with TMA: d's data pointer ", p.d, " is not 16-byte aligned");
    return false;
  }
  return true;
}

// Whether `inst` can run `p` on this device; `why` says what stops it.
bool can_implement(const GemmInstance& inst, const GemmProblem& p, const GemmDeviceContext& ctx, std::string* why) {
  if (ctx.max_smem_per_block > 0 && inst.smem_bytes > ctx.max_smem_per_block) {
    *why = cat(inst.name, " needs ", inst.smem_bytes, " bytes of shared memory; the device allows ",
               ctx.max_smem_per_block);
    return false;
  }
  const int64_t tiles = int64_t((p.m + inst.block_m - 1) / inst.block_m) * ((p.n + inst.block_n - 1) / inst.block_n);
  if ((tiles + inst.tiles_per_cta - 1) / inst.tiles_per_cta > kMaxExtent) {
    *why = cat(inst.name, ": ", tiles, " output tiles exceed the grid limit");
    return false;
  }
  if (inst.tma_store_d) return can_tma_store_d(inst, p, why);
  return true;
}

const GemmInstance* instance_for(Variant v, const GemmProblem& p) {
  return find_instance(v, p.dtype, p.major_a, p.major_b);
}

// AUTO: a heuristic tuned on the bench (H200, bf16 rcr, 2026-11-30 r2). With at least half a
// wave of 128x256 tiles (2 x tiles >= SMs): persistent (the cooperative tile on one CTA per SM,
// grouped raster, TMA store; it needs a TMA-storable D, else can_implement turns it down), then
// cooperative — at 4096x1024x8192 (128 tiles, 132 SMs) persistent ran at 0.92x cuBLAS against
// 0.81x (cooperative) and 0.70x (warp_specialized). Smaller problems: 128x128 tiles (more CTAs;
// at 1024x1024x8192, 32 tiles: warp_specialized 0.42x, persistent 0.34x). With at most half a
// wave of tiles and a long K (>= 2048: at least 16 k-tiles per CTA of a 2-way split), split_k
// first: the cooperative tile with K split over a cluster of 2-4 CTAs. Each list falls back
// along the others to whatever was compiled and can run.
const GemmInstance* pick_auto(const GemmProblem& p, const GemmDeviceContext& ctx, std::string* why) {
  const int sms = ctx.sm_count > 0 ? ctx.sm_count : 132;
  const int64_t coop_tiles = int64_t((p.m + 127) / 128) * ((p.n + 255) / 256);
  std::vector<Variant> order;
  if (2 * coop_tiles >= sms) order = {HOPATTN_GEMM_PERSISTENT, HOPATTN_GEMM_COOPERATIVE};
  else if (p.k >= 2048) order = {HOPATTN_GEMM_SPLIT_K};
  for (Variant v : {HOPATTN_GEMM_WARP_SPECIALIZED, HOPATTN_GEMM_PINGPONG, HOPATTN_GEMM_COOPERATIVE,
                    HOPATTN_GEMM_PERSISTENT, HOPATTN_GEMM_PIPELINED, HOPATTN_GEMM_TMA_WGMMA})
    order.push_back(v);
  std::string last;
  for (Variant v : order) {
    const GemmInstance* inst = instance_for(v, p);
    if (inst != nullptr && can_implement(*inst, p, ctx, &last)) {
      if (why) *why = cat("auto: ", inst->name, " (", coop_tiles, " 128x256 tiles, ", sms, " SMs)");
      return inst;
    }
  }
  if (why) *why = last.empty() ? "no compiled instance" : last;
  return nullptr;
}

Status check_variant(const GemmArgs& a, const GemmDeviceContext& ctx) {
  if (a.variant < 0 || a.variant >= HOPATTN_GEMM_VARIANT_COUNT)
    return Status::invalid(cat("variant: ", a.variant, " is out of range; one of ", variant_names()));
  if (a.a.shape[0] == 0 || a.b.shape[1] == 0) return Status();  // nothing will run
  const GemmProblem p = make_problem(a);
  std::string why;
  if (a.variant == HOPATTN_GEMM_AUTO) {
    if (pick_auto(p, ctx, &why) == nullptr)
      return Status::unsupported(cat("variant: auto found no kernel for ", hopattn_dtype_name(p.dtype),
                                     " that can run this problem (", why, "); compiled: ", compiled_list(p.dtype)));
    return Status();
  }
  const Variant v = static_cast<Variant>(a.variant);
  const GemmInstance* inst = instance_for(v, p);
  if (inst == nullptr)
    return Status::unsupported(cat("variant: ", variant_name(v), " is not compiled for ", hopattn_dtype_name(p.dtype),
                                   " in this build; compiled: ", compiled_list(p.dtype)));
  if (!can_implement(*inst, p, ctx, &why)) return Status::unsupported(cat("variant: ", why));
  return Status();
}

constexpr const char* kVariantNames[HOPATTN_GEMM_VARIANT_COUNT] = {
    "auto", "tma_wgmma", "pipelined", "warp_specialized", "cooperative", "pingpong", "persistent", "cluster2x1", "cluster1x2", "split_k"};
constexpr const char* kVariantSteps[HOPATTN_GEMM_VARIANT_COUNT] = {"0", "1", "2", "3", "4c", "4p", "5", "6x", "6y", "sk"};

}  // namespace

Status check_gemm(const GemmArgs& a, const GemmDeviceContext& ctx) {
  const bool uses_c = a.beta != 0.0f;
  if (Status s = check_geometry(a.a, "a", "M", "K"); !s.ok()) return s;
  if (Status s = check_geometry(a.b, "b", "K", "N"); !s.ok()) return s;
  if (Status s = check_geometry(a.d, "d", "M", "N"); !s.ok()) return s;
  if (uses_c) {
    if (Status s = check_geometry(a.c, "c", "M", "N"); !s.ok()) return s;
  }
  if (Status s = check_types(a, uses_c); !s.ok()) return s;
  if (Status s = check_shapes(a, uses_c); !s.ok()) return s;
  const Tensor* ts[4] = {&a.a, &a.b, &a.c, &a.d};
  for (int i = 0; i < kGemmTensors; ++i) {
    if (i == 2 && !uses_c) continue;
    const bool tma = i < 2;
    if (Status s = check_pointer(*ts[i], kGemmTensorNames[i], tma); !s.ok()) return s;
    MatrixLayout layout;
    if (Status s = matrix_layout(*ts[i], kGemmTensorNames[i], tma, &layout); !s.ok()) return s;
  }
  if (Status s = check_fp8_layouts(a); !s.ok()) return s;
  if (Status s = check_aliasing(a, uses_c); !s.ok()) return s;
  if (Status s = check_scalars(a); !s.ok()) return s;
  if (Status s = check_device_context(ctx, uses_c); !s.ok()) return s;
  return check_variant(a, ctx);
}

GemmProblem make_problem(const GemmArgs& a) {
  MatrixLayout la, lb;
  matrix_layout(a.a, "a", true, &la);
  matrix_layout(a.b, "b", true, &lb);
  GemmProblem p;
  p.m = int(a.a.shape[0]), p.k = int(a.a.shape[1]), p.n = int(a.b.shape[1]);
  p.dtype = a.a.dtype;
  p.out_dtype = a.d.dtype;
  // A (M,K): row-major is K-major. B (K,N) viewed as (N,K): column-major is K-major.
  p.a = a.a.data, p.lda = la.ld, p.major_a = la.row_major ? Major::kK : Major::kMN;
  p.b = a.b.data, p.ldb = lb.ld, p.major_b = lb.row_major ? Major::kMN : Major::kK;
  p.d = a.d.data, p.d_stride_m = a.d.stride[0], p.d_stride_n = a.d.stride[1];
  p.alpha = a.alpha, p.beta = a.beta;
  // e4m3: D = alpha·scale_a·scale_b·(A·B) + beta·C; the kernels see one factor (one rounding).
  if (p.dtype == HOPATTN_DTYPE_E4M3)
    p.alpha = float(double(a.alpha) * effective_scale(a.scale_a) * effective_scale(a.scale_b));
  if (p.beta != 0.0f) p.c = a.c.data, p.c_stride_m = a.c.stride[0], p.c_stride_n = a.c.stride[1];
  p.variant = static_cast<Variant>(a.variant);
  if (p.major_a == Major::kMN && p.major_b == Major::kK) {  // compiled as its transpose
    std::swap(p.m, p.n);
    std::swap(p.a, p.b);
    std::swap(p.lda, p.ldb);
    std::swap(p.major_a, p.major_b);
    std::swap(p.d_stride_m, p.d_stride_n);
    std::swap(p.c_stride_m, p.c_stride_n);
    p.swapped = true;
  }
  return p;
}

Variant select_variant(const GemmArgs& a, const GemmDeviceContext& ctx, std::string* why) {
  const GemmProblem p = make_problem(a);
  if (a.variant != HOPATTN_GEMM_AUTO) {
    const GemmInstance* inst = instance_for(static_cast<Variant>(a.variant), p);
    if (why) *why = inst ? cat("requested: ", inst->name) : "requested, not compiled";
    return static_cast<Variant>(a.variant);
  }
  const GemmInstance* inst = pick_auto(p, ctx, why);
  return inst ? inst->variant : HOPATTN_GEMM_AUTO;
}

const GemmInstance* select_instance(const GemmProblem& p, const GemmDeviceContext& ctx) {
  if (p.variant == HOPATTN_GEMM_AUTO) return pick_auto(p, ctx, nullptr);
  return instance_for(p.variant, p);
}

Tensor matrix(void* data, DType dtype, long long rows, long long cols, bool row_major, long long ld) {
  Tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = 2;
  t.shape[0] = rows, t.shape[1] = cols;
  if (row_major) {
    t.stride[0] = ld != 0 ? ld : cols, t.stride[1] = 1;
  } else {
    t.stride[0] = 1, t.stride[1] = ld != 0 ? ld : rows;
  }
  return t;
}

const char* variant_name(int v) { return v >= 0 && v < HOPATTN_GEMM_VARIANT_COUNT ? kVariantNames[v] : nullptr; }

bool parse_variant(const std::string& text, Variant* out) {
  for (int v = 0; v < HOPATTN_GEMM_VARIANT_COUNT; ++v) {
    if (text == kVariantNames[v] || text == kVariantSteps[v]) {
      *out = static_cast<Variant>(v);
      return true;
    }
  }
  return false;
}

std::string variant_names() {
  std::string s;
  for (int v = 0; v < HOPATTN_GEMM_VARIANT_COUNT; ++v) s += (v ? ", " : "") + std::string(kVariantNames[v]);
  return s;
}

std::vector<Variant> compiled_variants(DType dtype) {
  std::vector<Variant> out;
  for (const GemmInstance& i : compiled_instances()) {
    if (i.dtype != dtype) continue;
    bool seen = false;
    for (Variant v : out) seen |= (v == i.variant);
    if (!seen) out.push_back(i.variant);
  }
  return out;
}

}  // namespace hopattn::gemm

extern "C" hopattn_tensor_t hopattn_matrix(void* data, hopattn_dtype_t dtype, int64_t rows, int64_t cols,
                                           int32_t row_major, int64_t ld) {
  return hopattn::gemm::matrix(data, dtype, rows, cols, row_major != 0, ld);
}

extern "C" const char* hopattn_gemm_variant_name(int32_t variant) { return hopattn::gemm::variant_name(variant); }
