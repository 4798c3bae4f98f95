/* The C ABI through pkg-config: prints the version, exit 0 when the ABI matches. */
#include <hopattn/hopattn.h>
#include <stdio.h>

int main(void) {
  printf("hopattn %s (ABI %d) via pkg-config\n", hopattn_version(), hopattn_abi_version());
  return hopattn_abi_version() == HOPATTN_ABI_VERSION ? 0 : 1;
}
