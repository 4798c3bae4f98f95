// Judges CuTe's answer against the brute-force truth of oracle.hpp.
#pragma once

#include <string>
#include <vector>

#include "cute_bridge.hpp"
#include "layout.hpp"

namespace hopattn::layout {

enum class CuteVerdict {
  kRight,        // CuTe's layout has the true function
  kWrong,        // CuTe returns a layout, silently, that does not have it
  kRejects,      // CuTe refuses the input (static_assert, or the computation traps)
  kUnsupported,  // not evaluated by this checker
};

const char* verdict_name(CuteVerdict verdict);

struct Judgement {
  CuteVerdict verdict = CuteVerdict::kUnsupported;
  std::string detail;
};

// CuTe's layout against the true values of the operation (`truth_name` names them in messages).
Judgement judge_values(const std::vector<Int>& truth, const CuteRun& run,
                       const std::string& truth_name);

Judgement judge_composition(const Layout& a, const Layout& b, const CuteRun& run);
// Right means: CuTe's R is the complement in the note's sense (Proposition 2.7 and ordered).
Judgement judge_complement(const Layout& a, Int m, const CuteRun& run);
Judgement judge_divide(const Layout& a, const Layout& b, const CuteRun& run);
Judgement judge_product(const Layout& a, const Layout& b, const CuteRun& run);

}  // namespace hopattn::layout
