#include "algebra.hpp"

#include <algorithm>
#include <utility>

namespace hopattn::layout {

namespace {

using std::to_string;

// a | b for a positive divisor; "0 divides b" is never used as a condition of the note.
bool divides(Int a, Int b) { return a > 0 && b % a == 0; }

std::string interval_str(Interval interval) {
  return "[" + to_string(interval.lo) + "," + to_string(interval.hi) + "]";
}

std::vector<Int> shapes_of(const std::vector<Mode>& modes) {
  std::vector<Int> result;
  for (const Mode& mode : modes) result.push_back(mode.shape);
  return result;
}

// The shape tuple of A as the composition sees it, with the last entry printed as "inf" when
// the note's extension is meant.
std::string extended_shape_str(const std::vector<Mode>& modes) {
  std::string out = modes.size() > 1 ? "(" : "";
  for (std::size_t k = 0; k + 1 < modes.size(); ++k) out += to_string(modes[k].shape) + ",";
  out += "inf";
  if (modes.size() > 1) out += ")";
  return out;
}

// Names a leaf of B in messages: "B" for an integer layout, "mode k of B" otherwise.
std::string leaf_label(const Layout& b, std::size_t k) {
  const Mode& mode = b.modes()[k];
  const std::string value = to_string(mode.shape) + ":" + to_string(mode.stride);
  if (b.modes().size() == 1) return "B = " + value;
  return (b.is_flat() ? "mode " : "leaf ") + to_string(k) + " of B (" + value + ")";
}

struct ModeComposition {
  bool ok = false;
  std::vector<Mode> modes;
  std::string text;  // the step (ok) or the failure (not ok)
};

// The remaining factorization of Definition 2.11 (a): (M_i/c, M_{i+1}, ..., M_{alpha-1}, inf),
// each factor paired with the stride of A that goes with it. The last factor is infinite.
std::vector<Mode> remaining_factors(const std::vector<Mode>& s, std::size_t i, Int c) {
  std::vector<Mode> rest{Mode{s[i].shape / c, checked_mul(c, s[i].stride)}};
  for (std::size_t k = i + 1; k < s.size(); ++k) rest.push_back(s[k]);
  return rest;
}

// Definitions 2.12 and 2.13 for one mode N:r of B. `s` is A's composition shape (its last leaf
// is the extended one).
ModeComposition compose_mode(const std::vector<Mode>& s, Mode b, Explain explain,
                             const std::string& label) {
  const bool say = explain == Explain::kYes;
  const std::size_t alpha = s.size() - 1;
  const std::string shape_a = say ? tuple_str(shapes_of(s)) : "";
  ModeComposition out;
  if (b.shape == 1) {
    out.ok = true;
    out.modes = {Mode{1, 0}};
    if (say) out.text = label + ": shape 1, stripped (section 2.2); composes to 1:0";
    return out;
  }
  if (b.stride == 0) {
    out.ok = true;
    out.modes = {Mode{b.shape, 0}};
    if (say) {
      out.text = label + ": stride 0 (outside the note, footnote 2): f^_A(0*x) = 0, composes to " +
                 to_string(b.shape) + ":0";
    }
    return out;
  }
  // Definition 2.11: the division index i is the mode of A that the stride r falls into.
  Int prefix = 1;
  std::size_t i = 0;
  while (i < alpha && b.stride >= checked_mul(prefix, s[i].shape)) prefix *= s[i].shape, ++i;
  if (b.stride % prefix != 0) {
    if (say) {
      out.text = "stride " + to_string(b.stride) + " of B does not left-divide the shape " +
                 shape_a + " of A: it falls in mode " + to_string(i) + " of A, and the product " +
                 to_string(prefix) + " of the shapes before that mode does not divide " +
                 to_string(b.stride) + " (" + label + ")";
    }
    return out;
  }
  const Int c = b.stride / prefix;
  if (i < alpha && s[i].shape % c != 0) {
    if (say) {
      out.text = "stride " + to_string(b.stride) + " of B does not left-divide the shape " +
                 shape_a + " of A: " + to_string(b.stride) + " = " + to_string(prefix) + "*" +
                 to_string(c) + " falls in mode " + to_string(i) + " of A, and " + to_string(c) +
                 " does not divide its shape " + to_string(s[i].shape) + " (" + label + ")";
    }
    return out;
  }
  if (i == alpha) {
    out.ok = true;
    out.modes = {Mode{b.shape, checked_mul(c, s[alpha].stride)}};
    if (say) {
      out.text = label + ": stride " + to_string(b.stride) + " = " + to_string(prefix) + "*" +
                 to_string(c) + " reaches A's last, extended mode; composes to " +
                 Layout::flat(out.modes).str();
    }
    return out;
  }
  // Definition 2.12 (2): N must be weakly left divisible by the remaining factorization.
  const std::vector<Mode> rest = remaining_factors(s, i, c);
  const std::size_t finite = rest.size() - 1;
  Int q = 1;
  std::size_t j = 0;
  while (j < finite && b.shape >= checked_mul(q, rest[j].shape)) q *= rest[j].shape, ++j;
  if (b.shape % q != 0) {
    if (say) {
      out.text = "shape " + to_string(b.shape) + " of B is not weakly left-divisible by " +
                 extended_shape_str(rest) + ", what remains of A's shape " + shape_a +
                 " after stride " + to_string(b.stride) + ": it spans the first " + to_string(j) +
                 " factor(s), whose product " + to_string(q) + " does not divide " +
                 to_string(b.shape) + " (" + label + ")";
    }
    return out;
  }
  out.ok = true;
  out.modes.assign(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(j));
  const Int last = b.shape / q;
  if (last > 1) out.modes.push_back(Mode{last, rest[j].stride});
  if (say) {
    out.text = label + ": stride " + to_string(b.stride) + " left-divides " + shape_a +
               " (division index " + to_string(i) + ", c = " + to_string(c) + "), shape " +
               to_string(b.shape) + " weakly left-divides the rest " + extended_shape_str(rest) +
               "; composes to " + Layout::flat(out.modes).str();
  }
  return out;
}

// M' of Definition 2.16: the product of all shapes but the last (extended) one.
Int inner_size(const Layout& shape_a) {
  const std::vector<Mode>& s = shape_a.modes();
  Int inner = 1;
  for (std::size_t k = 0; k + 1 < s.size(); ++k) inner = checked_mul(inner, s[k].shape);
  return inner;
}

Interval interval_within(Int inner, Mode b_mode) {
  if (b_mode.shape <= 1 || b_mode.stride == 0) return Interval{};
  const Int hi = checked_mul(b_mode.stride, b_mode.shape - 1);
  return Interval{b_mode.stride, std::min(hi, inner - 1)};
}

void fail(Verdict& verdict, Explain explain, std::string text) {
  verdict.holds = false;
  if (explain == Explain::kYes) verdict.failures.push_back(std::move(text));
}

void step(Verdict& verdict, Explain explain, std::string text) {
  if (explain == Explain::kYes) verdict.steps.push_back(std::move(text));
}

// Prefixes every statement of `inner` and appends it to `outer`.
void absorb(Verdict& outer, const Verdict& inner, const std::string& prefix) {
  for (const std::string& s : inner.steps) outer.steps.push_back(prefix + s);
  for (const std::string& s : inner.failures) outer.failures.push_back(prefix + s);
  outer.holds = outer.holds && inner.holds;
}

}  // namespace

std::string tuple_str(const std::vector<Int>& values) {
  if (values.size() == 1) return to_string(values[0]);
  std::string out = "(";
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k > 0) out += ",";
    out += to_string(values[k]);
  }
  return out + ")";
}

