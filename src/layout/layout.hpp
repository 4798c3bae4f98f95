// CuTe-style layouts as plain data: a shape:stride pair with nesting, and the layout function.
//
// Follows the definitions of J. Shah, "A note on the algebra of CuTe Layouts" (Colfax Research),
// referred to below as "the note". No CuTe dependency: this is the reference the CuTe results are
// held against.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace hopattn::layout {

using Int = std::int64_t;

// An input the library cannot represent (overflow, an ill-formed nesting, a non-positive shape).
class LayoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Arithmetic that throws LayoutError instead of wrapping around.
Int checked_mul(Int a, Int b);
Int checked_add(Int a, Int b);

// One leaf of a layout: a shape entry and its stride.
struct Mode {
  Int shape = 1;
  Int stride = 0;
  bool operator==(const Mode& other) const {
    return shape == other.shape && stride == other.stride;
  }
  bool operator!=(const Mode& other) const { return !(*this == other); }
};

// A layout is its leaves in colexicographic order plus a profile that records the nesting:
// '.' stands for a leaf, '(' and ')' delimit tuples. "." is an integer layout such as 8:1,
// "(..)" a rank-2 layout such as (6,2):(1,7), "((..).)" is ((2,2),2):((4,1),2).
// Keeping the leaves flat makes the layout function (which only sees leaves) cheap to evaluate.
class Layout {
 public:
  Layout();  // the trivial layout 1:0
  Layout(std::vector<Mode> modes, std::string profile);

  static Layout single(Int shape, Int stride);
  // A flat tuple of leaves; a single leaf gives an integer layout.
  static Layout flat(std::vector<Mode> modes);
  // The concatenation (L_0, ..., L_n) of the note, keeping each part's nesting.
  static Layout tuple(const std::vector<Layout>& parts);

  const std::vector<Mode>& modes() const { return modes_; }
  const std::string& profile() const { return profile_; }

  // Rank in CuTe's sense: 1 for an integer layout, the tuple length otherwise.
  int rank() const;
  // Top-level mode i (0 <= i < rank()) with its own nesting.
  Layout mode(int i) const;
  std::vector<Layout> top_modes() const;

  Int size() const;
  // One past the largest value of the layout function (strides are non-negative).
  Int cosize() const;
  bool is_flat() const;
  Layout flattened() const;

  // Same leaves and the same nesting (not the same function: see same_function in oracle.hpp).
  bool operator==(const Layout& other) const;
  bool operator!=(const Layout& other) const { return !(*this == other); }

  // CuTe notation, e.g. "(6,2):(1,7)".
  std::string str() const;

 private:
  std::vector<Mode> modes_;
  std::string profile_;
};

std::ostream& operator<<(std::ostream& os, const Layout& layout);

// `outer`'s nesting with its k-th leaf replaced by parts[k] (flattened), e.g. B's nesting with
// each leaf B_k replaced by A o B_k.
Layout replace_leaves(const Layout& outer, const std::vector<Layout>& parts);

// The layout function f_L on its domain [0, size(L)) (Definition 2.3 of the note).
Int evaluate(const Layout& layout, Int x);
// Its extension f^_L to all of N: the last leaf's shape is taken as infinite (Definition 2.3).
Int evaluate_extended(const Layout& layout, Int x);
// f_L(0), ..., f_L(size - 1).
std::vector<Int> values(const Layout& layout);

// Largest domain the library enumerates (value tables, brute-force checks).
inline constexpr Int kMaxEnumeratedSize = Int{1} << 22;

}  // namespace hopattn::layout
