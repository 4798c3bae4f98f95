// Pinned regressions: the note's examples, a counterexample to its Lemma 2.23, and the inputs on
// which CuTe's run-time path traps (confirming the guard in cute_bridge.cpp).
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "algebra.hpp"
#include "cute_bridge.hpp"
#include "grid.hpp"
#include "judge.hpp"
#include "oracle.hpp"
#include "parse.hpp"

namespace hopattn::layout::testing {
namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(layout_regressions, NoteIntroductionComposition) {
  const Layout a = parse_layout("(6,2):(1,7)");
  const Layout b = parse_layout("(3,2):(2,3)");
  const Outcome note = compose(a, b);
  EXPECT_FALSE(note.verdict.holds);
  EXPECT_TRUE(mentions(note.verdict.failures, "intervals of definition [2,4]")) << note.verdict.failures.at(0);
  EXPECT_TRUE(mentions(note.verdict.failures, "[3,3]"));
  // f^_A(f_B(5)) = f^_A(7) = f_A(1) + f_A(6) = 1 + 7.
  EXPECT_EQ(composed_values(a, b).at(5), 8);
  EXPECT_FALSE(composition_exists(a, b).exists);
  const CuteRun run = cute_composition(a, b);
  ASSERT_TRUE(run.evaluated()) << run.note;
  const auto diff = first_difference(composed_values(a, b), run.result);
  ASSERT_TRUE(diff.has_value()) << "CuTe now returns " << run.result.str();
  EXPECT_EQ(diff->x, 5);
  EXPECT_EQ(diff->actual, 7);
  EXPECT_EQ(judge_composition(a, b, run).verdict, CuteVerdict::kWrong);
}

TEST(layout_regressions, ComplementOf4_2In19) {
  const Layout a = parse_layout("4:2");
  const Outcome note = complement(a, 19);
  EXPECT_FALSE(note.verdict.holds);
  EXPECT_TRUE(mentions(note.verdict.failures, "4*2 = 8 does not divide M = 19"));
  EXPECT_FALSE(complement_exists(a, 19).exists);
  const CuteRun run = cute_complement(a, 19);
  ASSERT_TRUE(run.evaluated()) << run.note;
  EXPECT_EQ(run.result.flattened().str(), "(2,3):(1,8)");
  // Remark 2.9: cosize 18 exceeds floor(19/7)*7 = 14, against CuTe's own documented bound.
  const auto contract = cute_complement_contract_violation(a, 19, run.result);
  ASSERT_TRUE(contract.has_value());
  EXPECT_NE(contract->find("cosize(R) = 18 > floor(M/cosize(A))*cosize(A) = 14"), std::string::npos) << *contract;
  EXPECT_EQ(judge_complement(a, 19, run).verdict, CuteVerdict::kWrong);
}

TEST(layout_regressions, Lemma2_23Counterexample) {
  // complement(2:1, 6) = (1,3):(1,2), and its mode 3:2 does not left-divide (3,2).
  const Layout a = parse_layout("(3,2):(1,3)");
  const Layout b = parse_layout("2:1");
  EXPECT_TRUE(complement(b, a.size()).verdict.holds);
  EXPECT_TRUE(compose(a, b).verdict.holds);
  const Outcome note = logical_divide(a, b);
  EXPECT_FALSE(note.verdict.holds);
  EXPECT_TRUE(mentions(note.verdict.failures, "Lemma 2.23")) << note.verdict.failures.at(0);
  // For generic strides of A the true A / B is no layout compatible with (B, complement).
  const Layout divisor = Layout::tuple({b, *complement_exists(b, 6).witness});
  EXPECT_FALSE(composition_exists(generic_strides(a, divisor), divisor).exists);
  // CuTe's run-time logical_divide returns a layout of size 8 for a layout of size 6.
  const CuteRun run = cute_logical_divide(a, b);
  ASSERT_TRUE(run.evaluated()) << run.note;
  EXPECT_EQ(run.result.size(), 8);
}

TEST(layout_regressions, StrideThatDoesNotLeftDivide) {
  const Outcome note = compose(parse_layout("(6,2):(1,7)"), parse_layout("2:4"));
  ASSERT_FALSE(note.verdict.holds);
  EXPECT_TRUE(mentions(note.verdict.failures, "stride 4 of B does not left-divide the shape (6,2) of A"))
      << note.verdict.failures.at(0);
}

// The bridge refuses these inputs because CuTe divides by zero on them; the unguarded calls
// must really die with SIGFPE.
TEST(layout_regressions, CuteTrapsOnRuntimeZeroStride) {
  const Layout a = parse_layout("(6,2):(1,7)");
  EXPECT_EQ(cute_composition(a, parse_layout("3:0")).status, CuteStatus::kRejected);
  EXPECT_EXIT(cute_composition_unguarded(a, parse_layout("3:0")), ::testing::KilledBySignal(SIGFPE), "");
  EXPECT_EXIT(cute_composition_unguarded(a, parse_layout("(2,1):(1,0)")), ::testing::KilledBySignal(SIGFPE), "");
  EXPECT_EQ(cute_complement(parse_layout("4:0"), 8).status, CuteStatus::kRejected);
  EXPECT_EXIT(cute_complement_unguarded(parse_layout("4:0"), 8), ::testing::KilledBySignal(SIGFPE), "");
  // An integer A never divides: CuTe composes it with a zero stride fine.
  EXPECT_TRUE(cute_composition(parse_layout("6:1"), parse_layout("3:0")).evaluated());
}

}  // namespace
}  // namespace hopattn::layout::testing
