// Parsing, the layout function, and the properties of coalesce, sort and the inverses.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "algebra.hpp"
#include "grid.hpp"
#include "oracle.hpp"
#include "parse.hpp"

namespace hopattn::layout::testing {
namespace {

// Every layout of the property sweeps: rank 1 and 2 over the full grid, rank 3 over the
// reduced stride grid.
void for_each_property_layout(const std::function<void(const Layout&)>& f) {
  for_each_layout(1, kShapes, kAllStrides, f);
  for_each_layout(2, kShapes, kAllStrides, f);
  for_each_layout(3, kShapes, kReducedStrides, f);
}

TEST(layout_parse, RoundTripsCuteNotation) {
  for (const char* text : {"8:1", "(6,2):(1,7)", "((2,2),2):((4,1),2)", "(3,(2,4)):(1,(24,3))", "(6):(1)"}) {
    EXPECT_EQ(parse_layout(text).str(), text);
  }
  EXPECT_EQ(parse_layout(" ( _6 , _2 ) : ( _1 , _7 ) ").str(), "(6,2):(1,7)");
  // A bare shape gets CuTe's column-major compact strides.
  EXPECT_EQ(parse_layout("(4,(2,3))").str(), "(4,(2,3)):(1,(4,8))");
}

// The message and the 1-based column of the error for a malformed input.
std::pair<std::string, int> parse_error(const std::string& text) {
  try {
    parse_expression(text);
  } catch (const ParseError& e) {
    return {e.what(), e.column()};
  }
  return {"", 0};
}

TEST(layout_parse, ErrorsPointAtTheColumn) {
  EXPECT_EQ(parse_error("(6,2:(1,7)").second, 5);
  EXPECT_EQ(parse_error("(6,2):(1,7,3)").second, 7);
  EXPECT_EQ(parse_error("(0,2):(1,2)").second, 2);
  EXPECT_EQ(parse_error("(6,2):(1,7) o").second, 14);
  EXPECT_EQ(parse_error("(6,2):(1,-7)").second, 10);
  EXPECT_EQ(parse_error("complement(4:2)").second, 1);
  EXPECT_EQ(parse_error("8:1 o frobnicate(8:1)").second, 7);
  EXPECT_EQ(parse_error("8:1 8:1").second, 5);
  EXPECT_EQ(parse_error("").second, 1);
  EXPECT_NE(parse_error("(6,2:(1,7)").first.find("expected ',' or ')'"), std::string::npos);
}

TEST(layout_parse, OperatorsAreLeftAssociative) {
  const Expr expr = parse_expression("8:1 o 4:2 / 2:1");
  ASSERT_EQ(expr.kind, Expr::Kind::kCall);
  EXPECT_EQ(expr.name, "logical_divide");
  EXPECT_EQ(expr.args[0].name, "composition");
  EXPECT_EQ(parse_expression("8:1 \xE2\x88\x98 4:2").name, "composition");
}

TEST(layout_function, FollowsDefinition2_3) {
  const Layout a = parse_layout("(6,2):(1,7)");
  // x = 7 has coordinates (1, 1): 1*1 + 1*7.
  EXPECT_EQ(evaluate(a, 7), 8);
  // The extension takes the last mode as infinite: 13 = (1, 2) gives 1 + 2*7.
  EXPECT_EQ(evaluate_extended(a, 13), 15);
  EXPECT_EQ(a.size(), 12);
  EXPECT_EQ(a.cosize(), 13);
  const Layout nested = parse_layout("((2,2),2):((4,1),2)");
  EXPECT_EQ(values(nested), (std::vector<Int>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(nested.rank(), 2);
  EXPECT_EQ(nested.mode(0).str(), "(2,2):(4,1)");
}

TEST(layout_coalesce, PreservesTheFunctionAndIsIdempotent) {
  Tally tally("coalesce over rank-1/2 layouts (full grid) and rank-3 layouts (reduced strides)");
  Failures failures;
  for_each_property_layout([&](const Layout& a) {
    const Layout c = coalesce(a);
    tally.add("layouts");
    if (!same_function(c, values(a))) failures.add(a.str() + " coalesces to " + c.str() + ", another function");
    if (coalesce(c) != c) failures.add(a.str() + ": coalesce is not idempotent on " + c.str());
    // Only the domain is promised: the extension may change, e.g. (4,1):(1,0) -> 4:1.
    if (evaluate_extended(c, a.size()) != evaluate_extended(a, a.size())) tally.add("extension changed");
  });
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
}

TEST(layout_sort, OrdersByStrideThenShapeAndKeepsTheImage) {
  Failures failures;
  for_each_property_layout([&](const Layout& a) {
    const Layout s = sort_layout(a);
    const std::vector<Mode>& m = s.modes();
    for (std::size_t k = 1; k < m.size(); ++k) {
      const bool ordered = m[k - 1].stride < m[k].stride ||
                           (m[k - 1].stride == m[k].stride && m[k - 1].shape <= m[k].shape);
      if (!ordered) failures.add(a.str() + " sorts to " + s.str() + ", out of order");
    }
    std::vector<Int> before = values(a);
    std::vector<Int> after = values(s);
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    if (before != after) {
      failures.add(a.str() + " sorts to " + s.str() + " with another image");
    }
  });
  EXPECT_EQ(failures.count(), 0) << failures.report();
}

bool is_identity(const std::vector<Int>& v) {
  for (std::size_t x = 0; x < v.size(); ++x) {
    if (v[x] != static_cast<Int>(x)) return false;
  }
  return true;
}

bool injective(const Layout& a) {
  const std::vector<Int> v = values(a);
  return std::set<Int>(v.begin(), v.end()).size() == v.size();
}

TEST(layout_inverse, RightInverseComposesToTheIdentity) {
  Tally tally("right inverses over the property grid");
  Failures failures;
  for_each_property_layout([&](const Layout& a) {
    const Layout r = right_inverse(a);
    tally.add(r.size() > 1 ? "non-trivial right inverse" : "trivial right inverse (1:0)");
    if (!is_identity(composed_values(a, r))) failures.add(a.str() + ": A o " + r.str() + " is not the identity");
    // The note's composition accepts A o R and its closed form is the identity too.
    const Outcome composed = compose(a, r, Explain::kNo);
    if (!composed.verdict.holds || !is_identity(values(*composed.result))) {
      failures.add(a.str() + ": the closed form of A o " + r.str() + " is not the identity");
    }
  });
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
  EXPECT_GT(tally.count("non-trivial right inverse"), 0);
}

TEST(layout_inverse, LeftInverseComposesToTheIdentityWhereItExists) {
  Tally tally("left inverses over the property grid");
  Failures failures;
  for_each_property_layout([&](const Layout& a) {
    const Outcome left = left_inverse(a, Explain::kNo);
    if (!left.verdict.holds) {
      tally.add(injective(a) ? "none of this form (A injective)" : "none (A not injective)");
      return;
    }
    tally.add("exists");
    if (!injective(a)) failures.add(a.str() + ": a left inverse of a non-injective layout");
    if (!is_identity(composed_values(*left.result, a))) {
      failures.add(a.str() + ": " + left.result->str() + " o A is not the identity");
    }
    const Outcome composed = compose(*left.result, a, Explain::kNo);
    if (composed.verdict.holds && !is_identity(values(*composed.result))) {
      failures.add(a.str() + ": the closed form of L o A is not the identity");
    }
  });
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
  EXPECT_GT(tally.count("exists"), 0);
}

TEST(layout_complement, Proposition2_7OnAnExample) {
  const Outcome out = complement(parse_layout("4:2"), 24);
  ASSERT_TRUE(out.verdict.holds);
  // Definition 2.6: (d0, M/(N0 d0)) : (1, N0 d0) = (2, 24/8) : (1, 8).
  EXPECT_EQ(out.result->str(), "(2,3):(1,8)");
  EXPECT_FALSE(complement_violation(parse_layout("4:2"), 24, *out.result).has_value());
}

TEST(layout_composition, Example2_20ProjectsModes) {
  // Precomposing with (M_1):(M_0) picks mode 1 of A, whatever A's strides.
  const Outcome out = compose(parse_layout("(4,6,8):(5,3,11)"), parse_layout("(6,8):(4,24)"));
  ASSERT_TRUE(out.verdict.holds);
  EXPECT_EQ(out.result->str(), "(6,8):(3,11)");
}

}  // namespace
}  // namespace hopattn::layout::testing
