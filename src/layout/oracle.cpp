#include "oracle.hpp"

#include <algorithm>
#include <utility>

namespace hopattn::layout {

namespace {

using std::to_string;

std::string list_str(const std::vector<Int>& values) {
  std::string out = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k > 0) out += " ";
    out += to_string(values[k]);
  }
  return out + "]";
}

void require_enumerable(Int n, const std::string& what) {
  if (n > kMaxEnumeratedSize) {
    throw LayoutError(what + " is too large to enumerate (" + to_string(n) + " points)");
  }
}

// Leaves of a layout whose function is `v`, found by peeling off a first mode f:v[1] and
// recursing on the multiples of f. Larger first modes are tried first, so the witness comes out
// coalesced where possible.
std::optional<std::vector<Mode>> represent(const std::vector<Int>& v) {
  const std::size_t n = v.size();
  if (v[0] != 0) return std::nullopt;
  if (n == 1) return std::vector<Mode>{};
  const Int step = v[1];
  for (std::size_t f = n; f > 1; --f) {
    if (n % f != 0) continue;
    bool fits = true;
    for (std::size_t y = 0; fits && y < n; y += f) {
      for (std::size_t x = 1; x < f; ++x) {
        if (v[y + x] != v[y] + static_cast<Int>(x) * step) {
          fits = false;
          break;
        }
      }
    }
    if (!fits) continue;
    std::vector<Int> outer;
    for (std::size_t y = 0; y < n; y += f) outer.push_back(v[y]);
    std::optional<std::vector<Mode>> rest = represent(outer);
    if (!rest) continue;
    rest->insert(rest->begin(), Mode{static_cast<Int>(f), step});
    return rest;
  }
  return std::nullopt;
}

// sum_k parts[k][x_k] over the colexicographic coordinates x_k of x in the leaves of `layout`.
Int sum_over_leaves(const Layout& layout, const std::vector<std::vector<Int>>& parts, Int x) {
  Int sum = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Int shape = layout.modes()[k].shape;
    sum += parts[k][static_cast<std::size_t>(x % shape)];
    x /= shape;
  }
  return sum;
}

}  // namespace

std::vector<Int> composed_values(const Layout& a, const Layout& b) {
  const Int n = b.size();
  if (n > kMaxEnumeratedSize) require_enumerable(n, "B = " + b.str());
  std::vector<Int> result(static_cast<std::size_t>(n));
  for (Int x = 0; x < n; ++x) {
    result[static_cast<std::size_t>(x)] = evaluate_extended(a, evaluate(b, x));
  }
  return result;
}

std::optional<Difference> first_difference(const std::vector<Int>& expected, const Layout& actual) {
  const Int n = std::min(static_cast<Int>(expected.size()), actual.size());
  for (Int x = 0; x < n; ++x) {
    const Int value = evaluate(actual, x);
    if (value != expected[static_cast<std::size_t>(x)]) {
      return Difference{x, expected[static_cast<std::size_t>(x)], value};
    }
  }
  return std::nullopt;
}

bool same_function(const Layout& layout, const std::vector<Int>& expected) {
  return layout.size() == static_cast<Int>(expected.size()) &&
         !first_difference(expected, layout).has_value();
}

std::optional<Layout> representing_layout(const std::vector<Int>& values) {
  if (values.empty()) return std::nullopt;
  std::optional<std::vector<Mode>> modes = represent(values);
  if (!modes) return std::nullopt;
  if (modes->empty()) return Layout();
  return Layout::flat(std::move(*modes));
}

Existence composition_exists(const Layout& a, const Layout& b, Explain explain) {
  const bool say = explain == Explain::kYes;
  Existence out;
  const std::vector<Mode>& leaves = b.modes();
  std::vector<Layout> parts;
  std::vector<std::vector<Int>> leaf_values;
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const Layout leaf = Layout::single(leaves[k].shape, leaves[k].stride);
    std::vector<Int> g = composed_values(a, leaf);
    std::optional<Layout> part = representing_layout(g);
    if (!part) {
      if (!say) return out;
      out.reason = "f^_A o f_B restricted to leaf " + to_string(k) + " (" + leaf.str() +
                   ") of B takes the values " + list_str(g) + ", which no layout of size " +
                   to_string(leaves[k].shape) + " has";
      return out;
    }
    parts.push_back(*part);
    leaf_values.push_back(std::move(g));
  }
  const std::vector<Int> truth = composed_values(a, b);
  for (Int x = 0; x < static_cast<Int>(truth.size()); ++x) {
    const Int sum = sum_over_leaves(b, leaf_values, x);
    if (sum != truth[static_cast<std::size_t>(x)]) {
      if (!say) return out;
      out.reason = "f^_A o f_B = " + list_str(truth) +
                   " is not additive over the modes of B: at x = " + to_string(x) + " it is " +
                   to_string(truth[static_cast<std::size_t>(x)]) +
                   ", the sum over B's modes is " + to_string(sum) +
                   "; no layout compatible with B has this function";
      return out;
    }
  }
  out.exists = true;
  out.witness = replace_leaves(b, parts);
  return out;
}

Layout generic_strides(const Layout& a, const Layout& b) {
  Int largest = b.cosize();
  for (const Mode& mode : a.modes()) largest = std::max(largest, mode.shape);
  const Int base = checked_mul(static_cast<Int>(b.modes().size()) + 1, largest + 1);
  std::vector<Mode> modes = a.modes();
  Int stride = 1;
  for (Mode& mode : modes) {
    mode.stride = stride;
    stride = checked_mul(stride, base);
  }
  return Layout(std::move(modes), a.profile());
}

