#include "layout.hpp"

#include <ostream>
#include <utility>

namespace hopattn::layout {

Int checked_mul(Int a, Int b) {
  Int result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    throw LayoutError("integer overflow: " + std::to_string(a) + " * " + std::to_string(b));
  }
  return result;
}

Int checked_add(Int a, Int b) {
  Int result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    throw LayoutError("integer overflow: " + std::to_string(a) + " + " + std::to_string(b));
  }
  return result;
}

namespace {

// A top-level child of a profile: its characters [begin, end) and the leaves it covers.
struct Child {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t first_leaf = 0;
  std::size_t leaf_count = 0;
};

void validate_profile(const std::string& profile, std::size_t leaf_count) {
  if (profile.empty()) throw LayoutError("empty layout profile");
  int depth = 0;
  std::size_t leaves = 0;
  char previous = '\0';
  for (std::size_t i = 0; i < profile.size(); ++i) {
    const char c = profile[i];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (previous == '(') throw LayoutError("empty tuple in layout profile " + profile);
      if (--depth < 0) throw LayoutError("unbalanced layout profile " + profile);
    } else if (c == '.') {
      ++leaves;
    } else {
      throw LayoutError("bad character in layout profile " + profile);
    }
    // Outside of the outermost tuple there is exactly one element.
    if (depth == 0 && i + 1 != profile.size()) {
      throw LayoutError("layout profile " + profile + " has several roots");
    }
    previous = c;
  }
  if (depth != 0) throw LayoutError("unbalanced layout profile " + profile);
  if (leaves != leaf_count) {
    throw LayoutError("layout profile " + profile + " does not match " +
                      std::to_string(leaf_count) + " modes");
  }
}

std::vector<Child> children(const std::string& profile) {
  if (profile == ".") return {Child{0, 1, 0, 1}};
  std::vector<Child> result;
  int depth = 0;
  std::size_t leaf = 0;
  Child current;
  for (std::size_t i = 0; i < profile.size(); ++i) {
    const char c = profile[i];
    if (c == '(') {
      if (depth == 1) current = Child{i, i, leaf, 0};
      ++depth;
    } else if (c == ')') {
      --depth;
      if (depth == 1) {
        current.end = i + 1;
        current.leaf_count = leaf - current.first_leaf;
        result.push_back(current);
      }
    } else {
      if (depth == 1) result.push_back(Child{i, i + 1, leaf, 1});
      ++leaf;
    }
  }
  return result;
}

// Writes shapes or strides in CuTe's notation following the profile.
std::string render(const std::vector<Mode>& modes, const std::string& profile, bool shapes) {
  std::string out;
  std::size_t leaf = 0;
  char previous = '\0';
  for (const char c : profile) {
    const bool starts_element = c == '(' || c == '.';
    if (starts_element && (previous == '.' || previous == ')')) out += ',';
    if (c == '.') {
      const Mode& mode = modes[leaf++];
      out += std::to_string(shapes ? mode.shape : mode.stride);
    } else {
      out += c;
    }
    previous = c;
  }
  return out;
}

}  // namespace

Layout::Layout() : modes_{Mode{1, 0}}, profile_(".") {}

Layout::Layout(std::vector<Mode> modes, std::string profile)
    : modes_(std::move(modes)), profile_(std::move(profile)) {
  validate_profile(profile_, modes_.size());
  for (const Mode& mode : modes_) {
    // Shape 0 only comes out of CuTe (its "empty layout", Example 2.10 of the note); the parser
    // and the algebra never produce it.
    if (mode.shape < 0) {
      throw LayoutError("shape entries must be non-negative, got " + std::to_string(mode.shape));
    }
    if (mode.stride < 0) {
      throw LayoutError("negative strides are not supported, got " + std::to_string(mode.stride));
    }
  }
}

Layout Layout::single(Int shape, Int stride) { return Layout({Mode{shape, stride}}, "."); }

Layout Layout::flat(std::vector<Mode> modes) {
  if (modes.size() == 1) return Layout(std::move(modes), ".");
  std::string profile = "(" + std::string(modes.size(), '.') + ")";
  return Layout(std::move(modes), std::move(profile));
}