Layout sort_layout(const Layout& layout) {
  std::vector<Mode> modes = layout.modes();
  std::stable_sort(modes.begin(), modes.end(), [](const Mode& x, const Mode& y) {
    return x.stride != y.stride ? x.stride < y.stride : x.shape < y.shape;
  });
  return Layout::flat(std::move(modes));
}

Layout coalesce(const Layout& layout) {
  std::vector<Mode> merged;
  for (const Mode& mode : layout.modes()) {
    if (mode.shape == 1) continue;
    if (!merged.empty() && mode.stride == merged.back().shape * merged.back().stride) {
      merged.back().shape = checked_mul(merged.back().shape, mode.shape);
    } else {
      merged.push_back(mode);
    }
  }
  if (merged.empty()) return Layout();
  return Layout::flat(std::move(merged));
}

Layout composition_shape(const Layout& a) {
  const std::vector<Mode>& leaves = a.modes();
  std::vector<Mode> kept;
  for (std::size_t k = 0; k + 1 < leaves.size(); ++k) {
    if (leaves[k].shape != 1) kept.push_back(leaves[k]);
  }
  kept.push_back(leaves.back());
  return Layout::flat(std::move(kept));
}

Interval interval_of_definition(const Layout& a, Mode b_mode) {
  return interval_within(inner_size(composition_shape(a)), b_mode);
}

