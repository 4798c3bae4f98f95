// CuTe's own answers (CUTLASS 4.2, host code, run-time integers), as plain layouts.
//
// This header does not include CuTe; the implementation (cute_bridge.cpp) does. Shapes and
// strides are passed to CuTe as run-time integers, one flat tuple per operand (nesting does not
// change the function, and CuTe composes leaf by leaf).
#pragma once

#include <string>

#include "layout.hpp"

namespace hopattn::layout {

enum class CuteStatus {
  kEvaluated,    // CuTe returned a layout
  kRejected,     // CuTe refuses the input: a static_assert fires, or the computation would trap
  kUnsupported,  // this checker does not instantiate CuTe for the input (too many leaves)
};

struct CuteRun {
  CuteStatus status = CuteStatus::kUnsupported;
  Layout result;
  std::string note;  // why CuTe rejects the input, or why it was not evaluated
  bool evaluated() const { return status == CuteStatus::kEvaluated; }
};

// Leaves per operand that the run-time dispatch instantiates.
inline constexpr int kCuteMaxLeaves = 4;

CuteRun cute_composition(const Layout& a, const Layout& b);
CuteRun cute_complement(const Layout& a, Int m);
CuteRun cute_logical_divide(const Layout& a, const Layout& b);
CuteRun cute_logical_product(const Layout& a, const Layout& b);
CuteRun cute_coalesce(const Layout& a);

// cute::complement of a layout with two leaves, with static strides (cute::Int<>) and run-time
// shapes: CuTe's run-time path rejects every complement with more than one leaf, so this is how
// it evaluates one without fixing the shapes at compile time. Instantiated for strides up to
// kStaticStrideLimit.
inline constexpr int kStaticStrideLimit = 24;
CuteRun cute_complement_static_strides(const Layout& a, Int m);

// Calls cute::composition without the guard against a zero stride, for the test that confirms
// the guard's premise (the process dies with SIGFPE). Never call it elsewhere.
Layout cute_composition_unguarded(const Layout& a, const Layout& b);
// Same for cute::complement of a rank-1 layout.
Layout cute_complement_unguarded(const Layout& a, Int m);

}  // namespace hopattn::layout
