// Exhaustive checks of complement, logical division and logical product.
//
// Enumerated (see docs/layout-algebra.md):
//   complement : every rank-1/rank-2 A over the full grid x every M in [1, 64] (CuTe: rank 1 on
//                run-time integers, rank 2 with static strides and run-time shapes);
//                every rank-3 shape with strides from kReducedStrides x every M in [1, 64]
//   divide     : every rank-1/rank-2 shape of A with strides from kGenericStrides
//                x every rank-1 B over the full grid (CuTe evaluated);
//                every rank-1/rank-2 shape of A with compact strides x every rank-2 B over the
//                full grid (CuTe's run-time path cannot take a rank-2 divisor)
//   product    : every rank-1/rank-2 shape of A with strides from kGenericStrides
//                x every rank-1 B over the full grid
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

std::string complement_str(const Layout& a, Int m) {
  return "complement(" + a.str() + ", " + std::to_string(m) + ")";
}

// CuTe's complement: right (the note's complement), wrong (and whether it at least meets CuTe's
// own documented contract), or rejected. One leaf goes through the run-time path; two leaves
// through static strides with run-time shapes, since the run-time path rejects them.
std::string cute_complement_verdict(const Layout& a, Int m) {
  const CuteRun run = a.modes().size() == 2 ? cute_complement_static_strides(a, m) : cute_complement(a, m);
  if (run.status == CuteStatus::kRejected) return "rejects (division by zero)";
  if (!complement_violation(a, m, run.result)) return "right";
  return cute_complement_contract_violation(a, m, run.result) ? "wrong, breaks its documented contract"
                                                              : "wrong, meets its documented contract";
}

// Definition 2.5 applied to A without its shape-1 leaves (with none left, A is the trivial
// layout and M:1 is its complement).
bool holds_without_ones(const Layout& a, Int m) {
  std::vector<Mode> kept;
  for (const Mode& mode : a.modes()) {
    if (mode.shape > 1) kept.push_back(mode);
  }
  return kept.empty() || complement(Layout::flat(kept), m, Explain::kNo).verdict.holds;
}

void check_complement(const Layout& a, Int m, Tally& tally, Failures& failures) {
  const Outcome note = complement(a, m, Explain::kNo);
  const Existence truth = complement_exists(a, m, Explain::kNo);
  tally.add("pairs checked");
  const std::string cute = a.modes().size() > 2    ? "not evaluated"
                           : a.modes().size() == 2 ? "(static strides) " + cute_complement_verdict(a, m)
                                                   : "(run time) " + cute_complement_verdict(a, m);
  if (note.verdict.holds) {
    // CuTe cannot filter a shape-1 leaf whose shape is only known at run time, and it orders
    // equal strides by position, not by shape: (2,1):(1,1) then gives it 1/2 = 0 as a shape.
    const bool runtime_one = a.modes().size() == 2 && std::any_of(a.modes().begin(), a.modes().end(),
                                                                  [](const Mode& mode) { return mode.shape == 1; });
    tally.add(std::string("conditions hold") + (runtime_one ? ", A has a shape-1 leaf" : "") + ", CuTe " + cute);
    if (const auto violation = complement_violation(a, m, *note.result)) {
      failures.add(complement_str(a, m) + " = " + note.result->str() + ": " + *violation);
    }
    if (cute.find("wrong") != std::string::npos && !runtime_one) {
      failures.add(complement_str(a, m) + ": the conditions hold but CuTe is " + cute);
    }
    return;
  }
  // Definition 2.5 keeps shape-1 leaves (only composition strips them, section 2.2); say whether
  // they are all that stands in the way.
  const bool only_ones = holds_without_ones(a, m);
  tally.add(std::string("conditions fail") + (only_ones ? " (hold once shape-1 leaves are dropped)" : "") +
            ", " + (truth.exists ? "a complement exists" : "no complement exists") + ", CuTe " + cute);
  // On this grid Definition 2.5 without shape-1 leaves is also necessary; a counterexample would
  // be a finding worth a look, so it fails the test.
  if (truth.exists && !only_ones) {
    failures.add(complement_str(a, m) + ": a complement exists although Definition 2.5 fails without shape-1 leaves");
  }
  if (cute.find("right") != std::string::npos && !truth.exists) {
    failures.add(complement_str(a, m) + ": CuTe's answer is a complement but the oracle finds none");
  }
}

void expect_clean(const Tally& tally, const Failures& failures) {
  tally.print();
  EXPECT_EQ(failures.count(), 0) << failures.report();
}

TEST(layout_complement, Rank1And2FullGrid) {
  Tally tally("complement, rank-1/2 A (full grid) x M in [1, 64]");
  Failures failures;
  for (int rank = 1; rank <= 2; ++rank) {
    for_each_layout(rank, kShapes, kAllStrides, [&](const Layout& a) {
      for (Int m = 1; m <= kMaxM; ++m) check_complement(a, m, tally, failures);
    });
  }
  EXPECT_EQ(tally.count("pairs checked"), (150 + 150 * 150) * kMaxM);
  expect_clean(tally, failures);
}

TEST(layout_complement, Rank3ReducedStrides) {
  Tally tally("complement, rank-3 A (all shapes, strides {0,1,2,3,4,6,8,12,16,24}) x M in [1, 64]");
  Failures failures;
  for_each_layout(3, kShapes, kReducedStrides, [&](const Layout& a) {
    for (Int m = 1; m <= kMaxM; ++m) check_complement(a, m, tally, failures);
  });
  EXPECT_EQ(tally.count("pairs checked"), 216 * 1000 * kMaxM);
  expect_clean(tally, failures);
}

std::string divide_str(const Layout& a, const Layout& b) { return a.str() + " / " + b.str(); }

