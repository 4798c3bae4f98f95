// The operations of the note with their sufficient conditions: complement (Definitions 2.5, 2.6),
// composition (Definitions 2.11-2.13, 2.16, 2.17), logical division (Definition 2.22), and
// CuTe's logical product, plus coalesce, sorting and left/right inverses.
//
// Each operation returns either its closed-form result or the precise statement of the condition
// that fails. Conventions where the note leaves a choice (all documented in docs/layout-algebra.md):
//  * The note assumes positive strides (its footnote 2). Zero strides are accepted where the
//    note's formulas stay meaningful: A's strides in a composition are arbitrary (Definition 2.13
//    takes "any stride tuple"), and a stride-0 mode N:0 of B composes to N:0 with an empty
//    interval of definition. Complement keeps Definition 2.5 literally (N*0 = 0 divides nothing).
//  * Composition strips shape-1 modes (section 2.2), except A's last leaf: the extension f^_A
//    replaces that leaf's shape by infinity, so its stride matters even when its shape is 1.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout.hpp"

namespace hopattn::layout {

// Whether to build the human-readable statements (the exhaustive tests skip them for speed).
enum class Explain { kNo, kYes };

// The outcome of checking the note's conditions for one operation.
struct Verdict {
  bool holds = true;
  std::vector<std::string> steps;     // how each condition was established
  std::vector<std::string> failures;  // precise statements of the conditions that fail
};

struct Outcome {
  Verdict verdict;
  std::optional<Layout> result;  // set exactly when verdict.holds
};

// Definition 2.4: leaves sorted by stride, ties by shape.
Layout sort_layout(const Layout& layout);

// Flattens, drops shape-1 leaves and merges neighbours N0:d0, N1:N0*d0 into N0*N1:d0.
// Preserves the function on the domain (not always its extension beyond it).
Layout coalesce(const Layout& layout);

// Definitions 2.5 and 2.6: complement(A, M).
Outcome complement(const Layout& a, Int m, Explain explain = Explain::kYes);

// Definitions 2.12/2.13 (one mode of B) and 2.17 (all modes of B, disjoint intervals).
// The result has B's nesting with each leaf of B replaced by A o B_k.
Outcome compose(const Layout& a, const Layout& b, Explain explain = Explain::kYes);

// Definition 2.22: A / B = A o (B, complement(B, size(A))).
Outcome logical_divide(const Layout& a, const Layout& b, Explain explain = Explain::kYes);

// CuTe's documentation: A (x) B = (A, complement(A, size(A) * cosize(B)) o B).
Outcome logical_product(const Layout& a, const Layout& b, Explain explain = Explain::kYes);

// A layout R with f_A(f_R(i)) = i on [0, size(R)): the longest chain of leaves of A with strides
// 1, N_0, N_0*N_1, ... Always exists; it is 1:0 when A has no stride-1 leaf of shape > 1.
Layout right_inverse(const Layout& a);

// A layout L with f_L(f_A(x)) = x on [0, size(A)). Exists (here) when, after coalescing, the
// leaves sorted by stride have strides d_0 >= 1 with d_{k-1} | d_k and N_{k-1} d_{k-1} <= d_k.
Outcome left_inverse(const Layout& a, Explain explain = Explain::kYes);

// The interval of definition of Definition 2.16 for one mode N:r of B against A's shape:
// [r, r(N-1)] intersected with [1, M'), M' the product of all but A's last (extended) leaf.
struct Interval {
  Int lo = 1;
  Int hi = 0;  // empty when hi < lo
  bool empty() const { return hi < lo; }
};
Interval interval_of_definition(const Layout& a, Mode b_mode);

// A's leaves as the composition sees them: flattened, shape-1 leaves removed except the last.
Layout composition_shape(const Layout& a);

// CuTe notation for a flat list of integers: "(6,2)" or "6".
std::string tuple_str(const std::vector<Int>& values);

}  // namespace hopattn::layout
