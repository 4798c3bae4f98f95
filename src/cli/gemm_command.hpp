// `hopattn gemm`: runs one GEMM through hopattn and cuBLAS in the same process, prints times,
// TFLOP/s and the ratio, and (--check) compares the two results element by element.
#pragma once

namespace hopattn::gemm {

// argv[0] == "gemm". Returns the exit code: 0 ok, 1 failure (error or check), 2 usage.
int run_gemm_command(int argc, char** argv);

}  // namespace hopattn::gemm
