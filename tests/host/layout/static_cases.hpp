// Compile-time CuTe cases: layouts with cute::Int<> shapes and strides, instantiated in a file
// that gen_static_cases.cpp writes at build time. Each case carries CuTe's result; the test
// (test_static.cpp) recomputes everything else from the case's text.
#pragma once

#include <string>
#include <vector>

#include "layout.hpp"

namespace hopattn::layout::static_cases {

struct StaticCase {
  std::string a;   // A in CuTe notation
  std::string b;   // B for a composition, empty otherwise
  Int m = 0;       // M for a complement, 0 otherwise
  Layout cute;     // CuTe's result for static A (and B)
};

std::vector<StaticCase> compositions();
std::vector<StaticCase> complements();
std::vector<StaticCase> coalesces();

// Counts over every candidate the generator drew, including those CuTe's static checks reject
// (which cannot be instantiated). "Rejected" is the generator's model of CuTe's static_asserts;
// test_static.cpp and the compile-fail tests in CMakeLists.txt confirm it on examples.
struct Population {
  const char* operation;
  int drawn;
  int hold;              // the note's conditions hold
  int hold_rejected;     // ... but CuTe's static checks reject the input
  int fail;
  int fail_rejected;
};
std::vector<Population> populations();

// Inputs where the note's conditions hold but the model says CuTe's static path rejects them.
struct Rejection {
  std::string expression;
  std::string assertion;  // the static_assert message CuTe would fail with
};
std::vector<Rejection> admissible_rejections();

}  // namespace hopattn::layout::static_cases
