// Exhaustive composition checks: the note's closed form, CuTe (run-time integers) and the brute
// force f^_A o f_B must agree as functions wherever the note's conditions hold; where they fail,
// the test records whether some layout still does the job and what CuTe returns.
//
// Enumerated (see docs/layout-algebra.md):
//   single-mode B : every rank-1/rank-2 A over the full grid x every rank-1 B over the full grid
//   two-mode B    : every rank-1/rank-2 shape of A, strides from kGenericStrides
//                   x every rank-2 B over the full grid
//   rank 3        : 100000 pairs (rank-3 A, rank-1..3 B) drawn with a fixed seed from the full grid
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "algebra.hpp"
#include "cute_bridge.hpp"
#include "grid.hpp"
#include "judge.hpp"
#include "oracle.hpp"

namespace hopattn::layout::testing {
namespace {

std::string pair_str(const Layout& a, const Layout& b) {
  return "A = " + a.str() + ", B = " + b.str();
}

// Whether a layout compatible with B has the function f^_A o f_B: for every choice of A's
// strides (tested with generic strides), only for the strides of this A, or not at all.
std::string existence(const Layout& a, const Layout& b) {
  if (composition_exists(generic_strides(a, b), b, Explain::kNo).exists) return "for every stride of A";
  if (composition_exists(a, b, Explain::kNo).exists) return "only for these strides of A";
  return "none";
}

void check_holds(const Layout& a, const Layout& b, const Outcome& note, Tally& tally,
                 Failures& failures) {
  const std::vector<Int> truth = composed_values(a, b);
  const CuteRun run = cute_composition(a, b);
  const std::string cute = quick_verdict(truth, run);
  // Zero strides are outside the note (its footnote 2); A o (N:0) = N:0 is our extension.
  const bool zero_stride = std::any_of(b.modes().begin(), b.modes().end(),
                                       [](const Mode& m) { return m.stride == 0; });
  tally.add(std::string("conditions hold") + (zero_stride ? ", B has a stride-0 leaf" : "") +
            ", CuTe " + cute);
  if (!same_function(*note.result, truth)) {
    failures.add(pair_str(a, b) + ": the closed form " + note.result->str() + " is not f^_A o f_B");
  }
  if (cute != std::string("right") && cute != std::string("rejects")) {
    failures.add(pair_str(a, b) + ": the conditions hold but CuTe's " + run.result.str() + " is " + cute);
  }
  // The closed form does not depend on A's strides, so it must work for every choice of them.
  if (existence(a, b) != "for every stride of A") {
    failures.add(pair_str(a, b) + ": the conditions hold but the oracle finds no layout for generic strides");
  }
}

void check_fails(const Layout& a, const Layout& b, Tally& tally, Failures& failures) {
  const std::string exists = existence(a, b);
  const CuteRun run = cute_composition(a, b);
  std::string cute = quick_verdict(composed_values(a, b), run);
  if (cute == "right") {
    const Layout generic = generic_strides(a, b);
    const CuteRun generic_run = cute_composition(generic, b);
    if (quick_verdict(composed_values(generic, b), generic_run) == std::string("right")) {
      cute = "right for every stride of A";
    } else {
      cute = "right only for these strides of A";
    }
  }
  tally.add("conditions fail, a layout exists " + exists + ", CuTe " + cute);
  // CuTe's result is compatible with B, so it can only be right where such a layout exists.
  if (cute != "wrong" && cute != "rejects" && exists == "none") {
    failures.add(pair_str(a, b) + ": CuTe is right but the oracle finds no layout compatible with B");
  }
}

void check_composition(const Layout& a, const Layout& b, Tally& tally, Failures& failures) {
  const Outcome note = compose(a, b, Explain::kNo);
  tally.add("pairs checked");
  tally.add(note.verdict.holds ? "conditions hold" : "conditions fail");
  if (note.verdict.holds) {
    check_holds(a, b, note, tally, failures);
  } else {
    check_fails(a, b, tally, failures);
  }
}

void expect_clean(const Tally& tally, const Failures& failures) {
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
  // The enumeration must exercise both sides of the conditions.
  EXPECT_GT(tally.count("conditions hold"), 0);
  EXPECT_GT(tally.count("conditions fail"), 0);
}

TEST(layout_composition, SingleModeBFullGrid) {
  Tally tally("composition, rank-1/2 A (full grid) x rank-1 B (full grid)");
  Failures failures;
  for (int rank_a = 1; rank_a <= 2; ++rank_a) {
    for_each_layout(rank_a, kShapes, kAllStrides, [&](const Layout& a) {
      for_each_layout(1, kShapes, kAllStrides,
                      [&](const Layout& b) { check_composition(a, b, tally, failures); });
    });
  }
  EXPECT_EQ(tally.count("pairs checked"), (150 + 150 * 150) * 150);
  expect_clean(tally, failures);
}

// The full grid in four shards (A layouts by index mod 4), so that CTest runs them in parallel.
class TwoModeBFullGrid : public ::testing::TestWithParam<int> {};

TEST_P(TwoModeBFullGrid, Shard) {
  const int shard = GetParam();
  Tally tally("composition, rank-1/2 A (all shapes, strides {0,1,7,24}) x rank-2 B (full grid), shard " +
              std::to_string(shard) + " of 4");
  Failures failures;
  int index = 0, mine = 0;
  for (int rank_a = 1; rank_a <= 2; ++rank_a) {
    for_each_layout(rank_a, kShapes, kGenericStrides, [&](const Layout& a) {
      if (index++ % 4 != shard) return;
      ++mine;
      for_each_layout(2, kShapes, kAllStrides,
                      [&](const Layout& b) { check_composition(a, b, tally, failures); });
    });
  }
  EXPECT_EQ(index, 6 * 4 + 36 * 16);  // every A of the grid, over the four shards
  EXPECT_EQ(tally.count("pairs checked"), mine * 150 * 150);
  expect_clean(tally, failures);
}

INSTANTIATE_TEST_SUITE_P(layout_composition, TwoModeBFullGrid, ::testing::Range(0, 4));

TEST(layout_composition, Rank3SeededSample) {
  Tally tally("composition, 100000 seeded pairs: rank-3 A x rank-1..3 B (full grid)");
  Failures failures;
  std::mt19937_64 rng(20240106);
  for (int i = 0; i < 100000; ++i) {
    const Layout a = random_layout(rng, 3, kShapes, kAllStrides);
    const Layout b = random_layout(rng, 1 + i % 3, kShapes, kAllStrides);
    check_composition(a, b, tally, failures);
  }
  expect_clean(tally, failures);
}

}  // namespace
}  // namespace hopattn::layout::testing
