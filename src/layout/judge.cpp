#include "judge.hpp"

#include "oracle.hpp"

namespace hopattn::layout {

namespace {

using std::to_string;

Judgement not_evaluated(const CuteRun& run) {
  const CuteVerdict verdict =
      run.status == CuteStatus::kRejected ? CuteVerdict::kRejects : CuteVerdict::kUnsupported;
  return Judgement{verdict, run.note};
}

}  // namespace

const char* verdict_name(CuteVerdict verdict) {
  switch (verdict) {
    case CuteVerdict::kRight: return "right";
    case CuteVerdict::kWrong: return "wrong";
    case CuteVerdict::kRejects: return "rejects";
    case CuteVerdict::kUnsupported: return "not evaluated";
  }
  return "?";
}

Judgement judge_values(const std::vector<Int>& truth, const CuteRun& run,
                       const std::string& truth_name) {
  if (!run.evaluated()) return not_evaluated(run);
  const Int expected_size = static_cast<Int>(truth.size());
  if (run.result.size() != expected_size) {
    return Judgement{CuteVerdict::kWrong, "CuTe's layout has size " + to_string(run.result.size()) +
                                              ", " + truth_name + " has size " +
                                              to_string(expected_size)};
  }
  if (const auto diff = first_difference(truth, run.result)) {
    return Judgement{CuteVerdict::kWrong, "differs from " + truth_name + " at x = " +
                                              to_string(diff->x) + ": CuTe gives " +
                                              to_string(diff->actual) + ", the true value is " +
                                              to_string(diff->expected)};
  }
  return Judgement{CuteVerdict::kRight, "equals " + truth_name + " on all " +
                                            to_string(expected_size) + " points"};
}

Judgement judge_composition(const Layout& a, const Layout& b, const CuteRun& run) {
  if (!run.evaluated()) return not_evaluated(run);
  return judge_values(composed_values(a, b), run, "f^_A o f_B");
}

Judgement judge_complement(const Layout& a, Int m, const CuteRun& run) {
  if (!run.evaluated()) return not_evaluated(run);
  const auto violation = complement_violation(a, m, run.result);
  if (!violation) {
    return Judgement{CuteVerdict::kRight, "(A, R) is a bijection onto [0, " + to_string(m) +
                                              ") and R is increasing"};
  }
  std::string detail = "not a complement: " + *violation;
  const Existence truth = complement_exists(a, m);
  detail += truth.exists ? "; the complement is " + truth.witness->str()
                         : "; no complement exists: " + truth.reason;
  const auto contract = cute_complement_contract_violation(a, m, run.result);
  detail += contract ? "; it also breaks CuTe's documented contract (" + *contract + ")"
                     : "; it does meet CuTe's documented contract (disjoint, ordered, bounded)";
  return Judgement{CuteVerdict::kWrong, detail};
}

Judgement judge_divide(const Layout& a, const Layout& b, const CuteRun& run) {
  if (!run.evaluated()) return not_evaluated(run);
  const TrueFunction truth = divide_function(a, b);
  if (!truth.defined) return Judgement{CuteVerdict::kWrong, "CuTe returns a layout, but " + truth.reason};
  return judge_values(truth.values, run, "f^_A o f_(B, complement)");
}

Judgement judge_product(const Layout& a, const Layout& b, const CuteRun& run) {
  if (!run.evaluated()) return not_evaluated(run);
  const TrueFunction truth = product_function(a, b);
  if (!truth.defined) return Judgement{CuteVerdict::kWrong, "CuTe returns a layout, but " + truth.reason};
  return judge_values(truth.values, run, "(A, complement o B)");
}

}  // namespace hopattn::layout
