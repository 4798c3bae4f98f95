/* The C interface between hopattn's tools and the cuDNN baseline plugin (libhopattn_cudnn.so),
 * looked up with dlsym. Bump the ABI number when a signature changes. */
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

#ifdef __cplusplus
}
#endif

#endif
