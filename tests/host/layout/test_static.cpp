// CuTe on static (cute::Int<>) layouts, from the generated file: where the note's conditions
// hold, CuTe's static result, the note's closed form and the brute force agree as functions.
#include <gtest/gtest.h>

#include <string>

#include "algebra.hpp"
#include "cute_bridge.hpp"
#include "evaluate.hpp"
#include "grid.hpp"
#include "oracle.hpp"
#include "parse.hpp"
#include "static_cases.hpp"

namespace hopattn::layout::testing {
namespace {

using static_cases::StaticCase;

std::string case_str(const StaticCase& c) {
  if (c.m > 0) return "complement(" + c.a + ", " + std::to_string(c.m) + ")";
  if (c.b.empty()) return "coalesce(" + c.a + ")";
  return c.a + " o " + c.b;
}

const StaticCase& find_case(const std::vector<StaticCase>& cases, const std::string& a,
                            const std::string& b, Int m) {
  for (const StaticCase& c : cases) {
    if (c.a == a && c.b == b && c.m == m) return c;
  }
  throw LayoutError("the generated file lacks the pinned case " + a + " " + b);
}

TEST(layout_static, CompositionsAgreeWhereConditionsHold) {
  Tally tally("static composition (cute::Int<> shapes and strides), generated cases");
  Failures failures;
  for (const StaticCase& c : static_cases::compositions()) {
    const Layout a = parse_layout(c.a);
    const Layout b = parse_layout(c.b);
    const std::vector<Int> truth = composed_values(a, b);
    const Outcome note = compose(a, b, Explain::kNo);
    const bool cute_right = same_function(c.cute, truth);
    // The run-time path on the same input, for comparison with the static one.
    const CuteRun run = cute_composition(a, b);
    const std::string runtime = quick_verdict(truth, run);
    tally.add(std::string(note.verdict.holds ? "conditions hold" : "conditions fail") + ", static CuTe " +
              (cute_right ? "right" : "wrong") + ", run-time CuTe " + runtime);
    if (note.verdict.holds && !same_function(*note.result, truth)) {
      failures.add(case_str(c) + ": the closed form " + note.result->str() + " is not f^_A o f_B");
    }
    if (note.verdict.holds && !cute_right) {
      failures.add(case_str(c) + ": the conditions hold but static CuTe gives " + c.cute.str());
    }
  }
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
  EXPECT_GT(tally.count("conditions hold, static CuTe right, run-time CuTe right"), 0);
}

TEST(layout_static, ComplementsAgreeWhereConditionsHold) {
  Tally tally("static complement, generated cases");
  Failures failures;
  for (const StaticCase& c : static_cases::complements()) {
    const Layout a = parse_layout(c.a);
    const Outcome note = complement(a, c.m, Explain::kNo);
    const auto cute_violation = complement_violation(a, c.m, c.cute);
    const auto contract = cute_complement_contract_violation(a, c.m, c.cute);
    tally.add(std::string(note.verdict.holds ? "conditions hold" : "conditions fail") + ", static CuTe " +
              (!cute_violation ? "right" : contract ? "wrong, breaks its documented contract"
                                                    : "wrong, meets its documented contract"));
    if (note.verdict.holds) {
      if (const auto violation = complement_violation(a, c.m, *note.result)) {
        failures.add(case_str(c) + ": the closed form " + note.result->str() + ": " + *violation);
      }
      if (cute_violation) failures.add(case_str(c) + ": static CuTe gives " + c.cute.str() + ": " + *cute_violation);
    }
  }
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
}

TEST(layout_static, CoalesceMatchesCute) {
  Tally tally("static coalesce, generated cases");
  for (const StaticCase& c : static_cases::coalesces()) {
    const Layout a = parse_layout(c.a);
    const Layout ours = coalesce(a);
    EXPECT_TRUE(same_function(c.cute, values(a))) << case_str(c) << ": CuTe's " << c.cute.str();
    EXPECT_EQ(ours.str(), c.cute.flattened().str()) << case_str(c);
    tally.add("cases");
  }
  tally.print();
}

TEST(layout_static, NoteExamplesPinned) {
  // The note's introduction: CuTe's answer differs from f^_A o f_B at x = 5 (7 instead of 8).
  const std::vector<StaticCase> compositions = static_cases::compositions();
  const std::vector<StaticCase> complements = static_cases::complements();
  const StaticCase& intro = find_case(compositions, "(6,2):(1,7)", "(3,2):(2,3)", 0);
  const std::vector<Int> truth = composed_values(parse_layout(intro.a), parse_layout(intro.b));
  const auto diff = first_difference(truth, intro.cute);
  ASSERT_TRUE(diff.has_value()) << "static CuTe now gets " << intro.cute.str() << " right";
  EXPECT_EQ(diff->x, 5);
  EXPECT_EQ(diff->actual, 7);
  EXPECT_EQ(diff->expected, 8);
  // Warning 2.21: CUTLASS 3.3 rejected this statically; 4.2 accepts it and agrees with the note.
  const StaticCase& warning = find_case(compositions, "(4,6,8,10):(2,3,5,7)", "6:12", 0);
  const Outcome note = compose(parse_layout(warning.a), parse_layout(warning.b));
  ASSERT_TRUE(note.verdict.holds);
  EXPECT_EQ(note.result->str(), "(2,3):(9,5)");
  EXPECT_TRUE(same_function(warning.cute, values(*note.result))) << warning.cute.str();
  // Example 2.10: complement(4:2, 19) evaluates to (2,3):(1,8), which is no complement.
  const StaticCase& example = find_case(complements, "4:2", "", 19);
  EXPECT_EQ(example.cute.flattened().str(), "(2,3):(1,8)");
  EXPECT_TRUE(complement_violation(parse_layout(example.a), 19, example.cute).has_value());
}

TEST(layout_static, PopulationAndAdmissibleRejections) {
  for (const static_cases::Population& p : static_cases::populations()) {
    std::cout << "[ counts   ] static " << p.operation << ": " << p.drawn << " drawn; conditions hold "
              << p.hold << " (CuTe's static checks reject " << p.hold_rejected << "), fail " << p.fail
              << " (CuTe rejects " << p.fail_rejected << ")\n";
  }
  // Each predicted rejection of an admissible input must really be admissible for the checker.
  int shown = 0;
  for (const static_cases::Rejection& r : static_cases::admissible_rejections()) {
    const Evaluation eval = evaluate_expression(parse_expression(r.expression));
    EXPECT_TRUE(eval.outcome.verdict.holds) << r.expression;
    if (shown++ < 5) std::cout << "[ counts   ]   admissible, static CuTe rejects: " << r.expression << " (" << r.assertion << ")\n";
  }
}

}  // namespace
}  // namespace hopattn::layout::testing
