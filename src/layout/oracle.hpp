// Brute-force ground truth for the layout operations, by enumerating layout functions.
//
// Used three ways: to validate the note's closed forms, to measure how far the note's sufficient
// conditions are from necessary (does *some* layout do the job where the conditions fail?), and
// to judge what CuTe returns.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algebra.hpp"
#include "layout.hpp"

namespace hopattn::layout {

// f^_A(f_B(x)) for x in [0, size(B)): the function A o B must have (Proposition 2.14).
std::vector<Int> composed_values(const Layout& a, const Layout& b);

struct Difference {
  Int x = 0;         // first argument where the functions differ
  Int expected = 0;
  Int actual = 0;
};

// Compares a layout with the expected values as functions on [0, size). A size mismatch is
// reported through `size_mismatch` below.
std::optional<Difference> first_difference(const std::vector<Int>& expected, const Layout& actual);
bool same_function(const Layout& layout, const std::vector<Int>& expected);

// Some layout whose function is exactly `values` (a layout of size values.size()), if any.
// Searches the ordered factorizations of the size; the strides are then forced.
std::optional<Layout> representing_layout(const std::vector<Int>& values);

// Whether a layout with the required property exists, a witness, and otherwise why not.
struct Existence {
  bool exists = false;
  std::optional<Layout> witness;
  std::string reason;
};

// A layout compatible with B (B's nesting, each leaf B_k replaced by a layout of size N_k)
// whose function is f^_A o f_B. By Lemma 2.19 this exists iff every f^_A o f_{B_k} is a layout
// function and f^_A o f_B is additive over the leaves of B.
Existence composition_exists(const Layout& a, const Layout& b, Explain explain = Explain::kYes);

// A's shape with strides 1, K, K^2, ..., K larger than any coordinate of f^_A that f_B reaches
// and than any sum of such coordinates over B's leaves. Distinct coordinate vectors then get
// distinct values without carries, so a property of A o B that is linear in A's strides (f^_A o f_B
// being a layout function compatible with B, a candidate layout having that function) holds for
// these strides exactly when it holds for every choice of A's strides.
Layout generic_strides(const Layout& a, const Layout& b);

// The complement of A in M as the note means it: R with size(A)*size(R) = M, (A, R) a bijection
// [0, M) -> [0, M) and f_R strictly increasing. The image of R is forced (greedily, from the
// bottom), so R is unique as a function when it exists.
Existence complement_exists(const Layout& a, Int m, Explain explain = Explain::kYes);

// The function of A / B = A o (B, R) with R the complement above, if R exists.
struct TrueFunction {
  bool defined = false;
  std::vector<Int> values;
  std::string reason;  // why it is not defined
};
TrueFunction divide_function(const Layout& a, const Layout& b);
// The function of A (x) B = (A, R o B) with R the complement of A in size(A)*cosize(B).
TrueFunction product_function(const Layout& a, const Layout& b);

// Checks the properties CuTe's documentation asks of complement(A, M) (Remark 2.9 of the note):
// disjoint images, strictly increasing, bounded by M. Returns the first violated one.
std::optional<std::string> cute_complement_contract_violation(const Layout& a, Int m,
                                                              const Layout& r);

// Why R is not a complement of A in M in the note's sense (nullopt when it is one).
std::optional<std::string> complement_violation(const Layout& a, Int m, const Layout& r);

}  // namespace hopattn::layout