Layout Layout::tuple(const std::vector<Layout>& parts) {
  if (parts.empty()) throw LayoutError("a tuple layout needs at least one part");
  std::vector<Mode> modes;
  std::string profile = "(";
  for (const Layout& part : parts) {
    modes.insert(modes.end(), part.modes_.begin(), part.modes_.end());
    profile += part.profile_;
  }
  profile += ")";
  return Layout(std::move(modes), std::move(profile));
}

int Layout::rank() const { return static_cast<int>(children(profile_).size()); }

Layout Layout::mode(int i) const {
  const std::vector<Child> kids = children(profile_);
  if (i < 0 || i >= static_cast<int>(kids.size())) {
    throw LayoutError("mode " + std::to_string(i) + " out of range for " + str());
  }
  const Child& kid = kids[static_cast<std::size_t>(i)];
  std::vector<Mode> modes(modes_.begin() + static_cast<std::ptrdiff_t>(kid.first_leaf),
                          modes_.begin() + static_cast<std::ptrdiff_t>(kid.first_leaf + kid.leaf_count));
  return Layout(std::move(modes), profile_.substr(kid.begin, kid.end - kid.begin));
}

std::vector<Layout> Layout::top_modes() const {
  std::vector<Layout> result;
  for (int i = 0; i < rank(); ++i) result.push_back(mode(i));
  return result;
}

Int Layout::size() const {
  Int result = 1;
  for (const Mode& mode : modes_) result = checked_mul(result, mode.shape);
  return result;
}

Int Layout::cosize() const {
  if (size() == 0) return 0;
  Int last = 0;
  for (const Mode& mode : modes_) last = checked_add(last, checked_mul(mode.shape - 1, mode.stride));
  return last + 1;
}

bool Layout::is_flat() const {
  return profile_ == "." || profile_.find('(', 1) == std::string::npos;
}

Layout Layout::flattened() const { return flat(modes_); }

bool Layout::operator==(const Layout& other) const {
  return profile_ == other.profile_ && modes_ == other.modes_;
}

std::string Layout::str() const {
  return render(modes_, profile_, true) + ":" + render(modes_, profile_, false);
}

std::ostream& operator<<(std::ostream& os, const Layout& layout) { return os << layout.str(); }

Layout replace_leaves(const Layout& outer, const std::vector<Layout>& parts) {
  if (parts.size() != outer.modes().size()) {
    throw LayoutError("replace_leaves: " + std::to_string(parts.size()) + " parts for " +
                      std::to_string(outer.modes().size()) + " leaves");
  }
  std::vector<Mode> modes;
  std::string profile;
  std::size_t leaf = 0;
  for (const char c : outer.profile()) {
    if (c != '.') {
      profile += c;
      continue;
    }
    const std::vector<Mode>& part = parts[leaf++].modes();
    modes.insert(modes.end(), part.begin(), part.end());
    profile += part.size() == 1 ? "." : "(" + std::string(part.size(), '.') + ")";
  }
  return Layout(std::move(modes), std::move(profile));
}

Int evaluate(const Layout& layout, Int x) {
  Int result = 0;
  for (const Mode& mode : layout.modes()) {
    result += (x % mode.shape) * mode.stride;
    x /= mode.shape;
  }
  return result;
}

Int evaluate_extended(const Layout& layout, Int x) {
  const std::vector<Mode>& modes = layout.modes();
  Int result = 0;
  for (std::size_t k = 0; k + 1 < modes.size(); ++k) {
    if (modes[k].shape == 0) throw LayoutError("the empty layout " + layout.str() + " has no extension");
    result += (x % modes[k].shape) * modes[k].stride;
    x /= modes[k].shape;
  }
  return checked_add(result, checked_mul(x, modes.back().stride));
}

std::vector<Int> values(const Layout& layout) {
  const Int n = layout.size();
  if (n > kMaxEnumeratedSize) {
    throw LayoutError("layout " + layout.str() + " is too large to enumerate (size " +
                      std::to_string(n) + ")");
  }
  std::vector<Int> result(static_cast<std::size_t>(n));
  for (Int x = 0; x < n; ++x) result[static_cast<std::size_t>(x)] = evaluate(layout, x);
  return result;
}

}  // namespace hopattn::layout
