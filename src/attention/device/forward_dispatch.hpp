// Between the checked public call and the kernels: pick the compiled instance for (dtype, hdim,
// schedule) and launch it. Only code under device/ launches kernels.
#pragma once

#include "attention/fwd_params.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::attention {

// Launches the forward kernel for p (all sizes > 0). Returns kNotSupported with a message when
// the build holds no instance for p's configuration.
Status run_forward(const FwdParams& p, Stream stream);

// seqlen_k == 0: writes O = 0 and LSE = -inf over the (strided) outputs.
Status write_empty_attention(const FwdParams& p, Stream stream);

}  // namespace hopattn::attention