// Whether the true A / B = f^_A o f_(B, R), R the complement of B in size(A), is a layout
// compatible with (B, R): for every choice of A's strides, only for these, or not at all.
std::string true_divide_existence(const Layout& a, const Layout& b, const TrueFunction& truth) {
  if (!truth.defined) return "no complement of B in size(A)";
  const Layout divisor = Layout::tuple({b, *complement_exists(b, a.size()).witness});
  if (composition_exists(generic_strides(a, divisor), divisor, Explain::kNo).exists) {
    return "the true A / B is a layout for every stride of A";
  }
  if (composition_exists(a, divisor, Explain::kNo).exists) return "the true A / B is a layout for these strides";
  return "the true A / B is no layout";
}

// Checks A / B: the closed form against the true function, Lemma 2.23, and (optionally) CuTe.
void check_divide(const Layout& a, const Layout& b, bool with_cute, Tally& tally, Failures& failures) {
  const Outcome note = logical_divide(a, b, Explain::kNo);
  // Definition 2.22's two conditions; Lemma 2.23 claims they make the whole composition admissible.
  const bool parts_hold = complement(b, a.size(), Explain::kNo).verdict.holds &&
                          compose(a, b, Explain::kNo).verdict.holds;
  const TrueFunction truth = divide_function(a, b);
  std::string cute = "not evaluated";
  if (with_cute) {
    const CuteRun run = cute_logical_divide(a, b);
    cute = run.status == CuteStatus::kRejected ? "rejects"
           : !truth.defined                    ? "wrong (no complement exists)"
                                               : quick_verdict(truth.values, run);
  }
  tally.add("pairs checked");
  if (note.verdict.holds && !parts_hold) {
    failures.add(divide_str(a, b) + ": the checker accepts A / B although Definition 2.22 fails");
  }
  if (parts_hold && !note.verdict.holds) {
    tally.add("Definition 2.22 holds but Lemma 2.23 fails, " + true_divide_existence(a, b, truth) +
              ", CuTe " + cute);
    return;
  }
  if (note.verdict.holds) {
    tally.add("conditions hold, CuTe " + cute);
    if (!truth.defined || !same_function(*note.result, truth.values)) {
      failures.add(divide_str(a, b) + ": the closed form " + note.result->str() + " is not the true A / B");
    }
    if (cute != "right" && cute != "rejects" && cute != "not evaluated") {
      failures.add(divide_str(a, b) + ": the conditions hold but CuTe is " + cute);
    }
    return;
  }
  tally.add("conditions fail, " + true_divide_existence(a, b, truth) + ", CuTe " + cute);
}

TEST(layout_divide, Rank1DivisorFullGrid) {
  Tally tally("logical_divide, rank-1/2 A (all shapes, strides {0,1,7,24}) x rank-1 B (full grid)");
  Failures failures;
  for (int rank = 1; rank <= 2; ++rank) {
    for_each_layout(rank, kShapes, kGenericStrides, [&](const Layout& a) {
      for_each_layout(1, kShapes, kAllStrides,
                      [&](const Layout& b) { check_divide(a, b, true, tally, failures); });
    });
  }
  EXPECT_EQ(tally.count("pairs checked"), (6 * 4 + 36 * 16) * 150);
  expect_clean(tally, failures);
}

TEST(layout_divide, Rank2DivisorFullGrid) {
  Tally tally("logical_divide, rank-1/2 A (all shapes, compact strides) x rank-2 B (full grid)");
  Failures failures;
  for (int rank = 1; rank <= 2; ++rank) {
    for_each_layout(rank, kShapes, {1}, [&](const Layout& unit) {
      const Layout a = unit.modes().size() == 1
                           ? unit
                           : Layout::flat({unit.modes()[0], Mode{unit.modes()[1].shape, unit.modes()[0].shape}});
      for_each_layout(2, kShapes, kAllStrides,
                      [&](const Layout& b) { check_divide(a, b, false, tally, failures); });
    });
  }
  EXPECT_EQ(tally.count("pairs checked"), (6 + 36) * 150 * 150);
  expect_clean(tally, failures);
}

TEST(layout_product, Rank1TilerFullGrid) {
  Tally tally("logical_product, rank-1/2 A (all shapes, strides {0,1,7,24}) x rank-1 B (full grid)");
  Failures failures;
  for (int rank = 1; rank <= 2; ++rank) {
    for_each_layout(rank, kShapes, kGenericStrides, [&](const Layout& a) {
      for_each_layout(1, kShapes, kAllStrides, [&](const Layout& b) {
        const Outcome note = logical_product(a, b, Explain::kNo);
        const TrueFunction truth = product_function(a, b);
        const CuteRun run = cute_logical_product(a, b);
        const std::string cute = !truth.defined ? (run.evaluated() ? "wrong (no complement exists)" : "rejects")
                                                : quick_verdict(truth.values, run);
        tally.add("pairs checked");
        tally.add(std::string(note.verdict.holds ? "conditions hold" : "conditions fail") +
                  (truth.defined ? ", true product defined" : ", no complement") + ", CuTe " + cute);
        if (note.verdict.holds && (!truth.defined || !same_function(*note.result, truth.values))) {
          failures.add(a.str() + " * " + b.str() + ": the closed form " + note.result->str() +
                       " is not the true product");
        }
        if (note.verdict.holds && cute == "wrong") {
          failures.add(a.str() + " * " + b.str() + ": the conditions hold but CuTe is wrong");
        }
      });
    });
  }
  EXPECT_EQ(tally.count("pairs checked"), (6 * 4 + 36 * 16) * 150);
  expect_clean(tally, failures);
}

}  // namespace
}  // namespace hopattn::layout::testing
