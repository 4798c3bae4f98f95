// Must NOT compile: complement((2,2):(2,3), 19), the note's Example 2.10, which CUTLASS 3.3
// evaluated to the empty layout (_2,_0,_4):(_1,_4,_6); CuTe 4.2 rejects it statically.
// Run by the layout_static_rejects_complement test.
#include <cute/layout.hpp>

int main() {
  using cute::Int;
  auto a = cute::make_layout(cute::make_shape(Int<2>{}, Int<2>{}), cute::make_stride(Int<2>{}, Int<3>{}));
  return static_cast<int>(cute::size(cute::complement(a, Int<19>{})));
}
