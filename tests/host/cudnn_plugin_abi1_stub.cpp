// A cuDNN baseline plugin as built before the FP8 entry point (plugin ABI 1 without
// hopattn_cudnn_sdpa_fp8_forward): the three original symbols only, no cuDNN, no GPU.
// tests/host/test_bench_gpu_state.cpp loads it to check that the tools still take such a plugin
// and report an e4m3 call as not supported, naming the missing entry point.
#include "baselines/cudnn_plugin_abi.h"

extern "C" {

int hopattn_cudnn_plugin_abi(void) { return HOPATTN_CUDNN_PLUGIN_ABI; }

size_t hopattn_cudnn_version(void) { return 91900; }

int hopattn_cudnn_sdpa_forward(const hopattn_attention_fwd_args_t*, void*, char*, size_t) { return 0; }

}  // extern "C"
