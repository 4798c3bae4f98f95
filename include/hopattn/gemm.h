/* hopattn — GEMM on NVIDIA Hopper (sm_90a): D = alpha·A·B + beta·C.
 *
 * The C ABI, plain data only (see hopattn.h for hopattn_tensor_t and hopattn_status_t).
 *
 *   a  (M, K)  rank 2, bf16, fp16 or e4m3
 *   b  (K, N)  rank 2, same dtype as a
 *   c  (M, N)  rank 2, same dtype as d; read only when beta != 0 (data may then be NULL)
 *   d  (M, N)  rank 2, bf16, fp16 or fp32; written
 *
 * Every matrix is row-major (stride[1] == 1) or column-major (stride[0] == 1); its other stride
 * is the leading dimension, at least the contiguous extent. A and B are read by TMA: their data
 * pointers must be 16-byte aligned and their leading dimensions multiples of 16 bytes (8 bf16 or
 * fp16 elements). A stride of a dimension of extent 1 is never used and is not checked.
 * The persistent variant also stores D with TMA: it needs the same of d (16-byte aligned pointer
 * and leading dimension); otherwise it reports not supported and AUTO picks another variant.
 * c may be d itself (same pointer and strides: an in-place update); no other overlap between d
 * and an input is allowed. Accumulation is in fp32.
 *
 * M == 0 or N == 0 is a no-op. K must be at least 1.
 *
 * FP8 (a and b e4m3, "e4m3fn": max 448, no infinity):
 *   D = alpha·scale_a·scale_b·(A·B) + beta·C, with D (and C) bf16, fp16 or fp32. scale_a and
 *   scale_b are per-tensor dequantization scales (0 reads as 1; finite; alpha·scale_a·scale_b is
 *   folded into one fp32 factor on the host). Both operands must be K-major, as WGMMA requires
 *   for 8-bit types: a row-major (stride[1] == 1) and b column-major (stride[0] == 1); any other
 *   layout is reported as not supported, naming the argument. Leading dimensions are multiples of
 *   16 bytes = 16 elements (pad K). Only the persistent variant has e4m3 kernels, so D must be
 *   TMA-storable (16-byte aligned pointer and leading dimension). The tensor cores accumulate
 *   FP8 products with less than fp32 precision (docs/gemm.md, "FP8").
 * For 16-bit inputs scale_a and scale_b must be 0 or 1 (0 reads as 1).
 */
#ifndef HOPATTN_GEMM_H
#define HOPATTN_GEMM_H

#include "hopattn/hopattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel variants, in the order of the tutorial's progression. AUTO lets a heuristic pick
 * the variant and tile shape for the problem among those this build compiled. */
typedef enum hopattn_gemm_variant {
  HOPATTN_GEMM_AUTO = 0,
  HOPATTN_GEMM_TMA_WGMMA = 1,        /* 1: TMA + WGMMA, one warpgroup, one stage (no pipelining) */
  HOPATTN_GEMM_PIPELINED = 2,        /* 2: multi-stage TMA pipeline on mbarriers, one warpgroup */
  HOPATTN_GEMM_WARP_SPECIALIZED = 3, /* 3: producer warpgroup + one consumer warpgroup, setmaxnreg */
  HOPATTN_GEMM_COOPERATIVE = 4,      /* 4a: two consumer warpgroups share one tile */
  HOPATTN_GEMM_PINGPONG = 5,         /* 4b: two consumer warpgroups alternate on two tiles */
  HOPATTN_GEMM_PERSISTENT = 6,       /* 5: persistent, grouped tile order, TMA-store epilogue */
  HOPATTN_GEMM_CLUSTER_2X1 = 7,      /* 6: persistent on 2x1 clusters, B multicast by TMA */
  HOPATTN_GEMM_CLUSTER_1X2 = 8,      /* 6: persistent on 1x2 clusters, A multicast by TMA */
  HOPATTN_GEMM_SPLIT_K = 9,          /* cooperative tile, K split over a cluster of 2 or 4 CTAs,
                                        partials summed in distributed shared memory (no workspace) */
  HOPATTN_GEMM_VARIANT_COUNT = 10
} hopattn_gemm_variant_t;

typedef struct hopattn_gemm_args {
  hopattn_tensor_t a;
  hopattn_tensor_t b;
  hopattn_tensor_t c;
  hopattn_tensor_t d;
  float alpha;
  float beta;
  float scale_a; /* e4m3 only: per-tensor dequantization scales, D = alpha·scale_a·scale_b·A·B + ...;
                    0 reads as 1 */
  float scale_b;
  int32_t variant; /* a hopattn_gemm_variant_t */
} hopattn_gemm_args_t;

/* A rank-2 descriptor: row-major (stride {ld, 1}) or column-major (stride {1, ld}).
 * ld == 0 selects the packed leading dimension (cols for row-major, rows for column-major). */
hopattn_tensor_t hopattn_matrix(void* data, hopattn_dtype_t dtype, int64_t rows, int64_t cols,
                                int32_t row_major, int64_t ld);

/* Checks the arguments without touching the GPU's memory (the variant too: a variant this build
 * did not compile, or one that cannot run the problem, is reported). */
hopattn_status_t hopattn_gemm_check(const hopattn_gemm_args_t* args, void* stream);

/* Checks, then enqueues D = alpha·A·B + beta·C on `stream` (a cudaStream_t; NULL: the legacy
 * default stream). Returns without waiting for the GPU. */
hopattn_status_t hopattn_gemm(const hopattn_gemm_args_t* args, void* stream);

/* "auto", "tma_wgmma", "pipelined", ...; NULL for a value out of range. */
const char* hopattn_gemm_variant_name(int32_t variant);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOPATTN_GEMM_H */
