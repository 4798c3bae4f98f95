/* The C ABI through pkg-config: every public C header compiles as C, the version and ABI match,
 * and a host-only call (the layout checker) answers. Exit 0 when all hold. */
#include <hopattn/gemm.h>
#include <hopattn/hopattn.h>
#include <hopattn/kvcache.h>
#include <hopattn/layout.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  printf("hopattn %s (ABI %d) via pkg-config\n", hopattn_version(), hopattn_abi_version());
  if (hopattn_abi_version() != HOPATTN_ABI_VERSION) return 1;
  hopattn_kvcache_append_args_t append = HOPATTN_KVCACHE_APPEND_ARGS_INIT;
  if (append.struct_size != sizeof(append)) return 2;
  char report[4096];
  size_t needed = 0;
  const int32_t code = hopattn_layout_report("complement(4:2, 24)", 0, report, sizeof(report), &needed);
  printf("layout report: code %d, %zu bytes\n", (int)code, needed);
  return code == 0 && strstr(report, "(2,3):(1,8)") != NULL ? 0 : 3;
}
