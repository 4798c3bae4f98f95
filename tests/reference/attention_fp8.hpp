// FP8 (e4m3) forward attention on the host: the inputs' quantization with per-(batch, kv-head)
// descales (FlashAttention-3's convention, hopattn.h "Since 0.5"), the low-precision yardstick
// that rounds P to e4m3 as the FP8 kernel does, FlashAttention-3's outlier inputs and the RMSE.
// The float64 reference for FP8 is attention_cpu_fp64 (or attention_gpu_fp64 with FP32 inputs) on
// the dequantized inputs (e4m3 value · descale).
#pragma once

#include <cstdint>
#include <vector>

#include "attention_reference.hpp"

namespace hopattn::reference {

// A (batch, seqlen, heads, hdim) tensor quantized to e4m3 per (batch, kv-head).
struct Fp8Tensor {
  std::vector<uint8_t> codes;    // e4m3, the input's shape, contiguous
  std::vector<float> values;     // the codes' values (exact in float32): what the FP8 kernel multiplies
  std::vector<float> descale;    // (batch, heads_kv) row-major
  std::vector<float> dequant;    // code value · descale, the input's shape
};

// Head h of `x` belongs to kv-head h / (heads / heads_kv). scaled: descale = amax / 448 over the
// (batch, kv-head)'s elements (1 where amax is 0), codes = e4m3(x / descale), so the largest
// magnitude maps to 448; unscaled: descale 1, codes = e4m3(x) (saturating past ±448).
// hadamard: each hdim row rotated first, as hopattn_fp8_quantize's hadamard = 1 does (hadamard_rotate);
// the codes, descales and dequantized values are then the rotated tensor's.
Fp8Tensor quantize_e4m3(const std::vector<float>& x, int batch, int seqlen, int heads, int hdim, int heads_kv,
                        bool scaled, bool hadamard = false);

// hopattn.h's rotation of one row of hdim (a power of two) floats, in place, in the library's
// order: the signs HOPATTN_FP8_HADAMARD_SIGN, butterflies of stride 1, 2, ..., hdim / 2
// ((a, b) -> (a + b, a - b)), one multiply by the float nearest 1/sqrt(hdim).
void hadamard_rotate(float* row, int hdim);

// The FP8 yardstick (attention_reference.hpp's tolerance rule): the FP8 kernel's arithmetic on the
// e4m3 codes (fp8_accumulate.hpp): S = Q·Kᵀ of the code values accumulated as the FP8 WGMMA does,
// its exponent's scale softmax_scale · q_descale · k_descale, an online softmax per KV block of
// block_n keys (0: the kernel's, fp8_kernel_block_n) with P = exp2(S · scale_log2 - (m · scale_log2
// - 8)) rounded to e4m3 (the row sum of the unrounded P in float32), O = bf16(Σ P·V / sum ·
// v_descale) with Σ P·V (V's code values) accumulated as the WGMMA does; LSE in natural-log units.
// q, k, v: code values (Fp8Tensor::values); the descales (batch, heads_kv) row-major, nullptr for 1.
// mma_sums: the row sums as the kernels whose P·V WGMMA takes them (FwdKernelSpec::mma_row_sum)
// have them: the e4m3-rounded P summed as that WGMMA accumulates a column of V of 1.0, and the row
// maximum lagging as theirs does (fp8_lagging_max, fp8_accumulate.hpp).
// Masks as attention_cpu_lowp; no softcap or sinks (the FP8 calls take neither). The float64
// reference stays attention_cpu_fp64 on the dequantized inputs.
void attention_cpu_fp8_lowp(const AttnProblem& p, const float* q, const float* k, const float* v, const float* q_descale,
                            const float* k_descale, const float* v_descale, float* o, float* lse, int block_n = 0,
                            bool mma_sums = false);
// The same on quantized tensors (their values and descales).
void attention_cpu_fp8_lowp(const AttnProblem& p, const Fp8Tensor& q, const Fp8Tensor& k, const Fp8Tensor& v, float* o,
                            float* lse, int block_n = 0, bool mma_sums = false);

// N(0, 1) values, each replaced with probability `outlier_fraction` by a draw from
// N(0, outlier_std²) (FlashAttention-3 §4.3: 0.1 % of entries N(0, 10²)); deterministic in seed.
std::vector<float> normal_with_outliers(int64_t n, uint64_t seed, double outlier_fraction, double outlier_std);

// sqrt(mean((got - ref)²)) over n elements (finite refs only).
double rmse(const double* ref, const float* got, int64_t n);

}  // namespace hopattn::reference
