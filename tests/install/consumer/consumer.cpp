// Uses the installed headers and library: version, ABI, and an argument error reported without a
// GPU (the checks run their host rules first). Exit 0 when all hold.
#include <hopattn/hopattn.hpp>
#include <hopattn/kvcache.hpp>

#include <cstdio>
#include <cstring>

int main() {
  std::printf("hopattn %s (ABI %d)\n", hopattn_version(), hopattn_abi_version());
  if (hopattn_abi_version() != HOPATTN_ABI_VERSION) return 1;
  hopattn_attention_fwd_args_t a = HOPATTN_ATTENTION_FWD_ARGS_INIT;
  a.q = hopattn_tensor_bshd(nullptr, HOPATTN_DTYPE_BF16, 1, 16, 4, 128);
  a.k = a.v = a.o = a.q;
  const hopattn_status_t s = hopattn_attention_forward_check(&a, nullptr);
  std::printf("check of a null q: %d %s\n", int(s.code), s.message);
  return s.code == HOPATTN_INVALID_ARGUMENT && std::strstr(s.message, "q") != nullptr ? 0 : 2;
}