Outcome complement(const Layout& a, Int m, Explain explain) {
  Outcome out;
  Verdict& verdict = out.verdict;
  if (m < 1) {
    fail(verdict, explain, "M = " + to_string(m) + " must be a positive integer");
    return out;
  }
  const std::vector<Mode> sorted = sort_layout(a).modes();
  if (explain == Explain::kYes) {
    step(verdict, explain, "A sorted by stride (Definition 2.4): " + Layout::flat(sorted).str());
  }
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const Mode& mode = sorted[i];
    const Int span = checked_mul(mode.shape, mode.stride);
    const bool last = i + 1 == sorted.size();
    const Int next = last ? m : sorted[i + 1].stride;
    if (divides(span, next)) {
      if (explain == Explain::kYes) {
        step(verdict, explain,
             to_string(mode.shape) + "*" + to_string(mode.stride) + " = " + to_string(span) +
                 " divides " + (last ? "M = " : "the next stride ") + to_string(next));
      }
      continue;
    }
    if (explain == Explain::kNo) {
      verdict.holds = false;
      return out;
    }
    std::string why = to_string(mode.shape) + "*" + to_string(mode.stride) + " = " +
                      to_string(span) + " does not divide " +
                      (last ? "M = " : "the next stride ") + to_string(next) +
                      " (A sorted: " + Layout::flat(sorted).str() + ")";
    if (mode.stride == 0) why += "; the note excludes zero strides (footnote 2)";
    fail(verdict, explain, std::move(why));
  }
  if (!verdict.holds) return out;
  std::vector<Mode> modes{Mode{sorted[0].stride, 1}};
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const Int span = sorted[i].shape * sorted[i].stride;
    const Int next = i + 1 == sorted.size() ? m : sorted[i + 1].stride;
    modes.push_back(Mode{next / span, span});
  }
  out.result = Layout::flat(std::move(modes));
  return out;
}

Outcome compose(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  Verdict& verdict = out.verdict;
  const Layout shape_a = composition_shape(a);
  if (explain == Explain::kYes && shape_a.modes().size() != a.modes().size()) {
    step(verdict, explain, "shape-1 modes of A stripped (section 2.2): " + shape_a.str());
  }
  const std::vector<Mode>& leaves = b.modes();
  std::vector<Layout> parts;
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const std::string label = explain == Explain::kYes ? leaf_label(b, k) : "";
    ModeComposition mode = compose_mode(shape_a.modes(), leaves[k], explain, label);
    if (mode.ok) {
      step(verdict, explain, std::move(mode.text));
      parts.push_back(Layout::flat(std::move(mode.modes)));
    } else {
      fail(verdict, explain, std::move(mode.text));
    }
  }
  // Definition 2.17 (2): the intervals of definition must be pairwise disjoint.
  const Int inner = inner_size(shape_a);
  std::vector<Interval> intervals;
  for (const Mode& leaf : leaves) intervals.push_back(interval_within(inner, leaf));
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    for (std::size_t l = k + 1; l < leaves.size(); ++l) {
      const Interval x = intervals[k];
      const Interval y = intervals[l];
      if (x.empty() || y.empty() || x.hi < y.lo || y.hi < x.lo) continue;
      if (explain == Explain::kNo) {
        verdict.holds = false;
        continue;
      }
      fail(verdict, explain,
           "the intervals of definition " + interval_str(x) + " of " + leaf_label(b, k) + " and " +
               interval_str(y) + " of " + leaf_label(b, l) +
               " intersect (Definition 2.17): these modes of B overlap inside A's shape " +
               tuple_str(shapes_of(shape_a.modes())));
    }
  }
  if (!verdict.holds) return out;
  if (explain == Explain::kYes && leaves.size() > 1) {
    step(verdict, explain, "the intervals of definition of B's modes are pairwise disjoint");
  }
  out.result = replace_leaves(b, parts);
  return out;
}

