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

/* The library's version (semantic: a minor version adds, a major version may break) and its ABI
 * version: 2 since the argument structs carry their own size and name no kernel (version 1 had
 * `schedule` and `variant` fields). hopattn_version() and hopattn_abi_version() say what the
 * loaded library is; compare them with these macros to catch a header/library mismatch. */
#define HOPATTN_VERSION_MAJOR 0
#define HOPATTN_VERSION_MINOR 4
#define HOPATTN_VERSION_PATCH 0
#define HOPATTN_ABI_VERSION 2

/* Extensible argument structs. Every *_args struct starts with `struct_size`, the size of the
 * struct as the caller compiled it: set it to sizeof(the struct), e.g. with the *_INIT macros
 * below (`hopattn_attention_fwd_args_t args = HOPATTN_ATTENTION_FWD_ARGS_INIT;`), or use the C++
 * types of hopattn.hpp, whose constructors set it. Later versions only append fields, and a
 * field's zero value keeps the behaviour of the version before it, so a zero-initialised struct
 * means the same thing to every later library. The library reads the first struct_size bytes:
 * a smaller struct_size (a caller built against an older header) reads the fields past it as
 * zero, one smaller than the struct's first ABI-2 release is refused (HOPATTN_INVALID_ARGUMENT), and a
 * larger one (a caller built against a newer header) is accepted when every byte past the
 * fields this library knows is zero, and refused with HOPATTN_NOT_SUPPORTED otherwise. The
 * library picks the kernel for each call from what the arguments say (head dim, dtype, mask,
 * lengths, GQA group, cache type); no field names a kernel. */

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
 *   q   (batch, seqlen_q, heads_q,  hdim)   bf16 or fp16 (or e4m3: see "Since 0.5" below)
 *   k   (batch, seqlen_k, heads_kv, hdim)   same dtype as q
 *   v   (batch, seqlen_k, heads_kv, hdim)   same dtype as q
 *   o   (batch, seqlen_q, heads_q,  hdim)   same dtype as q (bf16 for e4m3 q); written
 *   lse (batch, heads_q, seqlen_q)          float32, optional (data == NULL: not written);
 *                                           natural-log log-sum-exp of the scaled scores
 *
 * heads_q must be a multiple of heads_kv: q-head h reads kv-head h / (heads_q / heads_kv)
 * (MHA when equal, GQA when between, MQA when heads_kv == 1).
 * causal: bottom-right aligned, as in FlashAttention-2/3: query i sees key j iff
 *   j <= i + seqlen_k - seqlen_q. A query row that sees no key gets O = 0 and LSE = -inf.
 * softmax_scale: 0 selects the default 1/sqrt(hdim); otherwise positive and finite.
 * seqlen_q == 0 or batch == 0 is a no-op; seqlen_k == 0 writes O = 0 and LSE = -inf.
 *
 * Since 0.3 (each zero value keeps 0.2's behaviour):
 * window != 0: a sliding window (FlashAttention's window_size = (window_left, window_right)):
 *   query i, at key position p = i + seqlen_k - seqlen_q (bottom-right aligned, as causal), sees
 *   key j iff p - window_left <= j <= p + window_right; -1 leaves that side unbounded. With
 *   causal, window_right must be 0 or -1 (both read as 0). With window == 0 both sides must be 0
 *   (a side set without the switch is refused, not ignored). KV tiles wholly outside a query
 *   tile's window are skipped, so the time grows with the window, not with seqlen_k.
 * softcap > 0: each score s = softmax_scale · q·k becomes softcap · tanh(s / softcap) before the
 *   mask and the softmax (Gemma 2's logit softcap); 0: off. LSE is over the capped scores.
 * sinks (heads_q) float32, optional (data == NULL: none): a logit per q-head that joins every
 *   row's softmax denominator without a value (gpt-oss's attention sinks):
 *   O = Σ_j exp(s_j) v_j / (exp(sink_h) + Σ_j exp(s_j)), LSE = log(exp(sink_h) + Σ_j exp(s_j)).
 *   Each sink must be finite or -inf (-inf: the same as no sink; +inf or NaN gives NaN rows).
 *   A row that sees no key gets O = 0 and LSE = sink_h.
 *
 * Since 0.4, variable-length batches (FlashAttention's flash_attn_varlen_func): a non-NULL
 * cu_seqlens_q.data selects them. The sequences are packed along the token dimension:
 *   q, o          (total_q, heads_q,  hdim)   rank 3
 *   k, v          (total_k, heads_kv, hdim)   rank 3
 *   lse           (heads_q, total_q)          rank 2, float32, optional (FlashAttention-3's layout)
 *   cu_seqlens_q  (batch + 1) int32, device memory, contiguous: sequence b's queries are the rows
 *                 [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of q and o
 *   cu_seqlens_k  (batch + 1) int32, device memory, contiguous: its keys start at row cu_seqlens_k[b]
 *                 of k and v and number cu_seqlens_k[b + 1] - cu_seqlens_k[b] ...
 *   seqused_k     (batch) int32, device memory, optional: ... or seqused_k[b] (at most that many)
 *   max_seqlen_q, max_seqlen_k  host ints >= every sequence's query / key count (>= 1)
 *   workspace     device memory of hopattn_attention_forward_workspace_size() bytes, 16-byte
 *                 aligned, not overlapping any tensor of the call (the tile list the call builds)
 * Each sequence is its own attention problem: causal and the window are bottom-right aligned per
 * sequence, GQA, softcap and sinks as above; a sequence with no key gets O = 0 and LSE = -inf (or
 * its sink). Rows of o and lse outside every sequence's range are not written. The lengths live in
 * device memory, so the GPU checks them: a sequence whose offsets decrease or leave the tensors,
 * or whose lengths exceed max_seqlen_q / max_seqlen_k (or seqused_k its cu_seqlens_k range), gets
 * no answer: NaN in its O and LSE rows where its query range is valid, nothing otherwise; the
 * first such sequence is recorded for hopattn_attention_device_check.
 *
 * Since 0.5, FP8 inputs (FlashAttention-3's convention): q, k and v of dtype e4m3 (OCP E4M3,
 * "e4m3fn": largest finite 448, no infinity), o bf16, lse float32, and optional descales:
 *   q_descale, k_descale, v_descale   (batch, heads_kv) float32, device memory, any strides
 *                                     (4-byte aligned); all three or none (none: every descale 1).
 *                                     A q-head uses the descales of its kv-head.
 * The scores are s = softmax_scale · q_descale · k_descale · (Q·Kᵀ), computed in float32 from the
 * e4m3 values, and O = v_descale · softmax(s)·V, where the kernel rounds the softmax weights P
 * (before normalisation) to e4m3 to multiply them by V; LSE is that of s. The mask, GQA/MQA and
 * the empty cases are as above. Padded batches only, with head dims this build compiled for FP8
 * (hopattn_attention_forward_check says which); a window, a softcap, sinks or a variable-length
 * batch with e4m3 inputs is refused with HOPATTN_NOT_SUPPORTED. The descales must be unset for
 * 16-bit inputs. */
typedef struct hopattn_attention_fwd_args {
  uint32_t struct_size; /* sizeof(hopattn_attention_fwd_args_t) (see "Extensible argument structs") */
  uint32_t reserved;    /* must be 0 */
  hopattn_tensor_t q;
  hopattn_tensor_t k;
  hopattn_tensor_t v;
  hopattn_tensor_t o;
  hopattn_tensor_t lse;
  float softmax_scale;
  int32_t causal;
  /* Since 0.3: */
  int32_t window;       /* nonzero: window_left and window_right apply */
  int32_t window_left;  /* -1: unbounded */
  int32_t window_right; /* -1: unbounded */
  float softcap;        /* 0: off */
  hopattn_tensor_t sinks;
  /* Since 0.4 (variable-length batches, above; all zero: a padded batch): */
  hopattn_tensor_t cu_seqlens_q;
  hopattn_tensor_t cu_seqlens_k;
  hopattn_tensor_t seqused_k;
  int32_t max_seqlen_q;
  int32_t max_seqlen_k;
  void* workspace;
  size_t workspace_bytes;
  /* Since 0.5 (e4m3 inputs, above; all zero: descales of 1, or a 16-bit call): */
  hopattn_tensor_t q_descale;
  hopattn_tensor_t k_descale;
  hopattn_tensor_t v_descale;
} hopattn_attention_fwd_args_t;

#define HOPATTN_ATTENTION_FWD_ARGS_INIT {(uint32_t)sizeof(hopattn_attention_fwd_args_t)}

/* Since 0.5: quantization to the forward call's FP8 inputs, per (batch, kv-head).
 *
 *   x        (batch, seqlen, heads, hdim)   bf16 or fp16, hdim contiguous
 *   out      (batch, seqlen, heads, hdim)   e4m3, hdim contiguous; written
 *   descale  (batch, heads_kv)              float32, any strides; written. heads_kv must divide
 *                                           heads: head h belongs to kv-head h / (heads / heads_kv)
 *                                           (q with the call's heads_kv; k and v with heads_kv = heads)
 * For each (batch, kv-head), amax = max |x| over its elements (NaN ignored), descale = amax / 448
 * (1 where amax is 0) and out = e4m3(x / descale), rounded to nearest even and saturating, so the
 * largest magnitude becomes ±448; descale is then the forward call's q_descale, k_descale or
 * v_descale for that tensor. out must not overlap x or descale. Enqueued on `stream`.
 *
 * hadamard = 1 (FlashAttention-3's "incoherent processing", for q and k, never v): each hdim row is
 * rotated before the amax and the rounding, x -> x·R with R = diag(s)·H/sqrt(hdim) orthogonal (H
 * the Sylvester Hadamard matrix, s_i = +1 or -1 by HOPATTN_FP8_HADAMARD_SIGN(i)), so q·kᵀ is
 * unchanged when both are rotated, while an outlier channel is spread over the row. hdim must be
 * a power of two from 32 to 256. The rotation is computed in float32 in a fixed order (the signs;
 * butterflies of stride 1, 2, 4, ... hdim/2, each (a, b) -> (a + b, a - b); one multiply by the
 * float nearest 1/sqrt(hdim)), so it is reproducible bit for bit. */
#define HOPATTN_FP8_HADAMARD_SIGN(i) (((((uint32_t)(i)) * 2654435761u) >> 31) ? -1 : 1)
typedef struct hopattn_fp8_quantize_args {
  uint32_t struct_size; /* sizeof(hopattn_fp8_quantize_args_t) (see "Extensible argument structs") */
  uint32_t reserved;    /* must be 0 */
  hopattn_tensor_t x;
  hopattn_tensor_t out;
  hopattn_tensor_t descale;
  int32_t hadamard; /* 0 (default) or 1: rotate each row first (above) */
} hopattn_fp8_quantize_args_t;

#define HOPATTN_FP8_QUANTIZE_ARGS_INIT {(uint32_t)sizeof(hopattn_fp8_quantize_args_t)}

hopattn_status_t hopattn_fp8_quantize(const hopattn_fp8_quantize_args_t* args, void* stream);

/* Fills a rank-4 (batch, seqlen, heads, hdim) descriptor with contiguous strides. */
hopattn_tensor_t hopattn_tensor_bshd(void* data, hopattn_dtype_t dtype, int64_t batch,
                                     int64_t seqlen, int64_t heads, int64_t hdim);

/* Fills a rank-3 (total, heads, hdim) descriptor with contiguous strides: the packed q, k, v and o
 * of a variable-length batch (since 0.4). */
hopattn_tensor_t hopattn_tensor_thd(void* data, hopattn_dtype_t dtype, int64_t total, int64_t heads, int64_t hdim);

/* Checks the arguments without touching the GPU's memory. */
hopattn_status_t hopattn_attention_forward_check(const hopattn_attention_fwd_args_t* args,
                                                 void* stream);

/* Checks, then enqueues the forward pass on `stream` (a cudaStream_t; NULL: the legacy default
 * stream). Returns without waiting for the GPU. */
hopattn_status_t hopattn_attention_forward(const hopattn_attention_fwd_args_t* args, void* stream);

/* Bytes of device workspace the call needs: 0 for a padded batch; for a variable-length batch
 * a bound that depends only on total_q, batch and heads_q (the call never allocates and stays
 * CUDA-graph capturable with the lengths changing between replays). */
hopattn_status_t hopattn_attention_forward_workspace_size(const hopattn_attention_fwd_args_t* args,
                                                          size_t* bytes);

/* Waits for `stream`, then returns HOPATTN_INVALID_ARGUMENT naming the first bad sequence that a
 * variable-length call recorded on this device (cu_seqlens_q, cu_seqlens_k or seqused_k; see
 * above), and clears the record; HOPATTN_OK if none. Separate from the call, which stays
 * asynchronous. It shares the device record of hopattn_kvcache_device_check. */
hopattn_status_t hopattn_attention_device_check(void* stream);

const char* hopattn_dtype_name(hopattn_dtype_t dtype);
/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char* hopattn_version(void);
/* HOPATTN_ABI_VERSION of the loaded library. */
int32_t hopattn_abi_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOPATTN_HOPATTN_H */
