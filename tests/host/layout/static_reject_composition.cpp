// Must NOT compile: CuTe's static composition rejects (4,3):(1,8) o 3:6 (the stride 6 falls
// into the first mode of shape 4 without dividing it). Confirms the generator's model of
// CuTe's static checks; run by the layout_static_rejects_composition test.
#include <cute/layout.hpp>

int main() {
  using cute::Int;
  auto a = cute::make_layout(cute::make_shape(Int<4>{}, Int<3>{}), cute::make_stride(Int<1>{}, Int<8>{}));
  auto b = cute::make_layout(Int<3>{}, Int<6>{});
  return static_cast<int>(cute::size(cute::composition(a, b)));
}
