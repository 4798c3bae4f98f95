// Stands in for src/layout while that library is not part of the build.
#include <cstdio>

namespace hopattn::layout {
int run_layout_command(int, char**) {
  std::fprintf(stderr, "hopattn layout: this build has no layout library\n");
  return 2;
}
}  // namespace hopattn::layout