Outcome logical_divide(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  const Int m = a.size();
  const Outcome rest = complement(b, m, explain);
  absorb(out.verdict, rest.verdict, "complement(B, size(A) = " + to_string(m) + "): ");
  const Outcome tile = compose(a, b, explain);
  absorb(out.verdict, tile.verdict, "A o B: ");
  if (!out.verdict.holds) return out;
  // Lemma 2.23 says the pair {S, (B, complement)} is then admissible; it is checked, not assumed.
  const Layout divisor = Layout::tuple({b, *rest.result});
  const Outcome whole = compose(a, divisor, explain);
  if (!whole.verdict.holds) {
    absorb(out.verdict, whole.verdict, "A o " + divisor.str() + ": ");
    fail(out.verdict, explain,
         "Definition 2.22's conditions hold, but (B, complement(B, size(A))) = " + divisor.str() +
             " is not admissible for composition with A, contrary to Lemma 2.23 of the note");
    return out;
  }
  step(out.verdict, explain,
       "A / B = A o " + divisor.str() + " (Lemma 2.23: admissible for composition)");
  out.result = whole.result;
  return out;
}

Outcome logical_product(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  const Int m = checked_mul(a.size(), b.cosize());
  const Outcome rest = complement(a, m, explain);
  absorb(out.verdict, rest.verdict,
         "complement(A, size(A)*cosize(B) = " + to_string(m) + "): ");
  if (!out.verdict.holds) return out;
  const Outcome repeated = compose(*rest.result, b, explain);
  absorb(out.verdict, repeated.verdict, "complement(A, " + to_string(m) + ") o B: ");
  if (!out.verdict.holds) return out;
  out.result = Layout::tuple({a, *repeated.result});
  return out;
}

Layout right_inverse(const Layout& a) {
  const std::vector<Mode>& leaves = a.modes();
  std::vector<Int> prefix(leaves.size(), 1);  // colexicographic weight of each leaf of A
  for (std::size_t k = 1; k < leaves.size(); ++k) prefix[k] = checked_mul(prefix[k - 1], leaves[k - 1].shape);
  std::vector<bool> used(leaves.size(), false);
  std::vector<Mode> chain;
  Int next = 1;  // the stride the next leaf of the chain must have
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t k = 0; k < leaves.size(); ++k) {
      if (used[k] || leaves[k].shape == 1 || leaves[k].stride != next) continue;
      used[k] = true;
      chain.push_back(Mode{leaves[k].shape, prefix[k]});
      next = checked_mul(leaves[k].shape, leaves[k].stride);
      grew = true;
      break;
    }
  }
  if (chain.empty()) return Layout();
  return Layout::flat(std::move(chain));
}

Outcome left_inverse(const Layout& a, Explain explain) {
  Outcome out;
  Verdict& verdict = out.verdict;
  // Work on A's leaves with their colexicographic weights; shape-1 leaves carry no information.
  struct Leaf {
    Mode mode;
    Int weight;
  };
  std::vector<Leaf> leaves;
  Int weight = 1;
  for (const Mode& mode : a.modes()) {
    if (mode.shape > 1) leaves.push_back(Leaf{mode, weight});
    weight = checked_mul(weight, mode.shape);
  }
  if (leaves.empty()) {
    out.result = Layout();
    return out;
  }
  std::stable_sort(leaves.begin(), leaves.end(), [](const Leaf& x, const Leaf& y) {
    return x.mode.stride < y.mode.stride;
  });
  if (leaves[0].mode.stride == 0) {
    fail(verdict, explain,
         "A is not injective: its mode " + to_string(leaves[0].mode.shape) + ":0 has stride 0");
    return out;
  }
  std::vector<Mode> modes{Mode{leaves[0].mode.stride, 0}};
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const Mode& mode = leaves[k].mode;
    if (k + 1 == leaves.size()) {
      modes.push_back(Mode{mode.shape, leaves[k].weight});
      break;
    }
    const Int next = leaves[k + 1].mode.stride;
    const Int span = checked_mul(mode.shape, mode.stride);
    if (next % mode.stride != 0 || span > next) {
      fail(verdict, explain,
           "no left inverse of this form: after stride " + to_string(mode.stride) +
               " with shape " + to_string(mode.shape) + " the next stride " + to_string(next) +
               (next % mode.stride != 0 ? " is not a multiple of " + to_string(mode.stride)
                                        : " is smaller than " + to_string(span) +
                                              ", so A is not injective"));
      return out;
    }
    modes.push_back(Mode{next / mode.stride, leaves[k].weight});
  }
  out.result = Layout::flat(std::move(modes));
  return out;
}

}  // namespace hopattn::layout
