/* The C interface between hopattn's tools and the cuDNN baseline plugin (libhopattn_cudnn.so),
 * looked up with dlsym. Bump the ABI number when a signature changes; a new entry point is added
 * as an optional symbol instead (looked up by name, the ABI number unchanged), so that a plugin
 * built before it still loads and the tools do without what it lacks. */
#ifndef HOPATTN_CUDNN_PLUGIN_ABI_H
#define HOPATTN_CUDNN_PLUGIN_ABI_H

#include <stddef.h>

#include "hopattn/hopattn.h"

#define HOPATTN_CUDNN_PLUGIN_ABI 1

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*hopattn_cudnn_plugin_abi_fn)(void);
typedef size_t (*hopattn_cudnn_version_fn)(void);
/* Runs cuDNN's SDPA forward on the arguments (already checked by hopattn). 0 on success; on
 * failure a message in err. */
typedef int (*hopattn_cudnn_sdpa_forward_fn)(const hopattn_attention_fwd_args_t* args, void* stream,
                                            char* err, size_t errlen);

/* Optional (since 2026-12-06; a plugin without it has no FP8 baseline): cuDNN's FP8 SDPA forward
 * (cudnn-frontend's sdpa_fp8) on e4m3 q, k, v (the arguments' shapes, strides, mask, scale and LSE
 * as for hopattn_cudnn_sdpa_forward). o bf16, fp16 or e4m3: cuDNN writes a 16-bit O for FP8 inputs
 * on Blackwell (cuDNN 9.13 and later) only, an e4m3 O (scale_o 1) on Hopper. q/k/v_descale unset
 * (descales of 1) or one value each, a (1, 1) tensor: cuDNN's descales are per tensor. The softmax
 * weights P are quantized as scale_s · P with scale_s 256 (descale_s 1/256), FlashAttention-3's
 * and hopattn's scaling of P. A causal mask with seqlen_q == seqlen_k is cuDNN's top-left one (the
 * same mask as hopattn's bottom-right there; cuDNN has no bottom-right mask for FP8 on Hopper), with
 * seqlen_q < seqlen_k its bottom-right one (Blackwell only). Returns 0 on success,
 * HOPATTN_CUDNN_NOT_SUPPORTED when cuDNN (or this plugin) does not take the configuration, any
 * other nonzero value on a failure; a message in err either way. */
#define HOPATTN_CUDNN_NOT_SUPPORTED 2
typedef int (*hopattn_cudnn_sdpa_fp8_forward_fn)(const hopattn_attention_fwd_args_t* args, void* stream,
                                                char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
