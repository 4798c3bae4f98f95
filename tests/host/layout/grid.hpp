// The grids the exhaustive layout tests enumerate, and a tally printed with the test output.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cute_bridge.hpp"
#include "layout.hpp"
#include "oracle.hpp"

namespace hopattn::layout::testing {

// The grid: shapes from {1, 2, 3, 4, 6, 8}, strides 0..24, M <= 64.
inline const std::vector<Int> kShapes = {1, 2, 3, 4, 6, 8};
inline const std::vector<Int> kAllStrides = [] {
  std::vector<Int> strides;
  for (Int d = 0; d <= 24; ++d) strides.push_back(d);
  return strides;
}();
inline constexpr Int kMaxM = 64;
// A's strides only enter the composition linearly (f^_A o f_B and CuTe's result are both sums of
// A's strides with coefficients fixed by the shapes), so where a full stride grid for A would be
// too large, zero, unit and two unrelated values stand in for it.
inline const std::vector<Int> kGenericStrides = {0, 1, 7, 24};
// A reduced grid for rank 3: every divisor structure up to 24 that matters for complements.
inline const std::vector<Int> kReducedStrides = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24};

// CuTe's verdict without building messages: right, wrong or rejects.
inline const char* quick_verdict(const std::vector<Int>& truth, const CuteRun& run) {
  if (run.status == CuteStatus::kRejected) return "rejects";
  if (!run.evaluated()) return "not evaluated";
  return same_function(run.result, truth) ? "right" : "wrong";
}

// Calls f on every flat layout of the given rank with shapes and strides from the given sets.
inline void for_each_layout(int rank, const std::vector<Int>& shapes,
                            const std::vector<Int>& strides,
                            const std::function<void(const Layout&)>& f) {
  std::vector<std::size_t> shape_at(static_cast<std::size_t>(rank), 0);
  std::vector<std::size_t> stride_at(static_cast<std::size_t>(rank), 0);
  std::vector<Mode> modes(static_cast<std::size_t>(rank));
  while (true) {
    for (int k = 0; k < rank; ++k) {
      modes[static_cast<std::size_t>(k)] = Mode{shapes[shape_at[static_cast<std::size_t>(k)]],
                                                strides[stride_at[static_cast<std::size_t>(k)]]};
    }
    f(Layout::flat(modes));
    // Odometer over (shape, stride) of each leaf.
    int k = 0;
    for (; k < rank; ++k) {
      const auto i = static_cast<std::size_t>(k);
      if (++stride_at[i] < strides.size()) break;
      stride_at[i] = 0;
      if (++shape_at[i] < shapes.size()) break;
      shape_at[i] = 0;
    }
    if (k == rank) return;
  }
}

// A uniformly random flat layout of the given rank from the given sets.
inline Layout random_layout(std::mt19937_64& rng, int rank, const std::vector<Int>& shapes,
                            const std::vector<Int>& strides) {
  std::vector<Mode> modes;
  for (int k = 0; k < rank; ++k) {
    modes.push_back(Mode{shapes[rng() % shapes.size()], strides[rng() % strides.size()]});
  }
  return Layout::flat(std::move(modes));
}

// Counts by category, printed as one line per category.
class Tally {
 public:
  explicit Tally(std::string title) : title_(std::move(title)) {}
  void add(const std::string& category) { ++counts_[category]; }
  std::int64_t count(const std::string& category) const {
    const auto it = counts_.find(category);
    return it == counts_.end() ? 0 : it->second;
  }
  void print() const {
    std::cout << "[ counts   ] " << title_ << '\n';
    for (const auto& [category, n] : counts_) {
      std::cout << "[ counts   ]   " << category << ": " << n << '\n';
    }
  }

 private:
  std::string title_;
  std::map<std::string, std::int64_t> counts_;
};

// Keeps the first few failure messages so that a broken invariant does not flood the log.
class Failures {
 public:
  void add(const std::string& message) {
    if (++count_ <= kShown) messages_ += message + "\n";
  }
  std::int64_t count() const { return count_; }
  std::string report() const {
    return std::to_string(count_) + " failing case(s); the first ones:\n" + messages_;
  }

 private:
  static constexpr std::int64_t kShown = 12;
  std::int64_t count_ = 0;
  std::string messages_;
};

}  // namespace hopattn::layout::testing
