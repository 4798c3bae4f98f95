/* hopattn — fused attention and GEMM kernels for NVIDIA Hopper (sm_90a).
 *
 * The C ABI. Plain data only: no CUDA, CUTLASS or C++ types cross this boundary and no
 * exception escapes it. C++ callers can use these structs directly or include hopattn.hpp.
 *
 * Tensors are described by a pointer, an element type, a rank (at most 4), a shape and strides
 * counted in elements (not bytes). Attention tensors are (batch, seqlen, heads, hdim) with any
 * batch/seqlen/heads strides; the last dimension must be contiguous (stride 1).
 */
#ifndef HOPATTN_HOPATTN_H
#define HOPATTN_HOPATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HOPATTN_MAX_RANK 4
#define HOPATTN_STATUS_MESSAGE_SIZE 512

typedef enum hopattn_dtype {
  HOPATTN_DTYPE_BF16 = 0,
  HOPATTN_DTYPE_FP16 = 1,
  HOPATTN_DTYPE_FP32 = 2,
  HOPATTN_DTYPE_E4M3 = 3,
  HOPATTN_DTYPE_INT8 = 4,
  HOPATTN_DTYPE_INT32 = 5
} hopattn_dtype_t;

typedef enum hopattn_status_code {
  HOPATTN_OK = 0,
  HOPATTN_INVALID_ARGUMENT = 1, /* the arguments break a documented rule */
  HOPATTN_NOT_SUPPORTED = 2,    /* valid, but outside what this build compiled */
  HOPATTN_CUDA_ERROR = 3,       /* the CUDA runtime reported an error */
  HOPATTN_INTERNAL = 4
} hopattn_status_code_t;

typedef struct hopattn_status {
  hopattn_status_code_t code;
  char message[HOPATTN_STATUS_MESSAGE_SIZE]; /* names the argument and the reason; "" when OK */
} hopattn_status_t;

typedef struct hopattn_tensor {
  void* data;
  hopattn_dtype_t dtype;
  int32_t rank;
  int64_t shape[HOPATTN_MAX_RANK];
  int64_t stride[HOPATTN_MAX_RANK]; /* in elements */
} hopattn_tensor_t;

/* Forward attention: O = softmax(scale · Q·Kᵀ + mask) · V, per (batch, q-head).
 *
 *   q   (batch, seqlen_q, heads_q,  hdim)   bf16 or fp16
 *   k   (batch, seqlen_k, heads_kv, hdim)   same dtype as q
 *   v   (batch, seqlen_k, heads_kv, hdim)   same dtype as q
 *   o   (batch, seqlen_q, heads_q,  hdim)   same dtype as q; written
 *   lse (batch, heads_q, seqlen_q)          float32, optional (data == NULL: not written);
 *                                           natural-log log-sum-exp of the scaled scores
 *
 * heads_q must be a multiple of heads_kv: q-head h reads kv-head h / (heads_q / heads_kv)
 * (MHA when equal, GQA when between, MQA when heads_kv == 1).
 * causal: bottom-right aligned, as in FlashAttention-2/3: query i sees key j iff
 *   j <= i + seqlen_k - seqlen_q. A query row that sees no key gets O = 0 and LSE = -inf.
 * softmax_scale: 0 selects the default 1/sqrt(hdim); otherwise positive and finite.
 * seqlen_q == 0 or batch == 0 is a no-op; seqlen_k == 0 writes O = 0 and LSE = -inf. */
typedef struct hopattn_attention_fwd_args {
  hopattn_tensor_t q;
  hopattn_tensor_t k;
  hopattn_tensor_t v;
  hopattn_tensor_t o;
  hopattn_tensor_t lse;
  float softmax_scale;
  int32_t causal;
  int32_t schedule; /* 0: the default, chosen per call from head dim, mask and KV length
                       (docs/attention-ws.md); 1..14 name one kernel and tile for ablations */
} hopattn_attention_fwd_args_t;

/* Fills a rank-4 (batch, seqlen, heads, hdim) descriptor with contiguous strides. */
hopattn_tensor_t hopattn_tensor_bshd(void* data, hopattn_dtype_t dtype, int64_t batch,
                                     int64_t seqlen, int64_t heads, int64_t hdim);

/* Checks the arguments without touching the GPU's memory. */
hopattn_status_t hopattn_attention_forward_check(const hopattn_attention_fwd_args_t* args,
                                                 void* stream);

/* Checks, then enqueues the forward pass on `stream` (a cudaStream_t; NULL: the legacy default
 * stream). Returns without waiting for the GPU. */
hopattn_status_t hopattn_attention_forward(const hopattn_attention_fwd_args_t* args, void* stream);

const char* hopattn_dtype_name(hopattn_dtype_t dtype);
const char* hopattn_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOPATTN_HOPATTN_H */