Existence complement_exists(const Layout& a, Int m, Explain explain) {
  const bool say = explain == Explain::kYes;
  Existence out;
  const Int n = a.size();
  if (m < 1 || m % n != 0) {
    if (say) out.reason = "size(A) = " + to_string(n) + " does not divide M = " + to_string(m);
    return out;
  }
  require_enumerable(m, "M");
  const std::vector<Int> image = values(a);
  std::vector<Int> owner(static_cast<std::size_t>(m), -1);  // which x of A reaches each value
  for (Int x = 0; x < n; ++x) {
    const Int v = image[static_cast<std::size_t>(x)];
    if (v >= m) {
      if (say) out.reason = "f_A(" + to_string(x) + ") = " + to_string(v) + " lies outside [0, M)";
      return out;
    }
    if (owner[static_cast<std::size_t>(v)] >= 0) {
      if (!say) return out;
      out.reason = "A is not injective: f_A(" + to_string(owner[static_cast<std::size_t>(v)]) +
                   ") = f_A(" + to_string(x) + ") = " + to_string(v);
      return out;
    }
    owner[static_cast<std::size_t>(v)] = x;
  }
  // The smallest value not yet reached must be a value t of R (paired with f_A(0) = 0), so the
  // image of R is forced.
  std::vector<bool> reached(static_cast<std::size_t>(m), false);
  std::vector<Int> image_r;
  for (Int t = 0; t < m; ++t) {
    if (reached[static_cast<std::size_t>(t)]) continue;
    for (const Int v : image) {
      const Int u = t + v;
      if (u >= m || reached[static_cast<std::size_t>(u)]) {
        if (!say) return out;
        out.reason = "no layout R makes (A, R) a bijection onto [0, " + to_string(m) +
                     "): R must take the value " + to_string(t) + " (the smallest not reached), but " +
                     to_string(t) + " + " + to_string(v) + " = " + to_string(u) +
                     (u >= m ? " is out of range" : " is reached twice");
        return out;
      }
      reached[static_cast<std::size_t>(u)] = true;
    }
    image_r.push_back(t);
  }
  std::optional<Layout> r = representing_layout(image_r);
  if (!r) {
    if (!say) return out;
    out.reason = "the complement's values would have to be " + list_str(image_r) +
                 ", which no layout produces";
    return out;
  }
  out.exists = true;
  out.witness = std::move(r);
  return out;
}

TrueFunction divide_function(const Layout& a, const Layout& b) {
  TrueFunction out;
  const Existence rest = complement_exists(b, a.size());
  if (!rest.exists) {
    out.reason = "B has no complement in size(A) = " + to_string(a.size()) + ": " + rest.reason;
    return out;
  }
  out.defined = true;
  out.values = composed_values(a, Layout::tuple({b, *rest.witness}));
  return out;
}

TrueFunction product_function(const Layout& a, const Layout& b) {
  TrueFunction out;
  const Int m = checked_mul(a.size(), b.cosize());
  const Existence rest = complement_exists(a, m);
  if (!rest.exists) {
    out.reason = "A has no complement in size(A)*cosize(B) = " + to_string(m) + ": " + rest.reason;
    return out;
  }
  const std::vector<Int> inner = values(a);
  const std::vector<Int> outer = composed_values(*rest.witness, b);
  out.defined = true;
  for (const Int o : outer) {
    for (const Int i : inner) out.values.push_back(i + o);
  }
  return out;
}

std::optional<std::string> complement_violation(const Layout& a, Int m, const Layout& r) {
  const Int total = checked_mul(a.size(), r.size());
  if (total != m) {
    return "size(A)*size(R) = " + to_string(total) + " is not M = " + to_string(m);
  }
  require_enumerable(m, "M");
  const std::vector<Int> image = values(Layout::tuple({a, r}));
  std::vector<Int> owner(static_cast<std::size_t>(m), -1);
  for (Int x = 0; x < m; ++x) {
    const Int v = image[static_cast<std::size_t>(x)];
    if (v >= m) {
      return "(A, R) maps " + to_string(x) + " to " + to_string(v) + ", outside [0, M)";
    }
    if (owner[static_cast<std::size_t>(v)] >= 0) {
      return "(A, R) is not injective: " + to_string(owner[static_cast<std::size_t>(v)]) +
             " and " + to_string(x) + " both map to " + to_string(v);
    }
    owner[static_cast<std::size_t>(v)] = x;
  }
  for (Int x = 1; x < r.size(); ++x) {
    if (evaluate(r, x) <= evaluate(r, x - 1)) {
      return "R is not strictly increasing at " + to_string(x);
    }
  }
  return std::nullopt;
}

std::optional<std::string> cute_complement_contract_violation(const Layout& a, Int m,
                                                              const Layout& r) {
  const std::vector<Int> image_a = values(a);
  const std::vector<Int> image_r = values(r);
  for (std::size_t i = 1; i < image_r.size(); ++i) {
    if (std::find(image_a.begin(), image_a.end(), image_r[i]) != image_a.end()) {
      return "not disjoint: R(" + to_string(i) + ") = " + to_string(image_r[i]) +
             " is also a value of A";
    }
    if (image_r[i] <= image_r[i - 1]) {
      return "not ordered: R(" + to_string(i) + ") = " + to_string(image_r[i]) +
             " <= R(" + to_string(i - 1) + ")";
    }
  }
  if (checked_mul(r.size(), a.size()) < m) {
    return "too small: size(R) = " + to_string(r.size()) + " < M/size(A) = " + to_string(m) +
           "/" + to_string(a.size());
  }
  const Int bound = (m / a.cosize()) * a.cosize();
  if (r.cosize() > bound) {
    return "not bounded by M: cosize(R) = " + to_string(r.cosize()) + " > floor(M/cosize(A))*cosize(A) = " +
           to_string(bound);
  }
  return std::nullopt;
}

}  // namespace hopattn::layout
